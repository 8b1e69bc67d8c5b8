"""The literal step's text-good runs (prh.demo.literal.literal_runs): both caption kinds at one
converged recipe, side by side when the workers allow, one after the other otherwise, and the
same runs either way."""

from pathlib import Path

import pytest

pytest.importorskip("torch")


def _contexts(out: Path, workers: int):
    from prh.demo import demo_config
    from prh.demo.context import Context

    cfg = demo_config(
        "default", eval_scenes=24, bridge_scenes=56, samples=256, literal_samples=512,
        eval_every=64, batch_size=64, law_rhos=(0.5,), law_samples=(64, 128, 256),
        heldout_samples=(192,), heldout_runs=1, train_scenes=80, workers=workers, threads=1,
        vision="random:efficientnet-lite0", curve_seeds=1,
    )  # fmt: skip
    log: list[str] = []
    return {
        "literal": Context(cfg.literal_config(), out, log.append, root=out.parent),
        "partial": Context(cfg.partial_config(), out, log.append, root=out.parent),
    }, log


@pytest.mark.slow
def test_both_kinds_train_at_one_recipe_side_by_side_or_in_turn_to_the_same_weights(tmp_path):
    from safetensors.torch import load_file

    from prh.demo.literal import literal_runs
    from prh.training import load_run

    together, log = _contexts(tmp_path / "a" / "literal", workers=2)
    apart, _ = _contexts(tmp_path / "b" / "literal", workers=1)
    a, b = literal_runs(together), literal_runs(apart)
    assert list(a) == list(b) == ["text-literal", "text-partial"]
    assert any("literal: 1 run(s) in sweep-literal-" in m for m in log)  # side by side
    for name in a:
        ca = load_run(a[name]["dir"], device="cpu").config
        assert ca.samples == 512 and ca.optim.min_lr_frac == 0.1 and ca.optim.warmup_frac == 0.05
        assert ca.world == ("moving-literal" if name == "text-literal" else "moving")
        assert a[name]["dir"].name == b[name]["dir"].name  # one cell id, however it ran
        wa = load_file(a[name]["dir"] / "model.safetensors")
        wb = load_file(b[name]["dir"] / "model.safetensors")
        assert all((wa[k] == wb[k]).all() for k in wa)
    # a second call reuses every run
    again = literal_runs(together)
    assert {n: r["dir"] for n, r in again.items()} == {n: r["dir"] for n, r in a.items()}


def test_the_full_preset_s_literal_sweeps_keep_the_recorded_folders(tmp_path):
    """``--full``'s literal runs (3 seeds a kind, in turn on the pool) land in the folders of the
    recorded run (docs/results/demo-full, commit 8af56ca), so a rerun into that ``OUT`` finds
    them; the two caption kinds never share a folder."""
    from prh.demo import demo_config, protocol
    from prh.demo.literal import kind_sweep_dir

    cfg = demo_config("full")
    names = {}
    for kind, kcfg in (("literal", cfg.literal_config()), ("partial", cfg.partial_config())):
        runner = protocol.converged_backend(kcfg, runs=kcfg.sweep.curve_seeds)
        names[kind] = kind_sweep_dir(tmp_path, kind, runner, kcfg.seed).name
    assert names == {"literal": "sweep-literal-0d3aaef786", "partial": "sweep-partial-da8cc9b7f7"}


def test_hashed_dir_depends_on_what_it_records_not_on_key_order(tmp_path):
    from prh.demo.protocol import hashed_dir

    opts = {"lr": 1e-3, "samples": 512}
    a = hashed_dir(tmp_path, "sweep", {"options": opts, "seed": 0})
    assert a == hashed_dir(tmp_path, "sweep", {"seed": 0, "options": {"samples": 512, "lr": 1e-3}})
    assert a.parent == tmp_path and a.name.startswith("sweep-") and len(a.name) == 16
    assert a != hashed_dir(tmp_path, "sweep", {"options": opts, "seed": 1})
    assert a != hashed_dir(tmp_path, "sweep", {"options": {**opts, "samples": 1024}, "seed": 0})
    assert a != hashed_dir(tmp_path, "sweep-x", {"options": opts, "seed": 0})
