"""Hostile record batches are refused before they cost memory: a record count larger than the
batch could hold, and compressed sections that inflate past the bound (decompression bombs)."""

from __future__ import annotations

import struct
import tracemalloc
import zlib

import cramjam
import lz4.frame
import pytest

from kafkapy.protocol.compression import DEFAULT_MAX_DECOMPRESSED_BYTES, compress, decompress, zstd_max_output
from kafkapy.protocol.errors import CorruptRecordException
from kafkapy.protocol.record_batch import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    compute_crc,
)
from kafkapy.protocol.record_codec import build_batch, decode_batch_records, decode_records

MB = 1024 * 1024


def _zeros_gzip(n_mb: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(MB)
    return b"".join([*(c.compress(chunk) for _ in range(n_mb)), c.flush()])


def _bomb(codec: int, n_mb: int) -> bytes:
    if codec == 1:
        return _zeros_gzip(n_mb)
    data = bytes(n_mb * MB)
    if codec == 3:
        return lz4.frame.compress(data, block_linked=False, store_size=False)
    return compress(codec, data)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("codec", [1, 2, 3, 4], ids=["gzip", "snappy", "lz4", "zstd"])
def test_each_codec_stops_at_the_output_bound(codec: int) -> None:
    bomb = _bomb(codec, 16)
    with pytest.raises(CorruptRecordException, match="larger than the 1048576 bytes allowed"):
        decompress(codec, bomb, max_size=MB)
    assert decompress(codec, _bomb(codec, 1), max_size=MB) == bytes(MB)  # exactly at the bound


@pytest.mark.timeout(30)
def test_raw_snappy_is_refused_from_its_declared_length() -> None:
    raw = bytes(cramjam.snappy.compress_raw(bytes(4 * MB)))
    with pytest.raises(CorruptRecordException):
        decompress(2, raw, max_size=MB)


@pytest.mark.timeout(30)
def test_concatenated_gzip_members_count_against_one_bound() -> None:
    member = compress(1, bytes(MB // 2 + 1))
    assert decompress(1, member + member, max_size=2 * MB) == bytes(MB + 2)
    with pytest.raises(CorruptRecordException):
        decompress(1, member + member, max_size=MB)


@pytest.mark.timeout(30)
def test_zstd_bound_from_block_headers_is_never_below_the_real_size() -> None:
    for data in (b"", b"abc" * 1000, bytes(3 * MB), bytes(range(256)) * 5000):
        frame = bytes(cramjam.zstd.compress(data))
        assert zstd_max_output(frame) >= len(data)
    with pytest.raises(CorruptRecordException):
        decompress(4, b"\x28\xb5\x2f\xfd\x00", max_size=MB)  # a truncated frame header


def _compressed_batch(records_section: bytes, codec: int) -> bytearray:
    """A one-record batch header around `records_section`, CRC correct."""
    out = build_batch([(None, b"x", [], 1000)])[:HEADER_SIZE] + records_section
    struct.pack_into(">i", out, 8, len(out) - LOG_OVERHEAD)
    struct.pack_into(">h", out, ATTRIBUTES_OFFSET, codec)
    struct.pack_into(">I", out, CRC_OFFSET, compute_crc(memoryview(out), 0, len(out)))
    return out


@pytest.mark.timeout(60)
def test_a_gzip_bomb_batch_is_refused_without_inflating_it() -> None:
    """1 MB-ish of gzip that would inflate to 256 MB: refused at the default 64 MB bound, and
    Python's peak allocation stays near the bound rather than the bomb's size."""
    batch = _compressed_batch(_zeros_gzip(256), 1)
    assert len(batch) < 1 * MB
    tracemalloc.start()
    try:
        with pytest.raises(CorruptRecordException, match="larger than the"):
            decode_batch_records(batch)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2 * DEFAULT_MAX_DECOMPRESSED_BYTES + 4 * MB


@pytest.mark.timeout(10)
def test_a_batch_claiming_two_billion_records_in_100_bytes_is_refused_at_once() -> None:
    batch = build_batch([(b"k", b"v" * 20, [], 1000)])
    (count,) = struct.unpack_from(">i", batch, HEADER.size - 4)
    assert count == 1 and len(batch) < 100
    struct.pack_into(">i", batch, HEADER.size - 4, 2**31 - 1)
    with pytest.raises(CorruptRecordException, match="invalid record count 2147483647"):
        decode_records(batch)
    struct.pack_into(">i", batch, HEADER.size - 4, -1)
    with pytest.raises(CorruptRecordException, match="invalid record count -1"):
        decode_records(batch)


@pytest.mark.timeout(10)
def test_a_compressed_batch_claiming_two_billion_records_is_refused_after_bounded_inflation() -> None:
    plain = build_batch([(b"k", b"v", [], 1000)])
    batch = _compressed_batch(compress(1, bytes(plain[HEADER_SIZE:])), 1)
    struct.pack_into(">i", batch, HEADER.size - 4, 2**31 - 1)
    with pytest.raises(CorruptRecordException, match="invalid record count"):
        decode_batch_records(batch)
