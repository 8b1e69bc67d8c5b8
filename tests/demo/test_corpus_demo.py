"""``prh demo --corpus``: the demo's claims on a caption corpus with its photos, end to end on the
cave world exported as a COCO folder (toy size), and its refusals (one line, exit 2, nothing
written).

Hermetic: a random 3-layer ViT (``tiny_vit``) as the frozen vision encoder, a tiny BERT as the
text baseline, 120 train and 30 test photos of 32 px, runs of a few steps. The numbers are
meaningless; what is tested is that every step reads the corpus (its train split for the runs,
its test photos for the measurement) and that what a corpus cannot offer is absent and said so.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from prh.cli import main

WORLD_SEED = 3


@pytest.fixture(scope="module")
def coco(tmp_path_factory) -> Path:
    """The cave world (seed 3, 400 scenes) exported: 120 train and 30 test scenes at 32 px."""
    from prh.world import make_world
    from prh.world.export import export_coco

    world = make_world("cave", seed=WORLD_SEED, num_scenes=400)
    splits = {"train": world.split("train")[:120], "test": world.split("test")[:30]}
    out = tmp_path_factory.mktemp("export") / "coco"
    return export_coco(world, out, splits, captions=5, size=32, seed=WORLD_SEED).resolve()


def corpus_config(coco: Path, tiny_vit: Path, tiny_bert: Path, **kw):
    from prh.demo import demo_config

    base = dict(
        corpus=str(coco), eval_scenes=24, bridge_scenes=56, samples=1024, eval_every=64,
        batch_size=64, law_rhos=(0.5,), law_samples=(64, 128, 256), heldout_samples=(192,),
        heldout_runs=1, null=10, bootstrap=10, vision=f"hf:{tiny_vit}",
        text_baseline=f"hf:{tiny_bert}", workers=1, threads=1, captioner=True, decoder_steps=0,
        decoder_scenes=40, spectral_pairs=256,
    )  # fmt: skip
    return demo_config("quick", **{**base, **kw})


@pytest.fixture(scope="module")
def corpus_demo(coco, tiny_vit, tiny_bert, tmp_path_factory):
    import torch

    from prh.demo import run_demo

    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("demo") / "out"
    lines: list[str] = []
    run_demo(corpus_config(coco, tiny_vit, tiny_bert), out, log=lines.append, skip_prove=True)
    return out, lines


def test_corpus_demo_trains_on_the_train_photos_and_measures_the_test_photos(corpus_demo, coco):
    from prh.features import load_features
    from prh.scaling.claims import LABELS
    from prh.training import load_run

    out, _ = corpus_demo
    s = json.loads((out / "summary.json").read_text())
    assert s["config"]["world"] == "corpus" and s["config"]["corpus"] == str(coco)
    assert len(s["claims"]) == 3 and all(c["label"] in LABELS for c in s["claims"])
    train = json.loads((coco / "annotations" / "captions_train.json").read_text())
    test = json.loads((coco / "annotations" / "captions_test.json").read_text())
    # every text run read the corpus's train split, and only it
    for r in s["runs"]:
        cfg = json.loads((out / r["path"] / "config.json").read_text())
        assert cfg["corpus"]["split"] == "train" and cfg["corpus"]["images"] == 120
        assert load_run(out / r["path"], device="cpu").config.corpus == str(coco)
    # the vision step embedded test photos for the measurement, train photos for the bridge
    test_names = {Path(im["file_name"]).stem for im in test["images"]}
    train_names = {Path(im["file_name"]).stem for im in train["images"]}
    (vision_test,) = out.glob("sweep-*/vision-*.safetensors")
    ids = load_features(vision_test).ids
    assert len(ids) == 24 and {Path(i).stem for i in ids} <= test_names
    # the measured score of a trained run is the last point of its curve (one held-out caption)
    good = next(r for r in s["runs"] if r["name"] == "good")
    assert s["alignment"]["good"] == pytest.approx(good["evals"][-1][1], abs=1e-12)
    names = {"good", "bad", "next-token", "minilm", "random-init"}
    assert 0 <= s["alignment"]["good"] <= 1 and set(s["alignment"]) >= names
    # the captioner retrieves the corpus's training captions
    from prh.caption import load_captioner

    cap = load_captioner(out)
    gallery = {a["caption"] for a in train["annotations"]}
    assert cap.kind == "nearest" and set(cap.gallery) <= gallery
    assert train_names.isdisjoint(test_names)


def test_corpus_demo_says_what_a_corpus_lacks(corpus_demo):
    from prh.demo.theory import CORPUS_REASON

    out, lines = corpus_demo
    s = json.loads((out / "summary.json").read_text())
    b = s["bridge"]
    assert b["classes_absent"] and all(e["zero_shot"] is None for e in b["encoders"].values())
    assert all(0 <= e["retrieval"]["img_to_txt"]["R@1"] <= 1 for e in b["encoders"].values())
    assert s["world"]["spectrum"] is None and s["world"]["reason"] == CORPUS_REASON
    assert s["theory_targets"] == [] and s["word_collapse"] == {}
    assert s["control"].get("skipped") or not s["control"].get("pairs")
    html = (out / "report.html").read_text()
    assert "What a corpus cannot offer is absent by contract" in html
    assert "a caption corpus of photos has no scene classes" in html
    assert any("absent" in line for line in lines)


def test_text_runs_of_another_corpus_are_refused(corpus_demo, coco, tiny_vit, tiny_bert,
                                                tmp_path):  # fmt: skip
    """A demo folder whose runs trained on another corpus (another path, or this path before
    its captions changed) is refused in one line, nothing written."""
    from prh.demo.folder import open_demo_folder
    from prh.errors import InputError

    out, _ = corpus_demo
    other = tmp_path / "other"
    shutil.copytree(coco, other)
    cfg = corpus_config(other, tiny_vit, tiny_bert)
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(InputError, match=r"trained on the corpus .*coco .*not on --corpus"):
        open_demo_folder(cfg, out)
    assert sorted(p.name for p in out.iterdir()) == before
    # the same corpus path, one caption changed since the runs trained: refused too
    folder = tmp_path / "demo"
    shutil.copytree(out, folder)
    ann = other / "annotations" / "captions_train.json"
    for cfg_file in folder.glob("sweep-*/runs/*/config.json"):
        d = json.loads(cfg_file.read_text())
        d["corpus"]["path"] = str(other)
        cfg_file.write_text(json.dumps(d))
    data = json.loads(ann.read_text())
    data["annotations"][0]["caption"] = "a changed caption"
    ann.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"trained on the corpus .*sha256"):
        open_demo_folder(cfg, folder)


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--world", "cave"], "give --world or --corpus, not both"),
        (["--control", "cave"], "a corpus has no control world"),
        (["--vision", "BERT"], "reads no images"),
        (["--quick"], "eval_scenes 200 > the 30 test scenes of corpus"),
        (["--scale"], "eval_scenes 5000 > the 30 test scenes of corpus"),
    ],
)
def test_bad_corpus_demos_are_one_line(coco, tiny_bert, tmp_path, capsys, extra, match):
    out = tmp_path / "out"
    extra = [f"hf:{tiny_bert}" if a == "BERT" else a for a in extra]
    assert main(["demo", "--corpus", str(coco), "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and match in err
    assert not out.exists()


def test_a_corpus_without_a_train_split_is_refused(coco, tiny_vit, tiny_bert, tmp_path):
    """Its text runs would train on every photo, the held-out ones included."""
    from prh.demo.folder import open_demo_folder
    from prh.errors import InputError

    rows = json.loads((coco / "annotations" / "captions_train.json").read_text())
    jsonl = tmp_path / "corpus.jsonl"
    with jsonl.open("w") as f:
        for im in rows["images"]:
            caps = [a["caption"] for a in rows["annotations"] if a["image_id"] == im["id"]]
            f.write(json.dumps({"image": str(coco / "train" / im["file_name"]),
                                "captions": caps}) + "\n")  # fmt: skip
    cfg = corpus_config(jsonl, tiny_vit, tiny_bert, eval_scenes=11, bridge_scenes=56)
    with pytest.raises(InputError, match="names no train split"):
        open_demo_folder(cfg, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_corpus_settings_turn_off_what_needs_a_generated_world():
    from prh.demo import demo_config
    from prh.errors import InputError

    cfg = demo_config("default", corpus="/data/coco")
    assert (cfg.world, cfg.control, cfg.literal, cfg.image.modalities) == ("corpus", "", "", ())
    with pytest.raises(InputError, match="exactly when the world is 'corpus'"):
        demo_config("default", world="corpus")
    scale = demo_config("scale", corpus="/data/coco")
    assert scale.workers == 1 and scale.text.samples % scale.sweep.eval_every == 0
    assert np.all([s <= scale.text.samples for s in scale.sweep.law_samples])


def test_the_cli_flags_make_the_corpus_config(coco, tmp_path, monkeypatch, capsys):
    """``prh demo --corpus SPEC --vision ENCODER --scale`` hands run_demo the scale preset on
    the resolved corpus path, the frozen encoder given, and what a corpus turns off."""
    import prh.demo
    import prh.demo.folder
    from prh.demo import demo_config

    seen = {}

    def fake_run(cfg, out, skip_prove=False):
        seen["cfg"], seen["out"] = cfg, out
        return {"claims": []}

    monkeypatch.setattr(prh.demo, "run_demo", fake_run)
    monkeypatch.setattr(prh.demo.folder, "open_demo_folder", lambda cfg, out: Path(out))
    monkeypatch.chdir(coco.parent)
    argv = ["demo", "--corpus", coco.name, "--vision", "hf:x", "--scale", "--out", "o"]
    assert main(argv) == 0
    want = demo_config("scale", corpus=str(coco), vision="hf:x")
    assert seen["cfg"] == want and seen["cfg"].world == "corpus" and seen["out"] == Path("o")
    assert "report: o/report.html" in capsys.readouterr().out
