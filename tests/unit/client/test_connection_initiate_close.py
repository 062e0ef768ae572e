"""BrokerConnection.initiate_close wakes a request blocked in another thread (a replica fetcher
stopping at shutdown must not wait for a busy leader's answer)."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from kafkapy.client.connection import BrokerConnection, ConnectionClosedError
from kafkapy.protocol.api_keys import ApiKey


@pytest.mark.timeout(20)
def test_initiate_close_wakes_a_blocked_send_at_once() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        conn = BrokerConnection("127.0.0.1", server.getsockname()[1], timeout=15.0)
        outcome: list[BaseException | None] = []

        def request() -> None:
            try:
                conn.send(ApiKey.METADATA, 9, {"topics": None})  # never answered
                outcome.append(None)
            except BaseException as e:  # noqa: BLE001 - the test reads it
                outcome.append(e)

        sender = threading.Thread(target=request, daemon=True)
        sender.start()
        peer, _ = server.accept()
        with peer:
            assert peer.recv(4)  # the request reached the "broker"; its answer never comes
            started = time.monotonic()
            conn.initiate_close()
            sender.join(5)
            waited = time.monotonic() - started
        assert not sender.is_alive()
        assert waited < 2.0  # not the 15 s request timeout
        assert isinstance(outcome[0], ConnectionClosedError)
        assert not conn.connected  # the sender closed it on the way out


def test_initiate_close_without_a_socket_does_nothing() -> None:
    conn = BrokerConnection("127.0.0.1", 1)
    conn.initiate_close()
    assert not conn.connected
