"""kafkapy-dump-log --offsets-decoder and the console consumer's OffsetsMessageFormatter over
__consumer_offsets segments written by the group coordinator itself (join, sync, commit,
delete), in Kafka 2.8's wording (GroupMetadataManager.formatRecordKeyAndValue)."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkapy.protocol.consumer_protocol import encode_assignment
from kafkapy.protocol.record_codec import build_batch, decode_batch_records
from kafkapy.server.coordinator import offsets_codec as codec
from kafkapy.server.log.log import Log
from kafkapy.server.log.log_config import LogConfig
from kafkapy.tools.console_consumer import OffsetsMessageFormatter, make_formatter
from kafkapy.tools.dump_log import main
from kafkapy.tools.dump_log_segments import java_hex, offsets_decoder
from tests.unit.coordinator.test_group_coordinator import FakeReplicaManager, join, started, sync

SEGMENT = "__consumer_offsets-0/00000000000000000000.log"


def _write_group_history(base: Path) -> tuple[str, str]:
    """A consumer group "g" of two members, its commits, and a deleted simple group "gone"."""

    async def scenario() -> tuple[str, str]:
        rm = FakeReplicaManager(base)
        gc = await started(rm)
        a = (await join(gc)).member_id
        b_join = asyncio.ensure_future(join(gc))
        await asyncio.sleep(0.01)
        await join(gc, a)
        b = (await b_join).member_id
        assignment = {
            a: encode_assignment([("t", 1), ("t", 0)]),
            b: encode_assignment([("u", 0)], user_data=b"\x00\x01\xab"),
        }
        b_sync = asyncio.ensure_future(sync(gc, b, 2))
        await sync(gc, a, 2, assignment)
        await b_sync
        await gc.commit_offsets("g", a, None, 2, {("t", 0): codec.OffsetAndMetadata(42, 0, "", 1_000)})
        await gc.commit_offsets("g", b, None, 2, {("u", 0): codec.OffsetAndMetadata(7, -1, "meta", 1_001)})
        await gc.commit_offsets("gone", "", None, -1, {("t", 1): codec.OffsetAndMetadata(3, -1, "", 1_002)})
        assert await gc.delete_groups(["gone"]) == {"gone": 0}
        gc.shutdown()
        rm.log(0).close()
        return a, b

    return asyncio.run(scenario())


@pytest.mark.timeout(60)
def test_offsets_decoder_prints_kafkas_offsets_message_parser_output(tmp_path: Path) -> None:
    a, b = _write_group_history(tmp_path)
    result = CliRunner().invoke(main, ["--files", str(tmp_path / SEGMENT), "--offsets-decoder"])
    assert result.exit_code == 0, result.output
    records = [line for line in result.stdout.splitlines() if line.startswith("| offset: ")]
    payloads = [line.split(" key: ", 1)[1] for line in records]
    groups = [p for p in payloads if p.startswith("group_metadata::group=g payload: ")]
    assert groups, payloads
    summary = json.loads(groups[-1].split(" payload: ", 1)[1])
    assert list(summary) == ["protocolType", "protocol", "generationId", "assignment"]
    # Compact JSON as Jackson writes it; partitions as a Java List prints them, user data in Kafka's hex.
    assert groups[-1] == (
        'group_metadata::group=g payload: {"protocolType":"consumer","protocol":"range","generationId":2,'
        f'"assignment":"{{{a}=[t-0, t-1],{b}=[u-0]:1AB}}"}}'
    )
    assert "offset_commit::group=g,partition=t-0 payload: offset=42" in payloads
    assert "offset_commit::group=g,partition=u-0 payload: offset=7,metadata=meta" in payloads
    assert "offset_commit::group=gone,partition=t-1 payload: offset=3" in payloads
    assert "offset_commit::group=gone,partition=t-1 payload: <DELETE>" in payloads
    assert "group_metadata::group=gone payload: <DELETE>" in payloads
    # Every record line keeps the usual metadata before the decoded key.
    assert all(" headerKeys: [] key: " in line for line in records)


def test_offsets_decoder_on_other_protocol_types_and_missing_keys() -> None:
    member = codec.MemberRecord("m-1", None, "c", "/h", 10, 10, b"sub", b"\x00\x0f\xff")
    value = codec.group_metadata_value(codec.GroupMetadataValue("connect", 4, None, "m-1", 5, (member,)))
    key_text, payload = offsets_decoder(codec.group_metadata_key("w"), value)
    assert key_text == "group_metadata::group=w"
    assert payload == '{"protocolType":"connect","protocol":null,"generationId":4,"assignment":"{m-1=FFF}"}'
    empty = codec.group_metadata_value(codec.GroupMetadataValue("consumer", 0, None, None, 5, ()))
    assert offsets_decoder(codec.group_metadata_key("e"), empty)[1] == (
        '{"protocolType":"consumer","protocol":null,"generationId":0,"assignment":"{}"}'
    )
    assert java_hex(b"") == "" and java_hex(b"\x00\x00") == "0" and java_hex(b"\x01\x0a") == "10A"
    with pytest.raises(Exception, match="message had a missing key"):
        offsets_decoder(None, b"x")


def test_offsets_decoder_stops_the_dump_on_a_record_without_a_key(tmp_path: Path) -> None:
    log = Log(str(tmp_path / "__consumer_offsets-0"), LogConfig())
    log.append_as_leader(build_batch([(None, b"v", (), 1)]))
    log.close()
    result = CliRunner().invoke(main, ["--files", str(tmp_path / SEGMENT), "--offsets-decoder"])
    assert result.exit_code == 1
    assert (
        "KafkaException: Failed to decode message using offset topic decoder (message had a missing key)"
        in (result.stderr)
    )


@pytest.mark.timeout(60)
def test_console_consumer_offsets_message_formatter(tmp_path: Path) -> None:
    _write_group_history(tmp_path)
    data = (tmp_path / SEGMENT).read_bytes()
    formatter = make_formatter("kafka.coordinator.group.GroupMetadataManager$OffsetsMessageFormatter", {})
    assert isinstance(formatter, OffsetsMessageFormatter)
    assert isinstance(make_formatter("OffsetsMessageFormatter", {}), OffsetsMessageFormatter)
    out = io.BytesIO()
    position = 0
    view = memoryview(data)
    while position < len(data):
        size = int.from_bytes(data[position + 8 : position + 12], "big") + 12
        for r in decode_batch_records(view, position):
            formatter.write(out, "__consumer_offsets", 0, r.offset, r.timestamp, 0, r.key, r.value)
        position += size
    lines = out.getvalue().decode().splitlines()
    assert lines == [
        "[g,t,0]::OffsetAndMetadata(offset=42, leaderEpoch=Optional[0], metadata=, commitTimestamp=1000, "
        "expireTimestamp=None)",
        "[g,u,0]::OffsetAndMetadata(offset=7, leaderEpoch=Optional.empty, metadata=meta, commitTimestamp=1001, "
        "expireTimestamp=None)",
        "[gone,t,1]::OffsetAndMetadata(offset=3, leaderEpoch=Optional.empty, metadata=, commitTimestamp=1002, "
        "expireTimestamp=None)",
        "[gone,t,1]::NULL",
    ]
