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


def _server_imports(package: Path) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module is not None:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            else:
                continue
            found += [
                f"{path}:{node.lineno}: {m}" for m in modules if m.split(".")[:2] == ["kafkapy", "server"]
            ]
    return found


def test_zookeeper_model_and_common_import_nothing_from_the_server() -> None:
    """kafkapy.zk (Kafka's kafka.zk) and kafkapy.common are shared by the broker, the tools and
    the clients: they may not depend on the broker, not even at type-checking time."""
    root = Path(apis_package.__file__).parents[2]
    assert _server_imports(root / "zk") + _server_imports(root / "common") == []
