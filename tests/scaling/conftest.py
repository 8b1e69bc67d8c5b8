"""One BLAS thread for the scaling tests: small eigenproblems are slower with more (shared CPU)."""

import contextlib

import pytest


@pytest.fixture(autouse=True, scope="session")
def _one_blas_thread():
    with contextlib.ExitStack() as stack:
        with contextlib.suppress(ImportError):
            from threadpoolctl import threadpool_limits

            stack.enter_context(threadpool_limits(1))
        yield
