"""Write the typed message classes in `kafkapy/protocol/generated/` from Kafka's JSON specs.

    python -m kafkapy.protocol.generate          # rewrite the generated modules
    python -m kafkapy.protocol.generate --check  # exit 1 when they are stale

One module per spec (`MetadataRequest.json` -> `generated/metadata_request.py`), as Kafka's
generator writes one `MetadataRequestData` class with its structs nested inside: struct names
are only unique within one spec (AlterClientQuotas' request and response both have an
`EntryData`). Each struct becomes a slotted `Message` subclass holding the union of the fields
of every version, typed, with a positional `__init__` the decoders call (their hot path).

The specs are those `schema.all_specs()` loads (kafka-python's package data plus
`kafkapy/protocol/schemas/`), so upgrading kafka-python may change the output: the test
`tests/unit/protocol/test_generated_messages.py` fails until this is run again.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from kafkapy.protocol.message import attr_name, module_name
from kafkapy.protocol.schema import DATA_SPECS, FACTORY, Field, Spec, Versions, all_specs, data_spec

GENERATED_DIR: Final = Path(__file__).with_name("generated")

_SCALAR_TYPES: Final = {
    "bool": "bool",
    "int8": "int",
    "int16": "int",
    "uint16": "int",
    "int32": "int",
    "uint32": "int",
    "int64": "int",
    "float64": "float",
    "uuid": "uuid.UUID",
    "string": "str",
    "bytes": "bytes",
    # The decoder leaves records as a view into the request buffer; encoders take bytes too.
    "records": "memoryview | bytes",
}


def _versions(v: Versions) -> str:
    if v.low > v.high:
        return "none"
    if v.high >= 0x7FFF:
        return f"{v.low}+"
    return f"{v.low}" if v.low == v.high else f"{v.low}-{v.high}"


def _is_nullable(f: Field) -> bool:
    return f.nullable.low <= f.nullable.high or f.default is None or f.type == "records"


def field_type(f: Field) -> str:
    """The attribute's annotation: element type, list of it for arrays, `| None` when nullable."""
    element = f.type if f.is_struct else _SCALAR_TYPES[f.type]
    text = f"list[{element}]" if f.is_array else element
    return f"{text} | None" if _is_nullable(f) and not text.endswith("| None") else text


def _literal(value: object) -> str:
    """A Python literal in double quotes (ruff's style), for names and defaults."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bytes):
        return "b" + json.dumps(value.decode("ascii"))
    return repr(value)


def _default(f: Field) -> str:
    """The parameter default. Lists and structs get MISSING, replaced by a fresh value per object."""
    if f.default is FACTORY:
        return "ZERO_UUID" if f.type == "uuid" and not f.is_array else "MISSING"
    return _literal(f.default)


def _struct_order(spec: Spec) -> Iterator[tuple[str, tuple[Field, ...], Field | None]]:
    """(struct name, fields, field holding it) children first: a class exists before its users."""
    seen: set[str] = set()

    def visit(
        name: str, fields: tuple[Field, ...], holder: Field | None
    ) -> Iterator[tuple[str, tuple[Field, ...], Field | None]]:
        for f in fields:
            if f.is_struct:
                yield from visit(f.type, f.fields, f)
        if name not in seen:
            seen.add(name)
            yield name, fields, holder

    yield from visit(spec.name, spec.fields, None)


def _field_note(f: Field) -> str:
    parts = [f"versions {_versions(f.versions)}"]
    if f.nullable.low <= f.nullable.high:
        parts.append(f"nullable {_versions(f.nullable)}")
    if f.tagged.low <= f.tagged.high:
        parts.append(f"tagged {_versions(f.tagged)}, tag {f.tag}")
    about = " ".join(f.about.split())
    return f"    # {', '.join(parts)}" + (f": {about}" if about else "")


def _class_source(spec: Spec, name: str, fields: tuple[Field, ...], holder: Field | None) -> list[str]:
    if holder is None:
        key = "" if spec.api_key is None else f" (api key {spec.api_key})"
        doc = f"{name}{key}: versions {_versions(spec.valid)}, flexible {_versions(spec.flexible)}."
    else:
        about = " ".join(holder.about.split()).rstrip(".")
        doc = f"{about}." if about else f"{name}."
    doc = doc.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    out = [f"class {name}(Message):", f'    """{doc}"""', ""]
    attrs = [attr_name(f) for f in fields]
    if not fields:
        out += ["    __slots__ = ()", "    _fields = __slots__", f"    _kafka_name = {_literal(name)}"]
        return out
    if len(attrs) == 1:
        out.append(f"    __slots__ = ({_literal(attrs[0])},)")
    else:
        out.append("    __slots__ = (")
        out += [f"        {_literal(a)}," for a in attrs]
        out.append("    )")
    out += ["    _fields = __slots__", f"    _kafka_name = {_literal(name)}", ""]
    for f, a in zip(fields, attrs, strict=True):
        out.append(_field_note(f))
        out.append(f"    {a}: {field_type(f)}")
    out += ["", "    def __init__(", "        self,"]
    out += [f"        {a}: {field_type(f)} = {_default(f)}," for f, a in zip(fields, attrs, strict=True)]
    out.append("    ) -> None:")
    for f, a in zip(fields, attrs, strict=True):
        if f.default is FACTORY and (f.is_array or f.type != "uuid"):
            fresh = "[]" if f.is_array else f"{f.type}()"
            line = f"        self.{a} = {fresh} if {a} is MISSING else {a}"
            if len(line) > 110:  # wrapped as ruff format wraps it
                line = f"        self.{a} = (\n            {fresh} if {a} is MISSING else {a}\n        )"
            out.append(line)
        else:
            out.append(f"        self.{a} = {a}")
    return out


def render(spec: Spec, source: str) -> str:
    """The module for one spec; `source` names the spec file in the header."""
    classes = list(_struct_order(spec))
    names = [n for n, _, _ in classes]
    uses_uuid = any(f.type == "uuid" for _, fields, _ in classes for f in fields)
    uses_zero_uuid = any(
        f.type == "uuid" and not f.is_array and f.default is FACTORY
        for _, fields, _ in classes
        for f in fields
    )
    uses_missing = any(
        f.default is FACTORY and (f.is_array or f.type != "uuid") for _, fields, _ in classes for f in fields
    )
    lines = [
        f"# Generated by kafkapy.protocol.generate from {source}: do not edit.",
        "# Regenerate with `python -m kafkapy.protocol.generate`.",
        f'"""{spec.name}: the typed body and its structs (Kafka\'s {spec.name}Data)."""',
        "",
        "from __future__ import annotations",
        "",
    ]
    if uses_uuid:
        lines += ["import uuid", ""]
    if uses_zero_uuid:
        lines.append("from kafkapy.protocol.constants import ZERO_UUID")
    lines.append(
        "from kafkapy.protocol.message import MISSING, Message"
        if uses_missing
        else "from kafkapy.protocol.message import Message"
    )
    lines += ["", "__all__ = ["]
    lines += [f"    {_literal(n)}," for n in sorted(names)]
    lines.append("]")
    for name, fields, holder in classes:
        lines += ["", ""]
        lines += _class_source(spec, name, fields, holder)
    return "\n".join(lines) + "\n"


def spec_sources() -> dict[str, Spec]:
    """module name -> spec, for every spec the codec speaks."""
    specs = [*all_specs().values(), *(data_spec(name) for name in DATA_SPECS)]
    return {module_name(spec.name): spec for spec in specs}


def generate_all() -> dict[str, str]:
    """file name -> contents of every generated module, `__init__.py` included."""
    files = {f"{mod}.py": render(spec, f"{spec.name}.json") for mod, spec in sorted(spec_sources().items())}
    files["__init__.py"] = (
        "# Generated by kafkapy.protocol.generate: do not edit.\n"
        '"""Typed request and response bodies, one module per Kafka JSON message spec."""\n'
    )
    return files


def stale_files(directory: Path = GENERATED_DIR) -> list[str]:
    """Files that differ from what the specs generate, or are missing or left over."""
    wanted = generate_all()
    present = {p.name for p in directory.glob("*.py")} if directory.is_dir() else set()
    stale = [n for n, text in wanted.items() if n not in present or (directory / n).read_text() != text]
    return sorted(stale + [n for n in present - wanted.keys()])


def write_all(directory: Path = GENERATED_DIR) -> int:
    directory.mkdir(exist_ok=True)
    wanted = generate_all()
    for leftover in {p.name for p in directory.glob("*.py")} - wanted.keys():
        (directory / leftover).unlink()
    for name, text in wanted.items():
        path = directory / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    return len(wanted)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--check"]:
        stale = stale_files()
        for name in stale:
            print(f"stale: {GENERATED_DIR / name}")
        return 1 if stale else 0
    if args:
        print("usage: python -m kafkapy.protocol.generate [--check]", file=sys.stderr)
        return 2
    print(f"wrote {write_all()} modules in {GENERATED_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
