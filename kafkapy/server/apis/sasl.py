"""SaslHandshake (17) and SaslAuthenticate (36) reaching KafkaApis: outside a SASL exchange.

On a SASL listener the SaslProcessor answers them while a client authenticates; they only get
here on a PLAINTEXT or SSL listener or on an already authenticated connection, where Kafka's
KafkaApis answers ILLEGAL_SASL_STATE. They are registered so ApiVersions advertises them, which
clients read before choosing SaslHandshake v1 and SaslAuthenticate.
"""

from __future__ import annotations

from kafkapy.protocol.api_keys import ApiKey
from kafkapy.server.apis.kafka_apis import KafkaApis, handles
from kafkapy.server.network.request_channel import Request
from kafkapy.server.security.sasl_server import illegal_state_response


@handles(ApiKey.SASL_HANDSHAKE, raw=True)
def handle_sasl_handshake(apis: KafkaApis, request: Request) -> bytes:
    return illegal_state_response(request.header)


@handles(ApiKey.SASL_AUTHENTICATE, raw=True)
def handle_sasl_authenticate(apis: KafkaApis, request: Request) -> bytes:
    return illegal_state_response(request.header)
