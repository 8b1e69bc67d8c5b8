"""A light core: `prh measure` on .npy files runs where torch cannot be imported (issue 24)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

SRC = Path(__file__).resolve().parents[1] / "src"

BLOCK = textwrap.dedent(
    """
    import importlib.abc, sys

    class NoTorch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name == "torch" or name.startswith("torch."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NoTorch())
    sys.modules.pop("torch", None)
    from prh.cli import main
    rc = main(sys.argv[1:])
    assert "torch" not in sys.modules, "torch was imported"
    sys.exit(rc)
    """
)


def _run(*argv) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-c", BLOCK, *map(str, argv)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_measure_two_npy_files_without_torch(tmp_path):
    rng = np.random.default_rng(0)
    for name, layers in (("a", 2), ("b", 3), ("c", 1)):
        np.save(tmp_path / f"{name}.npy", rng.standard_normal((30, layers, 5)).astype(np.float32))
    pair = _run(
        "measure", tmp_path / "a.npy", tmp_path / "b.npy", "--k", 3, "--json", tmp_path / "p.json"
    )
    assert pair.returncode == 0, pair.stderr
    assert "score" in pair.stdout
    argv = ["measure", "--x", tmp_path / "a.npy", tmp_path / "c.npy", "--y", tmp_path / "b.npy"]
    argv += ["--k", 3, "--null", 5, "--bootstrap", 5, "--metric", "mutual_knn,cka"]
    argv += ["--npy", tmp_path / "m.npy", "--heatmap", tmp_path / "m.png", "--no-progress"]
    matrix = _run(*argv)
    assert matrix.returncode == 0, matrix.stderr
    assert (tmp_path / "m.png").is_file()


def test_a_pt_file_without_torch_is_one_line(tmp_path):
    import torch

    torch.save({"feats": torch.zeros(4, 1, 3)}, tmp_path / "a.pt")
    np.save(tmp_path / "b.npy", np.ones((4, 3), np.float32))
    out = _run("measure", tmp_path / "a.pt", tmp_path / "b.npy", "--k", 1)
    assert out.returncode == 2
    assert (
        out.stderr.strip() == "prh measure: error: torch is not installed; pip install 'prh[torch]'"
    )
