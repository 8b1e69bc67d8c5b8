"""Small random worlds shared by the theory tests (single-threaded BLAS: tiny matrices)."""

import numpy as np
import pytest

from prh.theory import generators as gen
from prh.theory import views


@pytest.fixture(autouse=True, scope="package")
def _one_blas_thread():
    from prh.prove.runner import single_threaded_blas

    with single_threaded_blas():
        yield


def small_law(seed: int, N: int = 6, K: int = 2, kind: str = "good") -> np.ndarray:
    """A random pair law on N * K observations (grid order)."""
    rng = np.random.default_rng(seed)
    prior = gen.random_prior(N, rng)
    pi = gen.state_kernel("sbm", prior, rng)
    q = gen.random_prior(K, rng)
    if kind == "good":
        return views.good_views(pi, q)
    return views.bad_views(pi, q, views.nuisance_kernel(q, 0.7, rng))


@pytest.fixture
def law():
    """The :func:`small_law` factory."""
    return small_law


@pytest.fixture(autouse=True, scope="package")
def _one_torch_thread():
    """The learner's tensors are tiny: threads only add overhead (and jitter on a shared CPU)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
