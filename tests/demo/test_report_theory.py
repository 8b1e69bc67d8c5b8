"""The report's theory section (issue 21): what it shows of the theory summary, undefined
figures read "undefined", a summary written before the step shows no section."""

from __future__ import annotations

from typing import Any

from prh.demo.html_parts import render
from prh.demo.report_theory import theory_context


def _pair(x: str, y: str, cc: Any, **kw: Any) -> dict[str, Any]:
    return {"x": x, "y": y, "cc": cc, "cc_ci": [None if cc is None else cc - 0.05, None],
            "cka": kw.get("cka", 0.7), "mutual_knn": 0.1, "mutual_knn_ci": [0.09, 0.11],
            "rotation_x_to_y": 0.95, "rotation_y_to_x": None, "r2_x_to_y": 0.6,
            "r2_y_to_x": None}  # fmt: skip


def summary() -> dict[str, Any]:
    spec = {"maps": {"image-good~text-good": {
        "pinned": False, "reason": "eigenvalues 3 and 4 too close", "accuracy": 0.01,
        "spectral": {"r2": None, "r1": 0.02}, "paired": {"r2": 0.5, "r1": 0.1},
        "chance_r1": 0.0046}}}  # fmt: skip
    return {
        "world": {
            "name": "moving",
            "spectrum": [0.91, 0.66, 0.47, 0.45, 0.41, 0.37, 0.33, 0.30, 0.24],
            "k": 8,
            "gap": 0.056,
            "min_separation": 0.0219,
            "lag": 175,
            "reason": None,
        },
        "theory_cc": {
            "text-good": {
                "correlations": [0.99] * 6 + [None, 0.1],
                "mean": 0.7,
                "ci": [0.65, None],
            },
            "text-bad": {"correlations": [0.1] * 8, "mean": None, "ci": [None, None]},
        },
        "spectral": spec,
        "modalities": {
            "pairs": [_pair("image-good", "text-good", 0.81), _pair("image-bad", "text-good", None)]
        },
        "control": {
            "world": "cave",
            "spectral": spec,
            "pairs": [_pair("image-good", "text-good", 0.42, cka=None)],
        },
        "theory_targets": [
            {"target": "text-good theory cc >= 0.8", "figure": "0.700", "met": False},
            {"target": "x", "figure": "undefined", "met": None},
        ],
    }


def test_the_section_shows_every_part_and_reads_undefined_for_missing_figures():
    page = render("theory.html", th=theory_context(summary()))
    for text in ("The theory's embedding of the moving world", "0.9100", "first after the gap",
                 "Each encoder against g*", "Every pair of encoders", "image-bad ~ text-good",
                 "The control: the same encoders on the cave world", "not pinned",
                 "One rotation from each modality", "missed"):  # fmt: skip
        assert text in page, text
    assert "undefined" in page and "None" not in page and "nan" not in page
    # bad-view pairs come last, and the control row repeats the moving world's cc of the pair
    assert page.index("image-good ~ text-good") < page.index("image-bad ~ text-good")
    assert "0.810 [0.760, undefined]" in page.split("The control")[1]


def test_still_world_and_old_summaries():
    s = summary()
    s["world"] = {"name": "cave", "spectrum": None, "reason": "no gap at any k"}
    s["theory_cc"] = {"skipped": "no gap"}
    page = render("theory.html", th=theory_context(s))
    assert "No spectrum: no gap at any k." in page and "Each encoder against g*" not in page
    del s["theory_cc"]  # a summary written before the theory step
    assert theory_context(s) is None
