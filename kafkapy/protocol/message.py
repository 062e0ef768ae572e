"""The decoded form of a Kafka message: slotted objects with snake_case attributes.

One class per struct of a spec (the top-level message, and each nested struct such as
`MetadataRequestTopic`), holding the union of the fields of every version: fields a version
does not carry keep their spec default, so handlers read `req.allow_auto_topic_creation`
without checking the version first. The classes are checked in, written by
`kafkapy.protocol.generate` into `kafkapy/protocol/generated/<spec>.py` with typed attributes
and a positional `__init__` (the decoder's hot path); this module holds their base class.
"""

from __future__ import annotations

import importlib
import keyword
from typing import TYPE_CHECKING, Any, ClassVar

from kafkapy.protocol.schema import Field, Spec, snake_case

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING"})()


class Message:
    """Base of every generated message class.

    Construct with keywords (`MetadataRequestTopic(name="t")`); missing fields take the
    spec's defaults. Equality compares all fields; `to_dict()` gives plain data.
    """

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    _kafka_name: ClassVar[str] = ""

    if TYPE_CHECKING:
        # The decoders return this base class; until every caller names the generated class it
        # gets, an attribute read on a Message is unchecked (Any) rather than a mypy error.
        def __getattr__(self, name: str) -> Any: ...

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(_plain(getattr(self, f)) == _plain(getattr(other, f)) for f in self._fields)

    __hash__ = None  # type: ignore[assignment]  # mutable, like the lists inside it

    def __repr__(self) -> str:
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({inner})"

    def get(self, name: str, default: Any = None) -> Any:
        """Mapping-style read, so code can treat Messages and dicts alike."""
        return getattr(self, name, default)

    def to_dict(self) -> dict[str, Any]:
        return {f: _plain(getattr(self, f)) for f in self._fields}


def _plain(value: Any) -> Any:
    if isinstance(value, Message):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, memoryview | bytearray):
        return bytes(value)
    return value


def attr_name(f: Field) -> str:
    return f.attr + "_" if keyword.iskeyword(f.attr) else f.attr


def module_name(spec_name: str) -> str:
    """The generated module of a spec: `MetadataRequest` -> `metadata_request`."""
    return snake_case(spec_name)


def struct_fields(spec: Spec) -> dict[str, tuple[Field, ...]]:
    """Every struct of a spec (the top-level message under the spec's name), children first."""
    found: dict[str, tuple[Field, ...]] = {}

    def visit(name: str, fields: tuple[Field, ...]) -> None:
        for f in fields:
            if f.is_struct and f.type not in found:
                visit(f.type, f.fields)
        found.setdefault(name, fields)

    visit(spec.name, spec.fields)
    return found


class StaleGeneratedCode(RuntimeError):
    """The checked-in classes do not match the specs: run `python -m kafkapy.protocol.generate`."""


def classes_for(spec: Spec) -> dict[str, type[Message]]:
    """The checked-in generated classes of a spec, by struct name, checked against the spec."""
    try:
        module = importlib.import_module(f"kafkapy.protocol.generated.{module_name(spec.name)}")
    except ModuleNotFoundError as e:
        raise StaleGeneratedCode(f"no generated module for {spec.name}: {StaleGeneratedCode.__doc__}") from e
    classes: dict[str, type[Message]] = {}
    for name, fields in struct_fields(spec).items():
        cls = getattr(module, name, None)
        if cls is None or cls._fields != tuple(attr_name(f) for f in fields):
            raise StaleGeneratedCode(f"{module.__name__}.{name}: {StaleGeneratedCode.__doc__}")
        classes[name] = cls
    return classes
