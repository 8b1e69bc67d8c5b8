"""A run measured against the theory embedding while it trains (``--eval-theory``, issue 23):
the logged held-out canonical correlation is the one the theory step computes, recomputed here
from the final weights; every bad file is one line, exit 2, before the run folder is made."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")

from prh.cli import main
from prh.features import save_features
from prh.world import make_world

SMALL = ["--samples", "256", "--batch-size", "64", "--max-len", "48", "--no-progress",
         "--threads", "1", "--vocab-size", "200"]  # fmt: skip


def _states(world, n_fit: int = 40, n_test: int = 24) -> list[int]:
    train, test = world.split("train"), world.split("test")
    return [int(i) for i in train[:: len(train) // n_fit][:n_fit]] + [
        int(i) for i in test[:: len(test) // n_test][:n_test]
    ]


@pytest.fixture(scope="module")
def theory_file(tmp_path_factory):
    """``g*`` of 40 training-split and 24 test-split states, written by the CLI a user runs."""
    world = make_world("moving", seed=0)
    ids = _states(world)
    path = tmp_path_factory.mktemp("theory") / "g.safetensors"
    argv = ["world", "spectrum", "--k", "8", "--scenes", ",".join(map(str, ids)),
            "--out", str(path)]  # fmt: skip
    assert main(argv) == 0
    return path, ids


@pytest.mark.slow
def test_the_logged_theory_cc_is_the_held_out_cc_of_the_weights(tmp_path, theory_file):
    from prh.metrics.theory_cca import heldout_cc
    from prh.training import load_run

    path, ids = theory_file
    run = tmp_path / "r"
    argv = ["train", "--world", "moving", "--views", "good", "--out", run, "--eval-theory",
            path, "--eval-every", "2", *SMALL]  # fmt: skip
    assert main([str(a) for a in argv]) == 0
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    curve = [(r["samples"], r["eval_theory_cc"]) for r in rows if "eval_theory_cc" in r]
    assert [s for s, _ in curve] == [128, 256]
    assert "eval_mutual_knn" not in rows[-1]  # no --eval-features: only the theory measure
    # the reference: split by the world's own split, one caption each (wording seed 1), last layer
    world = make_world("moving", seed=0)
    fit = np.isin(ids, world.split("train"))
    assert fit.sum() == 40
    x = load_run(run, device="cpu").encode_texts([world.captions(i, 1, 1)[0] for i in ids])
    x = x[:, -1].astype(np.float64)
    g = world.theory_embedding(ids, 8)
    # width-fair: each side through its top 8 principal directions; raw: its top 64
    want = heldout_cc(x[fit], g[fit], x[~fit], g[~fit], components=8, max_dim=8, n_boot=1).mean
    assert curve[-1][1] == pytest.approx(want, abs=1e-6)
    raw = heldout_cc(x[fit], g[fit], x[~fit], g[~fit], components=8, max_dim=64, n_boot=1).mean
    assert rows[-1]["eval_theory_cc_raw"] == pytest.approx(raw, abs=1e-6)
    assert json.loads((run / "config.json").read_text())["train"]["eval_theory"] == str(path)
    # a seed gives the same curve
    again = tmp_path / "r2"
    assert main([str(a) for a in [*argv[:6], again, *argv[7:]]]) == 0
    rows2 = [json.loads(x) for x in (again / "metrics.jsonl").read_text().splitlines()]
    assert [(r["samples"], r["eval_theory_cc"]) for r in rows2 if "eval_theory_cc" in r] == curve


def _write(tmp_path, g, ids):
    path = tmp_path / "g.safetensors"
    save_features(path, np.asarray(g, dtype=np.float32), ids=ids)
    return path


@pytest.mark.parametrize(
    "case, match",
    [
        ("no-ids", "the file has no ids"),
        ("foreign-id", r"row 1 id 'cat' is not a state scene_<i> of world moving"),
        ("out-of-world", r"is not a state scene_<i> of world moving \(0\.\.2159\)"),
        ("nan", "row 2 holds NaN"),
        ("one-split", r"0 training-split and 30 test-split states; expected more than 9"),
    ],
)
def test_a_bad_theory_file_fails_before_the_run_folder_is_made(bad_input, tmp_path, case, match):
    world = make_world("moving", seed=0)
    test = [int(i) for i in world.split("test")[:30]]
    ids = [f"scene_{i}" for i in _states(world)]
    g = np.random.default_rng(0).normal(size=(len(ids), 8))
    if case == "no-ids":
        path = tmp_path / "g.npy"
        np.save(path, g)
    elif case == "foreign-id":
        path = _write(tmp_path, g, [ids[0], "cat", *ids[2:]])
    elif case == "out-of-world":
        path = _write(tmp_path, g, [*ids[:-1], "scene_99999"])
    elif case == "nan":
        g[2, 3] = np.nan
        path = _write(tmp_path, g, ids)
    else:
        path = _write(tmp_path, g[:30], [f"scene_{i}" for i in test])
    argv = ["train", "--world", "moving", "--out", tmp_path / "r", "--eval-theory", path, *SMALL]
    bad_input(argv, inputs=[path], match=match)
    assert not (tmp_path / "r").exists()


def test_eval_theory_paths_and_a_corpus_run_are_refused(bad_input, tmp_path, theory_file):
    path, _ = theory_file
    out = ["--out", tmp_path / "r", *SMALL]
    bad_input(["train", *out, "--eval-theory", tmp_path], match="is a folder, expected a")
    bad_input(["train", *out, "--eval-theory", tmp_path / "x.npy"], match="no such file")
    corpus = tmp_path / "c.jsonl"
    rows = [json.dumps({"image": f"i{k}", "captions": ["a cube", "one cube"]}) for k in range(8)]
    corpus.write_text("\n".join(rows) + "\n")
    argv = ["train", "--corpus", corpus, "--eval-theory", path, *out]
    bad_input(argv, inputs=[corpus, path], match="needs a world run")
    assert not (tmp_path / "r").exists()


def test_the_cave_runner_refuses_a_theory_curve_on_the_still_world(tmp_path):
    from prh.errors import InputError
    from prh.scaling.cave import CaveBackend

    runner = CaveBackend(vision="random:efficientnet-lite0", eval_scenes=24, curve_every=64,
                         theory_fit_scenes=40)  # fmt: skip
    with pytest.raises(InputError, match="world cave, which has no spectral gap"):
        runner.prepare(tmp_path)
    assert not list(tmp_path.iterdir())  # refused before the vision features are embedded
