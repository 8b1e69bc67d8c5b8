"""Shared test set-up: deterministic, single-threaded, offline."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared`` beside the repository; tests that need it skip when absent."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present")
    return SHARED
