"""socket.receive.buffer.bytes and socket.send.buffer.bytes on an in-process SocketServer.

A fixed receive buffer must be in place before the TCP handshake, as Kafka sets it: the window
scale a connection offers is fixed then, from the buffer it has at that moment. (Why the
default is -1 rather than a fixed buffer at all: config_keys.py.)
"""

from __future__ import annotations

import asyncio
import socket
import sys

import pytest

from kafkapy.server.network.socket_server import SocketServer
from tests.unit.network.net_helpers import read_response, request_frame, running_server, wait_for

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="TCP_INFO and buffer doubling are Linux's")

# struct tcp_info: byte 6 holds tcpi_snd_wscale in its low four bits (the scale the peer offered).
_WSCALE_BYTE = 6


def _offered_window_scale(client: socket.socket) -> int:
    info = client.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    return info[_WSCALE_BYTE] & 0x0F


async def _connect_and_inspect(props: dict[str, str]) -> tuple[int, int, int]:
    """(window scale the broker offered, the accepted socket's SO_RCVBUF, its SO_SNDBUF)."""
    async with running_server(props) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.bound_port("PLAINTEXT"))
        try:
            writer.write(request_frame(1))
            assert await read_response(reader) == (1, 0)  # the connection is served
            await wait_for(lambda: len(server.connections) == 1)
            accepted = _accepted_socket(server)
            client = writer.get_extra_info("socket")
            return (
                _offered_window_scale(client),
                accepted.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF),
                accepted.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF),
            )
        finally:
            writer.close()


def _accepted_socket(server: SocketServer) -> socket.socket:
    (processor,) = server.connections
    assert processor.transport is not None
    sock: socket.socket = processor.transport.get_extra_info("socket")
    return sock


@pytest.mark.timeout(30)
def test_the_receive_buffer_is_in_place_before_the_handshake() -> None:
    """Kafka's 100 KiB default: the accepted socket has it (Linux reports twice the value, its
    bookkeeping share included) and the window scale offered at the handshake is the one for
    that buffer, smaller than the one offered for the kernel's auto-tuned default (-1)."""
    scale, rcvbuf, sndbuf = asyncio.run(
        _connect_and_inspect({"socket_receive_buffer_bytes": "102400", "socket_send_buffer_bytes": "102400"})
    )
    default_scale, default_rcvbuf, _ = asyncio.run(
        _connect_and_inspect({"socket_receive_buffer_bytes": "-1", "socket_send_buffer_bytes": "-1"})
    )
    assert rcvbuf == 2 * 102400
    assert sndbuf == 2 * 102400
    assert default_rcvbuf != rcvbuf
    # Before this was set on the listening socket, the accepted socket's buffer was shrunk after
    # the handshake and the scale offered was the auto-tuned one.
    assert scale < default_scale, (scale, default_scale)
