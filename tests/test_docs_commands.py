"""Every `prh` command in README.md and docs/ exists and its flags parse (issue 34).

Commands in fenced code blocks are parsed whole, as the shell would pass them (continuation lines
joined, comments dropped): the subcommand must exist and every flag and value must parse, so a
renamed flag or a changed choice fails here. Commands quoted inline in prose (`prh measure --null
R`) often carry placeholders; for them every ``--flag`` must be one of the subcommand's flags.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from prh.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
INLINE = re.compile(r"`((?:python -m )?prh [a-z][^`]*)`")
PRH = re.compile(  # a command line: env assignments, then prh (any path), python -m or torchrun
    r"^(?:[A-Z_]+=\S*\s+)*(?:\S*/)?(?:prh|python\S* -m prh|torchrun .*?-m prh)\s+(.*)$"
)


def fenced(text: str) -> list[str]:
    """The ``prh`` commands of the shell blocks of ``text`` (arguments after ``prh``)."""
    out = []
    for lang, body in FENCE.findall(text):
        if lang not in ("", "bash", "sh", "shell", "console"):
            continue
        body = re.sub(r"\\\n\s*", " ", body)  # continuation lines
        for line in body.splitlines():
            line = _drop_comment(line.strip().removeprefix("$ "))
            for part in _parts(line):
                m = PRH.match(part.strip())
                if m:
                    out.append(m.group(1).strip())
    return out


def _drop_comment(line: str) -> str:
    return "" if line.startswith("#") else re.split(r"\s#(?:\s|$)", line)[0].strip()


def _parts(line: str) -> list[str]:
    """The commands of a shell line joined by ``&&``, ``;`` or a pipe."""
    return re.split(r"\s(?:&&|;|\|)\s", line)


def commands() -> list[tuple[str, int, str, bool]]:
    """``(file, line, command, whole)``: each command once, with where it first appears."""
    seen, out = set(), []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for cmd in fenced(text):
            if cmd not in seen:
                seen.add(cmd)
                synopsis = "[--" in cmd  # [--flag VALUE]: a usage line, not a command
                out.append((str(path.relative_to(ROOT)), _line(text, cmd), cmd, not synopsis))
        for m in INLINE.finditer(text):
            cmd = _parts(m.group(1).removeprefix("python -m ").removeprefix("prh ").strip())[0]
            head = cmd.split()[0] if cmd.split() else ""
            if head.endswith(":") or "|" in head or re.search(r"^\S+( \S+)?: ", cmd):
                continue  # a quoted message (`prh fit: error: ...`) or alternatives (embed|sweep)
            if cmd not in seen:
                seen.add(cmd)
                out.append((str(path.relative_to(ROOT)), text[: m.start()].count("\n") + 1, cmd,
                            False))  # fmt: skip
    return out


def _line(text: str, cmd: str) -> int:
    first = cmd.split()[0] if cmd.split() else cmd
    at = text.find(f"prh {first}")
    return text[:at].count("\n") + 1 if at >= 0 else 0


def _subparser(parser: argparse.ArgumentParser, words: list[str]):
    """The deepest subparser ``words`` name, and the words after its name."""
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or not words or words[0] not in subs[0].choices:
            return parser, words
        parser, words = subs[0].choices[words[0]], words[1:]


CASES = commands()


def test_the_docs_hold_commands():
    assert sum(whole for *_, whole in CASES) > 50


@pytest.mark.parametrize("where, line, cmd, whole", CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_command_exists_and_parses(where, line, cmd, whole, monkeypatch):
    import prh.cli._args

    monkeypatch.setattr(prh.cli._args, "cpu_count", lambda: 64)  # `--workers 4` on any machine
    parser = build_parser()
    try:
        argv = shlex.split(cmd)
    except ValueError:
        argv = cmd.split()
    sub, rest = _subparser(parser, argv)
    assert sub is not parser, f"{where}:{line}: `prh {cmd}`: no such command"
    if whole:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                parser.parse_args(argv)
            except SystemExit as e:
                assert e.code == 0, f"{where}:{line}: `prh {cmd}`: {err.getvalue().strip()}"
        return
    flags = {s for a in sub._actions for s in a.option_strings}
    for word in rest:
        flag = word.split("=", 1)[0]
        if re.fullmatch(r"--[a-z][a-z0-9-]*", flag):
            assert flag in flags, f"{where}:{line}: `prh {cmd}`: no flag {flag}"
