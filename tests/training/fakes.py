"""A tiny stand-in for prh.views (tokenizer + ViewDataset), following the contract exactly.

Scenes are fixed random token strings; a good view of a scene is a copy with 20% of its characters
replaced, drawn from a generator seeded by (seed, batch index): ``batch(i)`` is pure.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

ALPHABET = "abcdefghijklmnopqrstuvwxyz "


class CharTokenizer:
    pad_id, mask_id, bos_id, eos_id = 0, 1, 2, 3

    @property
    def vocab_size(self) -> int:
        return 4 + len(ALPHABET)

    def encode_batch(self, texts, max_len):
        ids = torch.zeros(len(texts), max_len, dtype=torch.long)
        mask = torch.zeros(len(texts), max_len, dtype=torch.bool)
        for r, t in enumerate(texts):
            codes = [4 + ALPHABET.index(c) for c in t.lower() if c in ALPHABET][:max_len]
            ids[r, : len(codes)] = torch.tensor(codes, dtype=torch.long)
            mask[r, : len(codes)] = True
        return ids, mask

    def save(self, path):
        Path(path).write_text(json.dumps({"kind": "char", "alphabet": ALPHABET}))

    @classmethod
    def load(cls, path):
        json.loads(Path(path).read_text())
        return cls()


class FakeViews:
    def __init__(self, kind, batch_size, seed=0, rank=0, world_size=1, n_scenes=40, T=12):
        self.kind, self.batch_size, self.seed = kind, batch_size, seed
        self.rank, self.world_size, self.T = rank, world_size, T
        g = torch.Generator().manual_seed(1234)
        self.scenes = torch.randint(4, 4 + len(ALPHABET), (n_scenes, T), generator=g)
        self.start = 0

    def _view(self, base, g):
        noise = torch.rand(base.shape, generator=g) < 0.2
        other = torch.randint(4, 4 + len(ALPHABET), base.shape, generator=g)
        return torch.where(noise, other, base)

    def batch(self, i):
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + i)
        s = torch.randint(0, self.scenes.shape[0], (self.batch_size,), generator=g)
        base = self.scenes[s]  # (B, T)
        lengths = torch.randint(self.T // 2, self.T + 1, (self.batch_size,), generator=g)
        mask = torch.arange(self.T)[None] < lengths[:, None]
        a = self._view(base, g) * mask
        b = self._view(base, g) * mask
        out = {
            "a": a,
            "a_mask": mask,
            "b": b,
            "b_mask": mask.clone(),
            "good": torch.ones(self.batch_size, dtype=torch.bool),
            "tokens": base * mask,
            "tokens_mask": mask.clone(),
        }
        return {k: v[self.rank :: self.world_size] for k, v in out.items()}

    def __iter__(self):
        i = self.start
        while True:
            yield self.batch(i)
            i += 1


def fake_factory(cfg, run_dir, rank, world_size, is_main, barrier):
    tok = CharTokenizer()
    if is_main:
        tok.save(Path(run_dir) / "tokenizer.json")
    barrier()
    return tok, FakeViews(cfg.views, cfg.batch_size, cfg.seed, rank, world_size)


def tiny_config(**kw):
    from prh.training import train_config

    base = dict(
        world="cave",
        batch_size=16,
        samples=16 * 12,
        max_len=12,
        checkpoint_every=4,
        log_every=1,
        lr=3e-3,
        model_overrides={"d_model": 32, "n_layers": 1, "n_heads": 2, "d_ff": 64, "embed_dim": 8},
    )
    base.update(kw)
    return train_config("tiny", **base)


def assert_same_training(a: dict, b: dict, lr: float, steps: int, typical: float = 1e-4) -> None:
    """Two runs of one recipe whose additions happen in different orders (two ranks against one
    process): nearly every weight agrees to float rounding (the 99.9th percentile of the
    elementwise gaps below ``typical``, far below one Adam step of ``lr``: runs that saw other
    rows differ by about ``lr`` in most weights), and none is further apart than Adam can carry a
    weight in ``steps`` steps of ``lr`` each way (``2 lr steps``). Where a weight's true gradient
    is ~0 (a softmax's key bias, a unit the batch leaves idle), Adam normalises rounding noise
    into a full step, so its gap reaches ~lr per step on one CPU and not on another: the bound,
    not a fixed tolerance, is what holds on any CPU."""
    gaps = torch.cat([(a[k].float() - v.float()).abs().flatten() for k, v in b.items()])
    assert float(gaps.max()) <= 2 * lr * steps * (1 + 1e-3), float(gaps.max())
    assert float(torch.quantile(gaps, 0.999)) < typical, float(torch.quantile(gaps, 0.999))
