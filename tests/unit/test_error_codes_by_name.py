"""Error codes are written by name, from the one table in kafkapy/protocol/errors.py.

An AST scan of kafkapy/ (the table itself excepted) for the places where a bare number can
only be an error code: a keyword, assignment, dict key or comparison named `error_code`,
`*_error_code` or `.code`; a dict keyed by numbers mapping to `SomeException.code`; a
module constant named after a Kafka error (`KAFKA_STORAGE_ERROR = 56`). 0 (NONE) passes.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkapy.protocol.errors import BY_NAME

ROOT = Path(__file__).resolve().parents[2] / "kafkapy"
TABLE = ROOT / "protocol" / "errors.py"


def _is_code_name(name: str | None) -> bool:
    return name is not None and (name == "error_code" or name.endswith("_error_code"))


def _name_of(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return node.slice.value if isinstance(node.slice.value, str) else None
    return None


def _int_literals(node: ast.expr | None) -> Iterator[ast.expr]:
    """Non-zero int literals that `node` may evaluate to (through `a if c else b` and `or`)."""
    if isinstance(node, ast.Constant) and type(node.value) is int and node.value != 0:
        yield node
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        yield from _int_literals(node.operand)
    elif isinstance(node, ast.IfExp):
        yield from _int_literals(node.body)
        yield from _int_literals(node.orelse)
    elif isinstance(node, ast.BoolOp):
        for value in node.values:
            yield from _int_literals(value)
    elif isinstance(node, ast.Tuple | ast.Set | ast.List):
        for element in node.elts:
            yield from _int_literals(element)


def _is_code_attribute(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "code"


def bare_codes(source: str) -> list[tuple[int, str]]:
    """(line, text) of every bare error code literal in `source`."""
    found: list[ast.expr] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.keyword) and _is_code_name(node.arg):
            found += _int_literals(node.value)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [_name_of(t) for t in targets]
            if any(_is_code_name(n) or n in BY_NAME for n in names):
                found += _int_literals(node.value)
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(key.value, str) and _is_code_name(key.value):
                    found += _int_literals(value)
                elif _is_code_attribute(value):
                    found += _int_literals(key)
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_is_code_name(_name_of(side)) or _is_code_attribute(side) for side in sides):
                for side in sides:
                    found += _int_literals(side)
    return [(n.lineno, ast.get_source_segment(source, n) or "") for n in found]


def test_no_bare_error_codes_in_kafkapy() -> None:
    offenders = [
        f"{path.relative_to(ROOT.parent)}:{line}: {text}"
        for path in sorted(ROOT.rglob("*.py"))
        if path != TABLE
        for line, text in bare_codes(path.read_text())
    ]
    assert offenders == [], "use the error table's names (SomeException.code):\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "source",
    [
        "f(error_code=36)",
        "r = {'error_code': 7}",
        "x.partition_error_code = 3 if bad else 0",
        "if e.code != 36: pass",
        "if resp.error_code in (6, 0): pass",
        "M = {56: NotCoordinatorException.code}",
        "KAFKA_STORAGE_ERROR = 56",
        "error_code = resp.error_code if resp else -1",
    ],
)
def test_the_scan_finds_bare_codes(source: str) -> None:
    assert bare_codes(source)


@pytest.mark.parametrize(
    "source",
    [
        "f(error_code=0)",
        "f(error_code=KafkaStorageException.code)",
        "if e.code == TopicExistsException.code: pass",
        "M = {3: 'SASL_SSL'}",
        "version = 7",
        "throttle_time_ms = 20",
        "exit_code = 1",
        "code = 1",
        "if code == 2: pass",
    ],
)
def test_the_scan_passes_names_and_other_numbers(source: str) -> None:
    assert not bare_codes(source)
