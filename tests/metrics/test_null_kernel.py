"""The kernel metrics' batched null on torch (prh.metrics.null_kernel) against the pair loop.

The reference is the numpy pair loop that ``measure`` runs on ``--backend numpy``: every draw
rescored pair by pair with ``cka_from_sides`` / ``svcca_from_bases``. The batched null must give
the same p-values exactly (ties with the observed score included: tiny N makes the identity and
other exact ties frequent), the same draws to float rounding, and the same adaptive stop.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from prh.metrics import null_kernel
from prh.metrics.api import MetricOptions, Preprocessing, measure
from prh.metrics.cca import svcca_basis, svcca_from_bases
from prh.metrics.kernel import cka_from_sides, kernel_side

CASES = [("cka", "linear"), ("cka", "rbf"), ("unbiased_cka", "linear"),
         ("unbiased_cka", "rbf"), ("svcca", "linear"), ("cknna", "linear")]  # fmt: skip


def layered(seed: int, n: int, noise_a, noise_b, shared: float = 1.0):
    """``(N, L_A, 24)`` and ``(N, L_B, 16)`` views of one latent, noisier by layer."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 6))
    zb = shared * z + (1 - shared) * rng.standard_normal((n, 6))

    def side(latent, noises, d):
        return np.stack(
            [
                latent @ rng.standard_normal((6, d)) + s * rng.standard_normal((n, d))
                for s in noises
            ],
            axis=1,
        )

    return side(z, noise_a, 24), side(zb, noise_b, 16)


def both(a, b, metric, kernel, **kw):
    """``measure`` by the pair loop (numpy) and by the batched null (torch, CPU)."""
    out = []
    for backend in ("numpy", "torch"):
        opts = MetricOptions(backend=backend, device="cpu", kernel=kernel, cca_dim=4)
        out.append(measure(a, b, metric, k=min(10, a.shape[0] - 2), options=opts, **kw))
    return out


@pytest.mark.parametrize("metric, kernel", CASES)
@pytest.mark.parametrize("shared", [1.0, 0.15])  # aligned (p small) and barely (p spread)
def test_same_p_values_and_draws_as_the_pair_loop(metric, kernel, shared):
    a, b = layered(1, 120, (0.5, 1.5, 3.0), (2.0, 5.0), shared)
    loop, batched = both(a, b, metric, kernel, null=80, seed=7)
    assert batched.p_value == loop.p_value and batched.n_null == loop.n_null == 80
    assert batched.null_critical == pytest.approx(loop.null_critical, abs=1e-12)
    assert batched.score == loop.score and batched.layers == loop.layers


@pytest.mark.parametrize("metric, kernel", CASES)
@pytest.mark.parametrize("seed", [0, 5])
def test_exact_ties_with_the_observed_score_resolve_as_the_loop(metric, kernel, seed):
    """N = 5 rows (120 permutations): among 400 draws the identity recurs, tying the observed
    score exactly in the loop; the batched score of the same draw differs from it by rounding,
    either way, so only the rescoring keeps the p-value the loop's."""
    a, b = layered(seed, 5, (0.3, 0.9), (0.3,) if metric != "svcca" else (0.3, 0.5), 1.0)
    a, b = (x / np.linalg.norm(x, axis=2, keepdims=True) for x in (a, b))
    kw = dict(null=400, seed=1, preprocessing=Preprocessing(enabled=False))
    loop, batched = both(a, b, metric, kernel, **kw)
    assert batched.p_value == loop.p_value
    assert batched.null_critical == pytest.approx(loop.null_critical, abs=1e-12)


@pytest.mark.parametrize("metric, kernel", CASES)
def test_adaptive_stop_and_fixed_pair_agree(metric, kernel):
    a, b = layered(3, 90, (0.5, 2.0), (1.0, 4.0, 8.0), 0.3)
    loop, batched = both(a, b, metric, kernel, null=200, seed=2, null_stop="adaptive")
    assert (batched.n_null, batched.p_value) == (loop.n_null, loop.p_value)
    loop, batched = both(a, b, metric, kernel, null=40, seed=2, layers=(0, -1))
    assert batched.p_value == loop.p_value and batched.layers == loop.layers == (0, 2)


@pytest.mark.parametrize("unbiased", [False, True])
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_cka_scores_equal_cka_from_sides_per_pair_and_draw(unbiased, kernel):
    import torch

    a, b = layered(4, 60, (0.5, 2.0), (1.0, 3.0, 6.0))
    a, b = (x / np.linalg.norm(x, axis=2, keepdims=True) for x in (a, b))  # RBF at sigma 1
    sa = [kernel_side(a[:, i], kernel) for i in range(2)]
    sb = [kernel_side(b[:, j], kernel) for j in range(3)]
    perms = np.stack([np.random.default_rng(s).permutation(60) for s in range(5)])
    got = null_kernel.CkaNull(sa, sb, unbiased, 1e-6, torch.device("cpu")).scores(perms)
    for t, perm in enumerate(perms):
        for i in range(2):
            for j in range(3):
                want = cka_from_sides(sa[i], sb[j], perm, unbiased=unbiased, eps=1e-6)
                assert got[t, i, j] == pytest.approx(want, abs=1e-13)


def test_svcca_scores_equal_svcca_from_bases_per_pair_and_draw():
    import torch

    a, b = layered(5, 50, (0.5, 2.0, 4.0), (1.0, 3.0))
    ua = [svcca_basis(a[:, i], 5) for i in range(3)]
    ub = [svcca_basis(b[:, j], 5) for j in range(2)]
    perms = np.stack([np.random.default_rng(s).permutation(50) for s in range(4)])
    got = null_kernel.SvccaNull(ua, ub, torch.device("cpu")).scores(perms)
    for t, perm in enumerate(perms):
        for i in range(3):
            for j in range(2):
                assert got[t, i, j] == pytest.approx(
                    svcca_from_bases(ua[i], ub[j], perm), abs=1e-12
                )


def test_cuda_branch_mocked_on_cpu_sizes_batches_by_free_memory(monkeypatch):
    """The GPU branch (torch's indexing, the batch sized by the device's free memory) run on the
    CPU: the same p-values; the batch is what the fake free memory allows."""
    import torch

    a, b = layered(6, 64, (0.5, 2.0), (1.0, 3.0), 0.3)
    loop = both(a, b, "cka", "linear", null=60, seed=4)[0]
    monkeypatch.setattr(null_kernel, "on_accelerator", lambda dev: True)
    free = 3 * 8 * (2 + 1) * (64 * 63 // 2) * 4  # a quarter of it: three draws of 2 B layers
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda dev=None: (free, 2 * free))
    built = []
    kernel_null = null_kernel.kernel_null
    monkeypatch.setattr(
        null_kernel, "kernel_null", lambda *a, **k: built.append(kernel_null(*a, **k)) or built[-1]
    )
    _, batched = both(a, b, "cka", "linear", null=60, seed=4)
    assert built and built[0].batch == 3
    assert batched.p_value == loop.p_value
    assert batched.null_critical == pytest.approx(loop.null_critical, abs=1e-12)


@pytest.mark.parametrize("metric", ["svcca", "cknna"])
def test_cuda_branch_mocked_on_cpu_svcca_and_cknna(monkeypatch, metric):
    """SVCCA's and CKNNA's GPU branch (CKNNA: torch's indexing for its lookups) on the CPU."""
    import torch

    from prh.metrics import null_cknna

    a, b = layered(10, 64, (0.5, 2.0), (1.0, 3.0), 0.3)
    loop = both(a, b, metric, "linear", null=60, seed=4)[0]
    looked = []
    lookup = null_cknna.CknnaNull.lookup
    monkeypatch.setattr(null_kernel, "on_accelerator", lambda dev: True)
    monkeypatch.setattr(null_cknna, "on_accelerator", lambda dev: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda dev=None: (2**24, 2**25))
    monkeypatch.setattr(null_cknna.CknnaNull, "lookup", lambda *a: looked.append(1) or lookup(*a))
    _, batched = both(a, b, metric, "linear", null=60, seed=4)
    assert batched.p_value == loop.p_value
    assert batched.null_critical == pytest.approx(loop.null_critical, abs=1e-12)
    assert bool(looked) == (metric == "cknna")


def test_sides_too_large_fall_back_to_the_loop(monkeypatch):
    monkeypatch.setattr(null_kernel, "MAX_KERNEL_BYTES", 0)
    a, b = layered(7, 40, (0.5,), (1.0,), 0.5)
    assert null_kernel.kernel_null("cka", [kernel_side(a[:, 0])], [kernel_side(b[:, 0])], 0.0,
                                   "cpu") is None  # fmt: skip
    loop, batched = both(a, b, "cka", "linear", null=30, seed=0)
    assert batched.p_value == loop.p_value and batched.null_critical == loop.null_critical


def test_cknna_scores_equal_cknna_from_sides_per_pair_and_draw():
    import torch

    from prh.metrics.kernel import cknna_from_sides, knn_kernel_side
    from prh.metrics.null_cknna import CknnaNull

    a, b = layered(9, 70, (0.5, 2.0), (1.0, 3.0, 6.0), 0.5)
    a, b = (x / np.linalg.norm(x, axis=2, keepdims=True) for x in (a, b))
    sa = [knn_kernel_side(a[:, i], 5) for i in range(2)]
    sb = [knn_kernel_side(b[:, j], 5) for j in range(3)]
    perms = np.stack([np.random.default_rng(s).permutation(70) for s in range(5)])
    got = CknnaNull(sa, sb, 1e-6, torch.device("cpu")).scores(perms)
    for t, perm in enumerate(perms):
        for i in range(2):
            for j in range(3):
                want = cknna_from_sides(sa[i], sb[j], perm, eps=1e-6)
                assert got[t, i, j] == pytest.approx(want, abs=1e-13)


def test_cli_backend_torch_gives_the_loops_p_values(tmp_path, capsys):
    """``prh measure A B --metric M --null R --backend torch`` writes the p-value and null
    quantile of ``--backend numpy`` (the pair loop), layer search included."""
    import json

    import prh.cli as cli

    a, b = layered(8, 80, (0.5, 2.0), (1.0, 3.0), 0.2)
    np.save(tmp_path / "a.npy", a.astype(np.float32))
    np.save(tmp_path / "b.npy", b.astype(np.float32))
    for metric in ("cka", "unbiased_cka", "svcca", "cknna"):
        got = {}
        for backend in ("numpy", "torch"):
            out = tmp_path / f"{metric}-{backend}.json"
            argv = ["measure", str(tmp_path / "a.npy"), str(tmp_path / "b.npy"), "--metric",
                    metric, "--null", "50", "--backend", backend, "--device", "cpu", "--json",
                    str(out)]  # fmt: skip
            assert cli.main(argv) == 0
            (got[backend],) = json.loads(out.read_text())["results"]
        capsys.readouterr()
        assert got["torch"]["p_value"] == got["numpy"]["p_value"] and got["torch"]["null"] == 50
        assert got["torch"]["null_critical"] == pytest.approx(
            got["numpy"]["null_critical"], abs=1e-12
        )


def test_cost_estimate_times_the_batched_null_on_torch(monkeypatch):
    """``prh measure``'s estimate before a matrix times the null it will run: on the torch
    backend the batch (its per-pair rate), not the pair loop."""
    from prh.metrics.cost import estimate_matrix

    calls = []
    scores = null_kernel.CkaNull.scores
    monkeypatch.setattr(
        null_kernel.CkaNull, "scores", lambda self, p: calls.append(len(p)) or scores(self, p)
    )
    opts = MetricOptions(backend="torch", device="cpu")
    c = estimate_matrix("cka", 64, 8, [3], [2, 4], null=10, options=opts)
    assert calls and c.pair_draw_us > 0 and c.pair_draws == (3 * 2 + 3 * 4) * 10
    calls.clear()
    estimate_matrix("cka", 64, 8, [3], [2, 4], null=10, options=MetricOptions())
    assert not calls  # numpy: the loop is timed
