"""A JEPA batch encoded in length groups (prh.training.loop.pooled_by_length) equals one padded
forward, in value and in gradient, and is deterministic."""

import torch

from prh.models import ModelConfig, TextEncoder
from prh.training.loop import pooled_by_length, trim


def _batch(n: int = 40, T: int = 24, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, T + 1, (n,), generator=g)  # (n,) from 1 to T tokens
    mask = torch.arange(T)[None, :] < lengths[:, None]  # (n, T)
    ids = torch.randint(4, 97, (n, T), generator=g) * mask  # padding id 0
    return ids, mask


def _model() -> TextEncoder:
    torch.manual_seed(0)
    cfg = ModelConfig(vocab_size=97, d_model=32, n_layers=2, n_heads=2, d_ff=64, max_len=24,
                      embed_dim=8)  # fmt: skip
    return TextEncoder(cfg)


def test_length_groups_equal_one_padded_forward_and_its_gradient():
    model, (ids, mask) = _model(), _batch()
    ref = model(*trim(ids, mask)).pooled  # (n, E): the one-batch reference
    ref.square().sum().backward()
    ref_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    for rows in (7, 16, 40):
        out = pooled_by_length(model, ids, mask, rows)
        torch.testing.assert_close(out, ref, atol=1e-6, rtol=1e-5)  # rows in batch order
        model.zero_grad()
        out.square().sum().backward()
        for p, g in zip(model.parameters(), ref_grads, strict=True):
            torch.testing.assert_close(p.grad, g, atol=1e-5, rtol=1e-4)


def test_one_group_is_the_plain_forward_and_groups_are_deterministic():
    model, (ids, mask) = _model(), _batch(seed=1)
    with torch.no_grad():
        assert torch.equal(pooled_by_length(model, ids, mask, 40), model(*trim(ids, mask)).pooled)
        a = pooled_by_length(model, ids, mask, 8)
        b = pooled_by_length(model, ids, mask, 8)
    assert torch.equal(a, b)


def test_a_shuffled_batch_gives_each_row_its_own_embedding():
    model, (ids, mask) = _model(), _batch(seed=2)
    perm = torch.randperm(ids.shape[0], generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        out = pooled_by_length(model, ids, mask, 8)
        shuffled = pooled_by_length(model, ids[perm], mask[perm], 8)
    torch.testing.assert_close(shuffled, out[perm], atol=1e-6, rtol=1e-5)
