"""The record decompression the legacy consumer and dump-log rely on (kafkapy.protocol.compression)."""

from __future__ import annotations

import cramjam
import pytest

from kafkapy.protocol.compression import decompress
from kafkapy.protocol.errors import CorruptRecordException
from kafkapy.protocol.record_batch import CompressionType, read_header, validate_records
from kafkapy.protocol.record_codec import build_batch, compress_batch, decode_batch_records

BATCH = build_batch(
    [(b"k%d" % i, b"value-%d" % i * 10, [("h", b"x")], 1_000 + i) for i in range(20)], base_offset=40
)


@pytest.mark.parametrize("codec", list(CompressionType))
def test_every_codec_round_trips_a_batch_with_a_valid_crc(codec: CompressionType) -> None:
    batch = compress_batch(BATCH, codec)
    assert read_header(batch).compression == codec
    validate_records(memoryview(batch), None, from_client=False)  # CRC and sizes hold
    assert decode_batch_records(batch) == decode_batch_records(BATCH)
    assert decode_batch_records(batch)[0].offset == 40


def test_snappy_reads_librdkafkas_raw_blocks_as_well_as_java_xerial_frames() -> None:
    data = b"abc" * 1000
    assert decompress(CompressionType.SNAPPY, bytes(cramjam.snappy.compress_raw(data))) == data
    framed = compress_batch(build_batch([(None, data, [], 0)]), CompressionType.SNAPPY)
    assert bytes(framed[61:69]) == b"\x82SNAPPY\x00"


def test_garbage_is_a_corrupt_record() -> None:
    with pytest.raises(CorruptRecordException):
        decompress(CompressionType.GZIP, b"not gzip")
