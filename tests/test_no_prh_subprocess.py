"""No library module starts ``prh`` as a subprocess: the library calls itself in-process (a
sweep's cells run through executors, training through :func:`prh.training.train` and
:func:`prh.training.image.train_image`). Only :mod:`prh.cli` may be about launching commands.

The scan reads every module of ``src/prh`` with :mod:`ast` and flags a call of ``subprocess``'s
launchers, ``os.system`` or ``os.exec*`` / ``os.spawn*`` / ``os.posix_spawn*`` whose command
starts ``prh`` (or a path ending in ``/prh``), runs ``-m prh`` (or ``-m prh.<module>``), or
cannot be read statically (a command built elsewhere could start anything, prh included).
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "prh"
LAUNCHERS = {"run", "call", "check_call", "check_output", "Popen", "getoutput", "getstatusoutput"}
OS_PREFIXES = ("exec", "spawn", "posix_spawn")


def _launcher(call: ast.Call, names: dict[str, str]) -> bool:
    """Whether ``call`` launches a process: ``subprocess.run(...)``, ``os.system(...)``, or a
    launcher imported by name (``from subprocess import Popen``; ``names``: local -> origin)."""
    f = call.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        mod = names.get(f.value.id, f.value.id)
        if mod == "subprocess":
            return f.attr in LAUNCHERS
        return mod == "os" and (f.attr == "system" or f.attr.startswith(OS_PREFIXES))
    if isinstance(f, ast.Name):
        origin = names.get(f.id, "")
        return origin.startswith("subprocess.") and origin.split(".")[1] in LAUNCHERS
    return False


def _command(call: ast.Call) -> ast.AST | None:
    """The command argument: the first positional one, or ``args=`` / ``cmd=``; for
    ``os.exec*`` / ``os.spawn*`` the argument list after the path (and mode)."""
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
    if name.startswith(OS_PREFIXES):  # os.execv(path, argv), os.spawnl(mode, path, *args), ...
        rest = call.args[2 if name.startswith("spawn") else 1 :]
        if rest and isinstance(rest[0], ast.List | ast.Tuple):
            return rest[0]
        return ast.List(elts=list(rest))
    if call.args:
        return call.args[0]
    return next((k.value for k in call.keywords if k.arg in ("args", "cmd")), None)


def _starts_prh(cmd: ast.AST | None) -> str | None:
    """Why ``cmd`` may start prh (``None``: it does not)."""
    if isinstance(cmd, ast.Constant) and isinstance(cmd.value, str):
        words = cmd.value.split()
        return _words_start_prh(words) if words else None
    if not isinstance(cmd, ast.List | ast.Tuple) or not cmd.elts:
        return "its command is built elsewhere"
    words = [e.value if isinstance(e, ast.Constant) else None for e in cmd.elts]
    if words[0] is None and not _is_sys_executable(cmd.elts[0]):
        return "its program is not a literal"
    if words[0] is None and (len(words) < 2 or words[1] is None):
        return "python with arguments built elsewhere"
    return _words_start_prh([w if isinstance(w, str) else "" for w in words])


def _words_start_prh(words: list[str]) -> str | None:
    if words[0].rsplit("/", 1)[-1] == "prh":
        return "it runs prh"
    for a, b in itertools.pairwise(words):
        if a == "-m" and (b == "prh" or b.startswith("prh.")):
            return "it runs -m prh"
    return None


def _is_sys_executable(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "executable"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    )


def _imported_names(tree: ast.AST) -> dict[str, str]:
    """Local name -> what it names, for ``import x as y`` and ``from x import y as z``."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update({a.asname or a.name: a.name for a in node.names})
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})
    return names


def prh_launches(source: str, where: str = "<source>") -> list[str]:
    """``"where:line: why"`` for every call in ``source`` that may start prh as a process."""
    tree = ast.parse(source)
    names = _imported_names(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _launcher(node, names):
            why = _starts_prh(_command(node))
            if why:
                found.append(f"{where}:{node.lineno}: {why}")
    return found


def test_no_library_module_starts_prh_as_a_subprocess():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC.parent)
        if rel.parts[:2] == ("prh", "cli"):
            continue
        found += prh_launches(path.read_text(), str(rel))
    assert not found, "library modules that start prh as a subprocess:\n" + "\n".join(found)
    assert len(list(SRC.rglob("*.py"))) > 100  # the scan read the package, not an empty folder


def test_the_scan_flags_what_it_must_and_passes_what_it_may():
    flagged = {
        "import subprocess, sys\nsubprocess.call([sys.executable, '-m', 'prh', 'train', *argv])":
            "-m prh",
        "import subprocess\nsubprocess.run(['prh', 'train', '--out', out])": "runs prh",
        "from subprocess import Popen\nPopen(['/usr/bin/prh', 'demo'])": "runs prh",
        "import subprocess as sp\nsp.check_output('python -m prh.cli sweep', shell=True)": "-m",
        "import subprocess\nsubprocess.run(argv)": "built elsewhere",
        "import subprocess\nsubprocess.run([tool, 'x'])": "not a literal",
        "import os\nos.system('prh train --out x')": "runs prh",
        "import os, sys\nos.execv(sys.executable, [sys.executable, '-m', 'prh'])": "-m prh",
        "import os\nos.spawnlp(os.P_WAIT, 'prh', 'prh', 'demo')": "runs prh",
    }  # fmt: skip
    for src, why in flagged.items():
        (hit,) = prh_launches(src)
        assert why in hit, (src, hit)
    passed = (
        "import subprocess\nsubprocess.run(['git', *args], cwd=cwd)",
        "import subprocess, sys\nsubprocess.run([sys.executable, '-c', 'print(1)'])",
        "import subprocess\nsubprocess.run(['python', '-m', 'pip', 'list'])",
        "run(['prh'])  # not subprocess's run",
    )
    for src in passed:
        assert prh_launches(src) == [], src
