"""The text-only decoder: it overfits, beam search is greedy at width 1 and exhaustive at full
width, training is deterministic for a seed."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from prh.caption.decoder import (
    DecoderConfig,
    DecoderTrainConfig,
    PrefixDecoder,
    beam_search,
    caption_loss,
    greedy_decode,
    length_penalty,
    train_decoder,
)
from prh.errors import InputError
from prh.training.config import OptimConfig

TEXTS = [
    "a red cube",
    "a blue sphere on the left",
    "two green cones",
    "a tiny red sphere above a blue cube",
    "a large blue cone",
    "three small cubes",
    "a green sphere",
    "a cube right of a cone",
]


@pytest.fixture(scope="module")
def tok():
    from prh.views import TextTokenizer

    return TextTokenizer.train(TEXTS, vocab_size=60)


def _cond(n: int, e: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, e)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _cfg(tok, e: int = 8, **kw) -> DecoderConfig:
    base = dict(d_model=32, n_layers=2, n_heads=2, d_ff=64, max_len=32)
    return DecoderConfig(vocab_size=tok.vocab_size, cond_dim=e, **{**base, **kw})


@pytest.fixture(scope="module")
def overfit(tok):
    ids, mask = tok.encode_batch(TEXTS, 32)
    cond = _cond(len(TEXTS), 8)
    tcfg = DecoderTrainConfig(steps=150, batch_size=8, optim=OptimConfig(lr=3e-3), seed=1)
    model, losses = train_decoder(_cfg(tok), cond, ids, mask, tcfg)
    return model, losses, cond


def test_decoder_overfits_a_tiny_corpus(tok, overfit):
    model, losses, cond = overfit
    assert losses[-1] < 0.2 < 2.0 < losses[0]
    out = greedy_decode(model, torch.from_numpy(cond), tok.bos_id, tok.eos_id)
    assert [tok.decode(o) for o in out] == TEXTS


def test_beam_one_is_greedy_and_wider_beams_find_the_overfit_captions(tok, overfit):
    model, _, cond = overfit
    c = torch.from_numpy(cond)
    greedy = greedy_decode(model, c, tok.bos_id, tok.eos_id)
    assert beam_search(model, c, tok.bos_id, tok.eos_id, beam=1) == greedy
    assert beam_search(model, c, tok.bos_id, tok.eos_id, beam=1, alpha=0.0) == greedy
    beams = beam_search(model, c, tok.bos_id, tok.eos_id, beam=3)
    assert [tok.decode(o) for o in beams] == TEXTS


def test_beam_one_is_greedy_on_an_untrained_model(tok):
    torch.manual_seed(0)
    model = PrefixDecoder(_cfg(tok, max_len=10)).eval()
    c = torch.from_numpy(_cond(5, 8, seed=3))
    greedy = greedy_decode(model, c, tok.bos_id, tok.eos_id)
    assert beam_search(model, c, tok.bos_id, tok.eos_id, beam=1) == greedy
    assert all(len(g) <= 9 for g in greedy)


def _exhaustive(model, cond, bos, eos, vocab, max_new, alpha):
    """Best sequence over ALL continuations: EOS-terminated ones and those cut at max_new."""
    best = (-math.inf, None)
    tokens = [t for t in range(vocab) if t != eos]
    for n in range(max_new + 1):
        for body in itertools.product(tokens, repeat=n):
            ids = torch.tensor([[bos, *body]])
            with torch.no_grad():
                logp = torch.log_softmax(model(cond[None], ids)[0].double(), -1)  # (n + 1, V)
            s = sum(float(logp[t, tok]) for t, tok in enumerate(body))
            if n < max_new:  # finished with EOS
                cand = (s + float(logp[n, eos])) / length_penalty(n + 1, alpha)
            else:  # cut at the step limit
                cand = s / length_penalty(n, alpha)
            if cand > best[0]:
                best = (cand, list(body))
    return best[1]


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_full_width_beam_search_is_exhaustive(alpha):
    from tokenizers import Tokenizer, models

    from prh.views import TextTokenizer

    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "x"])}
    tk = TextTokenizer(Tokenizer(models.WordLevel(vocab, unk_token="[UNK]")))
    torch.manual_seed(7)
    cfg = DecoderConfig(vocab_size=5, cond_dim=3, d_model=16, n_layers=1, n_heads=2, d_ff=16,
                        max_len=4)  # fmt: skip
    model = PrefixDecoder(cfg).eval()
    with torch.no_grad():  # make EOS about as likely as the rest so lengths compete
        model.tok.weight.mul_(20.0)
    cond = torch.from_numpy(_cond(4, 3, seed=5))
    got = beam_search(model, cond, tk.bos_id, tk.eos_id, beam=4**3, alpha=alpha)
    want = [_exhaustive(model, c, tk.bos_id, tk.eos_id, 5, 3, alpha) for c in cond]
    assert got == want


def test_training_is_deterministic_for_a_seed(tok):
    ids, mask = tok.encode_batch(TEXTS, 32)
    cond = _cond(len(TEXTS), 8)
    tcfg = DecoderTrainConfig(steps=5, batch_size=4, noise_std=0.1, seed=3)
    m1, l1 = train_decoder(_cfg(tok), cond, ids, mask, tcfg)
    m2, l2 = train_decoder(_cfg(tok), cond, ids, mask, tcfg)
    _, l3 = train_decoder(_cfg(tok), cond, ids, mask, DecoderTrainConfig(steps=5, batch_size=4,
                           noise_std=0.1, seed=4))  # fmt: skip
    assert l1 == l2
    for a, b in zip(m1.state_dict().values(), m2.state_dict().values()):
        assert torch.equal(a, b)
    assert l1 != l3
    # --device cpu is the default, bit for bit; a GPU draws the same batches and noise
    m4, l4 = train_decoder(_cfg(tok), cond, ids, mask, tcfg, device="cpu")
    assert l4 == l1 and all(torch.equal(a, b) for a, b in
                            zip(m1.state_dict().values(), m4.state_dict().values()))  # fmt: skip
    if torch.cuda.is_available():
        m5, l5 = train_decoder(_cfg(tok), cond, ids, mask, tcfg, device="cuda")
        assert next(m5.parameters()).device.type == "cpu"  # returned on the CPU
        assert l5 == pytest.approx(l1, rel=1e-3, abs=1e-4)


def test_loss_ignores_padding_and_matches_a_per_row_reference(tok):
    torch.manual_seed(0)
    model = PrefixDecoder(_cfg(tok)).eval()
    ids, mask = tok.encode_batch(TEXTS[:3], 32)
    cond = torch.from_numpy(_cond(3, 8))
    got = caption_loss(model, cond, ids, mask)
    nll, count = 0.0, 0
    for i in range(3):  # unpadded rows one at a time
        n = int(mask[i].sum())
        with torch.no_grad():
            logp = torch.log_softmax(model(cond[i : i + 1], ids[i : i + 1, : n - 1])[0], -1)
        nll -= sum(float(logp[t, ids[i, t + 1]]) for t in range(n - 1))
        count += n - 1
    assert got.item() == pytest.approx(nll / count, rel=1e-5)


def test_bad_inputs_raise_clear_errors(tok):
    model = PrefixDecoder(_cfg(tok)).eval()
    with pytest.raises(InputError, match=r"expected conditions \(N, 8\)"):
        greedy_decode(model, torch.zeros(2, 5), tok.bos_id, tok.eos_id)
    with pytest.raises(InputError, match="beam must be >= 1"):
        beam_search(model, torch.zeros(2, 8), tok.bos_id, tok.eos_id, beam=0)
    ids, mask = tok.encode_batch(TEXTS[:2], 32)
    with pytest.raises(InputError, match="2 conditions but ids"):
        train_decoder(_cfg(tok), _cond(2, 8), ids[:1], mask[:1])
    with pytest.raises(InputError, match="not divisible"):
        DecoderConfig(vocab_size=10, cond_dim=4, d_model=30, n_heads=4)
    with pytest.raises(InputError, match="noise_std"):
        DecoderTrainConfig(noise_std=-1.0)
