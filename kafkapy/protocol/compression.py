"""Record batch compression: the codecs and compressed-batch helpers, in one place. No I/O.

In a v2 batch only the records section (everything after the 61-byte header) is compressed, as
one block, with the codec named by the low three attribute bits. The formats are the ones
Java's producer writes, so every consumer reads our batches, and every client's are read:

- gzip: a gzip member (zlib with a gzip wrapper); zlib or several members are read too.
- snappy: xerial's framing (SnappyOutputStream): magic, version 1, compatible version 1, then
  blocks of int32 length + raw snappy. Readers also accept raw snappy (librdkafka's).
- lz4: the LZ4 frame format with independent blocks; Java's KafkaLZ4BlockInputStream refuses
  dependent (linked) blocks. The `lz4` package writes them ~10x faster than cramjam here.
- zstd: a zstd frame (cramjam), content size not necessarily declared.

The broker (ListOffsets by time, the group coordinator's loading, dump-log), the producer and
the consumers all use this module; third-party codecs are imported on first use.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import Final

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

_I16 = struct.Struct(">h")
_U32 = struct.Struct(">I")
_LENGTH_OFFSET = 8

_XERIAL_HEADER: Final = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK: Final = 32 * 1024  # xerial's default block size
_I32 = struct.Struct(">i")

NAMES: Final = {
    "none": CompressionType.NONE,
    "gzip": CompressionType.GZIP,
    "snappy": CompressionType.SNAPPY,
    "lz4": CompressionType.LZ4,
    "zstd": CompressionType.ZSTD,
}


def codec_for(name: str | int) -> CompressionType:
    """'gzip' / 'GZIP' / '1' / 1 -> CompressionType.GZIP (the old producer's compression.codec
    took numbers; 'uncompressed' and 'producer' are Kafka's topic-level spellings)."""
    if isinstance(name, int) or str(name).isdigit():
        return CompressionType(int(name))
    key = str(name).strip().lower()
    if key in ("uncompressed", ""):
        return CompressionType.NONE
    try:
        return NAMES[key]
    except KeyError:
        raise ValueError(f"Invalid compression type {name!r}; expected one of {', '.join(NAMES)}") from None


def _gzip(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, 31)  # wbits 31: gzip wrapper
    return c.compress(data) + c.flush()


def _gunzip(data: bytes) -> bytes:
    return zlib.decompress(data, 47)  # 32 + 15: gzip or zlib header, detected


def _snappy(data: bytes) -> bytes:
    import cramjam

    out = [_XERIAL_HEADER]
    view = memoryview(data)
    for i in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(view[i : i + _XERIAL_BLOCK]))
        out.append(_I32.pack(len(block)))
        out.append(block)
    return b"".join(out)


def _unsnappy(data: bytes) -> bytes:
    import cramjam

    if not data.startswith(_XERIAL_HEADER[:8]):
        return bytes(cramjam.snappy.decompress_raw(data))
    out, pos = [], len(_XERIAL_HEADER)
    while pos < len(data):
        (n,) = _I32.unpack_from(data, pos)
        out.append(bytes(cramjam.snappy.decompress_raw(data[pos + 4 : pos + 4 + n])))
        pos += 4 + n
    return b"".join(out)


def _lz4(data: bytes) -> bytes:
    import lz4.frame

    return lz4.frame.compress(data, block_linked=False, content_checksum=False, store_size=False)


def _unlz4(data: bytes) -> bytes:
    import lz4.frame

    return lz4.frame.decompress(data)


def _zstd(data: bytes) -> bytes:
    import cramjam

    return bytes(cramjam.zstd.compress(data, level=3))


def _unzstd(data: bytes) -> bytes:
    import cramjam

    return bytes(cramjam.zstd.decompress(data))


_COMPRESS: dict[int, Callable[[bytes], bytes]] = {1: _gzip, 2: _snappy, 3: _lz4, 4: _zstd}
_DECOMPRESS: dict[int, Callable[[bytes], bytes]] = {1: _gunzip, 2: _unsnappy, 3: _unlz4, 4: _unzstd}


def compress(codec: int, data: bytes | bytearray | memoryview) -> bytes:
    if codec == CompressionType.NONE:
        return bytes(data)
    return _COMPRESS[codec](bytes(data))


def decompress(codec: int, data: bytes | bytearray | memoryview) -> bytes:
    fn = _DECOMPRESS.get(codec)
    if fn is None:
        raise InvalidRecordException(f"Unknown compression type id {codec}")
    try:
        return fn(bytes(data))
    except Exception as e:  # each codec library raises its own error types
        raise CorruptRecordException(f"cannot decompress a {CompressionType(codec).name} batch: {e}") from e


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
