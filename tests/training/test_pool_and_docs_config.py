"""Last-token pooling of a run's layers, and the fair-protocol options of TrainConfig."""

import numpy as np
import pytest
import torch

from prh.errors import InputError
from prh.training import encode_texts
from prh.training.api import build_model
from prh.training.config import TrainConfig, train_config
from prh.views import TextTokenizer

TEXTS = ["a red cube", "there is a small blue ball on the left", "a gem", "two objects: a b"]


@pytest.fixture(scope="module")
def lm():
    tok = TextTokenizer.train(TEXTS * 3, vocab_size=64)
    cfg = train_config("tiny", views="next-token", max_len=16, batch_size=4, vocab_size=64)
    model, _ = build_model(cfg, tok.vocab_size)
    return model, tok


def test_avg_pool_is_the_default_and_last_pool_reads_the_last_real_token(lm):
    model, tok = lm
    default = encode_texts(model, tok, TEXTS, 16)
    assert np.array_equal(default, encode_texts(model, tok, TEXTS, 16, pool="avg"))
    last = encode_texts(model, tok, TEXTS, 16, pool="last")
    assert last.shape == default.shape
    for i, text in enumerate(TEXTS):  # reference: one text alone, no padding, last position
        ids, mask = tok.encode_batch([text], 16)
        n = int(mask.sum())
        with torch.no_grad():
            hs = model.trunk(ids[:, :n], mask[:, :n])
        ref = np.stack([h[0, -1].numpy() for h in hs])
        np.testing.assert_allclose(last[i], ref, atol=1e-5)
    with pytest.raises(InputError, match="expected avg or last"):
        encode_texts(model, tok, TEXTS, 16, pool="cls")


def test_texts_encoded_in_length_batches_come_back_in_their_order():
    """encode_texts batches texts of similar length; every row is the text's own features (a
    reference: the text alone, no padding) and in the given order, whatever the batch size."""
    texts = [f"{'a big ' * (i % 7)}red cube {i % 3}" for i in range(23)]
    tok = TextTokenizer.train(texts + TEXTS, vocab_size=64)
    cfg = train_config("tiny", views="good", max_len=32, batch_size=64, vocab_size=64)
    model, _ = build_model(cfg, tok.vocab_size)
    model.eval()
    feats = encode_texts(model, tok, texts, 32, batch_size=5)
    np.testing.assert_allclose(encode_texts(model, tok, texts, 32, batch_size=64), feats,
                               atol=1e-5)  # fmt: skip
    for i, text in enumerate(texts):
        ref = encode_texts(model, tok, [text], 32, batch_size=1)[0]  # alone: no padding
        np.testing.assert_allclose(feats[i], ref, atol=1e-5)
    assert np.array_equal(encode_texts(model, tok, texts, 32, batch_size=5), feats)


def test_fair_protocol_options_default_to_today_and_check_their_views():
    cfg = TrainConfig()
    assert (cfg.world_themes, cfg.doc_captions, cfg.doc_style) == (0, 1, False)
    assert "world_themes" not in cfg.to_dict()  # today's configs serialise (and hash) as before
    doc = TrainConfig(views="next-token", doc_captions=4, world_themes=6)
    assert TrainConfig.from_dict(doc.to_dict()) == doc
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg
    TrainConfig(views="next-token", doc_captions=4, doc_style=True, world_themes=20)
    with pytest.raises(InputError, match="next-token only"):
        TrainConfig(views="good", doc_captions=4)
    with pytest.raises(InputError, match="doc_captions: expected a positive integer, got 0"):
        TrainConfig(views="next-token", doc_captions=0)
    with pytest.raises(InputError, match="world_themes: expected an integer >= 0"):
        TrainConfig(world_themes=-2)
