"""An in-process SocketServer with a trivial request handler, for the network layer's own tests."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from kafkapy.protocol.framing import parse_request_header
from kafkapy.server.config import KafkaConfig
from kafkapy.server.network.request_channel import Request
from kafkapy.server.network.socket_server import ListenerEndpoint, SocketServer

SIZE = struct.Struct(">i")


def request_frame(correlation_id: int, body: bytes = b"") -> bytes:
    """A Metadata v1 request header (api key 3) with `body`: the handler answers any api key."""
    payload = struct.pack(">hhih", 3, 1, correlation_id, 4) + b"test" + body
    return SIZE.pack(len(payload)) + payload


class EchoApis:
    """Answers each request with its correlation id and the body length; `slow` ones await."""

    def __init__(self, response_size: int = 0) -> None:
        self.response_size = response_size
        self.handled = 0
        self.gate: asyncio.Event | None = None

    def handle(self, request: Request) -> Any:
        self.handled += 1
        body = struct.pack(">ii", request.header.correlation_id, len(request.buffer) - request.body_offset)
        body += b"\0" * self.response_size
        frame = SIZE.pack(len(body)) + body
        if self.gate is not None:
            return self._later(frame, self.gate)
        return frame

    @staticmethod
    async def _later(frame: bytes, gate: asyncio.Event) -> bytes:
        await gate.wait()
        return frame


def config(**overrides: str) -> KafkaConfig:
    props = {
        "zookeeper.connect": "127.0.0.1:2181",
        "listeners": "PLAINTEXT://127.0.0.1:0",
        "log.dirs": "/tmp/kafkapy-unused",
        **{k.replace("_", "."): v for k, v in overrides.items()},
    }
    return KafkaConfig(props)


@asynccontextmanager
async def running_server(
    props: dict[str, str], apis: EchoApis | None = None, listeners: tuple[str, ...] = ("PLAINTEXT",)
) -> AsyncIterator[SocketServer]:
    cfg = config(**props)
    server = SocketServer(
        cfg,
        [ListenerEndpoint(name, "PLAINTEXT", "127.0.0.1", 0) for name in listeners],
        apis or EchoApis(),
        parse_request_header,
        str,
    )
    await server.startup()
    try:
        yield server
    finally:
        await server.shutdown()


async def read_response(reader: asyncio.StreamReader) -> tuple[int, int]:
    size = SIZE.unpack(await reader.readexactly(4))[0]
    body = await reader.readexactly(size)
    correlation_id, length = struct.unpack_from(">ii", body)
    return correlation_id, length


async def wait_for(predicate: Any, timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("condition not reached")
        await asyncio.sleep(0.01)
