"""Typed row fields: a bad results.jsonl row names where it is, the field, expected and got."""

from __future__ import annotations

import pytest

from prh.errors import InputError
from prh.scaling.efficiency import curves_from_rows
from prh.scaling.fit import law_data_from_rows
from prh.scaling.rows import row_places


def _law_rows():
    rows = [{"split": "fit", "views": "mixture", "rho": r, "samples": s, "score": 0.1 * r + s / 1e4,
             "point": None} for r in (0.0, 0.5, 1.0) for s in (100, 1000)]  # fmt: skip
    rows += [
        {"split": "heldout", "views": "mixture", "rho": 0.3, "samples": 300, "score": 0.1,
         "point": 0},
        {"split": "repeat", "views": "mixture", "rho": 0.3, "samples": 300, "score": 0.12,
         "point": 0},
        {"split": "curve", "views": "good", "rho": None, "samples": 100, "score": None,
         "point": None},
    ]  # fmt: skip
    return rows


def test_good_rows_read_as_before():
    fit, held, (ya, yb) = law_data_from_rows(_law_rows())
    assert len(fit) == 6 and len(held) == 1
    assert ya.tolist() == [0.1] and yb.tolist() == [0.12]


@pytest.mark.parametrize(
    "field, value, match",
    [
        ("score", "high", r"row 2: field 'score' expected a finite number or null, got 'high'"),
        ("score", float("inf"), r"row 2: field 'score' expected a finite number or null, got inf"),
        ("rho", True, r"row 2: field 'rho' expected a finite number, got True"),
        ("samples", -1, r"row 2: field 'samples' expected a finite number > 0, got -1"),
        ("views", 3, r"row 2: field 'views' expected a string, got 3"),
        ("split", ..., r"row 2: missing field 'split' \(expected a string\)"),
    ],
)
def test_law_rows_name_the_row_and_field(field, value, match):
    rows = _law_rows()
    if value is ...:
        del rows[1][field]
    else:
        rows[1][field] = value
    with pytest.raises(InputError, match=match):
        law_data_from_rows(rows)


def test_a_null_score_is_skipped_not_refused():
    rows = _law_rows()
    rows[0]["score"] = None
    fit, _, _ = law_data_from_rows(rows)
    assert len(fit) == 5


def test_curve_rows_need_an_integer_seed():
    rows = [{"views": "good", "seed": 0.5, "samples": 10, "score": 0.2}]
    with pytest.raises(InputError, match=r"row 1: field 'seed' expected an integer, got 0.5"):
        curves_from_rows(rows, "good")
    with pytest.raises(InputError, match=r"r\.jsonl line 4: field 'seed'"):
        curves_from_rows(rows, "good", places=["r.jsonl line 4"])


def test_row_places_count_file_lines(tmp_path):
    from prh.scaling.sweep import read_results

    path = tmp_path / "r.jsonl"
    path.write_text('\n{"a": 1}\n\n{"a": 2}\n{"a": 3')  # blank lines, a partial last line
    rows = read_results(path)
    assert [r["a"] for r in rows] == [1, 2]
    assert row_places(path, len(rows)) == [f"{path} line 2", f"{path} line 4"]
