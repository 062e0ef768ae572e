"""The decoded form of a Kafka message: slotted objects with snake_case attributes.

One class per struct of a spec (the top-level message, and each nested struct such as
`MetadataRequestTopic`), holding the union of the fields of every version: fields a version
does not carry keep their spec default, so handlers read `req.allow_auto_topic_creation`
without checking the version first. Classes are made from the spec once, with a generated
positional `__init__` (the decoder's hot path), and cached per (spec, struct).
"""

from __future__ import annotations

import keyword
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from kafkapy.protocol.primitives import ZERO_UUID
from kafkapy.protocol.schema import FACTORY, Field, Spec

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


def default_value(f: Field, classes: Mapping[str, type[Message]]) -> Any:
    """A fresh default for `f` (new list, new struct) each call."""
    if f.default is not FACTORY:
        return f.default
    if f.is_array:
        return []
    if f.type == "uuid":
        return ZERO_UUID
    return classes[f.type]()


def _make_class(name: str, fields: tuple[Field, ...], classes: dict[str, type[Message]]) -> type[Message]:
    attrs = [attr_name(f) for f in fields]
    ns: dict[str, Any] = {"_M": MISSING, "_ZU": ZERO_UUID, "_classes": classes}
    params, body = [], []
    for i, (f, attr) in enumerate(zip(fields, attrs, strict=True)):
        if f.default is FACTORY:
            params.append(f"{attr}=_M")
            if f.is_array:
                fresh = "[]"
            elif f.type == "uuid":
                fresh = "_ZU"
            else:
                fresh = f"_classes[{f.type!r}]()"
            body.append(f"    self.{attr} = {fresh} if {attr} is _M else {attr}")
        else:
            ns[f"_d{i}"] = f.default
            params.append(f"{attr}=_d{i}")
            body.append(f"    self.{attr} = {attr}")
    src = f"def __init__(self, {', '.join(params)}):\n" + ("\n".join(body) or "    pass")
    if not params:
        src = "def __init__(self):\n    pass"
    exec(compile(src, f"<kafkapy message {name}>", "exec"), ns)
    return type(
        name,
        (Message,),
        {"__slots__": tuple(attrs), "_fields": tuple(attrs), "_kafka_name": name, "__init__": ns["__init__"]},
    )


def build_classes(spec: Spec) -> dict[str, type[Message]]:
    """Classes for the top-level message (keyed by spec name) and every nested struct."""
    classes: dict[str, type[Message]] = {}

    def visit(name: str, fields: tuple[Field, ...]) -> None:
        for f in fields:
            if f.is_struct and f.type not in classes:
                visit(f.type, f.fields)
        if name not in classes:
            classes[name] = _make_class(name, fields, classes)

    visit(spec.name, spec.fields)
    return classes
