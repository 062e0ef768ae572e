"""The controller package's import graph has no circle: event handlers take the controller's
parts (ControllerServices) and peer handlers explicitly, never the KafkaController itself.
Imports under TYPE_CHECKING count too: a circle of annotations is still a circle for a reader."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kafkapy.server.controller import events as ev
from kafkapy.server.controller.services import EventRoutes

PACKAGE = "kafkapy.server.controller"
ROOT = Path(__file__).resolve().parents[3] / "kafkapy" / "server" / "controller"


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == PACKAGE:  # `from kafkapy.server.controller import events`
                found.update(f"{PACKAGE}.{alias.name}" for alias in node.names)
            elif node.module.startswith(PACKAGE + "."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(PACKAGE + "."))
    return found


def _graph() -> dict[str, set[str]]:
    modules = {f"{PACKAGE}.{p.stem}": p for p in ROOT.glob("*.py") if p.stem != "__init__"}
    return {name: _imports(path) & set(modules) for name, path in modules.items()}


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    visiting: list[str] = []
    done: set[str] = set()

    def visit(node: str) -> list[str] | None:
        if node in visiting:
            return visiting[visiting.index(node) :] + [node]
        if node in done:
            return None
        visiting.append(node)
        for nxt in sorted(graph[node]):
            cycle = visit(nxt)
            if cycle:
                return cycle
        visiting.pop()
        done.add(node)
        return None

    for start in sorted(graph):
        cycle = visit(start)
        if cycle:
            return cycle
    return None


@pytest.mark.timeout(30)
def test_controller_package_has_no_import_circle() -> None:
    graph = _graph()
    assert f"{PACKAGE}.kafka_controller" in graph
    assert _find_cycle(graph) is None, " -> ".join(_find_cycle(graph) or [])


@pytest.mark.timeout(30)
def test_only_the_controller_module_imports_the_controller() -> None:
    importers = sorted(m for m, deps in _graph().items() if f"{PACKAGE}.kafka_controller" in deps)
    assert importers == []


@pytest.mark.timeout(30)
def test_event_routes_dispatch_by_type_and_refuse_a_second_handler() -> None:
    seen: list[ev.ControllerEvent] = []
    routes = EventRoutes()
    routes.on(ev.BrokerModifications, seen.append)
    handler = routes.get(ev.BrokerModifications)
    assert handler is not None
    handler(ev.BrokerModifications(3))
    assert seen == [ev.BrokerModifications(3)]
    assert routes.get(ev.TopicChange) is None
    with pytest.raises(ValueError):
        routes.on(ev.BrokerModifications, seen.append)
