"""The spectral sections' own-pair draws are kept beside the demo's runs and read back."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

import prh.training.moving as moving
from prh.demo.spectral import own_pairs


def test_a_runs_draws_are_computed_once_and_read_back(tmp_path, monkeypatch):
    calls = []

    def fake(run, n, *, seed):
        calls.append((str(run), n, seed))
        rng = np.random.default_rng(seed)
        a, b = rng.standard_normal((n, 4)), rng.standard_normal((n, 4))
        return SimpleNamespace(embedding=lambda: (a.astype(np.float32), b.astype(np.float32)))

    monkeypatch.setattr(moving, "run_positive_pairs", fake)
    cache = tmp_path / "pairs"
    run = tmp_path / "sweep" / "runs" / "abc"
    a1, b1 = own_pairs(cache, run, 16, 7)
    a2, b2 = own_pairs(cache, run, 16, 7)  # another step asking for the same draw
    assert calls == [(str(run), 16, 7)]
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(b1, b2)
    own_pairs(cache, run, 16, 8)  # another seed, another run: drawn
    own_pairs(cache, tmp_path / "control" / "sweep" / "runs" / "abc", 16, 7)
    assert len(calls) == 3 and len(list(cache.glob("*.safetensors"))) == 3
    assert not list(cache.glob("*.tmp*"))  # written whole
