"""Record batch compression: the codecs, in one place. No I/O.

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

Decompression is bounded: a 1 MB gzip batch of zeros inflates to 1 GB, and the broker inflates
batches a client wrote (ListOffsets by time). Every codec stops at `max_size` bytes of output
(gzip and lz4 through their streaming decoders' output limit, snappy and zstd from the sizes
their formats declare before anything is inflated) and the batch is refused as corrupt.
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

# What one batch may inflate to by default. A batch is at most message.max.bytes (1 MB by
# default) compressed; real data rarely compresses 64 times, a bomb does by construction.
DEFAULT_MAX_DECOMPRESSED_BYTES: Final = 64 * 1024 * 1024

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


def _too_large(max_size: int) -> CorruptRecordException:
    return CorruptRecordException(f"decompressed batch is larger than the {max_size} bytes allowed")


def _gunzip(data: bytes, max_size: int) -> bytes:
    out = bytearray()
    rest = data
    while rest:  # one gzip member after another (concatenated members are one gzip stream)
        d = zlib.decompressobj(47)  # 32 + 15: gzip or zlib header, detected
        out += d.decompress(rest, max_size + 1 - len(out))
        if len(out) > max_size:
            raise _too_large(max_size)
        if not d.eof:
            if d.unconsumed_tail:  # stopped by the limit with input left: more output to come
                raise _too_large(max_size)
            raise zlib.error("incomplete or truncated stream")
        # Another member follows only if it starts like one; anything else is trailing padding.
        rest = d.unused_data if d.unused_data[:2] == b"\x1f\x8b" else b""
    return bytes(out)


def _snappy(data: bytes) -> bytes:
    import cramjam

    out = [_XERIAL_HEADER]
    view = memoryview(data)
    for i in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(view[i : i + _XERIAL_BLOCK]))
        out.append(_I32.pack(len(block)))
        out.append(block)
    return b"".join(out)


def _unsnappy(data: bytes, max_size: int) -> bytes:
    import cramjam

    # Raw snappy starts with its uncompressed length: read it before inflating anything.
    if not data.startswith(_XERIAL_HEADER[:8]):
        if cramjam.snappy.decompress_raw_len(data) > max_size:
            raise _too_large(max_size)
        return bytes(cramjam.snappy.decompress_raw(data))
    out, pos, total = [], len(_XERIAL_HEADER), 0
    while pos < len(data):
        (n,) = _I32.unpack_from(data, pos)
        if n < 0 or pos + 4 + n > len(data):
            raise ValueError(f"xerial block of {n} bytes at {pos} overruns the data")
        block = data[pos + 4 : pos + 4 + n]
        total += cramjam.snappy.decompress_raw_len(block)
        if total > max_size:
            raise _too_large(max_size)
        out.append(bytes(cramjam.snappy.decompress_raw(block)))
        pos += 4 + n
    return b"".join(out)


def _lz4(data: bytes) -> bytes:
    import lz4.frame

    out: bytes = lz4.frame.compress(data, block_linked=False, content_checksum=False, store_size=False)
    return out


def _unlz4(data: bytes, max_size: int) -> bytes:
    import lz4.frame

    d = lz4.frame.LZ4FrameDecompressor()
    out = d.decompress(data, max_length=max_size + 1)
    if len(out) > max_size:
        raise _too_large(max_size)
    return bytes(out)


def _zstd(data: bytes) -> bytes:
    import cramjam

    return bytes(cramjam.zstd.compress(data, level=3))


def _unzstd(data: bytes, max_size: int) -> bytes:
    import cramjam

    # cramjam has no output limit: bound the frames from their block headers first.
    if zstd_max_output(data) > max_size:
        raise _too_large(max_size)
    out = bytes(cramjam.zstd.decompress(data))
    if len(out) > max_size:
        raise _too_large(max_size)
    return out


_ZSTD_MAGIC: Final = 0xFD2FB528
_ZSTD_BLOCK_MAX: Final = 128 * 1024  # a compressed block never inflates past this (RFC 8878)
_U32LE = struct.Struct("<I")


def zstd_max_output(data: bytes) -> int:
    """An upper bound on what the zstd frames in `data` inflate to, read from their headers
    (RFC 8878 3.1.1): raw and RLE blocks state their output size, a compressed block holds at
    most 128 KiB. Reads headers only, a few bytes per block."""
    pos, total, end = 0, 0, len(data)
    while pos < end:
        if end - pos < 8:
            raise ValueError("truncated zstd frame header")
        (magic,) = _U32LE.unpack_from(data, pos)
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # a skippable frame: magic, size, payload
            pos += 8 + _U32LE.unpack_from(data, pos + 4)[0]
            continue
        if magic != _ZSTD_MAGIC:
            raise ValueError(f"not a zstd frame (magic {magic:#x})")
        descriptor = data[pos + 4]
        single_segment = descriptor >> 5 & 1
        fcs_size = (0 if not single_segment else 1, 2, 4, 8)[descriptor >> 6]
        pos += 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 3] + fcs_size
        while True:
            if end - pos < 3:
                raise ValueError("truncated zstd block header")
            header = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
            last, kind, size = header & 1, header >> 1 & 3, header >> 3
            pos += 3
            if kind == 0:  # raw
                total, pos = total + size, pos + size
            elif kind == 1:  # RLE: one byte repeated `size` times
                total, pos = total + size, pos + 1
            elif kind == 2:
                total, pos = total + _ZSTD_BLOCK_MAX, pos + size
            else:
                raise ValueError("reserved zstd block type")
            if last:
                break
        pos += 4 if descriptor & 4 else 0  # content checksum
    return total


_COMPRESS: dict[int, Callable[[bytes], bytes]] = {1: _gzip, 2: _snappy, 3: _lz4, 4: _zstd}
_DECOMPRESS: dict[int, Callable[[bytes, int], bytes]] = {1: _gunzip, 2: _unsnappy, 3: _unlz4, 4: _unzstd}


def compress(codec: int, data: bytes | bytearray | memoryview) -> bytes:
    if codec == CompressionType.NONE:
        return bytes(data)
    return _COMPRESS[codec](bytes(data))


def decompress(
    codec: int, data: bytes | bytearray | memoryview, max_size: int = DEFAULT_MAX_DECOMPRESSED_BYTES
) -> bytes:
    """The records section inflated; CorruptRecordException past `max_size` bytes of output."""
    fn = _DECOMPRESS.get(codec)
    if fn is None:
        raise InvalidRecordException(f"Unknown compression type id {codec}")
    try:
        return fn(bytes(data), max_size)
    except CorruptRecordException:
        raise
    except Exception as e:  # each codec library raises its own error types
        raise CorruptRecordException(f"cannot decompress a {CompressionType(codec).name} batch: {e}") from e
