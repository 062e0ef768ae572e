"""A table-driven config definition, after Kafka's org.apache.kafka.common.config.ConfigDef.

Each key is defined once (name, type, default, validator, importance, doc); parsing a
mapping of raw values types every known key, checks it, and fills in defaults. Errors read
like Kafka's, on one line: `Invalid value abc for configuration num.partitions: Not a number
of type INT`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
SHORT_MIN, SHORT_MAX = -(2**15), 2**15 - 1


class ConfigException(ValueError):
    """A configuration value is missing or invalid; the message is a single line."""

    def __init__(self, name: str, value: Any = None, message: str | None = None) -> None:
        if value is None and message is None:
            text = name  # a free-form message (cross-key checks)
        else:
            text = f"Invalid value {_show(value)} for configuration {name}"
            if message:
                text += f": {message}"
        super().__init__(text)
        self.name = name


class ConfigType(Enum):
    BOOLEAN = "boolean"
    STRING = "string"
    INT = "int"
    SHORT = "short"
    LONG = "long"
    DOUBLE = "double"
    LIST = "list"
    CLASS = "class"
    PASSWORD = "password"


class Importance(Enum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class Password:
    """A secret value: printing or logging it shows `[hidden]`, as Kafka's Password does."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "[hidden]"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Password) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()
"""Marks a required key: parsing fails when it is absent."""

Validator = Callable[[str, Any], None]


@dataclass(frozen=True, slots=True)
class ConfigKey:
    name: str
    type: ConfigType
    default: Any
    validator: Validator | None
    importance: Importance
    doc: str

    @property
    def required(self) -> bool:
        return self.default is NO_DEFAULT


class ConfigDef:
    def __init__(self) -> None:
        self._keys: dict[str, ConfigKey] = {}

    def define(
        self,
        name: str,
        type_: ConfigType,
        default: Any = NO_DEFAULT,
        validator: Validator | None = None,
        importance: Importance = Importance.MEDIUM,
        doc: str = "",
    ) -> ConfigDef:
        if name in self._keys:
            raise ValueError(f"Configuration {name} is defined twice.")
        if default is not NO_DEFAULT:
            # Defaults go through the same parsing and validation as user values, so a typo
            # in the table fails at import time, not in production.
            default = parse_value(name, type_, default)
            if validator is not None and default is not None:
                validator(name, default)
        self._keys[name] = ConfigKey(name, type_, default, validator, importance, doc)
        return self

    @property
    def keys(self) -> Mapping[str, ConfigKey]:
        return self._keys

    def parse(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """Typed values for every defined key: the given value, else the default."""
        values: dict[str, Any] = {}
        for key in self._keys.values():
            if key.name in props:
                value = parse_value(key.name, key.type, props[key.name])
            elif key.required:
                raise ConfigException(
                    f'Missing required configuration "{key.name}" which has no default value.'
                )
            else:
                value = key.default
            if key.validator is not None and value is not None:
                key.validator(key.name, value)
            values[key.name] = value
        return values

    def unknown(self, props: Iterable[str]) -> list[str]:
        return [name for name in props if name not in self._keys]


_INTEGER = re.compile(r"[+-]?[0-9]+")
_LIMITS = {
    ConfigType.INT: (INT_MIN, INT_MAX),
    ConfigType.SHORT: (SHORT_MIN, SHORT_MAX),
    ConfigType.LONG: (LONG_MIN, LONG_MAX),
}


def parse_value(name: str, type_: ConfigType, value: Any) -> Any:
    """Converts a raw value (usually a string from a properties file) to the key's type."""
    if value is None:
        return None
    if isinstance(value, str):
        # Kafka trims every string before parsing; passwords are the exception.
        raw = value if type_ is ConfigType.PASSWORD else value.strip()
    else:
        raw = value
    match type_:
        case ConfigType.BOOLEAN:
            if isinstance(raw, bool):
                return raw
            if isinstance(raw, str) and raw.lower() in ("true", "false"):
                return raw.lower() == "true"
            raise ConfigException(name, value, "Expected value to be either true or false")
        case ConfigType.INT | ConfigType.SHORT | ConfigType.LONG:
            lo, hi = _LIMITS[type_]
            number: int | None = None
            if isinstance(raw, int) and not isinstance(raw, bool):
                number = raw
            elif isinstance(raw, str) and _INTEGER.fullmatch(raw):
                number = int(raw)
            if number is None or not lo <= number <= hi:
                raise ConfigException(name, value, f"Not a number of type {type_.name}")
            return number
        case ConfigType.DOUBLE:
            try:
                if isinstance(raw, bool) or (isinstance(raw, str) and "_" in raw):
                    raise ValueError
                return float(raw)
            except (TypeError, ValueError):
                raise ConfigException(name, value, "Not a number of type DOUBLE") from None
        case ConfigType.LIST:
            if isinstance(raw, list | tuple):
                return [str(item).strip() for item in raw]
            if isinstance(raw, str):
                return [item.strip() for item in raw.split(",")] if raw else []
            raise ConfigException(name, value, "Expected a comma separated list.")
        case ConfigType.PASSWORD:
            if isinstance(raw, Password):
                return raw
            if isinstance(raw, str):
                return Password(raw)
            raise ConfigException(
                name, value, "Expected value to be a string, but it was a " + type(raw).__name__
            )
        case ConfigType.STRING | ConfigType.CLASS:
            if isinstance(raw, str):
                return raw
            raise ConfigException(
                name, value, "Expected value to be a string, but it was a " + type(raw).__name__
            )
    raise AssertionError(type_)


def at_least(minimum: float) -> Validator:
    def check(name: str, value: Any) -> None:
        if value < minimum:
            raise ConfigException(name, value, f"Value must be at least {minimum}")

    return check


def between(minimum: float, maximum: float) -> Validator:
    def check(name: str, value: Any) -> None:
        if value < minimum:
            raise ConfigException(name, value, f"Value must be at least {minimum}")
        if value > maximum:
            raise ConfigException(name, value, f"Value must be no more than {maximum}")

    return check


def one_of(*allowed: str) -> Validator:
    def check(name: str, value: Any) -> None:
        if value not in allowed:
            raise ConfigException(name, value, "String must be one of: " + ", ".join(allowed))

    return check


def each_one_of(*allowed: str) -> Validator:
    """For LIST keys: every element must be one of `allowed` (Kafka's ValidList.in)."""
    element = one_of(*allowed)

    def check(name: str, value: Any) -> None:
        for item in value:
            element(name, item)

    return check


def non_empty_string(name: str, value: Any) -> None:
    if not value:
        raise ConfigException(name, value, "String may not be empty")


def _show(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)
