"""The broker's ephemeral registration at /brokers/ids/<id>, with the ports it really bound."""

from __future__ import annotations

import logging
from typing import Any

from kafkapy.server.zk.cluster_znodes import BrokerInfo, EndPoint

log = logging.getLogger("kafkapy.server.KafkaServer")


class BrokerRegistration:
    def __init__(self, config: Any, zk: Any, broker_id: int, bound: dict[str, Any]) -> None:
        self.zk = zk
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
        """Blocking: creates the ephemeral znode (again, after a session expiry)."""
        self.broker_epoch = self.zk.register_broker(self.broker_info)
