"""The restart objective: it prefers the run that learned its pairs, and chooses reproducibly."""

from __future__ import annotations

from pathlib import Path

import pytest

from prh.training.config import train_config
from prh.training.restarts import Restart, RestartChoice, choose, same_recipe


def _choice(*objectives: float) -> RestartChoice:
    rs = tuple(Restart(s, Path(f"seed-{s}"), (o, 0.0)) for s, o in enumerate(objectives))
    return RestartChoice(rs, 256, 777)


def test_the_largest_objective_is_chosen_and_a_tie_goes_to_the_lower_seed():
    assert _choice(0.5, 0.9, 0.7).chosen.seed == 1
    assert _choice(0.9, 0.5, 0.9).chosen.seed == 0
    d = _choice(0.5, 0.9).to_dict()
    assert d["chosen"] == "seed-1" and [r["objective"] for r in d["restarts"]] == [0.5, 0.9]


def test_same_recipe_names_the_first_flat_key_that_differs():
    from prh.cli.train import flat_config

    def flat(**kw):
        return flat_config(train_config("tiny", world="moving", **kw))

    assert same_recipe(flat(seed=0), flat(seed=0)) is None
    assert same_recipe(flat(seed=0), flat(seed=1)) == "seed"
    assert same_recipe(flat(seed=0), flat(seed=0, lr=5e-4)) == "lr"
    wide = flat(seed=0, model_overrides={"embed_dim": 16})
    assert same_recipe(flat(seed=0), wide) == "model.embed_dim"


@pytest.mark.slow
def test_the_objective_prefers_a_good_view_run_to_a_bad_view_run(tmp_path):
    """20 steps of batch 64 each: the good-view run learned the pairs the objective draws, the
    bad-view run (two distortions of one caption) did not, so its sum l_i is lower. Measured
    on 1,024 pairs: bad 0.19 and 0.08 (seeds 0, 2), good 1.40 and 1.10 (seeds 1, 3); the margin
    asserted is 0.5."""
    from prh.training.api import train

    runs = []
    for seed, views in ((0, "bad"), (1, "good")):
        cfg = train_config("tiny", world="moving", views=views, samples=1280, batch_size=64,
                           seed=seed, checkpoint_every=0, log_every=0)  # fmt: skip
        runs.append((seed, train(cfg, tmp_path / views, progress=False, threads=1)))
    choice = choose(runs, 1024)
    bad, good = choice.restarts
    assert choice.chosen.seed == 1, (bad.objective, good.objective)
    assert good.objective > bad.objective + 0.5, (bad.objective, good.objective)
    assert choose(runs, 1024) == choice  # a fixed draw: the same eigenvalues again
