"""Kill -9 a process in the middle of appends; what it flushed must survive intact."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from kafkapy.common.topic_partition import TopicPartition
from kafkapy.protocol.record_batch import iter_batches, validate_records
from kafkapy.protocol.record_codec import build_batch, decode_records
from kafkapy.server.log.log_config import LogConfig
from kafkapy.server.log.log_manager import LogManager

TP = TopicPartition("kill-test", 0)

CHILD = textwrap.dedent(
    """
    import os, sys
    from kafkapy.protocol.record_codec import build_batch
    from kafkapy.server.log.log_config import LogConfig
    from kafkapy.server.log.log_manager import LogManager
    from kafkapy.common.topic_partition import TopicPartition

    log_dir, side_file = sys.argv[1], sys.argv[2]
    manager = LogManager([log_dir], LogConfig(segment_bytes=256 * 1024, index_interval_bytes=1024))
    manager.startup()
    log = manager.get_or_create_log(TopicPartition("kill-test", 0))
    for i in range(1_000_000):
        value = b"%08d" % i * 64
        log.append_as_leader(build_batch([(b"%d" % i, value, [], 1_000 + i)]))
        if i % 50 == 49:
            log.flush()
            tmp = side_file + ".tmp"
            with open(tmp, "w") as f:
                f.write(str(log.recovery_point))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, side_file)
    """
)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_flushed_batches_survive_sigkill_and_the_log_takes_appends_again(tmp_path) -> None:
    log_dir, side_file = str(tmp_path / "logs"), str(tmp_path / "flushed")
    child = subprocess.Popen([sys.executable, "-c", CHILD, log_dir, side_file])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # let it write a few segments' worth
            if os.path.exists(side_file) and int(open(side_file).read() or 0) >= 3_000:
                break
            assert child.poll() is None, "the appending child died on its own"
            time.sleep(0.05)
        else:
            pytest.fail("the child did not flush 3000 records within 60 s")
        time.sleep(0.1)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=10)

    flushed = int(open(side_file).read())
    manager = LogManager([log_dir], LogConfig(segment_bytes=256 * 1024, index_interval_bytes=1024))
    manager.startup()
    try:
        log = manager.get_log(TP)
        assert log is not None and log.log_end_offset >= flushed
        expected = 0
        while expected < flushed:  # read back in bounded chunks, checking every batch
            info = log.read(expected, 1 << 20)
            data = b"".join(os.pread(r.fd, r.length, r.position) for r in info.records)
            view = memoryview(data)
            batches = list(iter_batches(view))  # a fetch may end inside a batch: whole ones only
            assert batches, f"no whole batch at offset {expected}"
            for pos, header in batches:
                validate_records(view[pos : pos + header.size], None, from_client=False)  # CRC
                [record] = decode_records(view, pos)
                assert record.offset == header.base_offset == expected
                assert record.value == b"%08d" % expected * 64 and record.timestamp == 1_000 + expected
                expected += 1
        info = log.append_as_leader(bytes(build_batch([(None, b"after the crash", [], 5)])))
        assert info.first_offset == log.log_end_offset - 1
    finally:
        manager.shutdown()
