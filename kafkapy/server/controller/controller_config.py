"""The broker settings the controller reads, taken once from KafkaConfig (or given directly in tests)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    broker_id: int
    delete_topic_enable: bool = True
    unclean_leader_election_enable: bool = False
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_per_broker_percentage: int = 10
    leader_imbalance_check_interval_seconds: float = 300.0
    controller_socket_timeout_ms: int = 30000
    # The listener the controller connects to brokers on; None: PLAINTEXT, else the first one.
    inter_broker_listener_name: str | None = None
    # Kafka waits this long after failover before the first automatic rebalance check.
    first_rebalance_delay_seconds: float = 5.0

    @classmethod
    def from_kafka_config(cls, config: Any) -> ControllerConfig:
        if isinstance(config, ControllerConfig):
            return config

        def get(name: str, default: Any) -> Any:
            try:
                value = config.get(name)
            except KeyError:
                return default
            return default if value is None else value

        try:
            listener = config.inter_broker_listener_name
        except (AttributeError, KeyError):
            listener = None
        return cls(
            broker_id=int(get("broker.id", -1)),
            delete_topic_enable=bool(get("delete.topic.enable", True)),
            unclean_leader_election_enable=bool(get("unclean.leader.election.enable", False)),
            auto_leader_rebalance_enable=bool(get("auto.leader.rebalance.enable", True)),
            leader_imbalance_per_broker_percentage=int(get("leader.imbalance.per.broker.percentage", 10)),
            leader_imbalance_check_interval_seconds=float(
                get("leader.imbalance.check.interval.seconds", 300)
            ),
            controller_socket_timeout_ms=int(get("controller.socket.timeout.ms", 30000)),
            inter_broker_listener_name=listener,
        )
