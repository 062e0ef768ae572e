from __future__ import annotations

import os

from kafkapy.protocol.file_region import FileRegion
from kafkapy.protocol.record_batch import iter_batches, read_header
from kafkapy.protocol.record_codec import build_batch
from kafkapy.server.log.fetch_data_info import FetchDataInfo
from kafkapy.server.log.log_config import LogConfig


class FakeClock:
    def __init__(self, now: int = 1_700_000_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


def records(n: int = 1, timestamp: int = 1_000, size: int = 20, **kwargs: object) -> bytearray:
    """One uncompressed batch of `n` records with values of `size` bytes."""
    return build_batch([(b"key", b"v" * size, [], timestamp) for _ in range(n)], **kwargs)  # type: ignore[arg-type]


def small_config(**overrides: object) -> LogConfig:
    base: dict[str, object] = {"segment_bytes": 1024, "index_interval_bytes": 1, "segment_index_bytes": 1200}
    base.update(overrides)
    return LogConfig(**base)  # type: ignore[arg-type]


def region_bytes(regions: list[FileRegion]) -> bytes:
    return b"".join(os.pread(r.fd, r.length, r.position) for r in regions)


def fetched_offsets(info: FetchDataInfo) -> list[int]:
    """Base offsets of the whole batches a fetch returned."""
    return [h.base_offset for _, h in iter_batches(memoryview(region_bytes(info.records)))]


def first_header_of(data: bytes | bytearray):  # noqa: ANN201 - a BatchHeader
    return read_header(data)
