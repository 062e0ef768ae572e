"""CPU per replication operation, in process: what one produce append and one follower fetch
cost a broker besides the copies the kernel makes.

    PYTHONPATH=<tree> python benchmarks/replication_op_cost.py [--ops 600] [--runs 3]

The shapes are replication_ratio.py's at 1 KiB records: a produce request carries one ~480 KiB
batch per partition, a follower fetch answer ~960 KiB (two such batches). Each line is CPU
time (process_time) per operation, the best of --runs, next to the bare system calls the same
bytes need (pwrite into the page cache), so the difference is what kafkapy adds:

- leader append: Log.append_as_leader of one batch (header checks, CRC-32C, offsets, write,
  index) against one pwrite of it;
- follower apply: follower_records + Log.append_as_follower + the high watermark for a
  two-batch answer against one pwrite of it;
- the Fetch codec on both sides: the follower's request body encoded and the leader's decode of
  it; the leader's response frame around two file regions, and the follower's decode of a
  960 KiB answer (records stay views into the frame).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if __name__ == "__main__":
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO / "benchmarks"]
    sys.path.insert(0, str(REPO))

from kafkapy.protocol import framing, messages  # noqa: E402
from kafkapy.protocol.fetch import (  # noqa: E402
    FetchPartitionData,
    FetchTopicData,
    decode_fetch_request,
    encode_fetch_response,
)
from kafkapy.protocol.file_region import FileRegion  # noqa: E402
from kafkapy.protocol.record_batch import set_base_offset  # noqa: E402
from kafkapy.protocol.record_codec import build_batch  # noqa: E402
from kafkapy.server.follower_rules import follower_high_watermark, follower_records  # noqa: E402
from kafkapy.server.log.log import Log  # noqa: E402
from kafkapy.server.log.log_config import LogConfig  # noqa: E402

RECORD = 1024
BATCH_RECORDS = 470  # ~480 KiB: what librdkafka puts in one partition's batch in these runs
FETCH_VERSION = 12


def per_op(fn: Callable[[int], None], ops: int, runs: int) -> float:
    """Best CPU microseconds per operation over `runs` runs of `ops` operations."""
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        fn(ops)
        best = min(best, time.process_time() - start)
    return best / ops * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ops", type=int, default=600)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where the logs go (default: a temporary directory)")
    args = parser.parse_args()
    ops, runs = args.ops, args.runs
    work = tempfile.mkdtemp(prefix="replication-op-cost-", dir=args.dir)
    try:
        batch = build_batch(
            [(None, os.urandom(RECORD), [], 1_700_000_000_000 + i) for i in range(BATCH_RECORDS)]
        )
        size = len(batch)
        view = memoryview(batch)
        answer = bytearray(2 * size)
        answer[:size] = batch
        answer[size:] = batch
        answer_view = memoryview(answer)
        leader = Log(os.path.join(work, "leader-0"), LogConfig(), had_clean_shutdown=True)
        follower = Log(os.path.join(work, "follower-0"), LogConfig(), had_clean_shutdown=True)
        raw_fd = os.open(os.path.join(work, "raw.bin"), os.O_WRONLY | os.O_CREAT, 0o644)
        raw_position = 0

        def raw(n: int, data: memoryview) -> None:
            nonlocal raw_position
            for _ in range(n):
                os.pwrite(raw_fd, data, raw_position)
                raw_position += len(data)

        def lead(n: int) -> None:
            for _ in range(n):
                set_base_offset(view, 0, 0, -1)  # a fresh produce request carries base offset 0
                leader.append_as_leader(view)

        def follow(n: int) -> None:
            for _ in range(n):
                offset = follower.log_end_offset
                # The leader's offsets (two header fields patched; the CRC does not cover them).
                set_base_offset(answer_view, 0, offset, -1)
                set_base_offset(answer_view, size, offset + BATCH_RECORDS, -1)
                records = follower_records(answer_view, offset)
                assert records is not None
                follower.append_as_follower(records)
                end = follower.log_end_offset
                follower.high_watermark = follower_high_watermark(end, end)

        body = {
            "replica_id": 1, "replica_state": {"replica_id": 1, "replica_epoch": -1},
            "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 10 * 1024 * 1024, "isolation_level": 0,
            "session_id": 123, "session_epoch": 5,
            "topics": [{"topic": "rf3-1024", "partitions": [
                {"partition": p, "current_leader_epoch": 0, "fetch_offset": 1000, "log_start_offset": 0,
                 "partition_max_bytes": 1024 * 1024} for p in (0, 3)]}],
            "forgotten_topics_data": [],
        }  # fmt: skip
        payload = messages.encode_request(1, FETCH_VERSION, body)
        region_fd = os.open(os.path.join(work, "raw.bin"), os.O_RDONLY)
        regions = [
            FetchTopicData(
                "rf3-1024", None, [FetchPartitionData(p, 0, 2000, 2000, 0, FileRegion(region_fd, 0, size)) for p in (0, 3)]
            )
        ]  # fmt: skip
        inline = [
            FetchTopicData("rf3-1024", None, [FetchPartitionData(p, 0, 2000, 2000, 0, batch) for p in (0, 3)])
        ]
        # Inline records make the frame all bytes: what the follower reads off the socket.
        parts = encode_fetch_response(FETCH_VERSION, 7, inline)
        frame = memoryview(b"".join(p for p in parts if not isinstance(p, FileRegion)))[4:]
        header_version = framing.response_header_version(1, FETCH_VERSION)

        def encode_request(n: int) -> None:
            for _ in range(n):
                messages.encode_request(1, FETCH_VERSION, body)

        def decode_request(n: int) -> None:
            for _ in range(n):
                decode_fetch_request(FETCH_VERSION, payload)

        def encode_response(n: int) -> None:
            for _ in range(n):
                encode_fetch_response(FETCH_VERSION, 7, regions, session_id=123)

        def decode_response(n: int) -> None:
            for _ in range(n):
                _, offset = framing.parse_response_header(frame, header_version)
                messages.decode_response(1, FETCH_VERSION, frame, offset)

        raw(ops, view)  # the raw file starts out as large as it is later on
        rows = [
            ("pwrite of one 480 KiB batch", per_op(lambda n: raw(n, view), ops, runs)),
            ("leader append of it", per_op(lead, ops, runs)),
            ("pwrite of one 960 KiB answer", per_op(lambda n: raw(n, answer_view), ops // 2, runs)),
            ("follower apply of it", per_op(follow, ops // 2, runs)),
            ("Fetch request encode (follower)", per_op(encode_request, ops * 10, runs)),
            ("Fetch request decode (leader)", per_op(decode_request, ops * 10, runs)),
            ("Fetch response encode, 2 regions (leader)", per_op(encode_response, ops * 10, runs)),
            ("Fetch response decode, 960 KiB (follower)", per_op(decode_response, ops * 10, runs)),
        ]
        for name, micros in rows:
            print(f"{name:45s} {micros:8.1f} us")
        leader.close()
        follower.close()
        os.close(raw_fd)
        os.close(region_fd)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
