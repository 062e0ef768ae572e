"""Example messages built from the specs themselves, for round-trip tests.

`sample(spec, version, seed)` fills every field the version carries with a non-default
value (tagged ones too, so they are really written), and alternates null/non-null for
nullable fields by seed, so two seeds cover both branches.
"""

from __future__ import annotations

import uuid
from typing import Any

from kafkapy.protocol.schema import Field, Spec

_SCALARS: dict[str, Any] = {
    "bool": True,
    "int8": -7,
    "int16": 300,
    "uint16": 65000,
    "int32": 70_000,
    "uint32": 4_000_000_000,
    "int64": 2**40 + 3,
    "float64": 1.5,
}


def _value(f: Field, version: int, seed: int, depth: int) -> Any:
    if f.type in _SCALARS:
        return _SCALARS[f.type] + (seed if f.type not in ("bool", "float64") else 0) * (
            1 if f.type != "uint32" else -1
        )
    if f.type == "uuid":
        return uuid.UUID(int=(seed + 1) * 0x1234_5678_9ABC)
    if f.type == "string":
        return f"{f.attr}-é{seed}"
    if f.type in ("bytes", "records"):
        return bytes(range(seed, seed + 9))
    return fields_dict(f.fields, version, seed + 1, depth + 1)


def fields_dict(fields: tuple[Field, ...], version: int, seed: int, depth: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, f in enumerate(fields):
        if version not in f.versions:
            continue
        if version in f.nullable and (seed + i) % 2 == 1:
            out[f.attr] = None
        elif f.is_array:
            out[f.attr] = [_value(f, version, seed + j, depth) for j in range(2 if depth < 3 else 1)]
        else:
            out[f.attr] = _value(f, version, seed, depth)
    return out


def sample(spec: Spec, version: int, seed: int = 0) -> dict[str, Any]:
    return fields_dict(spec.fields, version, seed)


def assert_subset(expected: Any, actual: Any, path: str = "") -> None:
    """Every value in `expected` (a sample) is in `actual` (a decoded Message, as plain data)."""
    if isinstance(expected, dict):
        for k, v in expected.items():
            assert k in actual, f"{path}.{k} missing"
            assert_subset(v, actual[k], f"{path}.{k}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), path
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            assert_subset(e, a, f"{path}[{i}]")
    elif isinstance(expected, bytes):
        assert bytes(actual) == expected, path
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"
