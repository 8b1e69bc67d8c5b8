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
from prh.demo.config import DEFAULT, FULL, QUICK, demo_config
from prh.demo.protocol import grid, run_name
from prh.errors import InputError


def test_presets_are_valid_and_quick_is_smaller():
    assert (
        QUICK.text.samples < DEFAULT.text.samples
        and QUICK.measure.eval_scenes < DEFAULT.measure.eval_scenes
    )
    assert demo_config("quick") == QUICK and demo_config(seed=None) == DEFAULT
    assert demo_config("full") == FULL and demo_config("default", seed=3).seed == 3
    # --full is the default protocol with what claims 2 and 3 need, issue 13's other encoders
    # and captioner, and the literal step's runs trained to the optimum, nothing else changed
    assert FULL.sweep.curve_seeds >= 3 and FULL.text.nt_samples == 4 * FULL.text.samples
    assert FULL.sweep.heldout_runs * len(FULL.sweep.heldout_samples) >= 12
    changed = {k for k, v in FULL.to_dict().items() if DEFAULT.to_dict()[k] != v}
    assert changed == {"name", "curve_seeds", "next_token_factor", "heldout_runs", "modalities",
                       "zero_pair_captioner", "literal_samples"}  # fmt: skip
    with pytest.raises(InputError, match="unknown preset 'huge'"):
        demo_config("huge")


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"samples": 1000}, "multiple of eval_every"),
        ({"law_samples": (2048, 3072), "heldout_samples": (3072,)}, "off the fit grid"),
        ({"law_samples": (2048, 65536)}, "at most"),  # (65536,) alone: too few fit points
        ({"heldout_runs": 9}, "more held-out points than fit points"),
        ({"eval_scenes": 10}, "more than k"),
        ({"next_token_factor": 0}, "next_token_factor must be in 1..1000"),
        ({"curve_seeds": 0}, "curve_seeds must be >= 1"),
        ({"doc_captions": 0}, "doc_captions must be >= 1"),
    ],
)
def test_config_refuses_bad_settings(overrides, match):
    with pytest.raises(InputError, match=match):
        demo_config(**overrides)
    with pytest.raises(InputError, match="unknown setting"):
        demo_config(colour="red")


def test_runs_equal_budgets_and_heldout_rhos_off_grid():
    cells = grid(DEFAULT).cells(DEFAULT.seed)
    assert cells == grid(DEFAULT).cells(DEFAULT.seed)  # deterministic
    curves = {run_name(c): c for c in cells if c.split == "curve"}
    assert set(curves) == {"good", "bad", "next-token"}
    assert {c.samples for c in curves.values()} == {DEFAULT.text.samples}  # equal budgets
    assert {c.seed for c in curves.values()} == {DEFAULT.seed}
    fit = [c for c in cells if c.split == "fit"]
    assert sorted(c.rho for c in fit) == sorted(DEFAULT.sweep.law_rhos)
    held = sorted((c.point, c.split, c.seed, c.rho) for c in cells if c.point is not None)
    assert [h[1] for h in held] == ["heldout", "repeat"] * DEFAULT.sweep.heldout_runs
    assert len({h[2] for h in held}) == len(held)  # fresh seeds everywhere
    for point, _, _, rho in held:
        assert all(abs(rho - g) > 0.05 for g in (0.0, 1.0, *DEFAULT.sweep.law_rhos))
        assert rho == next(r for p, s, _, r in held if p == point and s == "heldout")
    assert all(c.samples == DEFAULT.sweep.law_run_samples for c in cells if c.views == "mixture")
    # the demo's held-out rho are what they were before the demo ran on the sweep harness
    assert [c.rho for c in cells if c.split == "heldout"] == [0.856, 0.085]


def test_full_runs_seeds_a_larger_next_token_budget_and_12_heldout_points():
    cells = grid(FULL).cells(FULL.seed)
    curves = {run_name(c, FULL.seed): c for c in cells if c.split == "curve"}
    names = {"good", "good-s1", "good-s2", "next-token", "next-token-s1", "next-token-s2", "bad"}
    assert set(curves) == names
    assert {curves[n].samples for n in names if n.startswith("next-token")} == {
        4 * FULL.text.samples
    }
    assert {curves[n].samples for n in names if not n.startswith("next-token")} == {
        FULL.text.samples
    }
    assert curves["good-s2"].seed == curves["next-token-s2"].seed == FULL.seed + 2
    held = [c for c in cells if c.split == "heldout"]
    assert len(held) * len(FULL.sweep.heldout_samples) == 12
    assert len([c for c in cells if c.split == "repeat"]) == len(held)


def test_next_token_runs_train_on_documents_of_one_scene():
    from dataclasses import replace

    from prh.demo.protocol import backend

    still = replace(DEFAULT, world="cave", control="")
    b = backend(still)
    nt = next(c for c in grid(still).cells(0) if c.views == "next-token")
    good = next(c for c in grid(still).cells(0) if c.views == "good")
    cfg_nt, cfg_good = b.train_config(nt, "/tmp/x"), b.train_config(good, "/tmp/x")
    assert (cfg_nt.doc_captions, cfg_nt.max_len) == (
        still.text.doc_captions,
        still.text.doc_max_len,
    )
    assert (cfg_good.doc_captions, cfg_good.max_len) == (1, still.text.max_len)
    assert cfg_nt.samples == cfg_good.samples  # equal budgets in the default demo
    assert cfg_nt.world == cfg_good.world == "cave"
    moving = backend(DEFAULT).train_config(good, "/tmp/x")
    assert moving.world == "moving" and moving.train_scenes == DEFAULT.text.train_scenes
    # on the moving world a next-token document narrates doc_captions frames of one trajectory
    nt_moving = backend(DEFAULT).train_config(nt, "/tmp/x")
    assert (nt_moving.narration_len, nt_moving.doc_captions) == (DEFAULT.text.doc_captions, 1)
    assert nt_moving.max_len == DEFAULT.text.doc_max_len and moving.narration_len == 0


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
        _run("good-s1", "curve", "good", None, 1, ev),  # an efficiency seed: not a law point
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
    d = efficiency_summary([good], [nt], target=0.1)
    assert d["samples_good"] == pytest.approx(2048) and d["samples_next_token"] == pytest.approx(
        8192
    )
    assert d["ratio"] == pytest.approx(4.0)
    assert "samples_a" not in d and d["target"] == 0.1
    auto = efficiency_summary([good], [nt])
    assert auto["target"] == pytest.approx(0.95 * 0.105)
    never = efficiency_summary([good], [list(zip(S, [0.01] * 5))], target=0.1)
    assert never["samples_next_token"] is None and never["notes"]
    # next-token flat below an untrained control: the target rises above the control
    flat = list(zip(S, [0.04] * 5))
    d = efficiency_summary([good], [flat], control=0.05)
    assert d["target"] == pytest.approx(0.085) and "random-init" in d["target_rule"]
    assert d["samples_good"] == pytest.approx(1024 * 2**0.7)
    assert d["ratio"] is None and d["ratio_lower_bound"] == pytest.approx(16384 / (1024 * 2**0.7))
    assert efficiency_summary([good], [nt], control=0.05)["target"] == pytest.approx(0.95 * 0.105)
    assert d["n_seeds"] == 1 and d["ci"] == [None, None]
    with pytest.raises(InputError, match="no evaluations"):
        curve_arrays([])


def test_efficiency_over_seeds_gives_an_interval_and_next_token_may_run_further():
    # good reaches 0.1 at 2048 on every seed; next-token (twice the budget) at 8192, 16384, 8192
    S = [1024, 2048, 4096, 8192, 16384]
    good = [list(zip(S, [0.05, 0.10, 0.11, 0.12, 0.12]))] * 3
    S2 = [*S, 32768]
    nt = [
        list(zip(S2, [0.02, 0.04, 0.07, 0.10, 0.105, 0.11])),
        list(zip(S2, [0.02, 0.03, 0.05, 0.07, 0.10, 0.11])),
        list(zip(S2, [0.02, 0.04, 0.07, 0.10, 0.105, 0.11])),
    ]
    d = efficiency_summary(good, nt, target=0.1, seed=0)
    assert d["n_seeds"] == 3 and d["largest_budget"] == 32768
    assert d["per_seed_ratio"] == pytest.approx([4.0, 8.0, 4.0])
    lo, hi = d["ci"]
    assert 4.0 - 1e-9 <= lo <= d["ratio"] <= hi <= 8.0 + 1e-9 and lo > 1
    assert d["curves"]["next-token"]["samples"] == S2
    assert d == efficiency_summary(good, nt, target=0.1, seed=0)  # deterministic


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


def _summary(
    good=0.09,
    bad=0.05,
    nt=0.06,
    ratio=3.0,
    law_ratio=1.2,
    seeds=3,
    heldout=12,
    nt_rising=True,
    nt_last=0.03,
):
    def m(s):
        return {
            "score": s,
            "calibrated": s - 0.02,
            "ci": [s - 0.005, s + 0.005],
            "p_value": 0.01,
            "layers": [1, 2],
        }

    per_seed = [1000.0] * seeds
    nt_curve = [[1024, 0.02], [4096, 0.04], [16384, nt if nt_rising else 0.01]]
    return {
        "alignment_detail": {
            "good": m(good),
            "bad": m(bad),
            "next-token": m(nt),
            "next-token-last": m(nt_last),
            "minilm": m(0.1),
            "random-init": m(0.02),
        },
        "sample_efficiency": {
            "target": 0.05,
            "samples_good": 1000.0,
            "samples_next_token": 1000.0 * ratio if ratio else None,
            "ratio": ratio,
            "ci": [ratio * 0.8, ratio * 1.2] if ratio and seeds >= 3 else [None, None],
            "per_seed_a": per_seed,
            "n_seeds": seeds,
            "largest_budget": 32768.0,
            "ratio_lower_bound": None if ratio else 32768 / 1000.0,
            "curves": {
                "next-token": {
                    "samples": [p[0] for p in nt_curve],
                    "mean": [p[1] for p in nt_curve],
                }
            },
            "notes": [],
        },
        "law": {
            "form": "multiplicative",
            "heldout_rmse": 0.012 * law_ratio,
            "seed_spread": 0.012,
            "ratio": law_ratio,
            "n_fit": 20,
            "n_heldout": heldout,
            "n_pairs": heldout,
        },
        "runs": [{"name": "next-token", "evals": nt_curve}],
        "config": {"samples": 32768},
    }


def test_claims_follow_the_pre_registered_rules():
    from prh.demo.report import claims

    labels = lambda s: [c["label"] for c in claims(s)]  # noqa: E731
    assert labels(_summary()) == ["SHOWN", "SHOWN", "SHOWN"]
    # good behind bad; ratio interval below 1; held-out error 3x the seed spread
    assert labels(_summary(good=0.05, bad=0.06, ratio=0.5, law_ratio=3.0)) == ["NOT SHOWN"] * 3
    # the default demo's situation: one seed, next-token never reaches the target and does not
    # rise above the control, 6 held-out points: too few figures, pointing to --full
    got = claims(_summary(ratio=None, seeds=1, heldout=6, nt=0.021, nt_rising=False, nt_last=0.01))
    assert [c["label"] for c in got][1:] == ["INCONCLUSIVE", "INCONCLUSIVE"]
    assert "--full" in got[1]["reason"] and "--full" in got[2]["reason"]
    assert "slope -0.0150 per doubling" in got[1]["reason"]  # (0.01 - 0.04) / 2 doublings
    assert got[1]["figures"]["ratio_lower_bound"] == pytest.approx(32.768)
    # the same with 3 seeds: next-token does not rise, so no finite ratio can come: NOT SHOWN
    got = claims(_summary(ratio=None, nt=0.021, nt_rising=False, nt_last=0.01))
    assert got[1]["label"] == "NOT SHOWN" and "lower bound 32.8" in got[1]["reason"]
    # a finite ratio from one seed is a number without an interval
    assert labels(_summary(seeds=1))[1] == "INCONCLUSIVE"
    # a bad-view encoder at the control's level keeps claim 1 SHOWN (good is above all three)
    c = claims(_summary(bad=0.021))[0]
    assert c["label"] == "SHOWN" and c["figures"]["vs_control"]["bad"] == "at"
    assert c["rule"].startswith("SHOWN when the good-view JEPA's bootstrap interval")
    # next-token enters the claims with its better pooling: here last-token (0.085, close to
    # good's 0.09, intervals overlapping) makes claim 1 INCONCLUSIVE where mean pooling would not
    c = claims(_summary(nt_last=0.085))[0]
    assert c["label"] == "INCONCLUSIVE" and c["figures"]["next-token"]["score"] == 0.085
    assert "last-token pooling" in c["evidence"]


def _theory(summary, good=0.7, bad=0.05, nt=0.4, control=0.13, ratio=3.0, law_ratio=1.2):
    """``summary`` on a world with a theory: the theory step's held-out cc of each encoder
    (intervals +- 0.03) and the claims' figures against ``g*``."""

    def cc(x):
        return {"mean": x, "ci": [x - 0.03, x + 0.03], "correlations": [x] * 8}

    other = _summary(ratio=ratio, law_ratio=law_ratio)
    summary["theory_cc"] = {"text-good": cc(good), "text-bad": cc(bad), "next-token": cc(nt),
                            "random-init": cc(control), "minilm": cc(0.5)}  # fmt: skip
    summary["theory_curves"] = {"control": control, "efficiency": other["sample_efficiency"],
                                "law": other["law"]}  # fmt: skip
    return summary


def test_theory_claims_follow_the_same_rules_on_the_theory_figures():
    from prh.demo.report import claims, theory_claims

    # a still world (no theory) has none; the vision claims stay as they are
    assert theory_claims(_summary()) is None
    assert theory_claims({**_summary(), "theory_cc": {"skipped": "no gap"}}) is None
    # vision: good behind bad (NOT SHOWN); theory: good far above all three (SHOWN)
    s = _theory(_summary(good=0.05, bad=0.06, ratio=0.5, law_ratio=3.0))
    assert [c["label"] for c in claims(s)] == ["NOT SHOWN"] * 3
    got = theory_claims(s)
    assert [c["label"] for c in got] == ["SHOWN", "SHOWN", "SHOWN"]
    assert [c["rule"] for c in got] == [c["rule"] for c in claims(s)]  # word for word
    assert got[0]["figures"]["good"]["score"] == 0.7
    assert "theory cc good 0.700" in got[0]["evidence"]
    assert "random-init on this measure 0.130" in got[1]["evidence"]
    # next-token's interval overlapping good's: INCONCLUSIVE; a ratio below 1: NOT SHOWN
    got = theory_claims(_theory(_summary(), nt=0.68, ratio=0.5, law_ratio=3.0))
    assert [c["label"] for c in got] == ["INCONCLUSIVE", "NOT SHOWN", "NOT SHOWN"]
    assert got[0]["figures"]["vs_control"]["next-token"] == "above"


def test_claims_without_intervals_are_inconclusive():
    from prh.demo.report import claims

    s = _summary()
    for d in s["alignment_detail"].values():
        d["ci"] = None
    assert claims(s)[0]["label"] == "INCONCLUSIVE"


def test_plots_and_html_embed_images(tmp_path):
    from prh.demo.html_parts import img_tag
    from prh.demo.plots import plot_bars, plot_curves

    s = _summary()
    runs = [
        _run(n, "curve", n, None, 0, [(1024, 0.03), (2048, 0.05)])
        for n in ("good", "bad", "next-token")
    ] + [_run("mix", "fit", "mixture", 0.5, 0, [(1024, 0.04)])]
    plot_curves(runs, s["alignment_detail"], s["sample_efficiency"], tmp_path / "c.png")
    plot_bars(s["alignment_detail"], tmp_path / "b.png")
    for p in ("c.png", "b.png"):
        assert (tmp_path / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    tag = img_tag(tmp_path / "c.png", "curves")
    assert tag.startswith('<img class=plot alt="curves" src="data:image/png;base64,iVBOR')
    assert "no figure" in img_tag(tmp_path / "missing.png", "x")


def test_budget_rows_and_captions_per_method():
    from prh.demo.report import budgets

    got = {b["views"]: b for b in budgets(FULL.to_dict())}
    assert got["good"]["rows"] == got["bad"]["rows"] == FULL.text.samples
    assert (
        got["good"]["captions"] == 2 * FULL.text.samples
        and got["bad"]["captions"] == FULL.text.samples
    )
    # 4x the rows, each a document of 4 captions: 8x the good-view run's text
    assert got["next-token"]["rows"] == 4 * FULL.text.samples
    assert got["next-token"]["captions"] == 16 * FULL.text.samples
    assert all(b["tokens"] is None for b in got.values())  # no runs measured: no token count
    # with each run's mean tokens per row: rows x tokens per row
    tok = {"good": 19.5, "bad": 17.4, "next-token": 62.2}
    got = {b["views"]: b for b in budgets(FULL.to_dict(), tok)}
    assert got["next-token"]["tokens"] == pytest.approx(4 * FULL.text.samples * 62.2)
    assert got["good"]["tokens"] == pytest.approx(FULL.text.samples * 19.5)


@pytest.mark.slow
def test_tokens_per_row_of_a_run_counts_its_rows_real_tokens(tmp_path):
    from prh.training import load_run, train, train_config
    from prh.training.data import run_tokens_per_row

    cfg = train_config("tiny", world="moving", views="next-token", narration_len=3, max_len=160,
                       samples=128, batch_size=64, vocab_size=200, checkpoint_every=0)  # fmt: skip
    run = train(cfg, tmp_path / "r", progress=False, threads=1)
    before = (run / "tokenizer.json").read_bytes()
    got = run_tokens_per_row(run, batches=2)
    assert (run / "tokenizer.json").read_bytes() == before  # read, never rewritten
    # reference: each row of the run's first two batches counted one by one (a document of 3
    # frames is well over 3 x 5 tokens and within the context)
    from prh.training.data import default_data_factory

    _, ds = default_data_factory(cfg, run, 0, 1, False, lambda: None)
    counts = [int(m.sum()) for i in range(2) for m in ds.batch(i)["tokens_mask"]]
    assert len(counts) == 128 and got == pytest.approx(np.mean(counts)) and 3 * 5 < got < 160
    assert load_run(run, device="cpu").tokenizer.vocab_size <= 200
