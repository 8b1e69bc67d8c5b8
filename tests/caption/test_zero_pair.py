"""The zero-pair captioner's map: a planted image side one rotation away from the caption side is
matched back exactly with no pairs when the class means anchor the match; unrelated images are
not; the refusals are one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from prh.bridge.synthetic import random_rotation

N = 160


def _planted(text_run, path, related=True):
    """Image features of the first N train scenes: the mean caption embedding rotated, scaled
    per direction and slightly noisy (``related``), or noise; saved as a feature file."""
    from prh.features import save_features
    from prh.training import load_run
    from prh.world import CaveWorld, WorldConfig

    run = load_run(text_run, device="cpu")
    world = CaveWorld(WorldConfig(seed=run.config.world_seed))
    scenes = [int(i) for i in world.split("train")[:N]]
    per = run.config.captions_per_scene
    caps = [c for i in scenes for c in world.captions(i, per, run.config.world_seed)]
    y = run.embed_texts(caps).reshape(N, per, -1).mean(1)  # (N, E)
    rng = np.random.default_rng(0)
    x = y @ random_rotation(y.shape[1], rng) * np.exp(-np.arange(y.shape[1]) / 8)
    x = x + 0.02 * x.std() * rng.standard_normal(x.shape)
    if not related:
        x = rng.standard_normal(x.shape)
    ids = [world.image_id(i) for i in scenes]
    save_features(path, x, ids=ids, metadata={"modality": "image"})
    return path


def _build(text_run, out, feats, **kw):
    from prh.caption import build_caption_run

    build_caption_run(text_run, out, vision=f"features:{feats}", image_features=feats,
                      n_pairs=N, decoder_scenes=20, decoder_steps=0, vision_dims=32,
                      pair_free=True, progress=False, threads=1, **kw)  # fmt: skip
    return json.loads((out / "caption" / "caption.json").read_text())


@pytest.mark.slow
def test_a_rotated_image_side_is_matched_exactly_without_pairs(tmp_path, text_run):
    feats = _planted(text_run, tmp_path / "img.safetensors")
    info = _build(text_run, tmp_path / "zero", feats, pair_free_classes=True)
    pf = info["pair_free"]
    assert pf["accuracy"] >= 0.95 and pf["chance"] == 1 / N
    assert pf["classes"]["shape"]["exact"] and pf["classes"]["colour"]["exact"]
    assert info["map"]["r2_train"] > 0.9  # the map fitted on matched pairs is the paired one
    noise = _planted(text_run, tmp_path / "noise.safetensors", related=False)
    info = _build(text_run, tmp_path / "none", noise, pair_free_classes=True)
    assert info["pair_free"]["accuracy"] < 10 / N


def test_pair_free_pairs_needs_the_class_anchor_in_whitened_space():
    from prh.caption.build import pair_free_pairs

    rng = np.random.default_rng(1)
    n, d = 150, 8
    shape, colour = rng.integers(0, 4, n), rng.integers(0, 5, n)
    z = np.hstack([3 * rng.standard_normal((4, 4))[shape], 3 * rng.standard_normal((5, 4))[colour]])
    z = z + 0.5 * rng.standard_normal((n, d))
    x = z * np.exp(-np.arange(d) / 4)
    y = z @ random_rotation(d, rng)
    shuffle = rng.permutation(n)
    labels = {"shape": (shape, shape[shuffle]), "colour": (colour, colour[shuffle])}
    perm, info = pair_free_pairs(x, y[shuffle], d, 0, labels)
    assert (perm == np.argsort(shuffle)).mean() == 1.0 and info["start"] == "class-anchored"
    again, _ = pair_free_pairs(x, y[shuffle], d, 0, labels)
    assert np.array_equal(perm, again)


def test_pair_free_classes_without_pair_free_is_refused(bad_input, tmp_path, text_run):
    argv = ["caption", "--build", "--text-run", text_run, "--out", tmp_path / "o",
            "--pair-free-classes"]  # fmt: skip
    bad_input(argv, match="--pair-free-classes needs --pair-free")
    assert not (tmp_path / "o").exists()
    from prh.caption import CaptionBuildConfig
    from prh.errors import InputError

    with pytest.raises(InputError, match="needs --pair-free"):
        CaptionBuildConfig(pair_free_classes=True)


def _result(n=4, refs=5, seed=0, decoder=0.5, nearest=0.4, floors=None):
    from prh.caption import CaptionEvalResult
    from prh.caption.evaluate import SHUFFLED_ROW, UNCONDITIONAL_ROW

    scores = {"retrieval (nearest train caption)": {"CIDEr": nearest}}
    if decoder is not None:
        scores["decoder, greedy"] = {"CIDEr": decoder}
    if floors is not None:
        scores[UNCONDITIONAL_ROW] = {"CIDEr": floors[0]}
        scores[SHUFFLED_ROW] = {"CIDEr": floors[1]}
        scores["oracle (decoder on the text embedding)"] = {"CIDEr": floors[2]}
    config = {"world_seed": seed, "refs": refs, "tokenizer": "simple"}
    return CaptionEvalResult(n, ("CIDEr",), scores, config=config)


def test_compare_captioners_rows_ratio_and_refusals():
    from prh.caption import compare_captioners
    from prh.errors import InputError

    c = compare_captioners(_result(decoder=0.4), _result(decoder=0.5, nearest=0.45))
    assert c["ratio"] == pytest.approx(0.8) and c["paired_beats_nearest"]
    assert (c["zero_pair"], c["paired"], c["nearest_caption"]) == (0.4, 0.5, 0.45)
    assert "unconditional" not in c  # no floor rows: none reported
    c = compare_captioners(_result(decoder=0.3), _result(decoder=0.5, floors=(0.1, 0.35, 0.9)))
    assert (c["unconditional"], c["shuffled"], c["oracle"]) == (0.1, 0.35, 0.9)
    assert c["paired_beats_floors"] and not c["zero_pair_beats_floors"]  # 0.3 < shuffled 0.35
    c = compare_captioners(_result(decoder=None, nearest=0.2), _result(nearest=0.6))
    assert c["rows"]["zero_pair"].startswith("retrieval") and not c["paired_beats_nearest"]
    with pytest.raises(InputError, match="different references"):
        compare_captioners(_result(n=5), _result())
    with pytest.raises(InputError, match="different references"):
        compare_captioners(_result(seed=1), _result())


def test_eval_against_a_paired_run_on_the_same_references(capsys, tmp_path, caption_run):
    import shutil

    from prh.cli import main

    copy = tmp_path / "copy"
    shutil.copytree(caption_run, copy)  # the same captioner: the same scores on each side
    code = main(["caption", "--eval", "--run", str(copy), "--paired-run", str(caption_run),
                 "--n", "4", "--beam", "2", "--tokenizer", "simple", "--no-progress",
                 "--json", str(tmp_path / "e.json")])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    res = json.loads((tmp_path / "e.json").read_text())
    cmp = res["comparison"]
    assert cmp["zero_pair"] == cmp["paired"] and cmp["n"] == 4 and "paired captioner" in out
    assert res["paired"]["scores"] == res["scores"]
    assert cmp["nearest_caption"] == res["scores"]["retrieval (nearest train caption)"]["CIDEr"]


def test_paired_run_refusals(bad_input, tmp_path, caption_run):
    bad_input(["caption", "--run", caption_run, "--image", caption_run, "--paired-run",
               caption_run], match="--paired-run goes with --eval")  # fmt: skip
    bad_input(["caption", "--eval", "--run", caption_run, "--paired-run", caption_run],
              match="the same run as --run")  # fmt: skip
    bad_input(["caption", "--eval", "--run", caption_run, "--paired-run", tmp_path],
              match="not a caption run")  # fmt: skip
