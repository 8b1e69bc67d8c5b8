"""`prh match` on bad input: exit 2, one line, no traceback, every input intact."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from prh.bridge.synthetic import planted_clouds
from prh.features import save_features


class Payload:
    """Any object that is not a tensor: a weights-only load must refuse to unpickle it."""


@pytest.fixture(scope="module")
def t(tmp_path_factory):
    import torch

    d = tmp_path_factory.mktemp("match")
    x, y, _ = planted_clouds(30, noise=0.02, seed=1)
    save_features(d / "x.safetensors", x, ids=[f"r{i}" for i in range(30)])
    save_features(d / "y.safetensors", y)
    bad = np.array(x, dtype=np.float64)
    bad[4, 1] = np.nan
    save_features(d / "nan.safetensors", bad)
    bad[4, 1] = -np.inf
    np.save(d / "inf.npy", bad)
    np.save(d / "empty.npy", np.zeros((0, x.shape[1])))
    (d / "labels.txt").write_text("\n".join(f"c{i % 3}" for i in range(30)) + "\n")
    (d / "l.txt").symlink_to(d / "labels.txt")  # the same file under another name
    (d / "binary.txt").write_bytes(bytes(range(256)) * 2)
    (d / "nul.txt").write_bytes(b"c0\nc\x001\n" + b"c2\n" * 28)
    (d / "folder").mkdir()
    os.mkfifo(d / "pipe")
    torch.save({"features": torch.zeros(30, 4), "extra": Payload()}, d / "pickled.pt")
    from safetensors.numpy import save

    blob = save({"features": np.zeros((30, 4), np.float32)}, metadata={"ids": "5"})
    (d / "ids-int.safetensors").write_bytes(blob)
    return d


CASES = {  # {t}: the fixture folder; --x, --y and --json default to x, y and {t}/out.json
    "json is --x": (["--json", "{t}/x.safetensors"], r"--json .*x\.safetensors: would overwrite"),
    "json is --y": (["--json", "{t}/y.safetensors"], r"would overwrite the input .*y\.safet"),
    "json is a class list": (
        ["--classes-x", "{t}/labels.txt", "--classes-y", "{t}/labels.txt", "--json", "{t}/l.txt"],
        r"l\.txt: would overwrite the input .*labels\.txt",
    ),
    "json is a folder": (["--json", "{t}/folder"], r"is a directory"),
    "seed negative": (["--seed", "-1"], r"--seed: expected a seed in \[0, 4294967295\], got -1"),
    "seed too large": (["--seed", str(2**32)], r"--seed: expected a seed"),
    "seed not an int": (["--seed", "1.5"], r"--seed: expected an integer seed"),
    "class-max 0": (["--class-max", "0"], r"--class-max: expected a positive integer"),
    "nan feature": (["--x", "{t}/nan.safetensors"], r"nan\.safetensors: 1 NaN or infinite .*row 4"),
    "inf feature": (["--y", "{t}/inf.npy"], r"inf\.npy: 1 NaN or infinite .*row 4, column 1: -inf"),
    "no rows": (["--x", "{t}/empty.npy", "--y", "{t}/empty.npy"], r"empty\.npy: no rows"),
    "pickled objects": (
        ["--x", "{t}/pickled.pt"],
        r"pickled\.pt: holds pickled objects beyond tensors, dicts, lists and numbers; not loaded",
    ),
    "ids not a list": (["--y", "{t}/ids-int.safetensors"], r"metadata 'ids' is a JSON int, exp"),
    "x is a pipe": (["--x", "{t}/pipe"], r"pipe: not a regular file \(a device or a pipe\?\)"),
    "class list is a pipe": (
        ["--classes-x", "{t}/pipe", "--classes-y", "{t}/labels.txt"],
        r"--classes-x .*pipe: not a regular file",
    ),
    "json is a pipe": (["--json", "{t}/pipe"], r"--json .*pipe: not a regular file"),
    "x is a folder": (["--x", "{t}/folder"], r"folder: is a folder, expected a feature file"),
    "binary class list": (
        ["--classes-x", "{t}/binary.txt", "--classes-y", "{t}/labels.txt"],
        r"--classes-x .*binary\.txt: not UTF-8 text \(byte 128: 0x80\)",
    ),
    "class list with NUL": (
        ["--classes-x", "{t}/labels.txt", "--classes-y", "{t}/nul.txt"],
        r"--classes-y .*nul\.txt: binary data \(a NUL byte at byte 4\)",
    ),
    "class list is a folder": (
        ["--classes-x", "{t}/folder", "--classes-y", "{t}/labels.txt"],
        r"--classes-x .*folder: is a folder, expected a text file",
    ),
    "one class list": (["--classes-x", "{t}/labels.txt"], r"--classes-x and --classes-y go"),
    "layer out of range": (["--layer-y", "-3"], r"--layer-y -3: .* has 1 layers"),
}


@pytest.mark.parametrize("extra, match", CASES.values(), ids=CASES.keys())
def test_match_refuses(bad_input, t, extra, match):
    flags = [a.format(t=t) for a in extra]
    defaults = {"--x": t / "x.safetensors", "--y": t / "y.safetensors", "--json": t / "out.json"}
    argv = ["match", *flags]
    for flag, value in defaults.items():
        if flag not in flags:
            argv += [flag, str(value)]
    inputs = [p for p in t.iterdir() if p.is_file()]
    bad_input(argv, inputs=inputs, match=match)
    assert not (t / "out.json").exists()


def test_match_accepts_the_largest_seed(t, tmp_path):
    from prh.cli import main

    out = tmp_path / "r.json"
    argv = ["match", "--x", str(t / "x.safetensors"), "--y", str(t / "y.safetensors")]
    assert main([*argv, "--json", str(out), "--seed", str(2**32 - 1)]) == 0
    assert len(json.loads(out.read_text())["permutation"]) == 30
