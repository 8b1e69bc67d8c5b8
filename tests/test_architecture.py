"""The package's import graph points down only.

Builds the graph of ``src/prh`` from the source with :mod:`ast` (module-level and function-level
imports alike: a late import inside a function still ties the two modules together) and fails on
any cycle, printing it, and on any private name (``_name``) imported from another prh module.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "prh"

# Packages whose internal cycles and private imports are tolerated: none (prh.demo was the last).
EXEMPT_PACKAGES: tuple[str, ...] = ()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted((SRC / PACKAGE).rglob("*.py"))}


def resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module that an ``ImportFrom`` names (relative imports resolved)."""
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(name: str, path: Path, known: set[str]) -> list[tuple[str, str | None]]:
    """(imported module, imported name or None) for every import of a prh module in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    found.append((alias.name, None))
        elif isinstance(node, ast.ImportFrom):
            target = resolve(name, is_package, node)
            if target.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in known:  # `from prh.x import y` where y is a submodule
                    found.append((sub, None))
                else:
                    found.append((target, alias.name))
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the prh modules it imports (an import of ``a.b.c`` also runs ``a`` and ``a.b``,
    but those package edges are left out: a package ``__init__`` re-exporting its children is not
    a dependency of the child on its parent)."""
    mods = modules()
    known = set(mods)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        for target, _ in imports_of(name, path, known):
            while target not in known and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in known and target != name:
                graph[name].add(target)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each as a cycle
    path through its modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                components.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [cycle_path(graph, set(c)) for c in components]


def cycle_path(graph: dict[str, set[str]], comp: set[str]) -> list[str]:
    """One concrete cycle inside a strongly connected component (breadth-first back to start)."""
    start = min(comp)
    prev: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & comp):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [start, *reversed(path[:-1]), start] if v != start else [start, start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return sorted(comp)


def layers(graph: dict[str, set[str]]) -> list[list[str]]:
    """Subpackages in layers: each imports only from layers listed before it."""

    def pkg(m: str) -> str:
        parts = m.split(".")
        return ".".join(parts[:2]) if len(parts) > 1 else m

    deps: dict[str, set[str]] = {}
    for m, targets in graph.items():
        deps.setdefault(pkg(m), set()).update(pkg(t) for t in targets if pkg(t) != pkg(m))
    out: list[list[str]] = []
    placed: set[str] = set()
    while len(placed) < len(deps):
        ready = sorted(p for p in deps if p not in placed and deps[p] <= placed)
        if not ready:  # a package-level cycle: list the rest together
            out.append(sorted(set(deps) - placed))
            break
        out.append(ready)
        placed.update(ready)
    return out


def test_import_graph_has_no_cycle() -> None:
    cycles = [
        c for c in find_cycles(import_graph()) if not all(m.startswith(EXEMPT_PACKAGES) for m in c)
    ]
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_no_private_name_imported_across_modules() -> None:
    mods = modules()
    known = set(mods)
    crossings = []
    for name, path in mods.items():
        for target, imported in imports_of(name, path, known):
            # (a private *module* of a package, such as prh.cli._args, may be imported)
            if imported and imported.startswith("_") and not imported.startswith("__"):
                if name.startswith(EXEMPT_PACKAGES) and target.startswith(EXEMPT_PACKAGES):
                    continue
                crossings.append(f"{name} imports {target}.{imported}")
    assert not crossings, "private names imported across modules:\n" + "\n".join(crossings)


def test_only_the_entry_point_imports_the_cli() -> None:
    """The CLI is the top layer: a library module that needs something from ``prh.cli`` wants
    that thing moved below it (``serve`` once imported ``cli.serve``)."""
    graph = import_graph()
    upward = sorted(
        f"{m} imports {t}"
        for m, targets in graph.items()
        if not m.startswith("prh.cli") and m != "prh.__main__"
        for t in targets
        if t.startswith("prh.cli")
    )
    assert not upward, "library modules importing the CLI:\n" + "\n".join(upward)


def test_cycle_finder_finds_a_planted_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycles(graph) == [["a", "b", "c", "a"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []
    assert layers({"p.a": {"p.b"}, "p.b": set()}) == [["p.b"], ["p.a"]]


if __name__ == "__main__":  # prints the layer list used in docs/architecture.md
    for i, layer in enumerate(layers(import_graph())):
        print(f"{i}: {', '.join(layer)}")
