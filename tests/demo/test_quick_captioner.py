"""The quick demo's captioner: a caption run without a decoder (nearest training caption), which
``prh caption --run`` and ``prh serve --run`` load and label as such."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def nearest_run(tmp_path_factory, text_run, tiny_vit, build_kw) -> Path:
    from prh.caption import build_caption_run

    out = tmp_path_factory.mktemp("quick") / "demo"
    kw = {**build_kw, "decoder_steps": 0}
    return build_caption_run(text_run, out, vision=f"hf:{tiny_vit}", **kw)


def test_manifest_says_nearest_and_no_decoder_is_written(nearest_run):
    info = json.loads((nearest_run / "caption" / "caption.json").read_text())
    assert info["captioner"] == "nearest" and info["decoder_train"] is None
    assert not (nearest_run / "caption" / "decoder.safetensors").exists()


def test_caption_is_the_nearest_gallery_caption(nearest_run):
    from prh.caption import load_captioner
    from prh.world import CaveWorld, WorldConfig

    cap = load_captioner(nearest_run)
    assert cap.kind == "nearest" and "nearest-caption" in cap.label
    world = CaveWorld(WorldConfig(seed=3))
    images = [world.render(int(i), 0, 32) for i in world.split("test")[:4]]
    cond = cap.embed_images(images)  # (4, E), normalised
    sims = cond @ cap.gallery_embeddings.T  # (4, G): brute force, the reference
    for image, row in zip(images, sims):
        res = cap.caption(image)
        assert res.caption == cap.gallery[int(np.argmax(row))]
        assert res.caption == res.nearest[0][0]


def test_prh_caption_labels_the_retrieval_captioner(nearest_run, tmp_path, capsys):
    from PIL import Image

    from prh.cli import main
    from prh.world import CaveWorld, WorldConfig

    png = tmp_path / "scene.png"
    Image.fromarray(CaveWorld(WorldConfig(seed=3)).render(0, 0, 32)).save(png)
    js = tmp_path / "out.json"
    assert main(["caption", "--run", str(nearest_run), "--image", str(png), "--json", str(js)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("captioner: nearest-caption retrieval")
    got = json.loads(js.read_text())
    assert got["captioner"] == "nearest" and lines[1] == got["caption"]
    assert got["caption"] == got["nearest"][0]["caption"]


def test_serve_page_names_the_retrieval_captioner(nearest_run, caption_run):
    from prh.serve.runinfo import captioner_name, load_run_captioner

    cap = load_run_captioner(nearest_run, threads=1)
    assert captioner_name(nearest_run, cap).startswith(f"run {nearest_run.name}, nearest-caption")
    full = load_run_captioner(caption_run, threads=1)
    assert full.kind == "decoder" and captioner_name(caption_run, full) == f"run {caption_run.name}"


def test_eval_scores_no_decoder_rows_for_a_retrieval_captioner(nearest_run):
    from prh.caption import evaluate_captioner, load_captioner

    res = evaluate_captioner(load_captioner(nearest_run), n=6, beam=2, refs=2, tokenizer="simple")
    assert list(res.scores) == [
        "retrieval (nearest train caption)",
        "oracle (nearest caption on the text embedding)",
    ]
