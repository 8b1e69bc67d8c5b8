"""A run's curves at 0 samples (:mod:`prh.demo.origins`): its own initial weights measured by
the training hook's evaluators. Reference: a run whose steps cannot move its weights (a learning
rate of 1e-30) logs, at its first evaluation, the origin's figures."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")

from prh.cli import main
from prh.features import save_features
from prh.world import make_world


@pytest.mark.parametrize("views", ["good", "next-token"])
def test_a_frozen_run_starts_where_its_origin_says(tmp_path, views):
    from prh.demo.origins import run_origin

    world = make_world("moving", seed=0)
    train, test = world.split("train"), world.split("test")
    ids = [int(i) for i in train[::60][:24]] + [int(i) for i in test[::40][:12]]
    names = [f"scene_{i}" for i in ids]
    theory = tmp_path / "g.safetensors"
    save_features(theory, world.theory_embedding(ids, 8), names)
    vision = tmp_path / "v.safetensors"
    feats = np.random.default_rng(0).normal(size=(len(ids), 2, 6)).astype(np.float32)
    save_features(vision, feats, names)
    run = tmp_path / "r"
    argv = ["train", "--world", "moving", "--views", views, "--samples", "128", "--batch-size",
            "64", "--lr", "1e-30", "--warmup-frac", "0", "--eval-every", "1", "--eval-features",
            vision, "--eval-theory", theory, "--vocab-size", "200", "--no-progress",
            "--threads", "1", "--out", run]  # fmt: skip
    assert main([str(a) for a in argv]) == 0
    first = next(
        json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()
        if "eval_theory_cc" in x
    )  # fmt: skip
    got = run_origin(run)
    assert got["theory"] == pytest.approx(first["eval_theory_cc"], abs=1e-6)
    assert got["vision"] == pytest.approx(first["eval_mutual_knn"], abs=1e-9)


def test_a_run_without_evaluation_files_has_no_origin(tmp_path):
    from prh.demo.origins import run_origin

    run = tmp_path / "r"
    argv = ["train", "--world", "moving", "--samples", "64", "--batch-size", "64",
            "--vocab-size", "200", "--no-progress", "--threads", "1", "--out", run]  # fmt: skip
    assert main([str(a) for a in argv]) == 0
    assert run_origin(run) == {}
