"""Kafka's JSON message specs, loaded into a small field model.

The specs come from two places: kafka-python (>= 3.0) ships Kafka's own files as package data
(`kafka.protocol.schemas.resources`), and `kafkapy/protocol/schemas/` holds the four
inter-broker APIs kafka-python does not (LeaderAndIsr, UpdateMetadata, StopReplica,
ControlledShutdown), written in the same format. Our directory wins on a name clash.

A spec file has `//` comment lines, which are not JSON; `commonStructs` are referenced by
name from fields and resolved here so that the code generator only sees nested fields.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import re
from dataclasses import dataclass, field
from typing import Any, Final

_KAFKA_PYTHON_SPECS: Final = "kafka.protocol.schemas.resources"
_OUR_SPECS: Final = "kafkapy.protocol.schemas"
_COMMENT_LINE: Final = re.compile(r"(?m)^\s*//.*$")
_CAMEL_BOUNDARY: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
MAX_VERSION: Final = 0x7FFF

# The default of arrays, structs and UUIDs that are not "null": a fresh empty list, a struct of
# defaults, the zero UUID. A sentinel because those must not be shared between messages.
FACTORY: Final = type("Factory", (), {"__repr__": lambda self: "FACTORY"})()

SCALAR_TYPES: Final = frozenset(
    {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "uuid"}
)
VARIABLE_TYPES: Final = frozenset({"string", "bytes", "records"})


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive version range; `Versions(1, 0)` is "none"."""

    low: int
    high: int

    @classmethod
    def parse(cls, text: str | None) -> Versions:
        if text is None or text == "none":
            return cls(1, 0)
        text = text.strip()
        if text.endswith("+"):
            return cls(int(text[:-1]), MAX_VERSION)
        if "-" in text:
            low, high = text.split("-", 1)
            return cls(int(low), int(high))
        return cls(int(text), int(text))

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.low <= version <= self.high


def snake_case(name: str) -> str:
    """Kafka's CamelCase field names as Python attributes: `PartitionIndex` -> `partition_index`."""
    return _CAMEL_BOUNDARY.sub("_", name).lower()


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    attr: str
    type: str  # element type for arrays: "int32", "string", or a struct name
    is_array: bool
    versions: Versions
    nullable: Versions
    tagged: Versions
    tag: int | None
    default: Any
    about: str = ""
    fields: tuple[Field, ...] = ()

    @property
    def is_struct(self) -> bool:
        return bool(self.fields) or self.type[:1].isupper()


@dataclass(frozen=True, slots=True)
class Spec:
    name: str
    api_key: int | None
    kind: str  # "request" | "response" | "header" | "data"
    valid: Versions
    flexible: Versions
    fields: tuple[Field, ...] = field(default=())


def _parse_default(type_: str, raw: Any, nullable: bool) -> Any:
    """The value a field has when the sender leaves it out, in Kafka's terms."""
    if raw == "null":
        return None
    if type_ == "bool":
        return raw in (True, "true")
    if type_ in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return int(str(raw), 0) if raw not in (None, "") else 0
    if type_ == "float64":
        return float(raw) if raw not in (None, "") else 0.0
    if type_ == "string":
        return "" if raw is None else str(raw)
    if type_ in ("bytes", "records"):
        # Kafka's generator defaults nullable bytes/records to null and the others to empty.
        return None if nullable or type_ == "records" else b""
    raise ValueError(f"unknown field type {type_}")


def _parse_field(raw: dict[str, Any], common: dict[str, list[dict[str, Any]]]) -> Field:
    type_text: str = raw["type"]
    is_array = type_text.startswith("[]")
    type_ = type_text[2:] if is_array else type_text
    sub = raw.get("fields")
    if sub is None and type_[:1].isupper():
        sub = common.get(type_)
        if sub is None:
            raise ValueError(f"field {raw['name']}: unknown struct type {type_}")
    nullable = Versions.parse(raw.get("nullableVersions"))
    if is_array or sub or type_ == "uuid":
        default = None if raw.get("default") == "null" else FACTORY
    else:
        default = _parse_default(type_, raw.get("default"), nullable.low <= nullable.high)
    return Field(
        name=raw["name"],
        attr=snake_case(raw["name"]),
        type=type_,
        is_array=is_array,
        versions=Versions.parse(raw.get("versions")),
        nullable=nullable,
        tagged=Versions.parse(raw.get("taggedVersions")),
        tag=raw.get("tag"),
        default=default,
        about=raw.get("about", ""),
        fields=tuple(_parse_field(f, common) for f in sub) if sub else (),
    )


def parse_spec(text: str) -> Spec:
    data = json.loads(_COMMENT_LINE.sub("", text))
    common = {s["name"]: s["fields"] for s in data.get("commonStructs", [])}
    return Spec(
        name=data["name"],
        api_key=data.get("apiKey"),
        kind=data["type"],
        valid=Versions.parse(data.get("validVersions")),
        flexible=Versions.parse(data.get("flexibleVersions")),
        fields=tuple(_parse_field(f, common) for f in data.get("fields", [])),
    )


@functools.cache
def all_specs() -> dict[tuple[int, str], Spec]:
    """Every request/response spec, keyed by (api_key, "request"|"response")."""
    specs: dict[tuple[int, str], Spec] = {}
    for package in (_KAFKA_PYTHON_SPECS, _OUR_SPECS):  # ours last: ours win
        for entry in importlib.resources.files(package).iterdir():
            if not entry.name.endswith(".json"):
                continue
            spec = parse_spec(entry.read_text(encoding="utf-8"))
            if spec.kind in ("request", "response") and spec.api_key is not None:
                specs[(spec.api_key, spec.kind)] = spec
    return specs


# The "data" specs the codec compiles besides the API bodies: the consumer protocol's payloads.
DATA_SPECS: Final = ("ConsumerProtocolSubscription", "ConsumerProtocolAssignment")


@functools.cache
def data_spec(name: str) -> Spec:
    """One of DATA_SPECS, from kafka-python's package data."""
    return parse_spec(
        importlib.resources.files(_KAFKA_PYTHON_SPECS).joinpath(f"{name}.json").read_text("utf-8")
    )


def get_spec(api_key: int, kind: str) -> Spec | None:
    return all_specs().get((int(api_key), kind))


def is_flexible(api_key: int, version: int, kind: str = "request") -> bool:
    """Whether (api_key, version) uses flexible encoding, from the spec's flexibleVersions.

    Versions above the spec's range count as flexible when the range is open ("9+"): that is
    how a broker reads the header of an ApiVersions request newer than it knows.
    """
    spec = get_spec(api_key, kind)
    return spec is not None and version in spec.flexible
