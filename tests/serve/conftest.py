"""Fixtures for the serve tests: a run folder with plots and files that must not be served."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from serve_helpers import png_bytes, solid


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A demo-run-shaped folder: summary.json, two plots, and files that must not be served."""
    d = tmp_path / "demo-run"
    (d / "plots").mkdir(parents=True)
    summary = {
        "alignment": {
            "good": 0.31,
            "bad": 0.12,
            "next-token": 0.18,
            "minilm": {"score": 0.22, "ci": [0.2, 0.24]},
            "random-init": float("nan"),
        },
        "captioning": {"cider": 0.5},
    }
    (d / "summary.json").write_text(json.dumps(summary))
    (d / "bound.png").write_bytes(png_bytes(solid((0, 0, 255), (8, 8))))
    (d / "plots" / "alignment.png").write_bytes(png_bytes(solid((0, 255, 0), (8, 8))))
    (d / "model.safetensors").write_bytes(b"secret weights")
    (d / "notes.txt").write_bytes(b"not a plot")
    outside = tmp_path / "outside.png"
    outside.write_bytes(png_bytes(solid((1, 2, 3), (4, 4))))
    (d / "leak.png").symlink_to(outside)
    return d


# caption_run (a real toy-size caption run) comes from tests/conftest.py.
