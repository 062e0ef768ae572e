"""The dumping behind kafkapy-dump-log: Kafka 2.8's DumpLogSegments, line for line.

Reads segment files directly (never through a running Log), so it is safe on a live broker's
files: `.log` prints one line per batch and, with deep iteration, one "| offset: ..." line per
record; `.index` and `.timeindex` print their entries and check each against the log, the
mismatches being reported on stderr at the end, as Kafka does; `.snapshot` prints one line
per producer of a producer state snapshot.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from kafkapy.protocol.constants import NO_SEQUENCE, NO_TIMESTAMP
from kafkapy.protocol.consumer_protocol import decode_assignment
from kafkapy.protocol.errors import ProtocolError
from kafkapy.protocol.record_batch import (
    HEADER_SIZE,
    MIN_RECORD_OVERHEAD,
    BatchHeader,
    CompressionType,
    TimestampType,
    compute_crc,
    increment_sequence,
    read_header,
)
from kafkapy.protocol.record_codec import Record, decode_batch_records
from kafkapy.server.coordinator import offsets_codec
from kafkapy.server.log.abstract_index import CorruptIndexException
from kafkapy.server.log.producer_state import ProducerStateEntry
from kafkapy.server.log.producer_state_snapshot import CorruptSnapshotException, read_snapshot_file
from kafkapy.server.log.transaction_index import ENTRY_SIZE, AbortedTxn
from kafkapy.server.transaction import transaction_log as txn_log

RECORD_INDENT = "|"
Out = Callable[[str], None]
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_CONTROL_KEY = struct.Struct(">hh")  # version, type
_END_TXN_VALUE = struct.Struct(">hi")  # version, coordinator epoch
_CONTROL_TYPES = {0: "ABORT", 1: "COMMIT"}
_TIMESTAMP_TYPE_NAMES = {
    TimestampType.CREATE_TIME: "CreateTime",
    TimestampType.LOG_APPEND_TIME: "LogAppendTime",
}


@dataclass
class DumpErrors:
    """What Kafka collects while dumping and prints on stderr at the end, keyed by absolute path."""

    index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    shallow_not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    non_consecutive: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    def print(self, err: Out) -> None:
        for name, pairs in self.index_mismatches.items():
            err(f"Mismatches in :{name}")
            for index_offset, log_offset in pairs:
                err(f"  Index offset: {index_offset}, log offset: {log_offset}")
        for name, pairs in self.time_mismatches.items():
            err(f"Found timestamp mismatch in :{name}")
            for index_ts, log_ts in pairs:
                err(f"  Index timestamp: {index_ts}, log timestamp: {log_ts}")
        for name, pairs in self.out_of_order.items():
            err(f"Found out of order timestamp in :{name}")
            for index_ts, prev_ts in pairs:
                err(f"  Index timestamp: {index_ts}, Previously indexed timestamp: {prev_ts}")
        for pairs in self.shallow_not_found.values():
            err("The following indexed offsets are not found in the log.")
            for indexed, found in pairs:
                err(f"Indexed offset: {indexed}, found log offset: {found}")
        for name, pairs in self.non_consecutive.items():
            err(f"Non-consecutive offsets in {name}")
            for first, second in pairs:
                err(f"  {first} is followed by {second}")


def base_offset_of(path: str) -> int:
    return int(os.path.basename(path).split(".")[0])


def _sibling(path: str, suffix: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(path)), os.path.basename(path).split(".")[0] + suffix)


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return b""
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            return bytes(m)


def iter_file_batches(
    buf: memoryview, position: int = 0, end: int | None = None
) -> Iterator[tuple[int, BatchHeader]]:
    """Batches as Kafka's FileLogInputStream finds them: stop at a trailing partial batch."""
    end = len(buf) if end is None else min(end, len(buf))
    while end - position >= HEADER_SIZE:
        header = read_header(buf, position)
        if header.batch_length < MIN_RECORD_OVERHEAD:
            raise CorruptIndexException(
                f"Found record size {header.batch_length} smaller than minimum record overhead "
                f"({MIN_RECORD_OVERHEAD}) in file."
            )
        if header.magic != 2:
            raise CorruptIndexException(
                f"Record batch magic {header.magic} is not supported: message format v2 only"
            )
        if position + header.size > end:
            return
        yield position, header
        position += header.size


def _last_sequence(h: BatchHeader) -> int:
    return (
        NO_SEQUENCE
        if h.base_sequence == NO_SEQUENCE
        else increment_sequence(h.base_sequence, h.last_offset_delta)
    )


def _bool(b: bool) -> str:
    return "true" if b else "false"


def batch_line(buf: memoryview, position: int, h: BatchHeader) -> str:
    valid = h.size >= HEADER_SIZE and compute_crc(buf, position, h.size) == h.crc
    return (
        f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.records_count} "
        f"baseSequence: {h.base_sequence} lastSequence: {_last_sequence(h)} producerId: {h.producer_id} "
        f"producerEpoch: {h.producer_epoch} partitionLeaderEpoch: {h.partition_leader_epoch} "
        f"isTransactional: {_bool(h.is_transactional)} isControl: {_bool(h.is_control)} position: {position} "
        f"{_TIMESTAMP_TYPE_NAMES[h.timestamp_type]}: {h.max_timestamp} size: {h.size} magic: {h.magic} "
        f"compresscodec: {CompressionType(h.compression).name} crc: {h.crc} isvalid: {_bool(valid)}"
    )


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")  # Kafka's StringDecoder


# (key, value) -> (key text, payload text): a --*-decoder's view of a record.
Decoder = Callable[[bytes | None, bytes | None], tuple[str, str]]


def transaction_log_decoder(key: bytes | None, value: bytes | None) -> tuple[str, str]:
    """Kafka 2.8's TransactionLogMessageParser wording for __transaction_state records."""
    if key is None:
        return "NO_KEY", "NO_PAYLOAD"
    txn_id = txn_log.read_key(key)
    if value is None:
        return f"transaction_metadata::transactionalId={txn_id}", "<DELETE>"
    v = txn_log.read_value(value)
    partitions = ",".join(f"{t}-{p}" for t, p in v.partitions)
    return (
        f"transaction_metadata::transactionalId={txn_id}",
        f"producerId:{v.producer_id},producerEpoch:{v.producer_epoch},state={v.state},partitions=[{partitions}],"
        f"txnLastUpdateTimestamp={v.txn_last_update_timestamp},txnTimeoutMs={v.txn_timeout_ms}",
    )


CONSUMER_PROTOCOL_TYPE = "consumer"


class KafkaException(Exception):
    """What Kafka's decoders throw at a record they cannot read: the dump stops there."""


def java_hex(data: bytes) -> str:
    """Kafka's GroupMetadataManager.hex: "%X" of the bytes as one unsigned big integer (leading
    zero bytes vanish), "" for no bytes."""
    return format(int.from_bytes(data, "big"), "X") if data else ""


def java_partitions(partitions: tuple[tuple[str, int], ...] | list[tuple[str, int]]) -> str:
    """A Java List<TopicPartition>'s toString: "[t-0, t-1]"."""
    return "[" + ", ".join(f"{t}-{p}" for t, p in partitions) + "]"


def _member_assignment(protocol_type: str, member: offsets_codec.MemberRecord) -> str:
    if protocol_type == CONSUMER_PROTOCOL_TYPE:
        try:
            assignment = decode_assignment(member.assignment)
        except ProtocolError:  # Kafka's tool dies on it; the member's raw bytes say more
            return f"{member.member_id}={java_hex(member.assignment)}"
        user_data = java_hex(assignment.user_data or b"")
        partitions = java_partitions(assignment.partitions)
        return (
            f"{member.member_id}={partitions}:{user_data}"
            if user_data
            else f"{member.member_id}={partitions}"
        )
    return f"{member.member_id}={java_hex(member.assignment)}"


def offsets_decoder(key: bytes | None, value: bytes | None) -> tuple[str, str]:
    """Kafka 2.8's OffsetsMessageParser (GroupMetadataManager.formatRecordKeyAndValue) for
    __consumer_offsets records: "offset_commit::group=g,partition=t-0" with "offset=5" (or
    "offset=5,metadata=m"), "group_metadata::group=g" with a JSON summary of the group; a
    tombstone's payload is "<DELETE>". Members come in the record's order (Kafka's HashMap's)."""
    if key is None:
        raise KafkaException(
            "Failed to decode message using offset topic decoder (message had a missing key)"
        )
    k = offsets_codec.read_key(key)
    if isinstance(k, offsets_codec.OffsetKey):
        key_text = f"offset_commit::group={k.group},partition={k.topic}-{k.partition}"
        if value is None:
            return key_text, "<DELETE>"
        om = offsets_codec.read_offset_value(value)
        return key_text, f"offset={om.offset}" + (f",metadata={om.metadata}" if om.metadata else "")
    key_text = f"group_metadata::group={k.group}"
    if value is None:
        return key_text, "<DELETE>"
    group = offsets_codec.read_group_value(value)
    assignment = "{" + ",".join(_member_assignment(group.protocol_type, m) for m in group.members) + "}"
    summary = {
        "protocolType": group.protocol_type,
        "protocol": group.protocol,
        "generationId": group.generation,
        "assignment": assignment,
    }
    return key_text, json.dumps(summary, separators=(",", ":"), ensure_ascii=False)


def record_line(h: BatchHeader, rec: Record, print_contents: bool, decoder: Decoder | None = None) -> str:
    key_size = -1 if rec.key is None else len(rec.key)
    value_size = -1 if rec.value is None else len(rec.value)
    sequence = (
        NO_SEQUENCE
        if h.base_sequence == NO_SEQUENCE
        else increment_sequence(h.base_sequence, rec.offset - h.base_offset)
    )
    line = (
        f"{RECORD_INDENT} offset: {rec.offset} {_TIMESTAMP_TYPE_NAMES[h.timestamp_type]}: {rec.timestamp} "
        f"keysize: {key_size} valuesize: {value_size} sequence: {sequence} "
        f"headerKeys: [{','.join(k for k, _ in rec.headers)}]"
    )
    if h.is_control:
        type_id = _CONTROL_KEY.unpack_from(rec.key)[1] if rec.key and len(rec.key) >= 4 else -1
        control = _CONTROL_TYPES.get(type_id)
        if control is not None and rec.value is not None and len(rec.value) >= _END_TXN_VALUE.size:
            epoch = _END_TXN_VALUE.unpack_from(rec.value)[1]
            line += f" endTxnMarker: {control} coordinatorEpoch: {epoch}"
        else:
            line += f" controlType: UNKNOWN({type_id})"
    elif decoder is not None:
        key_text, payload = decoder(rec.key, rec.value)
        line += f" key: {key_text} payload: {payload}"
    elif print_contents:
        if rec.key is not None:
            line += f" key: {_text(rec.key)}"
        if rec.value is not None:
            line += f" payload: {_text(rec.value)}"
    return line


def dump_txn_index(path: str, out: Out) -> None:
    """A `.txnindex`: one line per aborted transaction, as Kafka's dumpTxnIndex prints it."""
    data = _read(path)
    for position in range(0, len(data) - len(data) % ENTRY_SIZE, ENTRY_SIZE):
        t = AbortedTxn.decode(data, position)
        out(
            f"version: 0 producerId: {t.producer_id} firstOffset: {t.first_offset} lastOffset: {t.last_offset} "
            f"lastStableOffset: {t.last_stable_offset}"
        )


def dump_log(
    path: str, print_contents: bool, deep: bool, errors: DumpErrors, out: Out, decoder: Decoder | None = None
) -> None:
    out(f"Starting offset: {base_offset_of(path)}")
    buf = memoryview(_read(path))
    valid_bytes = 0
    last_offset = -1
    for position, h in iter_file_batches(buf):
        out(batch_line(buf, position, h))
        if deep:
            for rec in decode_batch_records(buf, position):
                if last_offset != -1 and rec.offset != last_offset + 1:
                    errors.non_consecutive.setdefault(os.path.abspath(path), []).insert(
                        0, (last_offset, rec.offset)
                    )
                last_offset = rec.offset
                out(record_line(h, rec, print_contents, decoder))
        valid_bytes += h.size
    trailing = len(buf) - valid_bytes
    if trailing > 0:
        out(f"Found {trailing} invalid bytes at the end of {os.path.basename(path)}")


def _index_entries(path: str, entry: struct.Struct) -> list[tuple[int, int]]:
    data = _read(path)
    return [entry.unpack_from(data, i) for i in range(0, len(data) - len(data) % entry.size, entry.size)]


def check_index_sanity(path: str, entry_size: int) -> None:
    """Kafka's sanityCheck: a whole number of entries, and a last offset not below the base offset."""
    length = os.path.getsize(path)
    if length % entry_size != 0:
        raise CorruptIndexException(
            f"Index file {os.path.abspath(path)} is corrupt, found {length} bytes which is neither positive "
            f"nor a multiple of {entry_size}."
        )
    base = base_offset_of(path)
    if length:
        entries = _index_entries(path, _OFFSET_ENTRY if entry_size == 8 else _TIME_ENTRY)
        last_offset = base + (entries[-1][0] if entry_size == 8 else entries[-1][1])
        if last_offset < base:
            raise CorruptIndexException(
                f"Corrupt index found, index file ({os.path.abspath(path)}) has non-zero size but the last offset "
                f"is {last_offset} which is less than the base offset {base}."
            )


def dump_index(
    path: str, sanity_only: bool, verify_only: bool, errors: DumpErrors, max_message_size: int, out: Out
) -> None:
    if sanity_only:
        check_index_sanity(path, _OFFSET_ENTRY.size)
        out(f"{path} passed sanity check.")
        return
    base = base_offset_of(path)
    log_buf = memoryview(_read(_sibling(path, ".log")))
    for i, (relative, position) in enumerate(_index_entries(path, _OFFSET_ENTRY)):
        offset = base + relative
        # A preallocated or crash-truncated index is zero-filled: the first zero entry ends it.
        if offset == base and i > 0:
            return
        first = next(iter_file_batches(log_buf, position, position + max_message_size), None)
        first_last_offset = first[1].last_offset if first is not None else -1
        if first_last_offset != offset:
            errors.index_mismatches.setdefault(os.path.abspath(path), []).insert(
                0, (offset, first_last_offset)
            )
        if not verify_only:
            out(f"offset: {offset} position: {position}")


def dump_time_index(path: str, sanity_only: bool, verify_only: bool, errors: DumpErrors, out: Out) -> None:
    if sanity_only:
        check_index_sanity(path, _TIME_ENTRY.size)
        out(f"{path} passed sanity check.")
        return
    base = base_offset_of(path)
    log_buf = memoryview(_read(_sibling(path, ".log")))
    index_path = _sibling(path, ".index")
    offset_entries = _index_entries(index_path, _OFFSET_ENTRY) if os.path.exists(index_path) else []
    name = os.path.abspath(path)
    prev_ts = NO_TIMESTAMP
    for i, (timestamp, relative) in enumerate(_index_entries(path, _TIME_ENTRY)):
        offset = base + relative
        if offset == base and i > 0:
            return
        position = _lookup_position(offset_entries, base, offset)
        batch = next(
            ((p, h) for p, h in iter_file_batches(log_buf, position) if h.last_offset >= offset), None
        )
        if batch is None:
            errors.shallow_not_found.setdefault(name, []).append((offset, -1))
        elif batch[1].last_offset != offset:
            errors.shallow_not_found.setdefault(name, []).append((offset, batch[1].last_offset))
        else:
            max_ts = max((r.timestamp for r in decode_batch_records(log_buf, batch[0])), default=NO_TIMESTAMP)
            if max_ts != timestamp:
                errors.time_mismatches.setdefault(name, []).append((timestamp, max_ts))
            if prev_ts >= timestamp:
                errors.out_of_order.setdefault(name, []).append((timestamp, prev_ts))
        if not verify_only:
            out(f"timestamp: {timestamp} offset: {offset}")
        prev_ts = timestamp


def _lookup_position(entries: list[tuple[int, int]], base: int, target: int) -> int:
    """The offset index's floor lookup, stopping at its zero-filled tail like Kafka's."""
    position = 0
    for i, (relative, pos) in enumerate(entries):
        if i > 0 and relative == 0:
            break
        if base + relative > target:
            break
        position = pos
    return position


def dump_producer_snapshot(path: str, out: Out, err: Out) -> None:
    """One line per producer, as DumpLogSegments prints a `.snapshot`; a corrupt file is one
    line on stderr. kafkapy has no transactions, so currentTxnFirstOffset is always None
    (Scala's rendering of an empty Option in Kafka 2.x)."""
    try:
        entries = read_snapshot_file(path)
    except CorruptSnapshotException as e:
        err(str(e))
        return
    for entry in entries:
        line = (
            f"producerId: {entry.producer_id} producerEpoch: {entry.producer_epoch} "
            f"coordinatorEpoch: {entry.coordinator_epoch} currentTxnFirstOffset: "
            f"{'None' if entry.current_txn_first_offset < 0 else f'Some({entry.current_txn_first_offset})'} "
            f"lastTimestamp: {entry.timestamp} "
        )
        for b in ProducerStateEntry.from_snapshot(entry).batches:
            line += (
                f"firstSequence: {b.first_seq} lastSequence: {b.last_seq} lastOffset: {b.last_offset} "
                f"offsetDelta: {b.last_offset - b.first_offset} timestamp: {b.timestamp}"
            )
        out(line)
