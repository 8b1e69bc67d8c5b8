"""The JSON example in docs/measure.md is a real `prh measure --json` output (issue 34).

The test runs the command the page shows on small fixed arrays and compares its output, the
input paths made relative and the numbers rounded to 4 digits, with the block between the page's
``measure-json`` markers. After a change to the layout, rewrite the block with
``python tests/test_docs_json_examples.py --write``.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

DOC = Path(__file__).resolve().parents[1] / "docs" / "measure.md"
BEGIN, END = "<!-- measure-json: begin -->", "<!-- measure-json: end -->"
ARGV = ["a.npy", "b.npy", "--k", "3", "--null", "19", "--bootstrap", "9", "--seed", "0"]


def generated() -> str:
    """The page's block: the command and its JSON, as the command writes it today."""
    import prh.cli as cli

    rng = np.random.default_rng(0)
    base = rng.standard_normal((12, 1, 3)).astype(np.float32)
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            np.save("a.npy", base + 0.3 * rng.standard_normal((12, 2, 3)).astype(np.float32))
            np.save("b.npy", base + 0.3 * rng.standard_normal((12, 2, 3)).astype(np.float32))
            rc = cli.main(["measure", *ARGV, "--json", "m.json", "--no-progress"])
            assert rc == 0
            doc = json.loads(Path("m.json").read_text())
            root = str(Path(tmp).resolve())
        finally:
            os.chdir(here)
    for item in doc["inputs"]:
        item["path"] = os.path.relpath(item["path"], root)
    text = json.dumps(_rounded(doc), indent=2)
    text = re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + re.sub(r"\s+", " ", m[1]) + "]", text)
    return f"```bash\nprh measure {' '.join(ARGV)} --json m.json\n```\n\n```json\n{text}\n```"


def _rounded(value):
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def _block(text: str) -> str:
    return text[text.index(BEGIN) + len(BEGIN) : text.index(END)].strip()


def test_measure_json_example_is_a_real_output(capsys):
    text = DOC.read_text()
    assert BEGIN in text and END in text, f"{DOC}: the measure-json markers are missing"
    got = generated()
    capsys.readouterr()
    assert _block(text) == got, (
        "docs/measure.md's JSON example is out of date: run "
        "`python tests/test_docs_json_examples.py --write`"
    )


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    text = DOC.read_text()
    new = generated()
    DOC.write_text(
        text[: text.index(BEGIN) + len(BEGIN)] + "\n" + new + "\n" + text[text.index(END) :]
    )
    print(f"wrote {DOC}")
