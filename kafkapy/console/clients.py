"""How the console reaches the cluster: kafkapy's own blocking admin clients, built per request.

The console is one more Kafka client. `--command-config` gives the client properties Kafka's
tools take (security.protocol, sasl.mechanism, ssl.*); when the protocol is SASL_*, each user
logs in with their own cluster credentials and every request of theirs uses them, so the
cluster's ACLs apply to what the console shows and does. The clients are blocking (one request
at a time): pages call them on a worker thread, never on the server's event loop.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from kafkapy.client.admin import AdminClient, parse_bootstrap
from kafkapy.client.client_security import client_security, connector
from kafkapy.client.sasl_client import ClientSecurity
from kafkapy.protocol.errors import KafkaError, NetworkException, SaslAuthenticationException
from kafkapy.tools.consumer_groups_cmd.group_admin import GroupAdmin

CLIENT_ID = "kafkapy-console"
# A page waits this long at most for the cluster: a console that hangs helps nobody.
TIMEOUT_MS = 10_000
# client_security() insists on a JAAS line for SASL; the login form supplies the real values.
_PLACEHOLDER_JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="-" password="-";'
)


@dataclass(frozen=True, slots=True)
class Credentials:
    username: str
    password: str


class ClusterAccess:
    """The bootstrap servers and security settings every client of the console starts from."""

    def __init__(self, bootstrap_servers: str, properties: Mapping[str, str] | None = None) -> None:
        self.bootstrap_servers = bootstrap_servers
        props = dict(properties or {})
        self.sasl = props.get("security.protocol", "PLAINTEXT").strip().upper().startswith("SASL_")
        # A JAAS line in --command-config is the console's own account: the background samplers
        # of the plots use it (users still log in as themselves for the pages and actions).
        self.has_own_credentials = not self.sasl or bool(props.get("sasl.jaas.config"))
        if self.sasl and not props.get("sasl.jaas.config"):
            props["sasl.jaas.config"] = _PLACEHOLDER_JAAS
        # Raises ClientConfigError on unusable properties: the command refuses to start.
        self._security = client_security(props)

    @property
    def mechanism(self) -> str | None:
        return self._security.sasl_mechanism

    def security(self, credentials: Credentials | None) -> ClientSecurity:
        if not self.sasl or credentials is None:
            return self._security
        return dataclasses.replace(
            self._security, username=credentials.username, password=credentials.password
        )

    def authenticate(self, credentials: Credentials) -> None:
        """One SASL handshake with the first bootstrap broker that answers: the login check.
        A refusal raises the broker's SaslAuthenticationException (Kafka's wording); a cluster
        that cannot be reached at all raises the last network error as a KafkaError."""
        connect = connector(self.security(credentials), CLIENT_ID)
        last: Exception | None = None
        for host, port in parse_bootstrap(self.bootstrap_servers):
            try:
                conn = connect(host, port, TIMEOUT_MS / 1000)
            except OSError as e:
                last = e
                continue
            try:
                conn.api_versions()
                return
            except (KafkaError, OSError) as e:
                if isinstance(e, SaslAuthenticationException):
                    raise
                last = e
            finally:
                conn.close()
        if isinstance(last, KafkaError):
            raise last
        raise NetworkException(f"No broker of {self.bootstrap_servers} could be reached: {last}")

    def new_admin(self, credentials: Credentials | None, timeout_ms: int = TIMEOUT_MS) -> AdminClient:
        return AdminClient(
            self.bootstrap_servers, timeout_ms, connector(self.security(credentials), CLIENT_ID)
        )

    def new_groups(self, credentials: Credentials | None, timeout_ms: int = TIMEOUT_MS) -> GroupAdmin:
        return GroupAdmin(self.bootstrap_servers, timeout_ms, self.security(credentials))

    @contextmanager
    def admin(self, credentials: Credentials | None) -> Iterator[AdminClient]:
        client = self.new_admin(credentials)
        try:
            yield client
        finally:
            client.close()

    @contextmanager
    def groups(self, credentials: Credentials | None) -> Iterator[GroupAdmin]:
        client = self.new_groups(credentials)
        try:
            yield client
        finally:
            client.close()
