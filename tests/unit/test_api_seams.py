"""KafkaApis and its handlers get their collaborators explicitly (issue 14): no handler reaches
through the whole KafkaServer, and the collaborators are typed, not `Any`."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import kafkapy.server.apis as apis_package
from kafkapy.server.apis.kafka_apis import ApiCollaborators

APIS_DIR = Path(apis_package.__file__).parent


def _sources() -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(), str(p))) for p in sorted(APIS_DIR.glob("*.py"))]


def test_no_handler_reaches_through_the_server() -> None:
    found = []
    for path, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("server", "_server"):
                found.append(f"{path.name}:{node.lineno}: .{node.attr}")
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "getattr"
                and node.args
                and isinstance(node.args[0], ast.Name | ast.Attribute)
                and ast.unparse(node.args[0]) in ("apis", "server", "apis.server")
            ):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert found == []


def test_collaborators_are_typed() -> None:
    for field in dataclasses.fields(ApiCollaborators):
        assert "Any" not in str(field.type), field.name
