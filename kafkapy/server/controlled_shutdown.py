"""The broker side of controlled shutdown: ask the controller to move leadership away first.

As Kafka's KafkaServer.controlledShutdown: find the controller, send ControlledShutdown,
retry up to controlled.shutdown.max.retries with controlled.shutdown.retry.backoff.ms while
partitions remain led here. Clients then fail over before the broker stops serving, instead
of after a session timeout.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

from kafkapy.protocol.api_keys import ApiKey

log = logging.getLogger("kafkapy.server.KafkaServer")


def request_controlled_shutdown(server: Any) -> bool:
    """Blocking; True when the controller reports no partition left for this broker to lead."""
    from kafkapy.client.connection import BrokerConnection

    config = server.config
    retries = config.controlled_shutdown_max_retries
    backoff_s = config.controlled_shutdown_retry_backoff_ms / 1000
    listener = config.inter_broker_listener_name
    log.info("%s Starting controlled shutdown", server.log_ident)
    for attempt in range(1, retries + 1):
        if not server.zk.client.kazoo.connected:
            log.warning("%s Not connected to ZooKeeper: skipping controlled shutdown", server.log_ident)
            return False
        controller_id = server.zk.client.get_controller_id()
        broker = server.zk.client.get_broker(controller_id) if controller_id is not None else None
        endpoint = broker.endpoint(listener) if broker is not None else None
        if endpoint is None:
            log.info("%s No controller registered: skipping controlled shutdown", server.log_ident)
            return False
        try:
            with contextlib.closing(
                BrokerConnection(
                    endpoint.host,
                    endpoint.port,
                    f"broker-{server.broker_id}-controlled-shutdown",
                    config.controller_socket_timeout_ms / 1000,
                    # The controller's inter-broker listener: its TLS/SASL, as the fetchers use.
                    security=server.inter_broker_security,
                )
            ) as conn:
                response = conn.send(
                    ApiKey.CONTROLLED_SHUTDOWN,
                    3,
                    {"broker_id": server.broker_id, "broker_epoch": server.registration.broker_epoch},
                )
            assert response is not None  # None only for requests without an answer (acks=0 Produce)
            if response.error_code == 0 and not response.remaining_partitions:
                log.info("%s Controlled shutdown request returned successfully", server.log_ident)
                return True
            remaining = [f"{p.topic_name}-{p.partition_index}" for p in response.remaining_partitions]
            log.info(
                "%s Remaining partitions to move: %s (error code %d)",
                server.log_ident,
                remaining,
                response.error_code,
            )
        except Exception as e:
            log.warning("%s Error during controlled shutdown attempt %d: %s", server.log_ident, attempt, e)
        if attempt < retries:
            log.info("%s Retrying controlled shutdown after the previous attempt failed...", server.log_ident)
            time.sleep(backoff_s)
    log.warning(
        "%s Proceeding to do an unclean shutdown as all the controlled shutdown attempts failed",
        server.log_ident,
    )
    return False
