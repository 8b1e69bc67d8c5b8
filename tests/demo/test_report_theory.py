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
                "modes": {"describe": "misses g7; carries g11 (below the cut) instead"},
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
                 "One rotation from each modality", "missed",
                 "misses g7; carries g11 (below the cut) instead"):  # fmt: skip
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


def _literal_section(seeds: int) -> dict[str, Any]:
    from prh.demo.literal_rule import PairFigures, judge_literal

    one = {"mean": 0.9, "ci": [0.85, 0.95], "correlations": [0.9] * 8}
    pairs = {
        "literal": {"pair": "image-good~text-literal", "seeds": [one] * seeds,
                    "predicted": [1.0] * 8},
        "partial": {"pair": "image-good~text-good", "seeds": [{**one, "mean": 0.7}] * seeds,
                    "predicted": [1.0] * 6 + [0.0, 0.0]},
    }  # fmt: skip
    figs = [
        PairFigures([s["mean"] for s in p["seeds"]], [s["correlations"] for s in p["seeds"]],
                    p["predicted"], tuple(p["seeds"][0]["ci"]))
        for p in pairs.values()
    ]  # fmt: skip
    own = {"mean": 0.95, "ci": [0.9, 0.97]}
    return {"world": "moving-literal", "image": "image-good", "seeds": seeds, "pairs": pairs,
            "theory_cc": {"text-literal": {**one, "own": own, "ceiling": 1.0}},
            "verdict": judge_literal(*figs).to_dict()}  # fmt: skip


def test_the_literal_section_shows_both_pairs_the_predictions_and_the_label():
    page = render("theory.html", th=theory_context({**summary(), "literal": _literal_section(1)}))
    assert "Literal against partial captions, against the same image encoder" in page
    assert "NOT SHOWN (single seed)" in page  # partial misses 0 0 by 0.9: the label, its basis
    for text in ("image-good~text-literal", "image-good~text-good", "1.00 1.00 1.00 1.00 1.00 "
                 "1.00 0.00 0.00", "0.750", "0.950 [0.900, 0.970]"):  # fmt: skip
        assert text in page, text
    three = theory_context({**summary(), "literal": _literal_section(3)})["literal"]
    assert three["label"] == "NOT SHOWN" and three["basis"].startswith("3 seeds")
    skipped = {**summary(), "literal": {"skipped": "no image-good run"}}
    assert "Not run: no image-good run." in render("theory.html", th=theory_context(skipped))
    assert "Literal against" not in render("theory.html", th=theory_context(summary()))
