"""Caption tests run single-threaded; the toy fixtures (text_run, tiny_vit, caption_run, build_kw)
live in tests/conftest.py, shared with the serve tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def _one_thread():
    import torch

    torch.set_num_threads(1)
