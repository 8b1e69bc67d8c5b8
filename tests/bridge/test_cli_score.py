"""`prh bridge score` end to end: the three ways to hold rows out agree, JSON and heatmap."""

from __future__ import annotations

import json

import numpy as np
import pytest

from prh.cli import main
from prh.features import save_features

N, D = 240, 8


@pytest.fixture
def files(tmp_path):
    """Three encoders of 240 scenes (ids shuffled per file) and their train/test halves."""
    rng = np.random.default_rng(0)
    z = rng.standard_normal((N, D))
    q, _ = np.linalg.qr(rng.standard_normal((D, D)))
    enc = {
        "a": np.stack([z, z + rng.standard_normal(z.shape)], 1),  # (N, 2, D): two layers
        "b": (z + 0.3 * rng.standard_normal(z.shape)) @ q,
        "c": rng.standard_normal((N, D)),
    }
    ids = [f"scene_{i}" for i in range(N)]
    out = {}
    for n, a in enc.items():
        perm = rng.permutation(N)  # rows in another order in every file: joined by id
        save_features(tmp_path / f"{n}.safetensors", a[perm], ids=[ids[i] for i in perm])
        save_features(tmp_path / f"{n}-train.safetensors", a[:160], ids=ids[:160])
        save_features(tmp_path / f"{n}-test.safetensors", a[160:], ids=ids[160:])
        out[n] = tmp_path / f"{n}.safetensors"
    (tmp_path / "train.txt").write_text("\n".join(ids[:160]) + "\n")
    (tmp_path / "test.txt").write_text("\n".join(ids[160:]) + "\n")
    return tmp_path


def _run(argv, capsys):
    assert main(["bridge", "score", *map(str, argv), "--bootstrap", "20"]) == 0
    return capsys.readouterr().out


def test_ids_split_equals_test_files_and_writes_json_and_heatmap(files, capsys):
    d = files
    whole = [d / "a.safetensors", d / "b.safetensors", d / "c.safetensors"]
    out_ids = _run(
        [
            "--files",
            *whole,
            "--train-ids",
            d / "train.txt",
            "--test-ids",
            d / "test.txt",
            "--json",
            d / "ids.json",
            "--heatmap",
            d / "m.png",
        ],
        capsys,
    )
    halves = [d / f"{n}-{s}.safetensors" for s in ("train", "test") for n in "abc"]
    _run(
        [
            "--files",
            *halves[:3],
            "--test-files",
            *halves[3:],
            "--names",
            "a",
            "b",
            "c",
            "--json",
            d / "files.json",
        ],
        capsys,
    )
    by_ids, by_files = (
        json.loads((d / "ids.json").read_text()),
        json.loads((d / "files.json").read_text()),
    )
    assert by_ids["format"] == "prh-bridge-score/1"
    assert len(by_ids["inputs"]) == 5 and by_ids["seed"] == 0
    assert by_ids["names"] == ["a", "b", "c"]
    for key in ("mutual_knn", "cka", "rotation", "rotation_r2"):
        assert by_ids[key] == by_files[key], key
    assert (by_ids["n_train"], by_ids["n_test"]) == (160, 80)
    assert by_ids["rotation"][0][1] > 0.8  # a (last layer: z + noise) vs b: one rotation
    assert by_ids["rotation"][0][2] is None  # c is unrelated: ridge at chance, no score
    assert (d / "m.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "a -> b: score" in out_ids and "ridge at chance: undefined" in out_ids


def test_seeded_split_is_deterministic_and_layer_flag_used(files, capsys):
    whole = [files / f"{n}.safetensors" for n in "ab"]
    args = ["--files", *whole, "--test-fraction", "0.25", "--seed", "3", "--json"]
    _run([*args, files / "1.json"], capsys)
    _run([*args, files / "2.json"], capsys)
    one, two = (json.loads((files / f"{i}.json").read_text()) for i in (1, 2))
    assert one["rotation"] == two["rotation"] and one["n_test"] == 60
    _run(["--files", *whole, "--layer", "0", "--json", files / "l0.json"], capsys)
    l0 = json.loads((files / "l0.json").read_text())
    assert l0["layers"][0][1] == [0, 0] and l0["rotation"][0][1] != one["rotation"][0][1]
    assert l0["options"]["layer"] == 0


def test_pair_free_pairs_with_world_labels(files, capsys):
    d = files
    tr = [d / f"{n}-train.safetensors" for n in "abc"]
    te = [d / f"{n}-test.safetensors" for n in "abc"]
    out = _run(["--files", *tr, "--test-files", *te, "--names", *"abc", "--pair-free", "a:b",
                "--world-seed", "0",
                "--match-dims", "8", "--json", d / "pf.json"], capsys)  # fmt: skip
    assert "pair-free a ~ b: shape" in out and "samples" in out
    doc = json.loads((d / "pf.json").read_text())
    (pf,) = doc["pair_free"]
    assert (pf["x"], pf["y"]) == ("a", "b") and set(pf["classes"]) == {"shape", "colour"}
    assert pf["samples"]["n"] == N - 160 and pf["samples"]["chance"] == 1 / (N - 160)
    from prh.world import CaveWorld, WorldConfig
    from prh.world.factors import scene_factors

    shape = scene_factors(CaveWorld(WorldConfig(seed=0)), range(160, N))["shape"]
    assert pf["classes"]["shape"]["rows"] == int((shape >= 0).sum())
    _run(["--files", *tr, "--test-files", *te, "--names", *"abc", "--pair-free", "--json",
          d / "all.json"], capsys)  # fmt: skip
    doc = json.loads((d / "all.json").read_text())
    assert [(p["x"], p["y"]) for p in doc["pair_free"]] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert doc["pair_free"][0]["classes"] == {}
