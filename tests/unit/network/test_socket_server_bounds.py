"""The network layer's bounds on an in-process SocketServer: request memory, connection quotas,
idle reaping and pipelined requests. Each test states the bound it checks."""

from __future__ import annotations

import asyncio
import logging
import socket
import struct

import pytest

from kafkapy.server.network.memory_pool import BASE_CAPACITY
from kafkapy.server.network.socket_server import SocketServer
from tests.unit.network.net_helpers import (
    SIZE,
    EchoApis,
    read_response,
    request_frame,
    running_server,
    wait_for,
)

NINETY_NINE_MB = 99 * 1024 * 1024


def _port(server: SocketServer) -> int:
    return server.bound_port("PLAINTEXT")


@pytest.mark.timeout(30)
def test_size_prefix_alone_allocates_nothing_and_the_server_still_answers() -> None:
    """50 connections announce 99 MB frames and send nothing more: each holds at most the 16 KB
    first buffer (not 99 MB) and no pool memory, and another client is answered."""

    async def run() -> None:
        async with running_server({}) as server:
            port = _port(server)
            writers = []
            for _ in range(50):
                _, w = await asyncio.open_connection("127.0.0.1", port)
                w.write(SIZE.pack(NINETY_NINE_MB))
                writers.append(w)
            await wait_for(lambda: sum(1 for c in server.connections if c._end == 4) == 50)
            held = sum(len(c._buf) for c in server.connections)
            assert held <= 50 * 16 * 1024
            assert server.memory_pool.used == 0
            r, w = await asyncio.open_connection("127.0.0.1", port)
            w.write(request_frame(7, b"x" * 10))
            assert await read_response(r) == (7, 10)
            for x in [*writers, w]:
                x.close()

    asyncio.run(run())


@pytest.mark.timeout(30)
def test_a_frame_past_the_base_reserves_from_the_pool_and_gives_it_back_when_idle() -> None:
    """A 1 MB request is received (the buffer grows to fit it), its reservation stays while the
    connection keeps the buffer, and the pool takes it back once the connection is idle and
    another connection needs the memory."""

    async def run() -> None:
        props = {
            "queued.max.request.bytes": str(2 * 1024 * 1024),
            "socket.request.max.bytes": str(2 * 1024 * 1024),
        }
        async with running_server(props) as server:
            port = _port(server)
            r1, w1 = await asyncio.open_connection("127.0.0.1", port)
            w1.write(request_frame(1, b"a" * 1_500_000))
            assert await read_response(r1) == (1, 1_500_000)
            pool = server.memory_pool
            assert 1_500_000 - BASE_CAPACITY < pool.used <= 1_500_000 + 8192
            # A second big frame needs the memory the first, idle, connection holds.
            r2, w2 = await asyncio.open_connection("127.0.0.1", port)
            w2.write(request_frame(2, b"b" * 1_500_000))
            assert await read_response(r2) == (2, 1_500_000)
            reserved = sorted(c._reserved for c in server.connections)
            assert reserved[0] == 0 and reserved[1] > 1_400_000  # the idle one gave its memory back
            assert pool.used <= 1_500_000 + 8192
            w1.close()
            w2.close()

    asyncio.run(run())


@pytest.mark.timeout(30)
def test_kafkas_unbounded_setting_still_grows_buffers_only_as_bytes_arrive() -> None:
    """queued.max.request.bytes=-1 (Kafka's default): nothing waits, the pool only counts, and a
    frame announced as 99 MB still costs only what was sent of it."""

    async def run() -> None:
        async with running_server({"queued.max.request.bytes": "-1"}) as server:
            r, w = await asyncio.open_connection("127.0.0.1", _port(server))
            w.write(request_frame(1, b"a" * 1_500_000))
            assert await read_response(r) == (1, 1_500_000)
            _, w2 = await asyncio.open_connection("127.0.0.1", _port(server))
            w2.write(SIZE.pack(NINETY_NINE_MB) + b"\0" * 200_000)
            await wait_for(lambda: any(c._end >= 200_004 for c in server.connections))
            big = max(len(c._buf) for c in server.connections)
            assert big < 2 * 1024 * 1024 and not server.memory_pool.bounded
            w.close()
            w2.close()

    asyncio.run(run())


@pytest.mark.timeout(30)
def test_a_connection_whose_frame_does_not_fit_waits_muted_then_completes() -> None:
    """Pool of 2 MiB, three connections each part-way through a 1.9 MB frame. As in Kafka's
    non-strict pool, the first two are granted (the second while memory is left), the third
    waits muted (reading stopped, its buffer at the base) until memory is released, then
    completes: no deadlock, never more than the pool plus one frame reserved."""

    async def run() -> None:
        mib2 = str(2 * 1024 * 1024)
        props = {"queued.max.request.bytes": mib2, "socket.request.max.bytes": mib2}
        async with running_server(props) as server:
            port = _port(server)
            pool = server.memory_pool
            frames = [request_frame(i, bytes([97 + i]) * 1_900_000) for i in range(3)]
            conns = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
            for i, (_, w) in enumerate(conns):
                w.write(frames[i][:200_000])
                if i < 2:
                    await wait_for(lambda i=i: pool.used > 1_800_000 * (i + 1))
            await wait_for(lambda: pool.waiting() == 1)
            waiting = next(c for c in server.connections if c._memory_wait)
            assert len(waiting._buf) <= BASE_CAPACITY
            assert pool.used <= 2 * 1024 * 1024 + 1_910_000
            for i in (0, 1):
                conns[i][1].write(frames[i][200_000:])
                assert await read_response(conns[i][0]) == (i, 1_900_000)
            conns[0][1].close()  # its memory returns to the pool and wakes the waiter
            conns[2][1].write(frames[2][200_000:])
            assert await read_response(conns[2][0]) == (2, 1_900_000)
            for _, w in conns[1:]:
                w.close()

    asyncio.run(run())


@pytest.mark.timeout(30)
def test_frames_larger_than_socket_request_max_bytes_close_with_kafkas_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def run() -> None:
        async with running_server({}) as server:
            r, w = await asyncio.open_connection("127.0.0.1", _port(server))
            w.write(SIZE.pack(200 * 1024 * 1024))
            assert await r.read() == b""  # closed by the broker
            w.close()

    with caplog.at_level(logging.WARNING, "kafkapy.network"):
        asyncio.run(run())
    assert "Invalid receive (size = 209715200 larger than 104857600)" in caplog.text


@pytest.mark.timeout(30)
def test_per_ip_limit_refuses_the_next_connection_with_kafkas_line(caplog: pytest.LogCaptureFixture) -> None:
    """max.connections.per.ip=3: the fourth connection from 127.0.0.1 is closed at once; an
    override raises the limit for that address."""

    async def run(props: dict[str, str], allowed: int) -> None:
        async with running_server(props) as server:
            conns = [await asyncio.open_connection("127.0.0.1", _port(server)) for _ in range(allowed + 1)]
            results = []
            for i, (r, w) in enumerate(conns):
                w.write(request_frame(i))
                try:
                    results.append(await asyncio.wait_for(read_response(r), 5))
                except (asyncio.IncompleteReadError, ConnectionError):
                    results.append(None)
            assert results[:allowed] == [(i, 0) for i in range(allowed)]
            assert results[allowed] is None
            assert server.connection_quotas.get("127.0.0.1") == allowed
            for _, w in conns:
                w.close()

    with caplog.at_level(logging.INFO, "kafkapy.network"):
        asyncio.run(run({"max.connections.per.ip": "3"}, 3))
    assert (
        "Rejected connection from /127.0.0.1, address already has the configured maximum of 3 connections."
        in caplog.text
    )
    asyncio.run(run({"max.connections.per.ip": "3", "max.connections.per.ip.overrides": "127.0.0.1:5"}, 5))


@pytest.mark.timeout(30)
def test_max_connections_leaves_the_next_client_in_the_backlog_until_one_closes() -> None:
    async def run() -> None:
        async with running_server({"max.connections": "2"}) as server:
            port = _port(server)
            c1 = await asyncio.open_connection("127.0.0.1", port)
            c2 = await asyncio.open_connection("127.0.0.1", port)
            await wait_for(lambda: len(server.connections) == 2)
            # TCP completes the handshake from the backlog, but nobody reads this one yet.
            r3, w3 = await asyncio.open_connection("127.0.0.1", port)
            w3.write(request_frame(3))
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(read_response(r3), 0.5)
            assert len(server.connections) == 2
            c1[1].close()
            assert await asyncio.wait_for(read_response(r3), 5) == (3, 0)
            for w in (c2[1], w3):
                w.close()

    asyncio.run(run())


@pytest.mark.timeout(30)
def test_the_inter_broker_listener_is_protected_at_max_connections() -> None:
    """max.connections=2 with two listeners: the inter-broker one (PLAINTEXT here) still accepts,
    and the least recently active connection of the other listener is closed to make room."""

    async def run() -> None:
        async with running_server({"max.connections": "2"}, listeners=("PLAINTEXT", "CLIENT")) as server:
            client_port, broker_port = server.bound_port("CLIENT"), server.bound_port("PLAINTEXT")
            r_old, w_old = await asyncio.open_connection("127.0.0.1", client_port)
            await wait_for(lambda: len(server.connections) == 1)
            await asyncio.sleep(0.05)
            r_new, w_new = await asyncio.open_connection("127.0.0.1", client_port)
            w_new.write(request_frame(1))
            assert await read_response(r_new) == (1, 0)
            r_ib, w_ib = await asyncio.open_connection("127.0.0.1", broker_port)
            w_ib.write(request_frame(2))
            assert await asyncio.wait_for(read_response(r_ib), 5) == (2, 0)
            assert await asyncio.wait_for(r_old.read(), 5) == b""  # the oldest client connection
            w_new.write(request_frame(3))
            assert await read_response(r_new) == (3, 0)
            for w in (w_old, w_new, w_ib):
                w.close()

    asyncio.run(run())


@pytest.mark.timeout(30)
def test_idle_connections_are_reaped_also_mid_frame_but_not_while_a_request_waits() -> None:
    """connections.max.idle.ms=300: an idle connection and one stopped mid-frame are closed; one
    whose request is still being handled is not, and gets its answer after the idle time."""

    async def run() -> None:
        apis = EchoApis()
        async with running_server({"connections.max.idle.ms": "300"}, apis) as server:
            port = _port(server)
            r_idle, w_idle = await asyncio.open_connection("127.0.0.1", port)
            r_mid, w_mid = await asyncio.open_connection("127.0.0.1", port)
            w_mid.write(request_frame(1, b"z" * 1000)[:500])
            apis.gate = asyncio.Event()
            r_busy, w_busy = await asyncio.open_connection("127.0.0.1", port)
            w_busy.write(request_frame(2))
            await asyncio.sleep(1.2)
            assert await asyncio.wait_for(r_idle.read(), 2) == b""
            assert await asyncio.wait_for(r_mid.read(), 2) == b""
            apis.gate.set()
            assert await asyncio.wait_for(read_response(r_busy), 2) == (2, 0)
            for w in (w_idle, w_mid, w_busy):
                w.close()

    asyncio.run(run())


@pytest.mark.timeout(60)
def test_pipelined_requests_of_a_client_that_reads_nothing_are_bounded() -> None:
    """A client writes 20,000 requests whose answers are 4 KB each (80 MB of answers) and reads
    none: the server stops reading once the socket and the transport's buffer are full, so what it
    holds for that connection stays near the write high-water mark plus one flush slice."""

    async def run() -> None:
        apis = EchoApis(response_size=4096)
        async with running_server({}, apis) as server:
            sock = socket.create_connection(("127.0.0.1", _port(server)))
            sock.setblocking(False)
            payload = b"".join(request_frame(i) for i in range(20_000))
            sent, stalled = 0, 0
            while sent < len(payload) and stalled < 50:
                try:
                    sent += sock.send(payload[sent : sent + 65536])
                    stalled = 0
                except BlockingIOError:
                    stalled += 1  # 0.5 s without progress: back-pressure reached the client
                    await asyncio.sleep(0.01)
            await asyncio.sleep(0.3)
            conn = next(iter(server.connections))
            buffered = conn.transport.get_write_buffer_size()
            print(f"handled {apis.handled} of 20000, sent {sent} B, transport buffer {buffered} B")
            assert apis.handled < 20_000
            assert buffered < 1024 * 1024, buffered
            sock.close()

    asyncio.run(run())


def test_request_frame_helper_round_trips() -> None:
    frame = request_frame(5, b"abc")
    (size,) = SIZE.unpack_from(frame)
    assert size == len(frame) - 4
    assert struct.unpack_from(">hhi", frame, 4) == (3, 1, 5)
