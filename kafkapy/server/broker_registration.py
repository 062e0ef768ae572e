"""The broker's ephemeral registration at /brokers/ids/<id>, with the ports it really bound."""

from __future__ import annotations

import logging
import time
from typing import Any

from kazoo.exceptions import NodeExistsError

from kafkapy.zk.cluster_znodes import BrokerIdZNode, BrokerInfo, EndPoint

log = logging.getLogger("kafkapy.server.KafkaServer")


class BrokerRegistration:
    def __init__(self, config: Any, zk: Any, broker_id: int, bound: dict[str, Any]) -> None:
        self.zk = zk
        self.session_timeout_s = config.zookeeper_session_timeout_ms / 1000
        endpoints = []
        for ep in config.advertised_endpoints():
            port = ep.port
            if port == 0 and ep.listener_name in bound:
                # listeners=PLAINTEXT://:0 binds an ephemeral port: advertise the one we got.
                port = bound[ep.listener_name].port
            endpoints.append(EndPoint(ep.listener_name, ep.host, port, ep.security_protocol))
        self.broker_info = BrokerInfo(broker_id, tuple(endpoints), rack=config.get("broker.rack"))
        self.broker_epoch = -1

    def register(self) -> None:
        """Blocking: creates the ephemeral znode (again, after a session expiry).

        A node left by this broker's previous, dead process (killed before its session ended)
        disappears once that session times out, so it is waited for, up to one session timeout
        and a bit; a node that outlives that belongs to a live broker with the same id, and
        start-up fails with Kafka's error.
        """
        deadline = time.monotonic() + self.session_timeout_s * 1.5 + 2
        waited = False
        while True:
            try:
                self.broker_epoch = self.zk.register_broker(self.broker_info)
                return
            except NodeExistsError:
                if time.monotonic() > deadline:
                    raise
                if not waited:
                    log.info(
                        "%s exists from another session: waiting up to %.0f s for it to expire "
                        "(a previous process of this broker that did not shut down cleanly)",
                        BrokerIdZNode.path(self.broker_info.id),
                        deadline - time.monotonic(),
                    )
                    waited = True
                time.sleep(0.5)
