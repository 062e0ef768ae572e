"""Znodes about the cluster itself: controller, cluster id, broker registrations, features.

One class per znode, as Kafka's `kafka/zk/ZkData.scala` has one object per znode: `path(...)` is
built from the parent's path, `encode` returns the exact bytes Kafka writes, `decode` returns a
typed value.
"""

from __future__ import annotations

import base64
import enum
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from kafkapy.zk._json import decode_json, encode_json, now_ms, ordered
from kafkapy.zk.errors import ZkDataError


def generate_cluster_id() -> str:
    """A Kafka-style cluster id: a random UUID, base64url without padding (22 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode("ascii")


def generate_topic_id() -> str:
    """A Kafka-style topic id (Kafka's `Uuid.randomUuid`).

    Kafka rejects ids whose string starts with '-' (they look like command-line flags) and the
    all-zero id (it means "no id"), so we draw again in those cases.
    """
    while True:
        candidate = generate_cluster_id()
        if not candidate.startswith("-") and candidate != "AAAAAAAAAAAAAAAAAAAAAA":
            return candidate


class ControllerZNode:
    """Ephemeral /controller: which broker is the active controller."""

    @staticmethod
    def path() -> str:
        return "/controller"

    @staticmethod
    def encode(broker_id: int, timestamp_ms: int | None = None) -> bytes:
        ts = now_ms() if timestamp_ms is None else timestamp_ms
        return encode_json({"version": 1, "brokerid": broker_id, "timestamp": str(ts)})

    @staticmethod
    def decode(data: bytes) -> int | None:
        js = decode_json(data)
        return None if js is None else int(js["brokerid"])


class ControllerEpochZNode:
    """Persistent /controller_epoch: the epoch as decimal text (not JSON)."""

    @staticmethod
    def path() -> str:
        return "/controller_epoch"

    @staticmethod
    def encode(epoch: int) -> bytes:
        return str(epoch).encode("utf-8")

    @staticmethod
    def decode(data: bytes) -> int:
        return int(data.decode("utf-8"))


class ClusterZNode:
    @staticmethod
    def path() -> str:
        return "/cluster"


class ClusterIdZNode:
    """/cluster/id: note that Kafka writes its "version" as a string here, unlike elsewhere."""

    @staticmethod
    def path() -> str:
        return f"{ClusterZNode.path()}/id"

    @staticmethod
    def encode(cluster_id: str) -> bytes:
        return encode_json({"version": "1", "id": cluster_id})

    @staticmethod
    def decode(data: bytes) -> str:
        js = decode_json(data)
        if not isinstance(js, dict) or "id" not in js:
            raise ZkDataError(f"Failed to parse the cluster id json {data!r}")
        return str(js["id"])


class BrokersZNode:
    @staticmethod
    def path() -> str:
        return "/brokers"


class BrokerIdsZNode:
    @staticmethod
    def path() -> str:
        return f"{BrokersZNode.path()}/ids"


class BrokerSequenceIdZNode:
    """/brokers/seqid: its zk data version is the broker id sequence (broker.id.generation)."""

    @staticmethod
    def path() -> str:
        return f"{BrokersZNode.path()}/seqid"


@dataclass(frozen=True, slots=True)
class EndPoint:
    listener_name: str
    host: str | None
    port: int
    security_protocol: str

    @property
    def connection_string(self) -> str:
        if self.host is None:
            return f"{self.listener_name}://:{self.port}"
        # IPv6 literals are bracketed, as Kafka's Utils.formatAddress does.
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener_name}://{host}:{self.port}"

    @classmethod
    def parse(cls, connection_string: str, protocol_map: dict[str, str] | None = None) -> EndPoint:
        m = _ENDPOINT_RE.match(connection_string)
        if m is None:
            raise ZkDataError(f"Unable to parse {connection_string} to a broker endpoint")
        listener, host, port = m.group(1), m.group(2), int(m.group(3))
        # Without a listener->protocol map (registration v2/v3) the listener name is the protocol.
        protocol = (protocol_map or {}).get(listener, listener.upper())
        return cls(listener, host or None, port, protocol)


_ENDPOINT_RE = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """A broker's registration in /brokers/ids/<id>."""

    id: int
    endpoints: tuple[EndPoint, ...]
    rack: str | None = None
    version: int = 5
    jmx_port: int = -1
    # Milliseconds since the epoch, as a number; None means "now" when encoded.
    timestamp: int | None = None
    features: dict[str, dict[str, int]] = field(default_factory=dict)

    def endpoint(self, listener_name: str) -> EndPoint | None:
        return next((e for e in self.endpoints if e.listener_name == listener_name), None)


class BrokerIdZNode:
    """Ephemeral /brokers/ids/<id>, registration JSON versions 1-5 (we write 5)."""

    # Kafka builds this JSON in a Scala mutable.HashMap, so keys come out in hash order;
    # this is that order (Kafka 2.8 brokers write exactly this).
    _KEY_ORDER = (
        "listener_security_protocol_map",
        "endpoints",
        "rack",
        "jmx_port",
        "features",
        "host",
        "timestamp",
        "port",
        "version",
    )

    @staticmethod
    def path(broker_id: int) -> str:
        return f"{BrokerIdsZNode.path()}/{broker_id}"

    @classmethod
    def encode(cls, broker: BrokerInfo) -> bytes:
        # The top-level host/port are for old clients: the first PLAINTEXT endpoint, else none.
        plaintext = next((e for e in broker.endpoints if e.security_protocol == "PLAINTEXT"), None)
        ts = now_ms() if broker.timestamp is None else broker.timestamp
        js: dict[str, Any] = {
            "version": broker.version,
            "host": plaintext.host if plaintext else None,
            "port": plaintext.port if plaintext else -1,
            "endpoints": [e.connection_string for e in broker.endpoints],
            "jmx_port": broker.jmx_port,
            "timestamp": str(ts),
        }
        if broker.rack is not None and broker.version >= 3:
            js["rack"] = broker.rack
        if broker.version >= 4:
            js["listener_security_protocol_map"] = {
                e.listener_name: e.security_protocol for e in broker.endpoints
            }
        if broker.version >= 5:
            js["features"] = broker.features
        return encode_json(ordered(js, cls._KEY_ORDER))

    @staticmethod
    def decode(broker_id: int, data: bytes) -> BrokerInfo:
        try:
            js = decode_json(data)
            version = int(js["version"])
            if version < 1:
                raise ZkDataError(f"Unsupported version of broker registration: {data!r}")
            if version == 1:
                endpoints: tuple[EndPoint, ...] = (
                    EndPoint("PLAINTEXT", js["host"], int(js["port"]), "PLAINTEXT"),
                )
            else:
                protocol_map = js.get("listener_security_protocol_map")
                endpoints = tuple(EndPoint.parse(s, protocol_map) for s in js["endpoints"])
            timestamp = js.get("timestamp")
            return BrokerInfo(
                id=broker_id,
                endpoints=endpoints,
                rack=js.get("rack"),
                version=version,
                jmx_port=int(js.get("jmx_port", -1)),
                timestamp=int(timestamp) if timestamp is not None else None,
                features=js.get("features") or {},
            )
        except (ValueError, KeyError, TypeError) as e:
            raise ZkDataError(
                f"Failed to parse ZooKeeper registration for broker {broker_id}: {data!r}"
            ) from e


class FeatureZNodeStatus(enum.IntEnum):
    DISABLED = 0
    ENABLED = 1


@dataclass(frozen=True, slots=True)
class FeatureInfo:
    status: FeatureZNodeStatus
    # feature name -> {"min_version_level": n, "max_version_level": m}
    features: dict[str, dict[str, int]] = field(default_factory=dict)


class FeatureZNode:
    """/feature (KIP-584 finalized features)."""

    @staticmethod
    def path() -> str:
        return "/feature"

    @staticmethod
    def encode(info: FeatureInfo) -> bytes:
        # Hash order of Kafka's mutable.Map with these three keys.
        return encode_json({"features": info.features, "status": int(info.status), "version": 1})

    @staticmethod
    def decode(data: bytes) -> FeatureInfo:
        js = decode_json(data)
        if not isinstance(js, dict) or int(js.get("version", 0)) < 1:
            raise ZkDataError(f"Unsupported feature information: {data!r}")
        if "features" not in js or "status" not in js:
            raise ZkDataError(f"Features map and status must be present in: {data!r}")
        return FeatureInfo(FeatureZNodeStatus(int(js["status"])), js["features"])
