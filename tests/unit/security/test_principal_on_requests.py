"""The authenticated principal travels with every request: an in-process SocketServer with an
SSL listener (mutual TLS, a mapping rule) and a SASL_PLAINTEXT listener (PLAIN), a handler that
records `request.principal`, and kafkapy's own BrokerConnection as the client."""

from __future__ import annotations

import asyncio
import ssl
import sys
from pathlib import Path

import pytest

from kafkapy.client.connection import BrokerConnection
from kafkapy.client.sasl_client import ClientSecurity
from kafkapy.protocol import framing, messages
from kafkapy.protocol.framing import parse_request_header
from kafkapy.server.config import KafkaConfig
from kafkapy.server.network.request_channel import Request
from kafkapy.server.network.socket_server import ListenerEndpoint, SocketServer
from kafkapy.server.security.channel_builder import listener_security

# tests/ is not a package: put it on the path to reach the test-only certificate helper.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from security_pki import make_pki  # noqa: E402

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'


class RecordingApis:
    def __init__(self) -> None:
        self.principals: list[str] = []

    def handle(self, request: Request) -> bytes:
        self.principals.append(str(request.principal))
        h = request.header
        body = messages.encode_response(
            h.api_key, h.api_version, {"brokers": [], "controller_id": -1, "topics": []}
        )
        return framing.encode_response_frame(h.api_key, h.api_version, h.correlation_id, body)


@pytest.mark.timeout(60)
def test_tls_and_sasl_principals_reach_the_handler(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    config = KafkaConfig(
        {
            "zookeeper.connect": "127.0.0.1:2181",
            "log.dirs": str(tmp_path / "logs"),
            "listeners": "SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
            "security.inter.broker.protocol": "SSL",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(pki.server_keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pki.ca),
            "ssl.client.auth": "required",
            "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),.*$/$1/U,DEFAULT",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        }
    )
    security = {
        ep.listener_name: listener_security(config, ep.listener_name, ep.security_protocol, None)
        for ep in config.listener_endpoints()
    }
    apis = RecordingApis()
    client_tls = ssl.create_default_context(cafile=str(pki.ca))
    client_tls.load_cert_chain(str(pki.client_cert), str(pki.client_key))

    async def scenario() -> None:
        server = SocketServer(
            config,
            [
                ListenerEndpoint(ep.listener_name, ep.security_protocol, "127.0.0.1", 0)
                for ep in config.listeners
            ],
            apis,
            parse_request_header,
            str,
            security,
        )
        await server.startup()
        try:
            loop = asyncio.get_running_loop()

            def clients() -> None:
                tls = ClientSecurity("SSL", client_tls)
                with BrokerConnection(
                    "127.0.0.1", server.bound_port("SSL"), timeout=10, security=tls
                ) as conn:
                    conn.send(3, 1, {"topics": []})
                sasl = ClientSecurity("SASL_PLAINTEXT", None, "PLAIN", "alice", "alice-secret")
                port = server.bound_port("SASL_PLAINTEXT")
                with BrokerConnection("127.0.0.1", port, timeout=10, security=sasl) as conn:
                    conn.send(3, 1, {"topics": []})

            await loop.run_in_executor(None, clients)
        finally:
            await server.shutdown()

    asyncio.run(scenario())
    assert apis.principals == ["User:ALICE", "User:alice"]


@pytest.mark.timeout(30)
def test_frames_before_authentication_are_bounded_by_sasl_server_max_receive_size(tmp_path: Path) -> None:
    config = KafkaConfig(
        {
            "zookeeper.connect": "127.0.0.1:2181",
            "log.dirs": str(tmp_path / "logs"),
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
            "security.inter.broker.protocol": "SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.jaas.config": JAAS,
        }
    )
    security = {"SASL_PLAINTEXT": listener_security(config, "SASL_PLAINTEXT", "SASL_PLAINTEXT", None)}

    async def scenario() -> bytes:
        server = SocketServer(
            config,
            [ListenerEndpoint("SASL_PLAINTEXT", "SASL_PLAINTEXT", "127.0.0.1", 0)],
            RecordingApis(),
            parse_request_header,
            str,
            security,
        )
        await server.startup()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.bound_port("SASL_PLAINTEXT"))
            # 1 MB announced before any handshake: over the 512 KB default, closed at the prefix.
            writer.write((1 << 20).to_bytes(4, "big") + b"\0" * 1000)
            data = await asyncio.wait_for(reader.read(100), 10)
            writer.close()
            return data
        finally:
            await server.shutdown()

    assert asyncio.run(scenario()) == b""
