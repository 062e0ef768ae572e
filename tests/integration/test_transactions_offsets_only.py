"""kafkapy's transactional producer ends a transaction that holds only group offsets.

A transaction may write no record and still commit offsets (send_offsets_to_transaction alone,
as the exactly-once Spark sink does for a micro-batch without rows): commit_transaction must
send EndTxn for it, or the offsets stay pending (and the id's next InitProducerId waits for
the coordinator to time the transaction out). Invariant: the committed offset is visible to a
confluent-kafka consumer right after commit, and an aborted one never is.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkapy.common.topic_partition import TopicPartition as OurTopicPartition
from kafkapy.producer import KafkaProducer
from kafkapy.testing import KafkapyCluster

OVERRIDES = {
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "3",
    "offsets.topic.num.partitions": "3",
}

pytestmark = [pytest.mark.kafkapy_cluster(brokers=1, overrides=OVERRIDES), pytest.mark.timeout(180)]


def test_a_transaction_of_offsets_alone_commits_and_aborts(kafkapy_cluster: KafkapyCluster) -> None:
    bootstrap = kafkapy_cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("offsets-only", 1, 1)])["offsets-only"].result(60)
    p = KafkaProducer({"bootstrap.servers": bootstrap, "transactional.id": "offsets-only-1"})
    try:
        p.init_transactions()
        for offset, commit in ((42, True), (99, False), (43, True)):
            p.begin_transaction()
            p.send_offsets_to_transaction(
                {OurTopicPartition("offsets-only", 0): offset}, "offsets-only-group"
            )
            if commit:
                p.commit_transaction(60)
            else:
                p.abort_transaction(60)
            c = Consumer({"bootstrap.servers": bootstrap, "group.id": "offsets-only-group"})
            try:
                seen = c.committed([TopicPartition("offsets-only", 0)], timeout=30)[0].offset
            finally:
                c.close()
            assert seen == (offset if commit else 42)
    finally:
        p.close()
