"""`prh bridge fit|apply` on bad input: exit 2, one line, no traceback, every input intact."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from prh.bridge.synthetic import random_rotation
from prh.features import load_features, save_features


@pytest.fixture(scope="module")
def t(tmp_path_factory):
    """x, y (paired by id, y stored in another order), a fitted map, and broken variants."""
    from prh.cli import main

    d = tmp_path_factory.mktemp("bridge")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 2, 6))
    y = x[:, -1, :] @ random_rotation(6, rng).T
    ids = [f"s{i}" for i in range(40)]
    save_features(d / "x.safetensors", x, ids=ids)
    save_features(d / "y.safetensors", y[::-1], ids=ids[::-1])
    bad = x.copy()
    bad[7, -1, 3] = np.nan
    save_features(d / "nan.safetensors", bad, ids=ids)
    bad[7, -1, 3] = np.inf
    np.save(d / "inf.npy", bad)
    np.save(d / "huge.npy", x[:, -1, :] * 1e300)  # beyond float32: read as inf
    save_features(d / "dup.safetensors", x, ids=["s0", *ids[:-1]])
    np.save(d / "empty.npy", np.zeros((0, 6)))
    np.save(d / "constant.npy", np.ones((40, 6)))
    np.save(d / "collinear.npy", np.concatenate([x[:, -1, :], x[:, -1, :2]], axis=1))
    (d / "binary.safetensors").write_bytes(bytes(range(256)) * 4)
    (d / "a_file").write_text("not a folder\n")
    (d / "folder").mkdir()
    os.mkfifo(d / "pipe")
    os.mkfifo(d / "pipe.npy")
    m = d / "m.safetensors"
    assert main(["bridge", "fit", "--x", str(d / "x.safetensors"), "--y",
                 str(d / "y.safetensors"), "--out", str(m)]) == 0  # fmt: skip
    blob = m.read_bytes()
    for name, config in {
        "list": [1, 2],
        "params": {"kind": "ridge", "params": {"beta": 1}},
        "extra": {"kind": "ridge", "params": {}, "extra": [0]},
        "layer": {"kind": "ridge", "params": {}, "extra": {"layer_x": "last"}},
        "kind": {"kind": "affine", "params": {}},
    }.items():
        (d / f"bad-{name}.safetensors").write_bytes(blob)
        (d / f"bad-{name}.json").write_text(json.dumps(config))
    return d


FIT_CASES = {  # {t}: the fixture folder
    "out is --x": (["--out", "{t}/x.safetensors"], r"x\.safetensors: would overwrite the in"),
    "out is --y": (["--out", "{t}/y.safetensors"], r"would overwrite the input .*y\.safetensors"),
    "out not safetensors": (["--out", "{t}/m.npy"], r"must end in \.safetensors"),
    "out is a folder": (["--out", "{t}/folder"], r"is a directory"),
    "out under a file": (["--out", "{t}/a_file/m.safetensors"], r"a_file is a file, not a folder"),
    "alpha nan": (["--alpha", "nan"], r"--alpha: expected a finite number >= 0, got nan"),
    "alpha inf": (["--alpha", "inf"], r"--alpha: expected a finite number >= 0, got inf"),
    "alpha negative": (["--alpha", "-1"], r"--alpha: expected a finite number >= 0, got -1"),
    "rank 0": (["--rank", "0"], r"--rank: expected a positive integer"),
    "layer out of range": (["--layer-x", "2"], r"--layer-x 2: .* has 2 layers"),
    "ridge on constant x": (
        ["--kind", "ridge", "--x", "{t}/constant.npy"],
        r"constant\.npy: every",
    ),
    # a constant Y used to give a meaningless R^2 (1 - resid / 1e-30) and a saved map
    "constant y": (["--y", "{t}/constant.npy"], r"constant\.npy: every row is the same"),
    "ridge alpha 0, collinear x": (
        ["--kind", "ridge", "--alpha", "0", "--x", "{t}/collinear.npy"],
        r"ridge with alpha = 0: X\^T X is singular \(rank 6 < d_x = 8\); use alpha > 0",
    ),
}


@pytest.mark.parametrize("extra, match", FIT_CASES.values(), ids=FIT_CASES.keys())
def test_fit_refuses(bad_input, t, extra, match):
    flags = [a.format(t=t) for a in extra]
    defaults = {"--x": t / "x.safetensors", "--y": t / "y.safetensors"}
    defaults["--out"] = t / "o.safetensors"
    argv = ["bridge", "fit", *flags]
    for flag, value in defaults.items():
        if flag not in flags:
            argv += [flag, str(value)]
    inputs = [p for p in t.iterdir() if p.is_file()]
    bad_input(argv, inputs=inputs, match=match)
    assert not (t / "o.safetensors").exists()


FEATURE_CASES = {
    "nan feature": ("nan.safetensors", r"nan\.safetensors: 1 NaN or infinite .*row 7, column 3"),
    "inf feature": ("inf.npy", r"inf\.npy: 1 NaN or infinite .*row 7, column 3: inf"),
    "beyond float32": ("huge.npy", r"huge\.npy: 240 NaN or infinite"),
    "duplicate id": ("dup.safetensors", r"dup\.safetensors: id 's0' appears twice"),
    "no rows": ("empty.npy", r"paired rows required|no rows"),
    "binary file": ("binary.safetensors", r"binary\.safetensors: not a readable array file"),
    "folder": ("folder", r"folder: is a folder, expected a feature file"),
}


@pytest.mark.parametrize("name, match", FEATURE_CASES.values(), ids=FEATURE_CASES.keys())
def test_fit_refuses_bad_features(bad_input, t, name, match):
    argv = ["bridge", "fit", "--x", t / name, "--y", t / "y.safetensors"]
    argv += ["--out", t / "o.safetensors"]
    inputs = [t / "y.safetensors"] + ([t / name] if (t / name).is_file() else [])
    bad_input(argv, inputs=inputs, match=match)
    assert not (t / "o.safetensors").exists()


APPLY_CASES = {
    "out is the map": ("m.safetensors", "m.safetensors", r"would overwrite the input"),
    "out is the sidecar": ("m.safetensors", "m.json", r"cannot write features as '\.json'"),
    "out is --x": ("m.safetensors", "x.safetensors", r"would overwrite the input .*x\.safet"),
    "out .pt": ("m.safetensors", "o.pt", r"cannot write features as '\.pt'; use one of"),
    "out without suffix": ("m.safetensors", "o", r"cannot write features as 'a name without"),
    "map is not a map": ("binary.safetensors", "o.npy", r"not a readable safetensors map"),
    "map is a pipe": ("pipe", "o.npy", r"pipe: not a regular file .*expected a map file"),
    "out is a pipe": ("m.safetensors", "pipe.npy", r"pipe\.npy: not a regular file"),
    "map is a folder": ("folder", "o.npy", r"folder: is a folder, expected a map file"),
    "config not an object": ("bad-list.safetensors", "o.npy", r"not a JSON object"),
    "unknown param": ("bad-params.safetensors", "o.npy", r"not a consistent ridge map"),
    "extra not an object": ("bad-extra.safetensors", "o.npy", r"'extra' objects"),
    "layer not an int": ("bad-layer.safetensors", "o.npy", r"layer_x 'last' is not an integer"),
    "unknown kind": ("bad-kind.safetensors", "o.npy", r"unknown map kind 'affine'"),
}


@pytest.mark.parametrize("map_name, out, match", APPLY_CASES.values(), ids=APPLY_CASES.keys())
def test_apply_refuses(bad_input, t, map_name, out, match):
    mp = t / map_name
    argv = ["bridge", "apply", mp, "--x", t / "x.safetensors", "--out", t / out]
    inputs = [t / "x.safetensors", t / "m.safetensors", t / "m.json"]
    inputs += [p for p in (mp, mp.with_suffix(".json")) if p.is_file()]
    bad_input(argv, inputs=inputs, match=match)
    assert not (t / "o.npy").exists()


def test_apply_refuses_features_of_another_width(bad_input, t, tmp_path):
    np.save(tmp_path / "w.npy", np.ones((5, 4)))
    argv = ["bridge", "apply", t / "m.safetensors", "--x", tmp_path / "w.npy"]
    bad_input([*argv, "--out", tmp_path / "o.npy"], inputs=[tmp_path / "w.npy"], match=r"6 col")


@pytest.mark.parametrize("suffix", [".npy", ".npz", ".safetensors"])
def test_apply_writes_the_format_its_name_says(t, tmp_path, suffix):
    """`--out o.npy` is a real np.save file (not safetensors bytes), .npz keeps the ids."""
    from prh.cli import main

    out = tmp_path / f"o{suffix}"
    argv = ["bridge", "apply", str(t / "m.safetensors"), "--x", str(t / "x.safetensors")]
    assert main([*argv, "--out", str(out)]) == 0
    ref = tmp_path / "ref.safetensors"
    assert main([*argv, "--out", str(ref)]) == 0
    want = load_features(ref)
    if suffix == ".npy":
        got = np.load(out, allow_pickle=False)  # fails on safetensors bytes
        np.testing.assert_array_equal(got, want.features[:, 0, :])
    elif suffix == ".npz":
        with np.load(out, allow_pickle=False) as z:
            np.testing.assert_array_equal(z["features"], want.features[:, 0, :])
            assert z["ids"].tolist() == want.ids
    got = load_features(out)
    np.testing.assert_array_equal(got.features, want.features)
    assert got.ids == (None if suffix == ".npy" else want.ids)
