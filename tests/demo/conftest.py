"""Fixtures of the demo tests: a tiny BERT built here as the "pretrained" text baseline."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    # One builder for the tests and the report fixture's script (the same BERT in both).
    from fixtures.make_report_fixture import tiny_bert as build_tiny_bert

    return build_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))
