"""hf:PATH encoders on tiny models the tests build: shapes, padding, determinism, references."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

from prh.encoders import load_encoder
from prh.errors import InputError

SENTENCES = [
    "a red cube",
    "there is a small blue sphere left of a large green cone",
    "two cubes",
    "the scene shows one tiny red cone above a big blue cube and a green sphere",
]


def _unpadded_reference(folder, texts):
    """Each sentence alone (no padding at all): every hidden state averaged over its tokens."""
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder).eval()
    rows = []
    for t in texts:
        enc = tok(t, return_tensors="pt")
        if "token_type_ids" not in inspect.signature(model.forward).parameters:
            enc.pop("token_type_ids", None)
        with torch.no_grad():
            hs = model(**enc, output_hidden_states=True).hidden_states
        rows.append(np.stack([h[0].mean(0).numpy() for h in hs]))  # (L+1, D)
    return np.stack(rows)


@pytest.mark.parametrize("name", ["tiny_bert", "tiny_gpt2", "tiny_llama"])
def test_text_layers_ignore_padding(name, request):
    folder = request.getfixturevalue(name)
    enc = load_encoder(f"hf:{folder}")
    assert enc.modality == "text"
    feats = enc.encode_texts(SENTENCES, batch_size=4)  # one batch: short sentences get padded
    assert feats.shape == (4, 3, 16)  # embeddings + 2 layers
    assert feats.dtype == np.float32
    assert enc.layer_dims == [16, 16, 16]
    ref = _unpadded_reference(folder, SENTENCES)
    np.testing.assert_allclose(feats, ref, atol=2e-5, rtol=1e-4)


def test_text_batch_size_and_determinism(tiny_bert):
    enc = load_encoder(f"hf:{tiny_bert}")
    a = enc.encode_texts(SENTENCES, batch_size=1)
    b = enc.encode_texts(SENTENCES, batch_size=3)
    np.testing.assert_allclose(a, b, atol=2e-5, rtol=1e-4)
    again = load_encoder(f"hf:{tiny_bert}").encode_texts(SENTENCES, batch_size=3)
    np.testing.assert_array_equal(b, again)
    # different sentences get different features (the test could fail)
    assert not np.allclose(a[0], a[1])


def test_progress_callback(tiny_bert):
    seen = []
    load_encoder(f"hf:{tiny_bert}").encode_texts(
        SENTENCES, batch_size=3, progress=lambda d, t: seen.append((d, t))
    )
    assert seen == [(3, 4), (4, 4)]


def test_vision_cls_of_every_block(tiny_vit, images):
    from transformers import AutoImageProcessor, AutoModel

    enc = load_encoder(f"hf:{tiny_vit}")
    assert enc.modality == "image"
    feats = enc.encode_images(images, batch_size=2)
    assert feats.shape == (3, 3, 16)  # 3 blocks, CLS token of each
    proc = AutoImageProcessor.from_pretrained(tiny_vit)
    model = AutoModel.from_pretrained(tiny_vit).eval()
    for i, im in enumerate(images):
        px = proc(images=[im], return_tensors="pt")["pixel_values"]
        with torch.no_grad():
            hs = model(pixel_values=px, output_hidden_states=True).hidden_states
        ref = np.stack([h[0, 0].numpy() for h in hs[1:]])  # (3, 16)
        np.testing.assert_allclose(feats[i], ref, atol=2e-5, rtol=1e-4)


def test_modality_mismatch(tiny_bert, tiny_vit, images):
    with pytest.raises(InputError, match="takes texts, not images"):
        load_encoder(f"hf:{tiny_bert}").encode_images(images)
    with pytest.raises(InputError, match="takes images, not texts"):
        load_encoder(f"hf:{tiny_vit}").encode_texts(["a red cube"])


def test_hf_errors(tmp_path, tiny_bert):
    with pytest.raises(InputError, match="no such folder"):
        load_encoder(f"hf:{tmp_path / 'missing'}")
    with pytest.raises(InputError, match=r"has no config\.json"):
        load_encoder(f"hf:{tmp_path}")
    with pytest.raises(InputError, match="cannot load the model"):
        load_encoder("hf:nobody/no-such-model-prh-test")
    with pytest.raises(InputError, match="nothing to encode"):
        load_encoder(f"hf:{tiny_bert}").encode_texts([])
    with pytest.raises(InputError, match="batch size must be >= 1"):
        load_encoder(f"hf:{tiny_bert}").encode_texts(["a"], batch_size=0)
    with pytest.raises(InputError, match="text 1: expected a string"):
        load_encoder(f"hf:{tiny_bert}").encode_texts(["a", 3])
