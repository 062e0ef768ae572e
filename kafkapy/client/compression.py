"""Record batch compression codecs, as Kafka's clients write and read them.

Only the records section of a v2 batch is compressed (the 61-byte header stays plain). The
formats are the ones Java's producer writes, so every consumer reads our batches:

- gzip: a gzip member (zlib with a gzip wrapper).
- snappy: xerial's framing (SnappyOutputStream): magic, version 1, compatible version 1,
  then blocks of int32 length + raw snappy. Readers also accept raw snappy (librdkafka's).
- lz4: the LZ4 frame format with independent blocks; Java's KafkaLZ4BlockInputStream refuses
  dependent (linked) blocks. The `lz4` package writes them 10x faster than cramjam here.
- zstd: a zstd frame (cramjam).

Third-party codecs are imported on first use, so a producer without compression needs none.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import Final

from kafkapy.protocol.errors import CorruptRecordException, InvalidRecordException
from kafkapy.protocol.record_batch import CompressionType

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
