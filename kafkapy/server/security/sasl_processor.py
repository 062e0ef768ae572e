"""SaslProcessor: a Processor whose requests wait for SASL authentication (SASL_PLAINTEXT/SASL_SSL).

Until the client has authenticated, every frame goes to the connection's
SaslServerAuthenticator; only ApiVersions reaches KafkaApis before that, and any other request
closes the connection (ILLEGAL_SASL_STATE, as Kafka does). Once authenticated the frames take
the ordinary Processor path with the SASL principal on each Request, except a SaslHandshake v1
(KIP-368 re-authentication) and requests arriving after the session expired
(`connections.max.reauth.ms`), which close the connection. PLAINTEXT and SSL listeners use the
plain Processor, so their hot path carries none of this.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from typing import TYPE_CHECKING

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.protocol.errors import ProtocolError
from kafkapy.server.network.processor import Processor
from kafkapy.server.security.sasl_server import (
    PASS,
    SaslListenerConfig,
    SaslOutcome,
    SaslServerAuthenticator,
)
from kafkapy.server.security.sasl_state import IllegalSaslStateError

if TYPE_CHECKING:
    from kafkapy.server.network.socket_server import SocketServer

log = logging.getLogger("kafkapy.network.Processor")
_API_KEY = struct.Struct(">h")


class SaslProcessor(Processor):
    def __init__(
        self, server: SocketServer, listener_name: str, client_ip: str, sasl: SaslListenerConfig
    ) -> None:
        super().__init__(server, listener_name, client_ip)
        self.authenticator = SaslServerAuthenticator(sasl, "")
        # Until authenticated a client may not send (nor make the broker reserve memory for) more
        # than sasl.server.max.receive.size, as in Kafka; socket.request.max.bytes applies after.
        self._authenticated_max_request_size = self._max_request_size
        self._max_request_size = min(self._max_request_size, server.config.sasl_server_max_receive_size)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.authenticator.connection_id = self.connection_id
        self.authenticator.client_host = self.client_host

    def _dispatch(self, frame: memoryview) -> None:
        auth = self.authenticator
        if auth.authenticated:
            handshake = len(frame) >= 2 and _API_KEY.unpack_from(frame)[0] == ApiKey.SASL_HANDSHAKE
            if auth.session_expired(time.monotonic()) and not handshake:
                log.info(
                    "Closing connection %s: SASL session of %s expired (connections.max.reauth.ms)"
                    " without re-authentication",
                    self.connection_id,
                    self.principal,
                )
                self.close()
                return
            if not (handshake and auth.handshake_version >= 1):
                super()._dispatch(frame)
                return
        try:
            outcome = auth.receive(frame)
        except (IllegalSaslStateError, ProtocolError, ValueError) as e:
            # Kafka: "Unexpected Kafka request of type X during SASL handshake." and the close.
            log.warning("Closing connection %s: %s", self.connection_id, e)
            self.close()
            return
        except Exception:  # noqa: BLE001 - hostile bytes must cost only their connection
            log.exception(
                "Closing connection %s: unexpected error during SASL authentication", self.connection_id
            )
            self.close()
            return
        if outcome is PASS:
            super()._dispatch(frame)
        elif isinstance(outcome, SaslOutcome):
            self._deliver(outcome)
        else:
            # A SCRAM credential being read from ZooKeeper: muted like any request in progress.
            self._muted = True
            self.server.request_channel.acquire()
            task = asyncio.ensure_future(outcome)
            task.add_done_callback(self._on_outcome)

    def _on_outcome(self, task: asyncio.Future[SaslOutcome]) -> None:
        self.server.request_channel.release()
        self._muted = False
        self.last_active = time.monotonic()
        if task.cancelled() or task.exception() is not None:
            if not task.cancelled():
                log.error(
                    "Closing connection %s: SASL authentication error",
                    self.connection_id,
                    exc_info=task.exception(),
                )
            self.close()
            return
        self._deliver(task.result())
        self._process()

    def _deliver(self, outcome: SaslOutcome) -> None:
        if self.authenticator.authenticated and self.authenticator.principal is not None:
            self.principal = self.authenticator.principal
            self._max_request_size = self._authenticated_max_request_size
        if outcome.response is not None:
            self.send_response(outcome.response)
        if outcome.close:
            self._flush_out()  # the transport writes what it holds before it closes
            self.close()
