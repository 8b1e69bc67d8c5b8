"""The demo's modalities step, its pure parts: settings refused, issue 13's targets judged from
figures, layer widths of zero-padded features, the report's section. (End to end at toy size:
``test_demo_pipeline.py``.)"""

from __future__ import annotations

import numpy as np
import pytest

from prh.demo.config import MODALITY_RUNS, demo_config
from prh.demo.modalities import (
    captioner_targets,
    layer_widths,
    pair_free_pairs,
    run_settings,
    targets,
)
from prh.demo.protocol import IMAGE_RUNS, image_runs, image_sweep_dir
from prh.demo.report_modalities import modalities_html, modalities_summary
from prh.errors import InputError


def test_presets_and_refusals():
    assert tuple(IMAGE_RUNS) == MODALITY_RUNS
    assert demo_config("quick").image.modalities == ()
    assert demo_config("default").image.modalities == ("image-good",)
    full = demo_config("full")
    assert set(full.image.modalities) == set(MODALITY_RUNS) and full.caption.zero_pair
    for bad in (
        {"modalities": ("image-next-token",)},
        {"modalities": ("image-good", "image-good")},
        {"image_samples": 100},  # not a multiple of the batch (128)
        {"image_train_scenes": 1},
        {"modalities": ("sketch-good",), "zero_pair_captioner": True},
        {"world": "flat"},
        {"control": "moving"},  # the control must be another world
        {"control": "flat"},
    ):
        with pytest.raises(InputError, match="demo:"):
            demo_config("default", **bad)
    # the image runs train on the demo's world and seed (the run settings say so)
    train = run_settings(demo_config("default", world_seed=1))["image-good"]["train"]
    assert (train["world"], train["world_seed"]) == ("moving", 1)
    still = run_settings(demo_config("default", world="cave", control=""))["image-good"]
    assert still["train"]["world"] == "cave"


def test_scene_counts_the_world_cannot_give_are_refused_before_any_work(tmp_path):
    from prh.demo import run_demo
    from prh.demo.world import check_world_sizes

    check_world_sizes(demo_config("default"))  # the presets fit the moving cave (2,160 states)
    check_world_sizes(demo_config("full"))
    for field, value in (("eval_scenes", 217), ("train_scenes", 1945), ("bridge_scenes", 2000)):
        with pytest.raises(InputError, match=f"demo: {field} {value} > the .* of world 'moving'"):
            run_demo(demo_config("default", **{field: value}), tmp_path / "out")
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_run_settings_name_the_recipe():
    cfg = demo_config("full")
    good, bad, sketch = (run_settings(cfg)[n] for n in MODALITY_RUNS)
    assert (good["train"]["views"], bad["train"]["views"]) == ("good", "bad")
    assert (good["image"]["modality"], sketch["image"]["modality"]) == ("image", "sketch")
    assert good["train"]["samples"] == cfg.image.samples and good["train"]["seed"] == cfg.seed
    assert (
        good["image"]["backbone"] == cfg.image.encoder.backbone and "cache_dir" not in good["image"]
    )
    assert (good["image"]["scratch_branch"], good["image"]["pool"]) == (True, "moments")
    off = run_settings(demo_config("full", scratch_branch=False, image_pool="mean"))["image-good"]
    assert (off["image"]["scratch_branch"], off["image"]["pool"]) == (False, "mean")


def test_presets_share_one_image_sweep(tmp_path):
    """The default demo's image-good run is a cell the full demo reuses: one folder, one id."""
    d, f = demo_config("default"), demo_config("full")
    assert image_sweep_dir(tmp_path, d) == image_sweep_dir(tmp_path, f)
    assert image_runs(d).cells()[0] in image_runs(f).cells()
    assert image_sweep_dir(tmp_path, demo_config("full", image_lr=1e-3)) != image_sweep_dir(
        tmp_path, f
    )


def test_pair_free_pairs_keep_present_names_in_order():
    names = ["text-good", "efficientnet-lite0", "image-good"]
    assert pair_free_pairs(names) == [
        ("image-good", "text-good"),
        ("efficientnet-lite0", "text-good"),
    ]


def test_layer_widths_find_the_padding():
    x = np.zeros((5, 3, 8), dtype=np.float32)
    x[:, 0, :8] = 1.0
    x[2, 1, 4] = -0.5  # one scene non-zero in column 4: width 5
    x[:, 2, :2] = np.arange(10).reshape(5, 2)  # a zero in some rows, not all
    assert layer_widths(x) == [8, 5, 2]


def _evidence(knn, lo, hi, rot, pf):
    names = ["text-good", "efficientnet-lite0", "image-good", "image-bad"]
    n = len(names)

    def full(v):
        return [[v] * n for _ in range(n)]

    m = {"names": names, "mutual_knn": full(0.0), "mutual_knn_ci_low": full(0.0),
         "mutual_knn_ci_high": full(0.0), "rotation": full(None), "cka": full(0.0)}  # fmt: skip
    for name, (v, a, b) in {"efficientnet-lite0": (knn[0], lo[0], hi[0]),
                            "image-good": (knn[1], lo[1], hi[1]),
                            "image-bad": (knn[2], lo[2], hi[2])}.items():  # fmt: skip
        i = names.index(name)
        for key, val in (("mutual_knn", v), ("mutual_knn_ci_low", a), ("mutual_knn_ci_high", b)):
            m[key][i][0] = m[key][0][i] = val
    g = names.index("image-good")
    m["rotation"][g][0], m["rotation"][0][g] = rot
    return {"matrix": m, "pair_free": pf}


PROBES = {"image-good": {f: {"embedding": v, "best": v} for f, v in
                         (("shape", 0.64), ("colour", 0.27), ("count", 0.6))}}  # fmt: skip


def test_targets_judge_intervals_rotation_and_pair_free():
    pf = [{"x": "image-good", "y": "text-good",
           "classes": {"shape": {"accuracy": 1.0, "exact": True},
                       "colour": {"accuracy": 0.4, "exact": False}},
           "samples": {"accuracy": 0.03, "chance": 0.002, "times_chance": 15.0}},
          {"x": "sketch-good", "y": "text-good",  # reported, not judged (no colour in a sketch)
           "classes": {"colour": {"accuracy": 0.1, "exact": False}}, "samples": None},
          {"x": "efficientnet-lite0", "y": "text-good",  # a control: judged by no target
           "classes": {"shape": {"accuracy": 1.0, "exact": True}}, "samples": None}]  # fmt: skip
    ev = _evidence(knn=(0.09, 0.12, 0.05), lo=(0.08, 0.11, 0.04), hi=(0.10, 0.13, 0.06),
                   rot=(0.95, 0.85), pf=pf)  # fmt: skip
    got = {r["target"]: r["met"] for r in targets(ev, PROBES)}
    assert got == {
        "image-good kNN@10 shape >= 0.6 (embedding)": True,
        "image-good kNN@10 colour >= 0.6 (embedding)": False,
        "image-good~text-good above efficientnet-lite0~text-good, intervals apart": True,
        "image-good~text-good above image-bad~text-good, intervals apart": True,
        "rotation score image-good~text-good >= 0.9 (lower of both ways)": False,  # min 0.85
        "pair-free image-good~text-good shape classes exact": True,
        "pair-free image-good~text-good colour classes exact": False,
        "pair-free image-good~text-good samples >= 10x chance": True,
    }
    # intervals that touch are not apart; a missing rotation score is "not run"
    ev = _evidence(knn=(0.09, 0.12, 0.05), lo=(0.08, 0.10, 0.04), hi=(0.10, 0.13, 0.06),
                   rot=(None, 1.0), pf=[])  # fmt: skip
    got = {r["target"]: r["met"] for r in targets(ev, PROBES)}
    assert got["image-good~text-good above efficientnet-lite0~text-good, intervals apart"] is False
    assert got["rotation score image-good~text-good >= 0.9 (lower of both ways)"] is None


def test_report_section_and_summary(tmp_path):
    assert "Not run in this preset" in modalities_html({"skipped": "none"}, tmp_path)
    ev = _evidence(knn=(0.09, 0.12, 0.05), lo=(0.08, 0.11, 0.04), hi=(0.10, 0.13, 0.06),
                   rot=(0.95, 0.97), pf=[])  # fmt: skip
    probe = {"chance": {"shape": 0.17, "colour": 0.13, "count": 0.5},
             "image-good": {f: {"embedding": 0.5, "best": 0.6, "layers": [0.6, 0.5]}
                            for f in ("shape", "colour", "count")}}  # fmt: skip
    section = {"runs": {"image-good": "modalities/x"}, "probe": probe, "evidence": ev,
               "targets": targets(ev, probe), "captioners": None}  # fmt: skip
    html = modalities_html(section, tmp_path)
    assert "Against the good-view text JEPA" in html and "0.9500" not in html
    assert "0.950" in html and "0.1200 [0.1100, 0.1300]" in html
    s = modalities_summary(section)
    assert len(s["pairs"]) == 6 and s["probe"]["image-good"]["shape"] == 0.5
    pair = next(p for p in s["pairs"] if {p["x"], p["y"]} == {"text-good", "image-good"})
    assert pair["mutual_knn_ci"] == [0.11, 0.13] and pair["rotation_x_to_y"] == 0.97
    assert s["readout"] is None and "read out to" not in html
    # wide runs read out by their own pairs (image_embed_dim): the widths and the kept spectrum
    section["readout"] = {"width": 16, "k": 2, "eigenvalues": {"image-good": [0.9, 0.6, 0.25]}}
    html = modalities_html(section, tmp_path)
    assert "trained 16 wide and read out to\n2" in html
    assert "<b>image-good</b> 0.900 0.600 | 0.250" in html
    assert modalities_summary(section)["readout"] == section["readout"]


def test_same_scene_good_views_leave_the_rotation_free():
    """Why the demo's modalities need not be one rotation apart: its good views are two
    observations of the SAME scene, the state kernel Pi = diag(p), so T_Pi = I has no gap and the
    theorem's condition fails. Checked exactly on a finite world: every state function is an
    optimum (loss 0), and two modalities can take optima with disjoint supports, e_cca = 1."""
    from prh.theory import generators as gen
    from prh.theory.jepa import jepa_loss, solve_jepa
    from prh.theory.measures import cross_modal_moment, misalignment
    from prh.theory.views import good_views

    rng = np.random.default_rng(0)
    N, k = 10, 3
    p = gen.random_prior(N, rng)
    qa, qb = rng.dirichlet(np.ones(3), size=N), rng.dirichlet(np.ones(2), size=N)
    Wa, Wb = good_views(np.diag(p), qa), good_views(np.diag(p), qb)
    sol = solve_jepa(Wa, k)
    assert np.allclose(sol.eigenvalues[:N], 1.0) and abs(sol.gap) < 1e-9 and sol.loss < 1e-9

    def white_state_function(support: np.ndarray) -> np.ndarray:
        g = rng.standard_normal((N, k)) * support[:, None]
        g[support] -= p[support] @ g[support] / p[support].sum()  # E_p[g] = 0, support kept
        c = g.T @ (p[:, None] * g)
        w, v = np.linalg.eigh(c)
        return g @ v @ np.diag(w**-0.5) @ v.T  # E_p[g g^T] = I

    first = np.arange(N) < N // 2
    ga, gb = white_state_function(first), white_state_function(~first)
    Fa = np.repeat(ga[:, None, :], 3, axis=1)  # f_A(s, n) = g_A(s): nuisance ignored
    Fb = np.repeat(gb[:, None, :], 2, axis=1)
    assert jepa_loss(Wa, Fa.reshape(-1, k)) < 1e-9 and jepa_loss(Wb, Fb.reshape(-1, k)) < 1e-9
    assert misalignment(cross_modal_moment(Fa, qa, Fb, qb, p)).e_cca > 1 - 1e-9  # >= 1/k


def test_captioner_targets():
    cap = {"metric": "CIDEr", "paired": 0.40, "zero_pair": 0.33, "nearest_caption": 0.35,
           "ratio": 0.825, "paired_beats_nearest": True}  # fmt: skip
    assert [r["met"] for r in captioner_targets(cap)] == [True, True]
    assert captioner_targets(cap)[1]["figure"] == "33.0 vs 40.0 (82%)"
    cap.update(zero_pair=0.2, ratio=0.5, paired_beats_nearest=False)
    assert [r["met"] for r in captioner_targets(cap)] == [False, False]


def test_rotation_target_shows_both_maps_recall():
    ev = _evidence(knn=(0.09, 0.12, 0.05), lo=(0.08, 0.11, 0.04), hi=(0.10, 0.13, 0.06),
                   rot=(1.25, 0.95), pf=[])  # fmt: skip
    ev["matrix"]["pairs"] = [
        {"x": x, "y": y, "chance_r1": 0.002, "orthonormal": {"r1": o}, "ridge": {"r1": r}}
        for x, y, o, r in (("image-good", "text-good", 0.045, 0.036),
                           ("text-good", "image-good", 0.055, 0.058))
    ]  # fmt: skip
    (row,) = [r for r in targets(ev, {}) if r["target"].startswith("rotation score")]
    assert row["met"] is True and row["figure"] == (
        "0.950 (R@1 orthonormal / ridge: image-good->text-good 0.045 / 0.036, "
        "text-good->image-good 0.055 / 0.058; chance 0.002)"
    )


def test_a_constant_encoder_runs_to_its_report_with_undefined_figures(tmp_path):
    """A constant encoder (a random-init EfficientNet's maps are constant to 1e-7) has undefined
    figures: the log lines, the targets and the report say so, on any CPU's rounding."""
    from prh.bridge.evidence import EvidenceConfig, modality_evidence
    from prh.demo.modalities import _log_evidence

    rng = np.random.default_rng(0)
    n_train, n_test, d = 48, 32, 12
    scenes = rng.standard_normal((n_train + n_test, d))
    text = scenes + 0.3 * rng.standard_normal(scenes.shape)
    feats = {
        "text-good": text,
        "efficientnet-lite0": scenes @ rng.standard_normal((d, d)),
        # constant up to float32 noise far below any signal: the CKA is undefined whatever the
        # rounding, and no figure of the run may depend on how the noise falls
        "image-good": (np.ones_like(scenes) + 1e-9 * rng.standard_normal(scenes.shape)),
    }
    train = {k: v[:n_train].astype(np.float32) for k, v in feats.items()}
    test = {k: v[n_train:].astype(np.float32) for k, v in feats.items()}
    cfg = EvidenceConfig(k=5, bootstrap=20, dims=8, match_dims=4, samples=False)
    ev = modality_evidence(train, test, pair_free_pairs=None, config=cfg).to_dict()
    m = ev["matrix"]
    g, t = m["names"].index("image-good"), m["names"].index("text-good")
    assert m["cka"][g][t] is None and m["cka"][t][g] is None  # undefined, not rounding noise
    e = m["names"].index("efficientnet-lite0")
    assert m["cka"][e][t] is not None and m["cka"][e][t] > 0.5

    lines: list[str] = []
    ctx = type("Ctx", (), {"log": staticmethod(lines.append)})()
    _log_evidence(ctx, ev)
    (line,) = [x for x in lines if x.lstrip().startswith("image-good")]
    assert "CKA undefined" in line
    probe = {
        "chance": {"shape": 0.17, "colour": 0.13, "count": 0.5},
        "image-good": {
            f: {"embedding": None, "best": None, "layers": [None]}
            for f in ("shape", "colour", "count")
        },
    }
    rows = {r["target"]: r for r in targets(ev, probe)}
    shape = rows["image-good kNN@10 shape >= 0.6 (embedding)"]
    assert shape["met"] is None and shape["figure"] == "undefined"
    section = {"runs": {"image-good": "modalities/x"}, "probe": probe, "evidence": ev,
               "targets": list(rows.values()), "captioners": None}  # fmt: skip
    assert "Against the good-view text JEPA" in modalities_html(section, tmp_path)
    pair = next(
        p
        for p in modalities_summary(section)["pairs"]
        if {p["x"], p["y"]} == {"text-good", "image-good"}
    )
    assert pair["cka"] is None
