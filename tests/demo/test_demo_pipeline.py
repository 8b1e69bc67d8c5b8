"""``prh demo`` end to end at toy size: every step, the outputs, resume, idempotence, CLI errors.

Hermetic: a random-init EfficientNet-Lite0 (no weights), a tiny BERT built here as the
"pretrained" text baseline, a few dozen scenes, runs of a few steps. The numbers are meaningless;
the pipeline is what is tested.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

CAPTION = {"captioner": True, "decoder_steps": 0, "decoder_scenes": 16}
# issue 13's step at toy size: two image/sketch encoders (prh's from-scratch CNN), the evidence,
# the zero-pair captioner (nearest caption: decoder_steps = 0). Not a random-init EfficientNet:
# its pooled maps are constant to 1e-7 (PyTorch's default init shrinks activations block by
# block), so which of its layers scored best depended on how a CPU rounds a constant. Every
# encoder here carries signal; a constant one is tested in tests/demo/test_modalities.py.
MODALITIES = {
    "modalities": ("image-good", "sketch-good"),
    "backbone": "none",
    "image_size": 16,
    "backbone_size": 32,
    "image_samples": 128,
    "image_train_scenes": 24,
    "zero_pair_captioner": True,
    "literal": "moving-literal",  # issue 31's literal-caption twin (the quick preset has none)
    "literal_samples": 2048,  # twice the sweep's: the literal step's runs have their own budget
}

SUMMARY_KEYS = {
    "alignment": {"good", "bad", "next-token", "minilm", "random-init"},
    "sample_efficiency": {"target", "samples_good", "samples_next_token", "ratio"},
    "law": {"form", "heldout_rmse", "seed_spread"},
    "prove": {"passed"},
}


def toy_config(tiny_bert: Path, **kw):
    from prh.demo import demo_config

    base = dict(
        eval_scenes=24,
        bridge_scenes=56,
        samples=1024,  # 16 steps: enough for good views to teach something (checked below)
        eval_every=64,
        batch_size=64,
        law_rhos=(0.5,),
        law_samples=(64, 128, 256),
        heldout_samples=(192,),
        heldout_runs=1,
        null=10,
        bootstrap=10,
        train_scenes=80,
        vision="random:efficientnet-lite0",
        text_baseline=f"hf:{tiny_bert}",
        workers=1,
        threads=1,
        captioner=False,
        spectral_pairs=256,
        curve_seeds=2,  # the efficiency curves' seeds and next-token's larger budget, end to end
        next_token_factor=2,
    )
    base.update(kw)
    return demo_config("quick", **base)


def _wording_recall(run: Path, skip_train: bool) -> float:
    """R@1 of retrieving a held-out scene's caption (wording seed 2) from another caption of it
    (wording seed 1), by the run's encoder or (``skip_train``) its random-init copy."""
    from prh.bridge import retrieval
    from prh.demo.world import random_init_encoder
    from prh.encoders import load_encoder
    from prh.encoders.embed import EmbedConfig, embed_world
    from prh.world import make_world

    world = make_world("moving", seed=0)  # the demo's world
    scenes = [int(i) for i in world.split("test")[::9]]
    enc = random_init_encoder(run, 0) if skip_train else load_encoder(str(run))
    a, b = (
        embed_world(enc, world, scenes, EmbedConfig(modality="text", caption_seed=s))[0][:, -1]
        for s in (1, 2)
    )
    return retrieval(a, b).to_dict()["x_to_y"]["R@1"]


def _check_theory(on_disk: dict, html: str, names: set[str]) -> None:
    """Issue 21's figures: the moving world's spectrum, every encoder against the theory, every
    pair's held-out canonical correlation, the still-world control, the targets."""
    from prh.world import make_world

    world = on_disk["world"]
    want = make_world("moving", seed=0).spectrum().nontrivial()[:12]
    assert world["name"] == "moving" and world["k"] == 8
    assert world["spectrum"] == pytest.approx(want, abs=1e-6)
    assert world["gap"] == pytest.approx(want[7] - want[8], abs=1e-5)
    assert set(on_disk["theory_cc"]) == names
    for r in on_disk["theory_cc"].values():
        assert len(r["correlations"]) == 8 and -1 <= r["ci"][0] <= r["ci"][1] <= 1
        assert r["mean"] == pytest.approx(np.mean(r["correlations"]))
    for p in on_disk["modalities"]["pairs"]:
        assert -1 <= p["cc_ci"][0] <= p["cc"] + 1e-9 and p["cc"] <= 1
    control = on_disk["control"]
    assert control["world"] == "cave" and control["spectrum"] is None
    cnames = {"text-good", "text-bad", "random-init", "efficientnet-lite0", "image-good",
              "sketch-good"}  # fmt: skip
    assert {p["x"] for p in control["pairs"]} | {p["y"] for p in control["pairs"]} == cnames
    assert all("cc" in p for p in control["pairs"])
    rows = {t["target"]: t for t in on_disk["theory_targets"]}
    assert rows["world: k >= 8, top-k eigenvalues >= 0.02 apart, gap >= 0.05"]["met"] is True
    assert any(t.startswith("image-good~text-good cc on the moving world above") for t in rows)
    assert "The theory's embedding of the moving world" in html and "The control" in html
    # the spectral pair-free maps, each from the runs' own pairs, on both worlds
    pairs = {"image-good~text-good", "sketch-good~text-good", "image-good~sketch-good"}
    for sec in (on_disk["spectral"], control["spectral"]):
        assert set(sec["maps"]) == pairs and sec["pairs"] == 256
        for m in sec["maps"].values():
            assert isinstance(m["pinned"], bool) and (m["pinned"] or m["reason"])
            assert 0 <= m["accuracy"] <= 1 and m["chance_r1"] == pytest.approx(1 / 24)
    assert any(t.startswith("control image-good~text-good: the spectral") for t in rows)
    assert "One rotation from each modality" in html and "Word collapse" in html


def _check_theory_curves(on_disk: dict, rows: list, out: Path, sweep: Path, html: str) -> None:
    """Issue 23's curves against the theory embedding: every run records one at the points of
    its vision curve, its last point is the held-out cc of the final weights recomputed here,
    and the three claims are judged again on them."""
    from prh.metrics.theory_cca import heldout_cc
    from prh.scaling.claims import LABELS
    from prh.training import load_run
    from prh.world import make_world

    for r in rows:
        assert [s for s, _ in r["extra"]["theory_curve"]] == [s for s, _ in r["extra"]["curve"]]
        assert all(-1 <= v <= 1 for _, v in r["extra"]["theory_curve"])
    good = next(r for r in on_disk["runs"] if r["name"] == "good")
    assert [s for s, _ in good["theory_evals"]] == [s for s, _ in good["evals"]]
    # the reference: g* of the bridge states (fit) and the held-out states (scored), one caption
    # each (wording seed 1), the final model's last layer
    world = make_world("moving", seed=0)
    (theory,) = sweep.glob("theory-*.safetensors")
    run = load_run(out / good["path"], device="cpu")
    from prh.world.registry import split_sample

    test_ids = split_sample(world, "test", 24)  # toy_config's eval and bridge scenes
    fit_ids = split_sample(world, "train", 56, from_end=True)
    x = {n: run.encode_texts([world.captions(i, 1, 1)[0] for i in ids])[:, -1]
         for n, ids in (("fit", fit_ids), ("test", test_ids))}  # fmt: skip
    g = {"fit": world.theory_embedding(fit_ids, 8), "test": world.theory_embedding(test_ids, 8)}
    want = heldout_cc(
        x["fit"], g["fit"], x["test"], g["test"], components=8, max_dim=8, n_boot=1
    ).mean  # width-fair: each side through its top 8 directions
    assert good["theory_evals"][-1][1] == pytest.approx(want, abs=1e-5)
    assert theory.is_file()
    tcur = on_disk["theory_curves"]
    assert -1 <= tcur["control"] <= 1 and tcur["efficiency"]["n_seeds"] == 2
    assert set(tcur["origins"]) == {"good", "bad", "next-token"}  # the curves at 0 samples
    assert all(set(o) == {"vision", "theory"} for o in tcur["origins"].values())
    claims = on_disk["theory_claims"]
    assert len(claims) == 3 and all(c["label"] in LABELS for c in claims)
    assert claims[1]["rule"] == on_disk["claims"][1]["rule"]  # the same rule, another reference
    assert "The same claims against the theory embedding" in html
    assert (out / "theory_curves.png").read_bytes()[:4] == b"\x89PNG"


def _check_literal(on_disk: dict, html: str, out: Path) -> None:
    """Issue 31's literal-caption twin: text-good trained again on literal and on partial
    captions at one converged recipe and budget (both seeds each), both caption kinds against
    the same image-good encoder beside the theory's predictions, and the rule's verdict."""
    from prh.scaling.claims import LABELS
    from prh.training import load_run
    from prh.world import make_world
    from prh.world.observation import predicted_cc

    lit = on_disk["literal"]
    assert lit["world"] == "moving-literal" and lit["image"] == "image-good" and lit["seeds"] == 2
    names = {"text-literal", "text-literal-s1", "text-partial", "text-partial-s1"}
    assert set(lit["runs"]) == set(lit["train_seconds"]) == names
    assert all(s > 0 for s in lit["train_seconds"].values())
    # literal and partial: one recipe and budget (the converged one: cosine decay, 5% warm-up,
    # literal_samples), each on its own world; the sweep's text-good keeps constant rate
    good = next(r for r in on_disk["runs"] if r["name"] == "good")
    a = load_run(out / lit["runs"]["text-literal"], device="cpu").config
    b = load_run(out / lit["runs"]["text-partial"], device="cpu").config
    sweep = load_run(out / good["path"], device="cpu").config
    assert (a.world, b.world, a.seed, b.seed) == ("moving-literal", "moving", 0, 0)
    where = ("world", "eval_features", "eval_theory")  # the world, and its sweep's files
    assert {k: v for k, v in a.to_dict().items() if k not in where} == {
        k: v for k, v in b.to_dict().items() if k not in where
    }
    assert (a.samples, a.optim.min_lr_frac, a.optim.warmup_frac) == (2048, 0.1, 0.05)
    assert lit["recipe"] == {"samples": 2048, "lr": a.optim.lr, "min_lr_frac": 0.1,
                             "warmup_frac": 0.05, "batch_size": 64}  # fmt: skip
    assert (sweep.samples, sweep.optim.min_lr_frac) == (1024, 1.0)
    assert load_run(out / lit["runs"]["text-literal-s1"], device="cpu").config.seed == 1
    assert load_run(out / lit["runs"]["text-partial-s1"], device="cpu").config.seed == 1
    assert set(lit["theory_cc"]) == set(lit["runs"])
    for name, r in lit["theory_cc"].items():
        assert len(r["correlations"]) == 8 and r["modality"] == "text" and "modes" in r
        ceiling = 1.0 if "literal" in name else on_disk["theory_cc"]["text-good"]["ceiling"]
        assert -1 <= r["own"]["mean"] <= 1 and r["ceiling"] == pytest.approx(ceiling, abs=1e-6)
    # the predictions: 1 in every direction for literal captions, six of eight for partial
    for kind, world in (("literal", "moving-literal"), ("partial", "moving")):
        want = predicted_cc(make_world(world, seed=0), "image", "text", 8)["observation"]
        assert lit["pairs"][kind]["predicted"] == pytest.approx(want)
        assert len(lit["pairs"][kind]["seeds"]) == 2
    assert lit["pairs"]["literal"]["predicted"] == pytest.approx([1.0] * 8, abs=1e-6)
    assert lit["pairs"]["partial"]["pair"] == "image-good~text-partial"
    v = lit["verdict"]
    assert v["label"] in LABELS and v["basis"].startswith("single seed")  # 2 seeds < 3
    assert v["figures"]["literal"]["seeds"] == 2
    assert "Literal against partial captions" in html and v["label"] in html
    # the spectral pair-free map image-good ~ text-literal, each side from its own run's pairs
    sp = lit["spectral"]["maps"]["image-good~text-literal"]
    assert set(lit["spectral"]["maps"]) == {"image-good~text-literal"}
    main = on_disk["spectral"]["maps"]["image-good~text-good"]
    if sp["pairs_drawn"] == main["pairs_drawn"]:  # the image side's draws are the theory step's
        assert sp["eigenvalues_x"] == main["eigenvalues_x"]
    assert isinstance(sp["pinned"], bool) and sp["chance_r1"] == pytest.approx(1 / 24)
    assert "moving-literal" in html and "image-good~text-literal" in html
    # --full: captioners on literal captions, scored against literal references (toy: no
    # decoder, so no oracle and no floors: those targets are not judged)
    cap = lit["captioners"]
    assert cap["n"] == 24 and cap["ratio"] == pytest.approx(cap["zero_pair"] / cap["paired"])
    ex = cap["evaluations"]["paired"]["examples"][0]  # references: the scene's literal captions
    assert ex["references"] == make_world("moving-literal", seed=0).captions(ex["scene"], 5, 0)
    assert ex["references"] != make_world("moving", seed=0).captions(ex["scene"], 5, 0)
    assert cap["targets"][0]["met"] is None and len(cap["targets"]) == 3
    assert (out / "literal" / "modalities").is_dir()
    assert "Captioners on literal captions" in html


@pytest.mark.slow
def test_toy_demo_outputs_resume_and_idempotence(tmp_path, tiny_bert):
    import torch
    from safetensors.torch import load_file

    from prh.demo import run_demo
    from prh.scaling.sweep import RESULTS, read_results

    out = tmp_path / "demo"
    lines: list[str] = []
    summary = run_demo(
        toy_config(tiny_bert, **CAPTION, **MODALITIES), out, log=lines.append, skip_prove=True
    )

    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk["format"] == "prh-demo-summary/1" and on_disk["options"] == on_disk["config"]
    for key, sub in SUMMARY_KEYS.items():
        assert sub <= set(on_disk[key]), key
    assert on_disk["alignment"] == summary["alignment"]
    for v in on_disk["alignment"].values():
        assert 0.0 <= v <= 1.0
    assert len(on_disk["claims"]) == 3
    assert set(on_disk["timings"]) == {
        "vision", "train", "embed", "measure", "word_order", "efficiency", "law", "bridge",
        "modalities", "theory", "control", "literal",
    }  # fmt: skip

    # the runs are one sweep: a results row per run, each with its whole curve
    (sweep,) = out.glob("sweep-*")
    rows = read_results(sweep / RESULTS)
    assert len(rows) == len(on_disk["runs"]) == 8  # good x2, next-token x2, bad, law x3
    for r in rows:
        assert [s for s, _ in r["extra"]["curve"]] == list(range(64, r["samples"] + 1, 64))
    # the measured score of a trained run equals the last point of its training curve
    good = next(r for r in on_disk["runs"] if r["name"] == "good")
    assert good["evals"][-1][0] == 1024
    assert on_disk["alignment"]["good"] == pytest.approx(good["evals"][-1][1], abs=1e-12)
    cell = next(r for r in rows if r["views"] == "good" and r["seed"] == 0)
    assert cell["score"] == pytest.approx(good["evals"][-1][1], abs=1e-12)
    # next-token ran twice as long, two seeds of each efficiency curve, both poolings measured
    nt = [r for r in on_disk["runs"] if r["views"] == "next-token"]
    assert [r["name"] for r in nt] == ["next-token", "next-token-s1"]
    assert {r["evals"][-1][0] for r in nt} == {2048}
    eff = on_disk["sample_efficiency"]
    assert eff["n_seeds"] == 2 and eff["largest_budget"] == 2048
    assert {"next-token", "next-token-last"} <= set(on_disk["alignment"])
    assert on_disk["alignment"]["next-token"] != on_disk["alignment"]["next-token-last"]
    budget = {b["views"]: b for b in on_disk["budget"]}  # rows, captions and tokens each read
    assert budget["next-token"]["tokens"] > budget["good"]["tokens"] > 0
    wc = on_disk["word_collapse"]  # issue 23's check, every trained text run
    assert set(wc) == {"good", "bad", "next-token"}
    assert all(-1 <= r[f] <= 1 for r in wc.values() for f in ("shape", "colour"))
    wo = on_disk["word_order"]
    assert {"bag-of-words", "good", "good shuffled", "next-token shuffled"} <= set(wo)

    # training taught something: the good-view encoder beats its random-init copy at what good
    # views teach (two wordings of one scene map close), on held-out scenes it never saw
    assert _wording_recall(out / good["path"], skip_train=False) > _wording_recall(
        out / good["path"], skip_train=True
    )

    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") >= 4  # curves, bars, law, scene renders
    for png in ("alignment_curves.png", "alignment_bars.png", "law_fit.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG"
    # the demo folder is a caption run: the quick demo's captioner retrieves training captions
    from prh.caption import load_captioner
    from prh.world import make_world

    cap = load_captioner(out)
    world = make_world("moving", seed=0)
    res = cap.caption(world.render(0, 0, 64))
    assert cap.kind == "nearest" and res.caption == res.nearest[0][0]
    assert res.caption in cap.gallery and "nearest-caption captioner:" in html

    # issue 13's step: both encoders trained apart, every pair of the matrix with an interval
    # and the rotation score both ways, pair-free matching, the targets, the captioners
    mod = on_disk["modalities"]
    assert set(mod["runs"]) == {"image-good", "sketch-good"}
    names = {"text-good", "text-good-s1", "text-bad", "next-token", "minilm", "random-init",
             "efficientnet-lite0", "image-good", "sketch-good"}  # fmt: skip
    assert {p["x"] for p in mod["pairs"]} | {p["y"] for p in mod["pairs"]} == names
    assert len(mod["pairs"]) == len(names) * (len(names) - 1) // 2
    for p in mod["pairs"]:
        lo, hi = p["mutual_knn_ci"]  # a percentile bootstrap of 10 resamples: ordered only
        assert 0.0 <= lo <= hi <= 1.0 and 0.0 <= p["mutual_knn"] <= 1.0
        # every encoder carries signal: CKA is defined for every pair (None for constant features)
        assert p["cka"] is not None and 0.0 <= p["cka"] <= 1.0 + 1e-9, (p["x"], p["y"])
    assert [(p["x"], p["y"]) for p in mod["pair_free"]] == [
        ("image-good", "text-good"), ("sketch-good", "text-good"),
        ("image-good", "sketch-good"), ("efficientnet-lite0", "text-good"),
    ]  # fmt: skip
    for pf in mod["pair_free"]:
        assert set(pf["classes"]) == {"shape", "colour"} and pf["samples"]["n"] == 24
    assert any(
        t["target"].startswith("rotation score image-good~text-good") for t in mod["targets"]
    )
    assert set(mod["probe"]["image-good"]) == {"shape", "colour", "count"}
    cap = mod["captioners"]
    assert cap["n"] == 24 and cap["ratio"] == pytest.approx(cap["zero_pair"] / cap["paired"])
    assert "Three modalities trained apart" in html and (out / "modalities.png").is_file()
    _check_theory(on_disk, html, names)
    _check_theory_curves(on_disk, rows, out, sweep, html)
    _check_literal(on_disk, html, out)

    # idempotent: a rerun trains nothing, reuses features and step results, same numbers
    weights = {p: os.stat(p).st_mtime_ns for p in out.glob("sweep-*/runs/*/model.safetensors")}
    assert len(weights) == 8
    image_runs = out.glob("modalities/sweep-*/runs/*/model.safetensors")  # the image sweep's
    weights.update({p: os.stat(p).st_mtime_ns for p in image_runs})
    literal_runs = out.glob("literal/sweep-*/runs/*/model.safetensors")  # the twin's sweeps
    weights.update({p: os.stat(p).st_mtime_ns for p in literal_runs})
    assert len(weights) == 14  # 8 sweep runs, 2 image, 2 literal and 2 partial
    again = run_demo(
        toy_config(tiny_bert, **CAPTION, **MODALITIES), out, log=lines.append, skip_prove=True
    )
    assert again["alignment"] == summary["alignment"]
    assert again["runs"] == on_disk["runs"]
    assert again["modalities"] == json.loads(json.dumps(summary["modalities"]))
    assert again["literal"] == json.loads(json.dumps(summary["literal"]))
    assert {p: os.stat(p).st_mtime_ns for p in weights} == weights

    # resumable: a killed demo (a run without its final weights, its row lost) retrains that
    # run only, and gives the same numbers
    lost = next(r for r in rows if r["split"] == "repeat")
    (sweep / lost["extra"]["run_dir"] / "model.safetensors").unlink()
    # and an image run killed before its final weights (a cell of the image sweep: its row
    # lost too, as the driver writes a row only after the weights): trained again, the same
    image_model = out / mod["runs"]["sketch-good"] / "model.safetensors"  # weights
    image_weights, image_bytes = load_file(image_model), image_model.read_bytes()
    image_model.unlink()
    image_results = image_model.parents[2] / RESULTS
    image_rows = read_results(image_results)
    assert len(image_rows) == 2
    left = [r for r in image_rows if r["extra"]["run_dir"] != f"runs/{image_model.parent.name}"]
    image_results.write_text("".join(json.dumps(r) + "\n" for r in left))
    assert len(left) == 1
    kept = [r for r in rows if r is not lost]
    (sweep / RESULTS).write_text("".join(json.dumps(r) + "\n" for r in kept))
    third = run_demo(
        toy_config(tiny_bert, **CAPTION, **MODALITIES), out, log=lines.append, skip_prove=True
    )
    assert third["alignment"] == summary["alignment"]
    assert third["runs"] == on_disk["runs"]
    assert json.loads((out / "summary.json").read_text())["law"] == on_disk["law"]
    changed = [p for p in weights if os.stat(p).st_mtime_ns != weights[p]]
    assert sorted(p.parent.name for p in changed) == sorted(
        [lost["cell_id"], image_model.parent.name]
    )
    again_weights = load_file(image_model)
    assert again_weights.keys() == image_weights.keys()
    assert all(torch.equal(again_weights[k], image_weights[k]) for k in image_weights)
    assert image_model.read_bytes() == image_bytes  # byte-identical, metadata order included
    assert third["modalities"] == json.loads(json.dumps(summary["modalities"]))
