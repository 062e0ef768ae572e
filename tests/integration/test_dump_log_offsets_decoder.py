"""kafkapy-dump-log --offsets-decoder and the console consumer's OffsetsMessageFormatter on a real
broker's __consumer_offsets, after a confluent-kafka (librdkafka) consumer group commits."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkapy.testing import KafkapyCluster

BIN = Path(sys.executable).parent
TOPIC = "dumped"
GROUP = "dump-group"
OFFSETS_FORMATTER = "kafka.coordinator.group.GroupMetadataManager$OffsetsMessageFormatter"

pytestmark = [
    pytest.mark.kafkapy_cluster(brokers=1, overrides={"offsets.topic.num.partitions": "1"}),
    pytest.mark.timeout(180),
]


def tool(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / name), *args], capture_output=True, text=True, timeout=90, check=False)


def test_offsets_decoder_shows_a_librdkafka_groups_commit(kafkapy_cluster: KafkapyCluster) -> None:
    bootstrap = kafkapy_cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(60)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(3):
        producer.produce(TOPIC, value=b"v%d" % i)
    assert producer.flush(30) == 0

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})  # fmt: skip
    try:
        consumer.subscribe([TOPIC])
        seen = 0
        deadline = time.monotonic() + 60
        while seen < 3 and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                seen += 1
        assert seen == 3
        # No commit metadata: what confluent-kafka 2.16 commits arrives with a trailing NUL byte
        # (a client quirk); the unit tests cover metadata.
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, 3)], asynchronous=False)
        member_id = consumer.memberid()
    finally:
        consumer.close()

    segment = kafkapy_cluster.broker(0).log_dir / "__consumer_offsets-0" / "00000000000000000000.log"
    dumped = tool("kafkapy-dump-log", "--offsets-decoder", "--files", str(segment))
    assert dumped.returncode == 0, dumped.stderr
    commit_lines = [line for line in dumped.stdout.splitlines()
                    if f" key: offset_commit::group={GROUP},partition={TOPIC}-0 payload: " in line]  # fmt: skip
    assert commit_lines and commit_lines[-1].endswith(" payload: offset=3"), dumped.stdout
    assert (
        f'key: group_metadata::group={GROUP} payload: {{"protocolType":"consumer","protocol":"range",'
        f'"generationId":1,"assignment":"{{{member_id}=[{TOPIC}-0]}}"}}'
    ) in dumped.stdout
    assert f"key: group_metadata::group={GROUP} payload: " in dumped.stdout.splitlines()[-1]  # left: empty

    consumed = tool("kafkapy-console-consumer", "--bootstrap-server", bootstrap, "--topic", "__consumer_offsets",
                    "--from-beginning", "--formatter", OFFSETS_FORMATTER, "--timeout-ms", "5000")  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    commits = [line for line in consumed.stdout.splitlines() if line.startswith(f"[{GROUP},{TOPIC},0]::")]
    assert commits and commits[-1].startswith(
        f"[{GROUP},{TOPIC},0]::OffsetAndMetadata(offset=3, leaderEpoch="
    )
    assert ", metadata=, commitTimestamp=" in commits[-1]
    assert commits[-1].endswith(", expireTimestamp=None)")
