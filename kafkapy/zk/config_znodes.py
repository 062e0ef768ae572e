"""Dynamic configs under /config and their change notifications under /config/changes."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote, unquote

from kafkapy.zk._json import decode_json, encode_json
from kafkapy.zk.errors import ZkDataError


class ConfigType:
    """Entity types with configs in ZooKeeper (Kafka 2.8's ConfigType.all)."""

    TOPIC = "topics"
    CLIENT = "clients"
    USER = "users"
    BROKER = "brokers"
    ALL = (TOPIC, CLIENT, USER, BROKER)


def sanitize(name: str) -> str:
    """Kafka's Sanitizer: user and client names become znode-safe (URL encoding, '*' -> %2A).

    `quote(safe="")` keeps exactly the characters Kafka keeps (alphanumerics, '.', '-', '_', '~').
    """
    return quote(name, safe="")


def desanitize(name: str) -> str:
    return unquote(name)


class ConfigZNode:
    @staticmethod
    def path() -> str:
        return "/config"


class ConfigEntityTypeZNode:
    @staticmethod
    def path(entity_type: str) -> str:
        return f"{ConfigZNode.path()}/{entity_type}"


class ConfigEntityZNode:
    """/config/<type>/<sanitized name>: {"version":1,"config":{...}}, values always strings."""

    @staticmethod
    def path(entity_type: str, entity_name: str) -> str:
        return f"{ConfigEntityTypeZNode.path(entity_type)}/{entity_name}"

    @staticmethod
    def encode(config: Mapping[str, str]) -> bytes:
        return encode_json({"version": 1, "config": {k: str(v) for k, v in config.items()}})

    @staticmethod
    def decode(data: bytes | None) -> dict[str, str]:
        js = decode_json(data)
        if not isinstance(js, dict) or not isinstance(js.get("config"), dict):
            return {}
        return {k: str(v) for k, v in js["config"].items()}


class ConfigEntityChangeNotificationZNode:
    @staticmethod
    def path() -> str:
        return f"{ConfigZNode.path()}/changes"


class ConfigEntityChangeNotificationSequenceZNode:
    """Persistent-sequential /config/changes/config_change_NNNNNNNNNN naming the changed entity."""

    SEQUENCE_NUMBER_PREFIX = "config_change_"

    @classmethod
    def create_path(cls) -> str:
        return f"{ConfigEntityChangeNotificationZNode.path()}/{cls.SEQUENCE_NUMBER_PREFIX}"

    @staticmethod
    def encode(sanitized_entity_path: str) -> bytes:
        return encode_json({"version": 2, "entity_path": sanitized_entity_path})

    @staticmethod
    def decode(data: bytes) -> str:
        """The sanitized entity path ("topics/t", "clients/c", "users/u/clients/c")."""
        js = decode_json(data)
        if not isinstance(js, dict):
            raise ZkDataError(f"Invalid config change notification {data!r}")
        # Version 1 (before KIP-55) named the entity by type and name.
        if js.get("version") == 1:
            return f"{js['entity_type']}/{js['entity_name']}"
        if js.get("version") == 2:
            return str(js["entity_path"])
        raise ZkDataError(f"Unsupported config change notification version: {data!r}")
