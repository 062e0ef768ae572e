"""KIP-219 in the Processor, on a real socket server with a fake handler that throttles the
first request it sees: a version whose client throttles itself is answered at once and the
connection is then muted (the next pipelined request waits); an older version's answer is held
for the throttle time. No request of the connection is read while it is throttled."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest

from kafkapy.protocol.framing import request_header_version
from kafkapy.server.network.request_channel import Request
from tests.unit.network.net_helpers import SIZE, EchoApis, read_response, running_server

THROTTLE_MS = 400


def frame(api_key: int, version: int, correlation_id: int) -> bytes:
    payload = struct.pack(">hhih", api_key, version, correlation_id, 4) + b"test"
    return SIZE.pack(len(payload)) + payload


class ThrottleFirst(EchoApis):
    def handle(self, request: Request) -> Any:
        if self.handled == 0:
            request.throttle_time_ms = THROTTLE_MS
        return super().handle(request)


async def _two_answers(api_key: int, version: int) -> tuple[float, float]:
    """Seconds until the first and the second answer of two pipelined requests."""
    # The first header of an API loads its message spec (a fraction of a second): not timed.
    request_header_version(api_key, version)
    async with running_server({}, ThrottleFirst()) as server:
        port = server.bound_port("PLAINTEXT")
        r, w = await asyncio.open_connection("127.0.0.1", port)
        loop = asyncio.get_running_loop()
        start = loop.time()
        w.write(frame(api_key, version, 1) + frame(api_key, version, 2))
        assert (await read_response(r))[0] == 1
        first = loop.time() - start
        assert (await read_response(r))[0] == 2
        second = loop.time() - start
        w.close()
        return first, second


@pytest.mark.timeout(30)
def test_a_kip219_answer_goes_at_once_and_the_connection_is_muted_after_it() -> None:
    # DescribeClientQuotas v0: born after KIP-219, the client throttles itself.
    first, second = asyncio.run(_two_answers(48, 0))
    assert first < THROTTLE_MS / 1000 / 2
    assert second >= THROTTLE_MS / 1000 * 0.9


@pytest.mark.timeout(30)
def test_an_older_versions_answer_is_held_for_the_throttle_time() -> None:
    # Metadata v1: before KIP-219 (v6), the broker delays the answer itself.
    first, second = asyncio.run(_two_answers(3, 1))
    assert first >= THROTTLE_MS / 1000 * 0.9
    assert second >= first
