"""`prh bridge score`: every bad input is one line, exit 2, inputs intact, before any work."""

from __future__ import annotations

import numpy as np
import pytest

from prh.features import save_features


@pytest.fixture
def d(tmp_path):
    rng = np.random.default_rng(0)
    ids = [f"s{i}" for i in range(40)]
    a = rng.standard_normal((40, 2, 4))
    save_features(tmp_path / "a.safetensors", a, ids=ids)
    save_features(tmp_path / "b.safetensors", a + 0.1, ids=ids)
    save_features(tmp_path / "c.safetensors", a[:30], ids=ids[:30])
    save_features(tmp_path / "noids.safetensors", a)
    np.save(tmp_path / "bare.npy", a[:35].astype(np.float32))
    (tmp_path / "train.txt").write_text("\n".join(ids[:30]))
    (tmp_path / "test.txt").write_text("\n".join(ids[25:]))
    (tmp_path / "ghost.txt").write_text("s1\nnope\n")
    return tmp_path


def _ab(d):
    return ["bridge", "score", "--files", d / "a.safetensors", d / "b.safetensors"]


CASES = [
    (lambda d: ["bridge", "score", "--files", d / "a.safetensors"], "at least 2 feature files"),
    (lambda d: [*_ab(d), "--names", "x"], "--names: 1 names for 2"),
    (lambda d: [*_ab(d), "--names", "x", "x"], "named 'x'"),
    (lambda d: [*_ab(d), "--train-ids", d / "train.txt"], "go together"),
    (
        lambda d: [
            *_ab(d),
            "--test-fraction",
            "0.3",
            "--test-files",
            d / "a.safetensors",
            d / "b.safetensors",
        ],
        "choose one way",
    ),
    (lambda d: [*_ab(d), "--test-files", d / "a.safetensors"], "--test-files: 1 files for 2"),
    (lambda d: [*_ab(d), "--test-files", d / "a.safetensors", d / "b.safetensors"], "share 40 ids"),
    (
        lambda d: [*_ab(d), "--train-ids", d / "train.txt", "--test-ids", d / "test.txt"],
        "share 5 ids",
    ),
    (
        lambda d: [*_ab(d), "--train-ids", d / "ghost.txt", "--test-ids", d / "test.txt"],
        "first 'nope'",
    ),
    (lambda d: [*_ab(d), "--heatmap", d / "m.jpg"], "expected a .png"),
    (lambda d: [*_ab(d), "--json", d / "a.safetensors"], "--json .*overwrite"),
    (lambda d: [*_ab(d), "--json", d / "x.png", "--heatmap", d / "x.png"], "same file"),
    (lambda d: [*_ab(d), "--test-fraction", "1"], "test fraction|fraction"),
    (lambda d: [*_ab(d), "--test-fraction", "nan"], "--test-fraction"),
    (lambda d: [*_ab(d), "--dims", "0"], "--dims"),
    (lambda d: [*_ab(d), "--k", "-1"], "--k"),
    (lambda d: [*_ab(d), "--seed", "-1"], "--seed"),
    (lambda d: [*_ab(d), "--layer", "5", "--bootstrap", "0"], "layer 5"),
    (
        lambda d: ["bridge", "score", "--files", d / "a.safetensors", d / "c.safetensors"],
        "ids of .* are missing",
    ),
    (
        lambda d: ["bridge", "score", "--files", d / "a.safetensors", d / "noids.safetensors"],
        "no ids while other files",
    ),
    (
        lambda d: ["bridge", "score", "--files", d / "noids.safetensors", d / "bare.npy"],
        "equal rows",
    ),
    (
        lambda d: ["bridge", "score", "--files", d / "a.safetensors", d / "missing.npy"],
        "no such file",
    ),
    (lambda d: [*_ab(d), "--k", "30", "--bootstrap", "0"], "more than 30 held-out rows"),
    (lambda d: [*_ab(d), "--world-seed", "0"], "give --pair-free too"),
    (lambda d: [*_ab(d), "--pair-free", "a:zz"], "--pair-free a:zz: expected X:Y"),
    (lambda d: [*_ab(d), "--pair-free", "a:a"], "two different names"),
    (lambda d: [*_ab(d), "--pair-free", "ab"], "expected X:Y"),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_bad_input(d, bad_input, case):
    argv, match = CASES[case]
    inputs = [p for p in d.iterdir() if p.is_file()]
    bad_input(argv(d), inputs=inputs, match=match)
