import pytest
import torch

from prh.errors import InputError
from prh.models import (
    PRESETS,
    CausalLM,
    ImageEncoder,
    TextEncoder,
    count_parameters,
    masked_mean,
    model_config,
)

torch.set_num_threads(1)


def _cfg(**kw):
    return model_config("tiny", 97, d_model=32, n_heads=4, d_ff=64, embed_dim=16, max_len=20, **kw)


def _batch(B=3, T=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, 97, (B, T), generator=g)
    lengths = torch.tensor([T, T - 3, 2])[:B]
    mask = torch.arange(T)[None, :] < lengths[:, None]
    return ids.masked_fill(~mask, 0), mask


def test_masked_mean_matches_loop_reference():
    h = torch.randn(3, 5, 4)
    mask = torch.tensor([[1, 1, 0, 0, 0], [1, 1, 1, 1, 1], [0, 1, 0, 1, 0]], dtype=torch.bool)
    out = masked_mean(h, mask)
    for b in range(3):
        ref = torch.stack([h[b, t] for t in range(5) if mask[b, t]]).mean(0)
        torch.testing.assert_close(out[b], ref)
    assert torch.equal(masked_mean(h, torch.zeros(3, 5, dtype=torch.bool)), torch.zeros(3, 4))


def test_text_encoder_shapes_and_padding_invariance():
    torch.manual_seed(0)
    cfg = _cfg()
    model = TextEncoder(cfg).eval()
    ids, mask = _batch()
    out = model(ids, mask)
    assert out.pooled.shape == (3, cfg.embed_dim)
    assert out.layers.shape == (3, cfg.n_layers + 1, cfg.d_model)
    # Extra padding (and garbage under the padding) must not change any valid row.
    ids2 = torch.cat([ids, torch.randint(4, 97, (3, 6))], 1)
    mask2 = torch.cat([mask, torch.zeros(3, 6, dtype=torch.bool)], 1)
    out2 = model(ids2, mask2)
    torch.testing.assert_close(out2.pooled, out.pooled, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out2.layers, out.layers, atol=1e-5, rtol=1e-5)
    # A single sequence alone gives the same result as inside the batch (no cross-row leakage).
    solo = model(ids[1:2, :7], mask[1:2, :7])
    torch.testing.assert_close(solo.pooled, out.pooled[1:2], atol=1e-5, rtol=1e-5)


def test_text_encoder_is_bidirectional_causal_lm_is_not():
    torch.manual_seed(0)
    cfg = _cfg()
    ids, mask = _batch(B=1, T=8)
    mask[:] = True
    ids2 = ids.clone()
    ids2[0, -1] = (ids[0, -1] + 1 - 4) % 93 + 4  # change only the last token
    enc = TextEncoder(cfg).eval()
    h1 = enc.trunk(ids, mask)[-1]
    h2 = enc.trunk(ids2, mask)[-1]
    assert not torch.allclose(h1[0, 0], h2[0, 0])  # position 0 sees the future
    lm = CausalLM(cfg).eval()
    l1, l2 = lm(ids, mask), lm(ids2, mask)
    assert l1.shape == (1, 8, cfg.vocab_size)
    torch.testing.assert_close(l1[:, :-1], l2[:, :-1])  # the past does not see the future
    assert not torch.allclose(l1[:, -1], l2[:, -1])


def test_causal_lm_encode_and_padding():
    torch.manual_seed(0)
    cfg = _cfg()
    lm = CausalLM(cfg).eval()
    ids, mask = _batch()
    enc = lm.encode(ids, mask)
    assert enc.layers.shape == (3, cfg.n_layers + 1, cfg.d_model)
    assert enc.pooled.shape == (3, cfg.d_model)
    torch.testing.assert_close(enc.pooled, enc.layers[:, -1])
    logits = lm(ids, mask)
    assert torch.isfinite(logits).all()
    solo = lm(ids[2:3, :2], mask[2:3, :2])
    torch.testing.assert_close(solo, logits[2:3, :2], atol=1e-5, rtol=1e-5)


def test_same_seed_same_weights_and_outputs():
    ids, mask = _batch()
    outs = []
    for _ in range(2):
        torch.manual_seed(3)
        outs.append(TextEncoder(_cfg())(ids, mask).pooled)
    assert torch.equal(outs[0], outs[1])


def test_image_encoder_shapes():
    torch.manual_seed(0)
    cfg = model_config("tiny", 1, d_model=16, embed_dim=8, image_stages=3)
    model = ImageEncoder(cfg)
    out = model(torch.rand(2, 3, 32, 32))
    assert out.pooled.shape == (2, 8)
    assert out.layers.shape == (2, 4, 16)
    with pytest.raises(ValueError, match=r"expected images \(B, 3, H, W\)"):
        model(torch.rand(2, 32, 32))


@pytest.mark.parametrize(
    ("preset", "target", "tol"), [("small", 33e6, 0.05), ("base", 109e6, 0.02)]
)
def test_preset_parameter_counts(preset, target, tol):
    # Parameter count with the BERT vocabulary and 512 positions (meta device: no memory).
    with torch.device("meta"):
        model = TextEncoder(model_config(preset, 30522, max_len=512))
    n = count_parameters(model)
    assert abs(n - target) / target < tol, n


def test_presets_scale_together_and_errors():
    sizes = [PRESETS[p]["d_model"] for p in ("tiny", "small", "base")]
    assert sizes == sorted(sizes)
    with pytest.raises(InputError, match="unknown model preset 'huge'"):
        model_config("huge", 10)
    with pytest.raises(InputError, match="not divisible"):
        model_config("tiny", 10, n_heads=3)
    with pytest.raises(InputError, match=r"unknown ModelConfig field\(s\) \['width'\]"):
        model_config("tiny", 10, width=3)
    with pytest.raises(ValueError, match="max_len"):
        TextEncoder(_cfg())(
            torch.zeros(1, 30, dtype=torch.long), torch.ones(1, 30, dtype=torch.bool)
        )
