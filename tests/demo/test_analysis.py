"""The demo's pure pieces: config checks, law rows, sample efficiency, centroids, claims, HTML."""

from __future__ import annotations

import numpy as np
import pytest

from prh.demo.analysis import (
    class_centroids,
    curve_arrays,
    efficiency_summary,
    law_rows,
    main_object,
)
from prh.demo.config import FULL, QUICK, demo_config
from prh.demo.protocol import grid, run_name
from prh.errors import InputError


def test_presets_are_valid_and_quick_is_smaller():
    assert QUICK.samples < FULL.samples and QUICK.eval_scenes < FULL.eval_scenes
    assert demo_config(True) == QUICK and demo_config(False, seed=None) == FULL
    assert demo_config(False, seed=3).seed == 3


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"samples": 1000}, "multiple of eval_every"),
        ({"law_samples": (2048, 3072), "heldout_samples": (3072,)}, "off the fit grid"),
        ({"law_samples": (65536,)}, "at most"),
        ({"heldout_runs": 9}, "more held-out points than fit points"),
        ({"eval_scenes": 10}, "more than k"),
    ],
)
def test_config_refuses_bad_settings(overrides, match):
    with pytest.raises(InputError, match=match):
        demo_config(False, **overrides)
    with pytest.raises(InputError, match="unknown setting"):
        demo_config(False, colour="red")


def test_runs_equal_budgets_and_heldout_rhos_off_grid():
    cells = grid(FULL).cells(FULL.seed)
    assert cells == grid(FULL).cells(FULL.seed)  # deterministic
    curves = {run_name(c): c for c in cells if c.split == "curve"}
    assert set(curves) == {"good", "bad", "next-token"}
    assert {c.samples for c in curves.values()} == {FULL.samples}  # equal budgets
    assert {c.seed for c in curves.values()} == {FULL.seed}
    fit = [c for c in cells if c.split == "fit"]
    assert sorted(c.rho for c in fit) == sorted(FULL.law_rhos)
    held = sorted((c.point, c.split, c.seed, c.rho) for c in cells if c.point is not None)
    assert [h[1] for h in held] == ["heldout", "repeat"] * FULL.heldout_runs
    assert len({h[2] for h in held}) == len(held)  # fresh seeds everywhere
    for point, _, _, rho in held:
        assert all(abs(rho - g) > 0.05 for g in (0.0, 1.0, *FULL.law_rhos))
        assert rho == next(r for p, s, _, r in held if p == point and s == "heldout")
    assert all(c.samples == FULL.law_run_samples for c in cells if c.views == "mixture")
    # the demo's held-out rho are what they were before the demo ran on the sweep harness
    assert [c.rho for c in cells if c.split == "heldout"] == [0.856, 0.085]


def _run(name, role, views, rho, seed, evals, point=None):
    return {
        "name": name,
        "role": role,
        "views": views,
        "rho": rho,
        "seed": seed,
        "point": point,
        "evals": evals,
    }


def test_law_rows_use_good_and_bad_as_end_points_and_pair_repeats():
    from prh.scaling.fit import law_data_from_rows

    ev = [(s, s / 1e4) for s in (1024, 2048, 3072, 4096)]
    runs = [
        _run("good", "curve", "good", None, 0, ev),
        _run("bad", "curve", "bad", None, 0, ev),
        _run("next-token", "curve", "next-token", None, 0, ev),
        _run("mix", "fit", "mixture", 0.5, 0, ev),
        _run("h0", "heldout", "mixture", 0.3, 1000, ev, 0),
        _run("r0", "repeat", "mixture", 0.3, 2000, [(s, y + 0.01) for s, y in ev], 0),
    ]
    rows = law_rows(runs, (1024, 2048, 4096), (3072,))
    fit = [r for r in rows if r["split"] == "fit"]
    assert sorted({r["rho"] for r in fit}) == [0.0, 0.5, 1.0]  # next-token is not a mixture
    assert len(fit) == 9 and all(r["samples"] in (1024, 2048, 4096) for r in fit)
    f, h, (ya, yb) = law_data_from_rows(rows)
    assert len(f) == 9 and len(h) == 1
    np.testing.assert_allclose(yb - ya, [0.01])
    with pytest.raises(InputError, match="no evaluation at 5120"):
        law_rows(runs, (1024,), (5120,))


def test_efficiency_planted_ratio():
    # good reaches 0.1 at 2048 samples, next-token at 8192: ratio 4 (log-linear interpolation)
    S = [1024, 2048, 4096, 8192, 16384]
    good = list(zip(S, [0.05, 0.10, 0.11, 0.12, 0.12]))
    nt = list(zip(S, [0.02, 0.04, 0.07, 0.10, 0.105]))
    d = efficiency_summary(good, nt, target=0.1)
    assert d["samples_good"] == pytest.approx(2048) and d["samples_next_token"] == pytest.approx(
        8192
    )
    assert d["ratio"] == pytest.approx(4.0)
    assert "samples_a" not in d and d["target"] == 0.1
    auto = efficiency_summary(good, nt)
    assert auto["target"] == pytest.approx(0.95 * 0.105)
    never = efficiency_summary(good, list(zip(S, [0.01] * 5)), target=0.1)
    assert never["samples_next_token"] is None and never["notes"]
    # next-token flat below an untrained control: the target rises above the control
    flat = list(zip(S, [0.04] * 5))
    d = efficiency_summary(good, flat, control=0.05)
    assert d["target"] == pytest.approx(0.085) and "random-init" in d["target_rule"]
    assert d["samples_good"] == pytest.approx(1024 * 2**0.7)
    assert d["ratio"] is None and d["ratio_lower_bound"] == pytest.approx(16384 / (1024 * 2**0.7))
    assert efficiency_summary(good, nt, control=0.05)["target"] == pytest.approx(0.95 * 0.105)
    with pytest.raises(InputError, match="no evaluations"):
        curve_arrays([])


def test_class_centroids_match_a_loop_and_refuse_empty_classes():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 4))
    labels = rng.integers(0, 3, 50)
    c = class_centroids(x, labels, 3)
    for k in range(3):
        np.testing.assert_allclose(c[k], x[labels == k].mean(0))
    with pytest.raises(InputError, match="class 3 has no scenes"):
        class_centroids(x, labels, 4)


def test_main_object_is_the_largest():
    from prh.world import CaveWorld, WorldConfig

    w = CaveWorld(WorldConfig(seed=0))
    for i in range(30):
        objs = w.scene(i).objects
        shape, colour = main_object(w.scene(i))
        big = max(o.size for o in objs)
        assert any(o.shape == shape and o.colour == colour and o.size == big for o in objs)


def _summary(good=0.09, bad=0.05, nt=0.06, ratio=3.0, law_ratio=1.2):
    def m(s):
        return {
            "score": s,
            "calibrated": s - 0.02,
            "ci": [s - 0.005, s + 0.005],
            "p_value": 0.01,
            "layers": [1, 2],
        }

    return {
        "alignment_detail": {
            "good": m(good),
            "bad": m(bad),
            "next-token": m(nt),
            "minilm": m(0.1),
            "random-init": m(0.02),
        },
        "sample_efficiency": {
            "target": 0.05,
            "samples_good": 1000.0,
            "samples_next_token": 1000.0 * ratio if ratio else None,
            "ratio": ratio,
            "notes": [],
        },
        "law": {
            "form": "multiplicative",
            "heldout_rmse": 0.012 * law_ratio,
            "seed_spread": 0.012,
            "ratio": law_ratio,
            "n_fit": 20,
            "n_heldout": 6,
        },
        "config": {"samples": 32768},
    }


def test_claims_follow_the_numbers():
    from prh.demo.report import claims

    assert [c["shown"] for c in claims(_summary())] == [True, True, True]
    got = claims(_summary(good=0.05, bad=0.06, ratio=0.5, law_ratio=3.0))
    assert [c["shown"] for c in got] == [False, False, False]
    assert claims(_summary(ratio=None))[1]["shown"] is None
    assert "intervals apart" in claims(_summary())[0]["evidence"]


def test_plots_and_html_embed_images(tmp_path):
    from prh.demo.plots import plot_bars, plot_curves
    from prh.demo.report import _img

    s = _summary()
    runs = [
        _run(n, "curve", n, None, 0, [(1024, 0.03), (2048, 0.05)])
        for n in ("good", "bad", "next-token")
    ] + [_run("mix", "fit", "mixture", 0.5, 0, [(1024, 0.04)])]
    plot_curves(runs, s["alignment_detail"], s["sample_efficiency"], tmp_path / "c.png")
    plot_bars(s["alignment_detail"], tmp_path / "b.png")
    for p in ("c.png", "b.png"):
        assert (tmp_path / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    tag = _img(tmp_path / "c.png", "curves")
    assert tag.startswith('<img class=plot alt="curves" src="data:image/png;base64,iVBOR')
    assert "no figure" in _img(tmp_path / "missing.png", "x")
