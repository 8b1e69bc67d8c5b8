"""Undefined figures are figures (issue 25, item 8): a metric that could not be computed (``None``
or NaN: the CKA of constant features, a ratio with no ridge map above chance, a law that did not
converge) reads "undefined" in every table, plot and summary line of the report, with the reason
where the data gives one, instead of crashing or printing "nan" / "None"."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from test_report_template import PNG, demo_fixture, visible_text

from prh.demo.html_parts import interval, num
from prh.demo.plots import plot_bars, plot_curves
from prh.demo.report import claims, render_html
from prh.demo.report_modalities import modalities_html

NAN = math.nan


def _undefine_matrix(m: dict[str, Any], x: str, y: str) -> None:
    """Every figure of the pair ``x``, ``y`` undefined, both ways, no reason recorded."""
    i, j = m["names"].index(x), m["names"].index(y)
    for key in ("mutual_knn", "mutual_knn_ci_low", "mutual_knn_ci_high", "cka", "rotation"):
        m[key][i][j] = m[key][j][i] = None
    m["pairs"] = [p for p in m["pairs"] if {p["x"], p["y"]} != {x, y}]


def undefined_fixture() -> dict[str, Any]:
    """The stored demo with an undefined figure in every section."""
    fx = demo_fixture()
    s, r = fx["summary"], fx["results"]
    a = s["alignment_detail"]["minilm"]
    a.update(score=NAN, calibrated=None, ci=[None, None], p_value=None, layers=None)
    s["alignment_detail"]["random-init"]["ci"] = [None, 0.5]
    s["sample_efficiency"].update(samples_next_token=NAN, ratio=None, ratio_lower_bound=None,
                                  ci=[None, None])  # fmt: skip
    s["word_order"]["good"].update(best_mutual_knn=None, shape_max=NAN)
    law = s["law"]
    law.update(seed_spread=None, ratio=NAN, n_pairs=None, notes=["additive did not converge"])
    law["forms"][0].update(train_rmse=None, heldout_rmse=NAN)
    s["bridge"]["encoders"]["good"]["retrieval"]["img_to_txt"]["R@1"] = None
    mod = r["modalities"]
    _undefine_matrix(mod["evidence"]["matrix"], "image-good", "text-good")
    mod["probe"]["image-good"]["shape"]["embedding"] = None
    mod["captioners"].update(paired=None, ratio=NAN, paired_beats_nearest=None)
    return fx


def _rows(page: str) -> list[str]:
    return [t for t in visible_text(page) if not t.startswith("[figure:")]


def test_num_and_interval():
    assert num(None) == num(NAN) == "undefined" and num(0.5) == "0.500" and num(3) == "3"
    assert num(None, why="too few rows") == "undefined (too few rows)"
    assert interval(None, None) == "[undefined]" and interval(None, 0.25, 2) == "[undefined, 0.25]"


def test_report_reads_undefined_where_a_figure_is_undefined(tmp_path):
    fx = undefined_fixture()
    for f in ("alignment_curves.png", "alignment_bars.png", "law_fit.png", "modalities.png"):
        (tmp_path / f).write_bytes(PNG)
    text = _rows(render_html(fx["summary"], fx["results"], tmp_path))
    assert not {"nan", "None", "–"} & {w.strip("[](),;:") for t in text for w in t.split()}

    def row(first: str, after: str | None = None) -> list[str]:
        start = text.index(after) if after else 0
        i = text.index(first, start)
        return text[i : i + 6]

    assert row("MiniLM-L6 (pretrained, 1B pairs)")[1:] == [
        "undefined", "undefined", "[undefined]", "undefined", "undefined"]  # fmt: skip
    assert "[undefined, 0.5000]" in row("random-init (control)")
    eff = row("seeds", "95% interval (bootstrap over seeds)")
    assert eff[3:6] == ["undefined", "undefined", "[undefined]"]
    assert row("good", "text features")[2] == "undefined" and row("good", "text features")[4:6] == [
        "undefined", "0.12"]  # fmt: skip
    assert any(t.startswith("Seed spread undefined over undefined repeat pairs; held-out RMSE / "
                            "spread = undefined.") and "Notes: additive did not converge" in t
               for t in text)  # fmt: skip
    assert row("additive", "form")[2:4] == ["undefined", "undefined"]
    assert row("good views (JEPA)", "img→txt R@1")[1] == "undefined"
    assert row("image-good", "linear CKA")[1:5] == ["undefined [undefined]"] + ["undefined"] * 3
    assert row("image-good", "object count")[1] == "undefined"
    assert row("paired map + text-only decoder")[1] == "undefined"
    assert any("Zero-pair / paired: undefined on 24" in t and "cannot be compared with" in t
               for t in text)  # fmt: skip


def test_rotation_undefined_by_a_ridge_map_at_chance_says_so(tmp_path):
    fx = demo_fixture()
    text = _rows(modalities_html(fx["results"]["modalities"], tmp_path))
    i = text.index("efficientnet-lite0", text.index("linear CKA"))
    assert text[i + 3 : i + 5] == ["undefined (ridge map not above chance)"] * 2


def test_claims_with_undefined_scores_and_law_figures_do_not_crash():
    s = demo_fixture()["summary"]
    s["alignment_detail"]["random-init"].update(score=None, ci=None)
    s["law"].update(heldout_rmse=None, seed_spread=NAN)
    s["sample_efficiency"]["target"] = NAN
    c1, c2, c3 = (c["evidence"] for c in claims(s))
    assert "random-init undefined;" in c1 and c2.startswith("to reach undefined:")
    assert "held-out RMSE undefined vs seed spread undefined" in c3


def test_plots_with_undefined_scores_are_written(tmp_path):
    s = undefined_fixture()["summary"]
    measure = s["alignment_detail"]
    measure["bad"].update(score=None, calibrated=NAN, ci=None)
    measure["good"]["ci"] = [None, None]
    runs = [
        {"name": "good", "role": "curve", "views": "good", "rho": None,
         "evals": [[64, 0.1], [128, None], [256, NAN]]},
        {"name": "mix", "role": "fit", "views": "mixture", "rho": 0.5,
         "evals": [[64, None], [128, 0.2]]},
    ]  # fmt: skip
    eff = dict(s["sample_efficiency"], target=NAN)
    plot_curves(runs, measure, eff, tmp_path / "c.png")
    plot_bars(measure, tmp_path / "b.png")
    for p in ("c.png", "b.png"):
        assert (tmp_path / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_heatmap_of_undefined_cells_is_written_and_shown(tmp_path: Path):
    """The modalities heatmap (:func:`prh.metrics.heatmap.heatmap_png`, what the step writes to
    ``OUT/modalities.png``) with undefined cells and a wholly undefined panel, then the report's
    section around it."""
    from prh.metrics.heatmap import heatmap_png

    fx = undefined_fixture()
    mod = fx["results"]["modalities"]
    m = mod["evidence"]["matrix"]
    names = m["names"]
    scores = {k: np.array(m[k], dtype=np.float64) for k in ("mutual_knn", "cka", "rotation")}
    scores["empty"] = np.full((len(names), len(names)), np.nan)
    layers = {k: np.zeros((len(names), len(names), 2), dtype=int) for k in scores}
    assert np.isnan(scores["cka"]).any() and np.isnan(scores["rotation"]).any()
    (tmp_path / "modalities.png").write_bytes(heatmap_png(scores, layers, names, names))
    assert (tmp_path / "modalities.png").read_bytes()[:4] == b"\x89PNG"
    page = modalities_html(mod, tmp_path)
    assert '<img class=plot alt="alignment matrix" src="data:image/png;base64,' in page
    assert "undefined [undefined]" in page and "nan" not in page.lower().split()
