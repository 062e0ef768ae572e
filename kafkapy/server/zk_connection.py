"""The broker's ZooKeeper connection, with kafkapy's embedded-ZooKeeper default.

When `zookeeper.connect` names only loopback addresses and nothing answers there, the broker
starts a real Apache ZooKeeper itself (data beside its log dirs) and says so in its log, so
`kafkapy-server-start config/server.properties` works on a fresh machine. Setting
`kafkapy.zookeeper.embedded.enable=false` turns that off: the broker then fails like Kafka
does when ZooKeeper is unreachable.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from kafkapy.server.metrics.process_metrics import (
    ZOOKEEPER_DISCONNECTS,
    ZOOKEEPER_EXPIRES,
    ZOOKEEPER_REQUEST_LATENCY,
)
from kafkapy.zk.watchers import StateChangeHandler

log = logging.getLogger("kafkapy.server.KafkaServer")


class ZooKeeperConnection:
    def __init__(self, config: Any) -> None:
        self.config = config
        self.client: Any = None
        self.embedded: Any = None
        self._new_session_callbacks: list[Callable[[], None]] = []

    def connect(self) -> None:
        from kafkapy.zk.kafka_zk_client import KafkaZkClient
        from kafkapy.zk.zk_auth import SECURE_ACL_ERROR, login_config_path, zk_credentials
        from kafkapy.zk.zk_io import ZkClientMetrics
        from kafkapy.zkserver.launcher import is_zookeeper_reachable

        config = self.config
        # Kafka's JaasUtils.isZkSecurityEnabled: a JAAS file with a `Client` section.
        credentials = zk_credentials()
        secure_acls = bool(config.zookeeper_set_acl)
        if secure_acls and credentials is None:
            jaas_path = login_config_path() or "null"
            raise ZkSecurityError(f"{SECURE_ACL_ERROR} [java.security.auth.login.config={jaas_path}]")
        candidate = config.embedded_zookeeper_candidate
        if candidate is not None and not is_zookeeper_reachable(config.zookeeper_hosts, timeout=2.0):
            self._start_embedded(candidate[1])
        log.info("Connecting to zookeeper on %s", config.zookeeper_connect)
        self.client = KafkaZkClient(
            config.zookeeper_connect,
            config.zookeeper_session_timeout_ms,
            config.zookeeper_connection_timeout_ms,
            credentials=credentials,
            secure_acls=secure_acls,
            metrics=ZkClientMetrics(
                request_latency_ns=ZOOKEEPER_REQUEST_LATENCY.record_ns,
                disconnected=ZOOKEEPER_DISCONNECTS.inc,
                expired=ZOOKEEPER_EXPIRES.inc,
            ),
        )
        self.client.start()
        self.client.create_top_level_paths()
        self.client.register_state_change_handler(_SessionHandler(self._new_session_callbacks))

    def _start_embedded(self, port: int) -> None:
        from kafkapy.zkserver.launcher import ZooKeeperProcess

        data_dir = self.config.kafkapy_zookeeper_embedded_data_dir
        log.info(
            "No ZooKeeper answers at %s: starting an embedded Apache ZooKeeper on 127.0.0.1:%d with data in %s "
            "(set kafkapy.zookeeper.embedded.enable=false to turn this off)",
            self.config.zookeeper_connect,
            port,
            data_dir,
        )
        props = {
            "dataDir": data_dir,
            "clientPort": str(port),
            "clientPortAddress": "127.0.0.1",
            "maxClientCnxns": "0",
        }
        # Its own session: a Ctrl-C in the terminal must reach the broker only, which then shuts
        # down cleanly (controlled shutdown needs ZooKeeper) and stops ZooKeeper last.
        self.embedded = ZooKeeperProcess(props, log_dir=os.environ.get("LOG_DIR") or data_dir, detach=True)
        self.embedded.start()

    def session_state(self) -> str:
        """Kafka's SessionExpireListener SessionState (read by the metrics thread)."""
        client = self.client
        return client.session_state if client is not None else "CLOSED"

    def on_new_session(self, callback: Callable[[], None]) -> None:
        self._new_session_callbacks.append(callback)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        if self.embedded is not None:
            log.info("Stopping the embedded ZooKeeper")
            self.embedded.stop()


class ZkSecurityError(Exception):
    """Kafka's java.lang.SecurityException at start-up (zookeeper.set.acl without credentials)."""


class _SessionHandler(StateChangeHandler):
    """Runs the broker's callbacks once a new session replaces an expired one."""

    def __init__(self, callbacks: list[Callable[[], None]]) -> None:
        super().__init__("broker-session")
        self.callbacks = callbacks

    def after_initializing_session(self) -> None:
        for cb in self.callbacks:
            cb()
