"""The README's Python example runs as written (world, train, embed, measure)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def example() -> str:
    text = README.read_text()
    block = text.split("<!-- example: begin -->", 1)[1].split("<!-- example: end -->", 1)[0]
    return block.split("```python", 1)[1].split("```", 1)[0]


@pytest.mark.slow
def test_readme_example_runs_and_prints_an_alignment(tmp_path):
    pytest.importorskip("efficientnet_lite_pytorch")
    r = subprocess.run([sys.executable, "-c", example()], cwd=tmp_path, capture_output=True,
                       text=True, timeout=600)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    m = re.fullmatch(r"mutual-kNN@10 (\S+), 95% CI \[(\S+), (\S+)\]\n", r.stdout)
    assert m, r.stdout
    score, lo, hi = map(float, m.groups())
    assert 0.0 <= lo <= score <= hi <= 1.0
    assert (tmp_path / "runs" / "example" / "model.safetensors").is_file()
