"""build_caption_run + load_captioner end to end at toy size, the contract, evaluation, errors."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from prh.caption import CaptionResult, build_caption_run, load_captioner
from prh.caption.condition import ConditionNormalizer, modality_gap
from prh.errors import CheckpointError, InputError


@pytest.fixture(scope="module")
def captioner(caption_run):
    return load_captioner(caption_run)


def _image(seed: int = 0, shape=(40, 52, 3)) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=shape, dtype=np.uint8)


def test_run_folder_is_complete_and_self_describing(caption_run, text_run, tiny_vit):
    folder = caption_run / "caption"
    names = {p.name for p in folder.iterdir()}
    want = {"caption.json", "decoder.safetensors", "map.safetensors", "map.json", "tokenizer.json",
            "normalizer.safetensors", "vision_pca.safetensors", "gallery.safetensors",
            "gallery.json", "pairs.safetensors"}  # fmt: skip
    assert want <= names and not any(n.endswith(".tmp") for n in names)
    info = json.loads((folder / "caption.json").read_text())
    assert info["vision"] == f"hf:{tiny_vit}"
    assert not info["text_run"].startswith("/")  # relative, so the pair of folders can move
    assert (folder / info["text_run"]).resolve() == text_run.resolve()
    assert info["world"]["seed"] == 3  # the text run's world
    assert info["n_pairs"] == 24 and info["gallery_size"] == len(
        json.loads((folder / "gallery.json").read_text())
    )
    assert info["noise_std"] == pytest.approx(np.sqrt(info["gap"]))


def test_caption_result_shape_and_nearest_against_brute_force(captioner):
    img = _image()
    r = captioner.caption(img)
    assert isinstance(r, CaptionResult) and isinstance(r.caption, str) and r.seconds > 0
    assert len(r.nearest) == 5
    scores = [s for _, s in r.nearest]
    assert scores == sorted(scores, reverse=True) and all(
        -1.0 - 1e-5 <= s <= 1 + 1e-5 for s in scores
    )
    # Reference: cosine of the mapped image with every gallery caption, by hand.
    f = captioner.image_features([img])
    y = captioner.projector.map_.transform(
        (f - captioner.projector.mean_) @ captioner.projector.components_.T
    )
    z = (y - captioner.normalizer.mean_) @ captioner.normalizer.whiten_
    z = z / np.linalg.norm(z)
    g = captioner.gallery_embeddings
    sims = (g @ z[0]) / np.linalg.norm(g, axis=1)
    best = np.argsort(-sims)[:5]
    assert [t for t, _ in r.nearest] == [captioner.gallery[j] for j in best]
    np.testing.assert_allclose(scores, sims[best], atol=1e-4)


def test_captioning_is_deterministic_and_batch_equals_single(captioner):
    imgs = [_image(1), _image(2, (30, 30, 3))]
    a = [r.caption for r in captioner.caption_batch(imgs)]
    b = [captioner.caption(im).caption for im in imgs]
    assert a == b
    assert captioner.caption(imgs[0], beam=1).caption == a[0]
    assert isinstance(captioner.caption(imgs[0], beam=2).caption, str)


def test_reloaded_run_gives_identical_outputs(caption_run, captioner):
    other = load_captioner(caption_run / "caption", vision=captioner.vision)  # the folder itself
    img = _image(4)
    assert other.caption(img).nearest == captioner.caption(img).nearest
    assert other.caption(img).caption == captioner.caption(img).caption


def test_evaluation_rows_and_oracle(captioner):
    from prh.caption import evaluate_captioner

    res = evaluate_captioner(captioner, n=6, beam=2, tokenizer="simple")
    assert list(res.scores) == ["decoder, greedy", "decoder, beam 2",
                                "floor: unconditional decoder (mean embedding)",
                                "floor: shuffled map (another scene's embedding)",
                                "retrieval (nearest train caption)",
                                "oracle (decoder on the text embedding)"]  # fmt: skip
    for row in res.scores.values():
        assert set(row) == {"BLEU-4", "ROUGE-L", "CIDEr"}
        assert all(0.0 <= v <= 10.0 for v in row.values())
    assert set(res.recall) == {"R@1", "R@5", "R@10"} and res.recall["R@10"] == 1.0  # 6 scenes
    ex = res.examples[0]
    assert len(ex["references"]) == 5
    assert "CIDEr" in res.table() and json.dumps(res.to_dict())
    with pytest.raises(InputError, match=r"--n must be in 1\.\."):
        evaluate_captioner(captioner, n=0)
    with pytest.raises(InputError, match="must be >= 2"):
        evaluate_captioner(captioner, n=2, beam=1)


def test_condition_normalizer_whitens_and_normalises():
    rng = np.random.default_rng(0)
    y = rng.standard_normal((500, 4)) @ np.diag([5.0, 1.0, 0.5, 0.1]) + 3.0
    n = ConditionNormalizer(eps=1e-9).fit(y)
    z = (y - n.mean_) @ n.whiten_
    np.testing.assert_allclose(np.cov(z.T), np.eye(4), atol=1e-4)
    out = n.transform(y)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)
    a = np.eye(3)[:2]
    assert modality_gap(a, a) == 0.0
    assert modality_gap(a, a[::-1]) == pytest.approx(2.0 / 3.0)  # ||e1 - e2||^2 / E
    with pytest.raises(InputError, match="not fitted"):
        ConditionNormalizer().transform(y)
    with pytest.raises(InputError, match="4 columns"):
        n.transform(y[:, :3])


def test_error_paths(tmp_path, caption_run, captioner, text_run, tiny_vit, build_kw):
    with pytest.raises(InputError, match="no such folder"):
        load_captioner(tmp_path / "nope")
    with pytest.raises(InputError, match="not a caption run"):
        load_captioner(text_run)
    with pytest.raises(InputError, match=r"\(H, W, 3\) uint8"):
        captioner.caption(np.zeros((8, 8), np.uint8))
    with pytest.raises(InputError, match="larger than the limit"):
        captioner.caption(np.zeros((9000, 2, 3), np.uint8))
    with pytest.raises(InputError, match="already holds a caption model"):
        build_caption_run(text_run, caption_run, vision=f"hf:{tiny_vit}", **build_kw)
    broken = tmp_path / "broken"
    shutil.copytree(caption_run / "caption", broken / "caption")
    (broken / "caption" / "decoder.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(CheckpointError, match=r"decoder\.safetensors"):
        load_captioner(broken, vision=captioner.vision)
    info = json.loads((broken / "caption" / "caption.json").read_text())
    (broken / "caption" / "caption.json").write_text(json.dumps({**info, "format": "x"}))
    with pytest.raises(CheckpointError, match="format 'x'"):
        load_captioner(broken, vision=captioner.vision)


def test_stored_image_features_replace_encoding(tmp_path, captioner):
    from prh.caption import evaluate_captioner
    from prh.features import save_features
    from prh.world import CaveWorld, WorldConfig

    world = CaveWorld(WorldConfig(seed=3))
    scenes = [int(i) for i in world.split("test")[:4]]
    feats = captioner.vision.encode_images([world.render(i, 0, 32) for i in scenes])
    ids = [world.image_id(i) for i in scenes]
    meta = {
        "encoder": captioner.info["vision"],
        "layer_dims": json.dumps(captioner.vision.layer_dims),
    }
    save_features(tmp_path / "f.safetensors", feats, ids, meta)
    kw = dict(n=4, beam=2, tokenizer="simple")
    a = evaluate_captioner(captioner, **kw)
    b = evaluate_captioner(captioner, image_features=tmp_path / "f.safetensors", **kw)
    assert a.scores == b.scores and a.examples == b.examples
    with pytest.raises(InputError, match="1 of 5 scenes missing"):
        evaluate_captioner(captioner, n=5, beam=2, image_features=tmp_path / "f.safetensors")
    save_features(tmp_path / "g.safetensors", feats, ids, {**meta, "encoder": "minilm"})
    with pytest.raises(InputError, match="made by 'minilm'"):
        evaluate_captioner(captioner, image_features=tmp_path / "g.safetensors", **kw)


def test_detokenize_undoes_word_piece_spacing():
    from prh.caption.pipeline import detokenize

    assert (
        detokenize("a medium - sized cube , left of a ball .")
        == "a medium-sized cube, left of a ball."
    )
    assert detokenize("a red cube ; the cube is left") == "a red cube; the cube is left"
    assert detokenize("a - b") == "a-b" and detokenize(" plain words ") == "plain words"


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_pipeline_beam_caption_is_the_exhaustive_optimum_on_a_tiny_vocabulary(captioner, alpha):
    """Through the whole pipeline (image -> encoder -> map -> normaliser -> decoder -> text),
    a full-width beam returns the caption of the best sequence over every continuation, and
    width 1 the greedy one. The tiny decoder is trained on the images' own conditions to tell
    them apart, so the captions differ from image to image."""
    import torch
    from test_decoder import _exhaustive
    from tokenizers import Tokenizer, models

    from prh.caption.decoder import DecoderConfig, DecoderTrainConfig, greedy_decode, train_decoder
    from prh.caption.pipeline import Captioner, detokenize
    from prh.views import TextTokenizer

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "red", "cube"]
    tk = TextTokenizer(Tokenizer(models.WordLevel(dict(zip(words, range(6))), unk_token="[UNK]")))
    imgs = [_image(s, (32, 36, 3)) for s in range(4)]
    cond = captioner.embed_images(imgs)  # (4, E)
    texts = ["red cube", "cube", "red", "cube cube"]
    ids, mask = tk.encode_batch(texts, max_len=4)
    cfg = DecoderConfig(vocab_size=6, cond_dim=cond.shape[1], d_model=16, n_layers=1, n_heads=2,
                        d_ff=32, max_len=4)  # fmt: skip
    decoder, _ = train_decoder(cfg, cond, ids, mask, DecoderTrainConfig(steps=150, batch_size=4))
    tiny = Captioner(
        captioner.vision, captioner.projector, captioner.normalizer, decoder, tk,
        captioner.gallery, captioner.gallery_embeddings, alpha=alpha,
    )  # fmt: skip
    c = torch.from_numpy(cond)
    best = [_exhaustive(decoder, x, tk.bos_id, tk.eos_id, 6, 3, alpha) for x in c]
    want = [detokenize(tk.decode(b)) for b in best]
    assert len(set(want)) > 1  # the captions depend on the image
    assert [r.caption for r in tiny.caption_batch(imgs, beam=5**3)] == want
    greedy = greedy_decode(decoder, c, tk.bos_id, tk.eos_id)
    assert [r.caption for r in tiny.caption_batch(imgs, beam=1)] == [
        detokenize(tk.decode(g)) for g in greedy
    ]


def test_the_floors_are_the_mean_embedding_and_a_derangement():
    import numpy as np

    from prh.caption.evaluate import SHUFFLED_ROW, UNCONDITIONAL_ROW, _floors

    class Fake:  # captions that name their condition row, so the test can read them back
        def generate(self, cond, beam=1):
            return [" ".join(f"{v:.3f}" for v in row) for row in np.asarray(cond)]

    cond = np.random.default_rng(0).normal(size=(7, 3)).astype(np.float32)
    out = _floors(Fake(), cond, seed=0)
    mean = " ".join(f"{v:.3f}" for v in cond.mean(0))
    assert out[UNCONDITIONAL_ROW] == [mean] * 7
    own = Fake().generate(cond)
    got = out[SHUFFLED_ROW]
    assert sorted(got) == sorted(own) and all(g != o for g, o in zip(got, own, strict=True))
    assert _floors(Fake(), cond, seed=0) == out  # seeded
