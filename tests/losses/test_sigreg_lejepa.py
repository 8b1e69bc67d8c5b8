"""SIGReg as LeJEPA users call it: optional step, per-view statistics, LeJEPA's objective scale."""

import argparse

import pytest
import torch

from prh.losses import SIGReg, lejepa_loss, sigreg_jepa_loss


def _z(n=512, d=8, seed=0):
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed))


def test_step_is_optional_and_counts_calls_like_lejepa():
    z = _z()
    reg = SIGReg(num_slices=32)
    first, second = reg(z), reg(z)  # steps 0 and 1 from the module's own counter
    assert int(reg.step) == 2
    torch.testing.assert_close(first, reg(z, 0))
    torch.testing.assert_close(second, reg(z, 1))
    assert not torch.equal(first, second)  # new directions each call
    assert int(reg.step) == 2  # an explicit step leaves the counter alone


def test_leading_view_dim_gives_the_mean_of_per_view_statistics():
    views = torch.stack([_z(seed=1), 0.3 * _z(seed=2)])  # (V=2, N, D)
    reg = SIGReg(num_slices=16)
    per_view = torch.stack([reg(views[0], 5), reg(views[1], 5)]).mean()
    torch.testing.assert_close(reg(views, 5), per_view)


def test_lejepa_invariance_term_against_a_loop_and_its_scale_against_prhs():
    g = torch.Generator().manual_seed(0)
    V, N, K = 3, 6, 4
    views = torch.randn(V, N, K, generator=g)
    reg = SIGReg(num_slices=8)
    _, inv, _ = lejepa_loss(views, reg, lam=0.05, step=0)
    ref = 0.0
    for n in range(N):
        for k in range(K):
            m = sum(views[v, n, k] for v in range(V)) / V
            ref += sum((m - views[v, n, k]) ** 2 for v in range(V))
    torch.testing.assert_close(inv, ref / (V * N * K))
    # Two views: prh's prediction term (lam = 0) is exactly 4 K times LeJEPA's.
    za, zb = views[0], views[1]
    pred, _ = sigreg_jepa_loss(za, zb, 0, reg, lam=0.0)
    _, inv2, _ = lejepa_loss(views[:2], reg, step=0)
    torch.testing.assert_close(pred, 4 * K * inv2)


def test_stacked_statistic_is_about_twice_the_per_view_mean_away_from_gaussian():
    # The module docstring's factor 2: one statistic over both views' 2N rows vs LeJEPA's
    # per-view mean, for embeddings far from N(0, I) (a partly collapsed batch).
    shrink = torch.tensor([1.0, 0.1, 0.1, 0.1])
    za, zb = _z(4096, 4, 1) * shrink, _z(4096, 4, 2) * shrink
    reg = SIGReg(num_slices=64)
    stacked = reg(torch.cat([za, zb]), 0)
    per_view = reg(torch.stack([za, zb]), 0)
    assert 1.9 < float(stacked / per_view) < 2.1


def test_lejepa_loss_refuses_a_single_view():
    with pytest.raises(ValueError, match="V >= 2"):
        lejepa_loss(_z()[None], SIGReg(num_slices=4))


def _train_cli(argv, monkeypatch):
    import prh.training.api as training_api
    from prh.cli import train as train_cli

    seen = {}
    monkeypatch.setattr(
        training_api, "train", lambda cfg, out, *a, **k: seen.setdefault("cfg", cfg)
    )
    p = argparse.ArgumentParser()
    train_cli.add_arguments(p)
    train_cli.run(p.parse_args(argv))
    return seen["cfg"]


def test_train_cli_passes_sigreg_lambda_and_slices(tmp_path, monkeypatch, capsys):
    argv = ["--objective", "sigreg", "--out", str(tmp_path / "r")]
    cfg = _train_cli([*argv, "--sigreg-lambda", "0.2", "--sigreg-slices", "64"], monkeypatch)
    assert cfg.objective == "sigreg" and cfg.sigreg_lambda == 0.2 and cfg.sigreg_slices == 64
    default = _train_cli(argv, monkeypatch)
    from prh.training import TrainConfig

    assert default.sigreg_lambda == TrainConfig.sigreg_lambda
    assert default.sigreg_slices == TrainConfig.sigreg_slices


def test_train_cli_refuses_sigreg_flags_without_the_sigreg_objective(tmp_path, bad_input):
    line = bad_input(["train", "--sigreg-lambda", "0.2", "--out", str(tmp_path / "r")])
    assert "--objective sigreg" in line
    line = bad_input(["train", "--objective", "sigreg", "--sigreg-lambda", "1.5"])
    assert "--sigreg-lambda" in line
