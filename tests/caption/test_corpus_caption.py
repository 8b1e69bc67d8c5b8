"""`prh caption --build --corpus`: the map, decoder and evaluation on a caption corpus with its
photos (the exported cave world in COCO layout, and a Flickr layout), end to end; bad input is
one line, exit 2, nothing written."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from PIL import Image

from prh.cli import main

WORLD_SEED = 3


@pytest.fixture(scope="module")
def coco(tmp_path_factory):
    """The cave world (seed 3, 400 scenes) exported: 70 train and 12 test scenes at 32 px."""
    from prh.world import make_world
    from prh.world.export import export_coco

    world = make_world("cave", seed=WORLD_SEED, num_scenes=400)
    splits = {"train": world.split("train")[:70], "test": world.split("test")[:12]}
    out = tmp_path_factory.mktemp("export") / "coco"
    return export_coco(world, out, splits, captions=5, size=32, seed=WORLD_SEED)


def _text_run(corpus, out):
    from prh.training import train, train_config

    cfg = train_config("tiny", corpus=str(corpus), samples=64, batch_size=64, vocab_size=200,
                       checkpoint_every=0, log_every=0)  # fmt: skip
    return train(cfg, out, progress=False, threads=1)


@pytest.fixture(scope="module")
def coco_run(coco, tmp_path_factory):
    return _text_run(coco, tmp_path_factory.mktemp("runs") / "coco-text")


def _build_argv(text_run, out, corpus, vision, *extra):
    return ["caption", "--build", "--text-run", text_run, "--out", out, "--corpus", corpus,
            "--vision", f"hf:{vision}", "--n-pairs", 24, "--decoder-scenes", 40,
            "--decoder-steps", 30, "--vision-dims", 8, "--no-progress", *extra]  # fmt: skip


@pytest.fixture(scope="module")
def corpus_captioner(coco, coco_run, tiny_vit, tmp_path_factory, caption_build_kw):
    from prh.caption import build_caption_run

    out = tmp_path_factory.mktemp("built") / "run"
    kw = dict(n_pairs=24, decoder_scenes=40, decoder_steps=30, vision_dims=8, progress=False,
              decoder_config=caption_build_kw["decoder_config"], threads=1)  # fmt: skip
    return build_caption_run(coco_run, out, vision=f"hf:{tiny_vit}", corpus=str(coco), **kw)


def test_build_pairs_the_corpus_photos_and_trains_on_its_captions(corpus_captioner, coco):
    from prh.caption.pipeline import load_captioner
    from prh.io import read_tensors

    info = json.loads((corpus_captioner / "caption" / "caption.json").read_text())
    assert info["world"]["name"] == "corpus"
    assert info["world"]["options"] == {"spec": str(coco.resolve())}
    gallery = json.loads((corpus_captioner / "caption" / "gallery.json").read_text())
    train = json.loads((coco / "annotations" / "captions_train.json").read_text())
    first40 = {im["id"] for im in train["images"][:40]}  # --decoder-scenes 40: the first ones
    assert set(gallery) == {a["caption"] for a in train["annotations"] if a["image_id"] in first40}
    cap = load_captioner(corpus_captioner)
    pairs = read_tensors(corpus_captioner / "caption" / "pairs.safetensors")
    first = np.asarray(Image.open(coco / "train" / train["images"][0]["file_name"]))
    x0 = cap.image_features([first])[0]  # the first pair's image feature is its photo's
    np.testing.assert_allclose(pairs["x"][0], x0, rtol=1e-4, atol=1e-5)


def test_features_embedded_by_prh_embed_are_the_builds_own(corpus_captioner, coco, coco_run,
                                                          tiny_vit, tmp_path, capsys):  # fmt: skip
    from prh.io import read_tensors

    feats = tmp_path / "train.safetensors"
    code = main(["embed", f"hf:{tiny_vit}", "--corpus", str(coco / "annotations" /
                 "captions_train.json"), "--images", str(coco / "train"), "--modality", "image",
                 "--threads", "1", "--out", str(feats)])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    argv = _build_argv(coco_run, tmp_path / "run", coco, tiny_vit, "--image-features", feats)
    assert main([str(a) for a in argv]) == 0, capsys.readouterr().err
    built = read_tensors(corpus_captioner / "caption" / "pairs.safetensors")["x"]
    again = read_tensors(tmp_path / "run" / "caption" / "pairs.safetensors")["x"]
    np.testing.assert_allclose(again, built, rtol=1e-4, atol=1e-5)


def test_eval_scores_the_corpus_test_split_beside_the_baselines(corpus_captioner, coco, capsys,
                                                                tmp_path):  # fmt: skip
    code = main(["caption", "--eval", "--run", str(corpus_captioner), "--n", "12", "--beam", "2",
                 "--refs", "5", "--tokenizer", "simple", "--no-progress",
                 "--json", str(tmp_path / "e.json")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0, err
    res = json.loads((tmp_path / "e.json").read_text())
    test = json.loads((coco / "annotations" / "captions_test.json").read_text())
    refs = {}
    for a in test["annotations"]:
        refs.setdefault(a["image_id"], []).append(a["caption"])
    first = test["images"][0]
    assert res["n"] == 12 and res["examples"][0]["references"] == refs[first["id"]]
    rows = set(res["scores"])
    assert {"decoder, greedy", "retrieval (nearest train caption)",
            "floor: unconditional decoder (mean embedding)"} <= rows  # fmt: skip
    assert all(0 <= v["CIDEr"] for v in res["scores"].values())
    assert any("oracle skipped" in n for n in res["config"]["notes"])  # 5 captions, 5 refs


def test_serve_captions_an_upload_and_shows_a_corpus_photo(corpus_captioner, coco):
    from fastapi.testclient import TestClient

    from prh.serve.app import create_app
    from prh.serve.runinfo import load_run_captioner, run_world, run_world_options
    from prh.serve.scenes import SceneSource

    (name, seed), options = run_world(corpus_captioner), run_world_options(corpus_captioner)
    assert name == "corpus" and options == {"spec": str(coco.resolve())}
    captioner = load_run_captioner(corpus_captioner, threads=1)
    scenes = SceneSource(world_seed=seed, world=name, options=options)
    client = TestClient(create_app(captioner, run_dir=corpus_captioner, scenes=scenes))
    png = (coco / "test").iterdir().__next__().read_bytes()
    r = client.post("/api/caption", files={"image": ("a.png", png, "image/png")})
    assert r.status_code == 200, r.text
    assert r.json()["caption"]
    r = client.get("/api/scene?seed=1")
    assert r.status_code == 200 and r.content.startswith(b"\x89PNG")


def _builds_end_to_end(corpus, tmp_path, tiny_vit, capsys) -> None:
    """A text run on ``corpus``'s train split, then a build on 12 of its photo pairs."""
    run = _text_run(corpus, tmp_path / "text")
    argv = _build_argv(run, tmp_path / "out", corpus, tiny_vit, "--decoder-scenes", 20,
                       "--n-pairs", 12)  # fmt: skip
    assert main([str(a) for a in argv]) == 0, capsys.readouterr().err
    info = json.loads((tmp_path / "out" / "caption" / "caption.json").read_text())
    assert info["world"]["name"] == "corpus" and info["n_pairs"] == 12


def test_flickr_layout_builds_end_to_end(tmp_path, tiny_vit, capsys):
    from corpus_layouts import CORPUS_LAYOUTS

    token = CORPUS_LAYOUTS.flickr(tmp_path / "f", n=70, caps=3)
    _builds_end_to_end(token, tmp_path, tiny_vit, capsys)


def test_hugging_face_layout_builds_end_to_end(tmp_path, tiny_vit, capsys):
    """A save_to_disk image-caption dataset (its photos in the table, the sources deleted):
    a text run on its train split, then the build pairs its photos."""
    from corpus_layouts import CORPUS_LAYOUTS

    root = CORPUS_LAYOUTS.hf(tmp_path / "h", n=72)
    shutil.rmtree(tmp_path / "h-src")
    _builds_end_to_end(root, tmp_path, tiny_vit, capsys)


def test_bad_corpus_builds_are_one_line_and_write_nothing(
    coco, coco_run, text_run, tiny_vit, tmp_path, bad_input, shared_dir
):
    out = tmp_path / "new"
    bad_input(_build_argv(text_run, out, coco, tiny_vit),
              match=r"--text-run .*: trained on world cave, not on --corpus")  # fmt: skip
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"image": "x.png", "captions": ["a", "b"]}) + "\n")
    (tmp_path / "x.png").write_bytes((coco / "test").iterdir().__next__().read_bytes())
    bad_input(_build_argv(coco_run, out, other, tiny_vit),
              match=r"trained on the corpus .*coco, not on --corpus .*other.jsonl")  # fmt: skip
    bad_input(_build_argv(coco_run, out, tmp_path / "nope", tiny_vit),
              match=r"--corpus .*nope: no such file or folder")  # fmt: skip
    argv = _build_argv(coco_run, out, coco, tiny_vit)
    argv[argv.index("--vision") + 1] = coco_run  # a text run cannot read images
    bad_input(argv, match=r"--vision .*: a text encoder, expected an image encoder")
    broken = tmp_path / "broken"
    shutil.copytree(coco, broken)
    next((broken / "train").iterdir()).unlink()
    bad_input(_build_argv(coco_run, out, broken, tiny_vit),
              match=r"captions_train.json image \d+: image file .* is missing")  # fmt: skip
    token = shared_dir / "data" / "flickr8k" / "Flickr8k.token.txt"
    bad_input(_build_argv(coco_run, out, token, tiny_vit),
              match=r"Flickr8k.token.txt: no folder beside it holds its images")  # fmt: skip
    assert not out.exists()


def test_a_text_run_that_saw_the_test_captions_is_refused(tmp_path, tiny_vit, bad_input):
    from corpus_layouts import CORPUS_LAYOUTS

    p = CORPUS_LAYOUTS.jsonl(tmp_path / "j", n=70)
    p.write_text(p.read_text().replace(', "split": "test"', "").replace(', "split": "train"', ""))
    run = _text_run(p, tmp_path / "text")  # no train split: it trains on every image
    bad_input(_build_argv(run, tmp_path / "out", p, tiny_vit, "--n-pairs", 8,
                          "--decoder-scenes", 8),
              match=r"trained on every image of .*c.jsonl \(it names no train split\)")  # fmt: skip
    assert not (tmp_path / "out").exists()


def test_serve_refuses_a_captioner_whose_corpus_moved(corpus_captioner, tmp_path, bad_input):
    run = tmp_path / "run"
    shutil.copytree(corpus_captioner, run)
    manifest = run / "caption" / "caption.json"
    info = json.loads(manifest.read_text())
    info["world"]["options"]["spec"] = str(tmp_path / "moved")
    manifest.write_text(json.dumps(info))
    bad_input(["serve", "--run", run, "--port", "8765"], inputs=[manifest],
              match=r"--corpus .*moved: no such file or folder")  # fmt: skip
