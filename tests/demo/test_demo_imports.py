"""``prh.demo`` imports point down: no circle among its modules, no private name crossing them."""

from __future__ import annotations

import ast
from pathlib import Path

import prh.demo

DEMO = Path(prh.demo.__file__).parent


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """``(module, names)`` of every ``from prh... import names`` / ``import prh...`` in a file,
    at any depth (a late import inside a function is still an edge)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("prh"):
            out.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out.extend((a.name, []) for a in node.names if a.name.startswith("prh"))
    return out


def _graph() -> dict[str, set[str]]:
    mods = {f"prh.demo.{p.stem}" for p in DEMO.glob("*.py") if p.stem != "__init__"}
    graph: dict[str, set[str]] = {}
    for m in mods:
        edges = set()
        for target, names in _imports(DEMO / f"{m.rsplit('.', 1)[1]}.py"):
            edges |= {target} & mods
            edges |= {f"{target}.{n}" for n in names} & mods  # from prh.demo import steps
        graph[m] = edges
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the stack, 2: done

    def visit(m: str, path: list[str]) -> list[str] | None:
        state[m] = 1
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return [*path, m, n]
            if n not in state and (found := visit(n, [*path, m])):
                return found
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m, [])):
            return found
    return None


def test_cycle_finder_finds_a_planted_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_demo_modules_import_without_circles():
    assert _cycle(_graph()) is None


def test_no_private_name_crosses_demo_modules():
    crossing = [
        (p.stem, target, n)
        for p in DEMO.glob("*.py")
        for target, names in _imports(p)
        for n in names
        if n.startswith("_") and target.startswith("prh.demo")
    ]
    assert crossing == []
