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


LITERAL = {
    "world": "moving-literal",
    "image": "image-good",
    "seeds": 1,
    "runs": {"text-literal": "literal/sweep-x/runs/abc"},
    "train_seconds": {"text-literal": 12.5},
    "k": 8,
    "theory_cc": {"text-literal": {"mean": 0.95, "ci": [0.94, 0.96], "own": {"mean": 0.95}}},
    "pairs": {"literal": {"pair": "image-good~text-literal", "seeds": [], "predicted": [1.0]}},
    "verdict": {"label": "NOT SHOWN", "reason": "r", "basis": "single seed: ...", "rule": "x",
                "figures": {}},
}  # fmt: skip


def test_the_literal_section_round_trips_and_an_older_summary_without_it_still_reads():
    from prh.demo.summary import LiteralSummary

    d = json.loads(SUMMARIES[0].read_text())
    body = {k: v for k, v in d.items() if k not in STAMP_KEYS and k != "literal"}
    old = DemoSummary.from_dict(body)  # written before the literal twin: no such key
    assert old.literal is None and "literal" not in old.to_dict()
    assert old.to_dict() == body  # key for key, as it was
    new = DemoSummary.from_dict({**body, "literal": LITERAL})
    assert isinstance(new.literal, LiteralSummary) and new.literal.label == "NOT SHOWN"
    again = json.loads(json.dumps(new.to_dict()))
    assert again["literal"] == LITERAL
    assert list(again).index("literal") == list(again).index("control") + 1  # file order
    assert DemoSummary.from_dict(again) == new
    skipped = DemoSummary.from_dict({**body, "literal": {"skipped": "no image-good run"}})
    assert skipped.literal.label is None
    assert skipped.to_dict()["literal"] == {"skipped": "no image-good run"}
