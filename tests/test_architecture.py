"""The package's import graph points down only, and ``docs/architecture.md`` is its output.

Builds the graph of ``src/prh`` from the source with :mod:`ast` (module-level and function-level
imports alike: a late import inside a function still ties the two modules together) and fails on
any cycle between modules or between packages, printing it, and on any private name (``_name``)
imported from another prh module.

``python tests/test_architecture.py`` prints the layer table; ``--write`` puts it into
``docs/architecture.md`` between its markers, and a test fails when the two differ.
"""

from __future__ import annotations

import ast
import re
import sys
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


def pkg(m: str) -> str:
    """The subpackage (or top-level module) of ``prh`` that module ``m`` belongs to."""
    parts = m.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else m


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Subpackage -> the subpackages its modules import."""
    deps: dict[str, set[str]] = {}
    for m, targets in graph.items():
        deps.setdefault(pkg(m), set()).update(pkg(t) for t in targets if pkg(t) != pkg(m))
    return deps


def layers(graph: dict[str, set[str]]) -> list[list[str]]:
    """Subpackages in layers: each imports only from layers listed before it."""
    deps = package_graph(graph)
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


BEGIN, END = "<!-- layers: begin (generated) -->", "<!-- layers: end -->"
DOC = SRC.parent / "docs" / "architecture.md"


def summary(name: str) -> str:
    """First line of the docstring of package or module ``name`` (``prh.x``)."""
    base = SRC / Path(*name.split("."))
    path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    first = doc.strip().split("\n\n")[0].replace("\n", " ").replace("``", "`")
    return re.sub(r":\w+:`~?([^`]+)`", r"`\1`", first)  # Sphinx roles as plain code


def layer_table(graph: dict[str, set[str]]) -> str:
    """The Markdown table of ``docs/architecture.md``: layer, package, what it is, imports."""
    deps = package_graph(graph)
    rows = ["| layer | package | what it is | imports |", "| --- | --- | --- | --- |"]
    for n, layer in enumerate(layers(graph)):
        for p in layer:
            if p in (PACKAGE, f"{PACKAGE}.__main__"):
                continue
            imports = ", ".join(d.removeprefix("prh.") for d in sorted(deps[p])) or "(nothing)"
            rows.append(f"| {n} | `{p.removeprefix('prh.')}` | {summary(p)} | {imports} |")
    return "\n".join(rows)


def test_architecture_doc_is_the_generated_table() -> None:
    text = DOC.read_text()
    assert BEGIN in text and END in text, f"{DOC}: the layer table's markers are missing"
    got = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert got == layer_table(import_graph()), (
        "docs/architecture.md's layer table is out of date: run "
        "`python tests/test_architecture.py --write`"
    )


def test_packages_form_no_cycle() -> None:
    """Between packages too (prh.training and prh.encoders imported each other behind a
    function-level import until the EfficientNet builder moved to prh.models)."""
    cycles = find_cycles(package_graph(import_graph()))
    assert not cycles, "package cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


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


def main(argv: list[str]) -> int:
    """Print the layer table; with ``--write``, put it into docs/architecture.md."""
    table = layer_table(import_graph())
    if "--write" not in argv:
        print(table)
        return 0
    text = DOC.read_text()
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    DOC.write_text(f"{head}{BEGIN}\n{table}\n{END}{tail}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
