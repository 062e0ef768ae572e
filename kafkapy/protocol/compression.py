"""Record batch compression codecs (gzip, snappy, lz4, zstd) and compressed-batch helpers. No I/O.

In a v2 batch only the records section (everything after the 61-byte header) is compressed, as
one block, with the codec named by the low three attribute bits:

    1 gzip    RFC 1952 (possibly several members)
    2 snappy  the Java client's xerial framing (magic 0x82 'SNAPPY' 0, version, compat, then
              int32-length-prefixed raw blocks); librdkafka may also send a bare raw block
    3 lz4     the LZ4 frame format
    4 zstd    one or more zstd frames, content size not necessarily declared

snappy, lz4 and zstd come from optional packages (python-snappy or cramjam, lz4, zstandard),
imported on first use so that a broker which never decompresses does not need them.
"""

from __future__ import annotations

import gzip
import struct
from typing import Any

from kafkapy.protocol.errors import CorruptRecordException, InvalidRecordException
from kafkapy.protocol.record_batch import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    HEADER_SIZE,
    LOG_OVERHEAD,
    CompressionType,
    Record,
    compute_crc,
    decode_records,
    read_header,
)

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")  # magic, version, compatible version
_XERIAL_BLOCK_LEN = struct.Struct(">i")
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_U32 = struct.Struct(">I")
_LENGTH_OFFSET = 8


def _module(name: str) -> Any:
    try:
        return __import__(name, fromlist=["_"])
    except ImportError as e:
        raise InvalidRecordException(f"cannot (de)compress: Python package {name!r} is not installed") from e


def _snappy_raw_decompress(data: bytes) -> bytes:
    try:
        return bytes(_module("cramjam").snappy.decompress_raw(data))
    except InvalidRecordException:
        return bytes(_module("snappy").uncompress(data))


def _snappy_raw_compress(data: bytes) -> bytes:
    try:
        return bytes(_module("cramjam").snappy.compress_raw(data))
    except InvalidRecordException:
        return bytes(_module("snappy").compress(data))


def _snappy_decompress(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return _snappy_raw_decompress(data)
    out = bytearray()
    pos = _XERIAL_HEADER.size
    while pos < len(data):
        (n,) = _XERIAL_BLOCK_LEN.unpack_from(data, pos)
        pos += 4
        out += _snappy_raw_decompress(data[pos : pos + n])
        pos += n
    return bytes(out)


def _snappy_compress(data: bytes) -> bytes:
    # Xerial framing with one block per 32 KiB, as the Java client writes it, so Java consumers
    # (which only accept the framed form) can read what we write.
    out = bytearray(_XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1))
    for start in range(0, max(len(data), 1), 32 * 1024):
        block = _snappy_raw_compress(data[start : start + 32 * 1024])
        out += _XERIAL_BLOCK_LEN.pack(len(block)) + block
    return bytes(out)


def _zstd_decompress(data: bytes) -> bytes:
    # A decompressobj copes with frames that do not declare their content size.
    return bytes(_module("zstandard").ZstdDecompressor().decompressobj().decompress(data))


def decompress(codec: int, data: bytes | memoryview) -> bytes:
    """The decompressed records section of a batch; CorruptRecordException if it does not decode."""
    raw = bytes(data)
    try:
        if codec == CompressionType.NONE:
            return raw
        if codec == CompressionType.GZIP:
            return gzip.decompress(raw)
        if codec == CompressionType.SNAPPY:
            return _snappy_decompress(raw)
        if codec == CompressionType.LZ4:
            return bytes(_module("lz4.frame").decompress(raw))
        if codec == CompressionType.ZSTD:
            return _zstd_decompress(raw)
    except InvalidRecordException:
        raise
    except Exception as e:  # each library has its own error types; all mean "corrupt"
        raise CorruptRecordException(f"Failed to decompress {CompressionType(codec).name} records: {e}") from e
    raise InvalidRecordException(f"Unknown compression type id {codec}")


def compress(codec: int, data: bytes | memoryview) -> bytes:
    raw = bytes(data)
    if codec == CompressionType.NONE:
        return raw
    if codec == CompressionType.GZIP:
        return gzip.compress(raw)
    if codec == CompressionType.SNAPPY:
        return _snappy_compress(raw)
    if codec == CompressionType.LZ4:
        return bytes(_module("lz4.frame").compress(raw))
    if codec == CompressionType.ZSTD:
        return bytes(_module("zstandard").ZstdCompressor().compress(raw))
    raise InvalidRecordException(f"Unknown compression type id {codec}")


def compress_batch(batch: bytes | bytearray | memoryview, codec: int) -> bytearray:
    """An uncompressed v2 batch (e.g. from `build_batch`) re-encoded with `codec`, CRC updated."""
    view = memoryview(batch)
    header = read_header(view)
    records = compress(codec, view[HEADER_SIZE : header.size])
    out = bytearray(view[:HEADER_SIZE]) + records
    _I32.pack_into(out, _LENGTH_OFFSET, len(out) - LOG_OVERHEAD)
    _I16.pack_into(out, ATTRIBUTES_OFFSET, (header.attributes & ~0x07) | codec)
    _U32.pack_into(out, CRC_OFFSET, compute_crc(memoryview(out), 0, len(out)))
    return out


def decode_batch_records(buf: bytes | bytearray | memoryview, position: int = 0) -> list[Record]:
    """The records of the batch at `position`, compressed or not (absolute offsets/timestamps)."""
    view = memoryview(buf)
    header = read_header(view, position)
    if header.compression == CompressionType.NONE:
        return decode_records(view, position)
    records = decompress(header.compression, view[position + HEADER_SIZE : position + header.size])
    # Rebuild the batch as if it had been written uncompressed, so one record decoder serves
    # both forms (the CRC is not checked by decode_records, so it is left stale).
    plain = bytearray(view[position : position + HEADER_SIZE]) + records
    _I32.pack_into(plain, _LENGTH_OFFSET, len(plain) - LOG_OVERHEAD)
    _I16.pack_into(plain, ATTRIBUTES_OFFSET, header.attributes & ~0x07)
    return decode_records(plain)
