"""Codecs read what other clients write (kafka-python's codec module) and vice versa."""

from __future__ import annotations

import os

import kafka.codec as kp
import pytest

from kafkapy.client.records import decode_record_set
from kafkapy.protocol.compression import codec_for, compress, decompress
from kafkapy.protocol.errors import CorruptRecordException
from kafkapy.protocol.record_codec import build_batch

DATA = os.urandom(50) * 2000 + b"tail"


def test_each_codec_round_trips_and_interoperates_with_kafka_python() -> None:
    for codec in range(5):
        assert decompress(codec, compress(codec, DATA)) == DATA if codec else compress(0, DATA) == DATA
    assert kp.gzip_decode(compress(1, DATA)) == DATA
    assert kp.snappy_decode(compress(2, DATA)) == DATA
    assert kp.lz4_decode(compress(3, DATA)) == DATA
    assert decompress(1, kp.gzip_encode(DATA)) == DATA
    assert decompress(2, kp.snappy_encode(DATA, xerial_compatible=True)) == DATA
    assert decompress(2, kp.snappy_encode(DATA, xerial_compatible=False)) == DATA  # librdkafka's raw form
    assert decompress(3, kp.lz4_encode(DATA)) == DATA


def test_codec_names() -> None:
    assert codec_for("GZIP") == 1 and codec_for("3") == 3 and codec_for("uncompressed") == 0
    with pytest.raises(ValueError):
        codec_for("brotli")


def test_decode_record_set_skips_records_before_the_position_and_stops_at_a_partial_batch() -> None:
    first = build_batch([(None, b"a", [], 1), (None, b"b", [], 2)], base_offset=10)
    second = build_batch([(b"k", b"c", [], 3)], base_offset=12)
    records, next_offset = decode_record_set("t", 0, bytes(first + second + second[:30]), min_offset=11)
    assert [(r.offset, r.value) for r in records] == [(11, b"b"), (12, b"c")]
    assert next_offset == 13


def test_a_corrupt_batch_is_refused() -> None:
    batch = build_batch([(None, b"value", [], 1)])
    batch[-2] ^= 0xFF
    with pytest.raises(CorruptRecordException):
        decode_record_set("t", 0, bytes(batch))
