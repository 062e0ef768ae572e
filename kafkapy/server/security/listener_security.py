"""A listener's security settings, read as Kafka reads them.

Every `ssl.*` / `sasl.*` key may be given for one listener as `listener.name.<name>.<key>`
(the name lower-cased), which wins over the top-level key; the JAAS line may also be given per
mechanism, `listener.name.<name>.<mechanism>.sasl.jaas.config` (the form Kafka requires for
brokers since 2.0; the bare `sasl.jaas.config` is accepted as a fallback, as Kafka's clients do).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafkapy.common.config_def import ConfigException, Password


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Password) else value


@dataclass(frozen=True, slots=True)
class ListenerSettings:
    """Typed lookups of one listener's keys in a KafkaConfig (or any `get`/`originals` pair)."""

    listener_name: str
    values: Mapping[str, Any]  # the typed top-level values
    originals: Mapping[str, Any]  # every key given, for the listener-prefixed ones

    @classmethod
    def of(cls, config: Any, listener_name: str) -> ListenerSettings:
        return cls(listener_name.upper(), config.values, config.originals)

    @property
    def prefix(self) -> str:
        return f"listener.name.{self.listener_name.lower()}."

    def key_name(self, key: str) -> str:
        """The key a value came from, for error messages: the prefixed one when it is set."""
        return self.prefix + key if self.originals.get(self.prefix + key) is not None else key

    def raw(self, key: str) -> Any:
        """The listener's value of `key`, untyped when it came from a prefixed key; None if unset."""
        prefixed = self.originals.get(self.prefix + key)
        if prefixed is not None:
            return _plain(prefixed)
        return _plain(self.values.get(key))

    def string(self, key: str) -> str | None:
        value = self.raw(key)
        return None if value is None else str(value).strip()

    def list(self, key: str) -> list[str]:
        value = self.raw(key)
        if value is None:
            return []
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        return [str(item).strip() for item in value]

    def integer(self, key: str, default: int) -> int:
        value = self.raw(key)
        if value is None or value == "":
            return default
        try:
            return int(value)
        except (TypeError, ValueError) as e:
            raise ConfigException(self.key_name(key), value, "Not a number") from e

    def jaas_config(self, mechanism: str) -> str | None:
        """listener.name.<l>.<mechanism>.sasl.jaas.config, then listener.name.<l>.sasl.jaas.config,
        then sasl.jaas.config."""
        specific = self.originals.get(f"{self.prefix}{mechanism.lower()}.sasl.jaas.config")
        if specific is not None:
            return str(_plain(specific))
        value = self.raw("sasl.jaas.config")
        return None if value is None else str(value)
