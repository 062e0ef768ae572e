"""Small requests: one connection pipelining pre-encoded single-record produce requests.

Every request (one 100 B record, acks=1, one partition) is encoded before the clock starts with
kafkapy.protocol (record batch v2, the Produce codec, request framing); only the correlation
ids differ. A writer thread pushes the whole stream with `sendall` while a reader thread
counts the responses, checks that the correlation ids come back in order and decodes one
response in 1,000 for its error code. TCP flow control is the only window, so the broker,
not the client, is the limit; the client's own CPU time is reported to show that.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time

from benchmarks.brokers import RunningBroker
from benchmarks.common import Window
from kafkapy.client.connection import BrokerConnection
from kafkapy.protocol import framing, messages
from kafkapy.protocol.api_keys import SUPPORTED_VERSIONS, ApiKey
from kafkapy.protocol.record_codec import build_batch

_SIZE = struct.Struct(">i")
_CORRELATION_AT = 4 + 2 + 2  # size prefix, api key, api version
CHECK_EVERY = 1000


def produce_version(bootstraps: list[str]) -> int:
    """The highest Produce version kafkapy and every broker in `bootstraps` speak."""
    version = SUPPORTED_VERSIONS[ApiKey.PRODUCE][1]
    for bootstrap in bootstraps:
        host, port = bootstrap.rsplit(":", 1)
        with BrokerConnection(host, int(port), "kafkapy-bench", 10.0) as conn:
            low, high = conn.api_versions()[ApiKey.PRODUCE]
            version = min(version, high)
    return version


def encode_stream(topic: str, version: int, count: int, record_size: int = 100) -> tuple[bytearray, int]:
    """`count` framed Produce requests back to back (correlation ids 0..count-1), and one's size."""
    batch = build_batch([(None, os.urandom(record_size), [], int(time.time() * 1000))])
    body = messages.encode_request(
        ApiKey.PRODUCE,
        version,
        {
            "transactional_id": None,
            "acks": 1,
            "timeout_ms": 30_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": bytes(batch)}]}],
        },
    )
    one = framing.encode_request_frame(ApiKey.PRODUCE, version, 0, "bench-pipeline", body)
    stream = bytearray(one * count)
    size = len(one)
    pack = struct.Struct(">i").pack_into
    for i in range(count):
        pack(stream, i * size + _CORRELATION_AT, i)
    return stream, size


def _send_all(sock: socket.socket, stream: bytearray, errors: list[BaseException]) -> None:
    view = memoryview(stream)
    try:
        for i in range(0, len(view), 1 << 20):
            sock.sendall(view[i : i + (1 << 20)])
    except BaseException as e:  # the reader reports the shortfall
        errors.append(e)


def run(broker: RunningBroker, topic: str, version: int, count: int) -> dict[str, object]:
    stream, _ = encode_stream(topic, version, count)
    header_version = framing.response_header_version(ApiKey.PRODUCE, version)
    host, port = broker.bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.settimeout(60)
    buf = bytearray(4 << 20)
    view = memoryview(buf)
    errors: list[BaseException] = []
    bad_codes = 0
    got = 0
    first_at = last_at = 0.0
    first_count = 0
    client0 = os.times()
    window = Window(broker).start()
    writer = threading.Thread(target=_send_all, args=(sock, stream, errors), daemon=True)
    writer.start()
    try:
        start = end = 0
        while got < count:
            if end == len(buf):  # compact what is left of a partial frame
                buf[0 : end - start] = buf[start:end]
                start, end = 0, end - start
            n = sock.recv_into(view[end:])
            if n == 0:
                raise ConnectionError(f"{broker.name} closed the connection after {got} responses")
            end += n
            while end - start >= 4:
                (size,) = _SIZE.unpack_from(buf, start)
                if end - start < 4 + size:
                    break
                (correlation_id,) = _SIZE.unpack_from(buf, start + 4)
                if correlation_id != got:
                    raise RuntimeError(f"response {got} carries correlation id {correlation_id}")
                if got % CHECK_EVERY == 0:
                    frame = bytes(view[start + 4 : start + 4 + size])
                    _, pos = framing.parse_response_header(frame, header_version)
                    resp = messages.decode_response(ApiKey.PRODUCE, version, frame, pos)
                    bad_codes += sum(p.error_code != 0 for t in resp.responses for p in t.partition_responses)
                got += 1
                start += 4 + size
            now = time.perf_counter()
            if not first_at:
                first_at, first_count = now, got
            last_at = now
        window.stop()
    finally:
        sock.close()
        writer.join(10)
    client1 = os.times()
    if errors:
        raise RuntimeError(f"sending to {broker.name} failed: {errors[0]!r}")
    if bad_codes:
        raise RuntimeError(f"{broker.name}: {bad_codes} sampled produce responses carry an error code")
    client_cpu = (client1.user - client0.user) + (client1.system - client0.system)
    return {
        "requests": count,
        "produce_version": version,
        # from the first recv to the last: connection set-up and the first burst are left out
        "requests_per_s": (count - first_count) / (last_at - first_at)
        if last_at > first_at
        else float("nan"),
        "seconds": window.wall_s,
        "broker_cpu_us_per_request": window.cpu_s / count * 1e6,
        "broker_cpu_util": window.cpu_s / window.wall_s,
        "client_cpu_util": client_cpu / window.wall_s,
    }
