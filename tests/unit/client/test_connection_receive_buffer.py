"""BrokerConnection's receive_buffer_bytes (a replica fetcher's replica.socket.receive.buffer.bytes).

The buffer must be set before connect: the window scale a connection offers in its SYN is fixed
from the buffer the socket has at that moment, so a buffer set afterwards would leave the
auto-tuned scale in place.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator

import pytest

from kafkapy.client.connection import BrokerConnection, open_client_socket

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="TCP_INFO and buffer doubling are Linux's")

# struct tcp_info: byte 6 holds tcpi_snd_wscale in its low four bits (the scale the peer offered).
_WSCALE_BYTE = 6


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(10)
    yield server
    server.close()


def _scale_offered_by_client(listener: socket.socket, receive_buffer_bytes: int) -> tuple[int, int]:
    """(window scale the client offered, as the accepting side sees it; the client's SO_RCVBUF)."""
    client = open_client_socket("127.0.0.1", listener.getsockname()[1], 10.0, receive_buffer_bytes)
    accepted, _ = listener.accept()
    try:
        info = accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
        return info[_WSCALE_BYTE] & 0x0F, client.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
    finally:
        accepted.close()
        client.close()


@pytest.mark.timeout(30)
def test_the_receive_buffer_is_set_before_the_handshake(listener: socket.socket) -> None:
    """The socket has the buffer (Linux reports twice the value) and the scale offered in the
    handshake is the one for that buffer, below the auto-tuned one (-1), which is sized from
    net.ipv4.tcp_rmem's maximum."""
    scale, rcvbuf = _scale_offered_by_client(listener, 32768)
    default_scale, _ = _scale_offered_by_client(listener, -1)
    assert rcvbuf == 2 * 32768
    assert scale < default_scale, (scale, default_scale)


@pytest.mark.timeout(30)
def test_a_broker_connection_uses_it(listener: socket.socket) -> None:
    conn = BrokerConnection("127.0.0.1", listener.getsockname()[1], timeout=10.0, receive_buffer_bytes=32768)
    try:
        conn.connect()
        accepted, _ = listener.accept()
        accepted.close()
        assert conn._sock is not None
        assert conn._sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) == 2 * 32768
    finally:
        conn.close()


@pytest.mark.timeout(30)
def test_a_refused_connect_raises_the_os_error() -> None:
    unused = socket.socket()
    unused.bind(("127.0.0.1", 0))
    port = unused.getsockname()[1]
    unused.close()
    with pytest.raises(ConnectionRefusedError):
        open_client_socket("127.0.0.1", port, 5.0, 65536)
