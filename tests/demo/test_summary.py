"""The demo's typed summary (``prh.demo.summary``): the file format unchanged, old files read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prh.demo.summary import STAMP_KEYS, DemoSummary, Protocol, ci_bounds

ROOT = Path(__file__).resolve().parents[2]
SUMMARIES = sorted((ROOT / "docs" / "results").glob("*/summary.json"))
FIXTURE = ROOT / "tests" / "demo" / "fixtures" / "report_demo.json"


@pytest.mark.parametrize("path", SUMMARIES, ids=lambda p: p.parent.name)
def test_every_recorded_summary_reads_back_and_a_current_one_writes_back_unchanged(path):
    d = json.loads(path.read_text())
    body = {k: v for k, v in d.items() if k not in STAMP_KEYS}
    s = DemoSummary.from_dict(d)
    assert s.protocol.to_dict() == d["protocol"] and s.config == d["config"]
    if "theory_claims" in d:  # a summary of this format's current writer: key for key
        assert s.to_dict() == body
        assert list(s.to_dict()) == list(body)
        assert s.world is not None and s.world.to_dict() == d["world"]
    else:  # an older demo's: its sections read, the newer ones absent
        assert s.world is None and s.theory_cc is None
        assert {k: v for k, v in s.to_dict().items() if k in body} == body


def test_the_report_fixture_reads():
    s = DemoSummary.from_dict(json.loads(FIXTURE.read_text())["summary"])
    assert s.alignment and s.machine.cpus is not None and s.runs is None


@pytest.mark.parametrize("path", SUMMARIES, ids=lambda p: p.parent.name)
def test_the_protocol_is_formatted_from_the_config(path):
    """The recorded sentences, rebuilt from the recorded config alone."""
    d = json.loads(path.read_text())
    assert Protocol.of(d["config"]).to_dict() == d["protocol"]


def test_the_protocol_follows_the_settings_it_names():
    d = json.loads(SUMMARIES[0].read_text())["config"]
    p = Protocol.of({**d, "k": 5, "vision": "hf:some/model"}, level=0.99)
    assert "k = 5" in p.metric and "99% quantile" in p.metric
    assert p.vision == "hf:some/model (frozen)"  # no claim about data it does not know


def test_an_estimate_without_an_interval_reads_as_two_undefined_bounds():
    assert ci_bounds({"ci": None}) == ci_bounds({}) == (None, None)
    assert ci_bounds({"ci": [0.1, 0.2]}) == (0.1, 0.2)
