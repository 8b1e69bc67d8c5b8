"""The demo report keeps its content: every section, table, figure and sentence.

``fixtures/report_demo.json`` is what :func:`prh.demo.report.render_html` received from a real toy
demo (``test_demo_pipeline.py``'s settings, with ``prove``; see ``fixtures/README.md``), less what
the report never reads (the runs' curves, the rotation scores' details, the scene renders' PNG
bytes). The stored texts ``fixtures/report_text_*.txt`` are the visible text of the report the
f-string renderer wrote from it (one text node a line, whitespace collapsed, each figure as
``[figure: alt]``); the report from the template must give the same lines.
"""

from __future__ import annotations

import copy
import json
import os
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from prh.demo.report import render_html

FIXTURES = Path(__file__).parent / "fixtures"
FIGURES = ("alignment_curves.png", "alignment_bars.png", "law_fit.png", "modalities.png")
# a 1 x 1 PNG: the report only inlines the bytes
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


class _Text(HTMLParser):
    """Text nodes of a page (whitespace collapsed, empty ones dropped), figures by their alt,
    ``<style>`` left out."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self._style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._style = tag == "style"
        if tag == "img":
            self.lines.append(f"[figure: {dict(attrs).get('alt')}]")

    def handle_endtag(self, tag: str) -> None:
        self._style = False

    def handle_data(self, data: str) -> None:
        text = " ".join(data.split())
        if text and not self._style:
            self.lines.append(text)


def visible_text(page: str) -> list[str]:
    """The lines a reader sees on ``page`` (see :class:`_Text`)."""
    p = _Text()
    p.feed(page)
    p.close()
    return p.lines


def demo_fixture() -> dict[str, Any]:
    """``{"summary", "results"}`` of the stored toy demo."""
    return json.loads((FIXTURES / "report_demo.json").read_text())


def variant(fx: dict[str, Any]) -> dict[str, Any]:
    """The other branches of the report: a failed theorem check, one seed and no ratio (a lower
    bound), no word-order test, no chosen law, a decoder captioner, no modalities, the quick
    preset."""
    fx = copy.deepcopy(fx)
    s, r = fx["summary"], fx["results"]
    r["prove"]["checks"][1]["passed"] = False
    eff = s["sample_efficiency"]
    eff.update(ratio=None, ratio_lower_bound=32.768, ci=None, n_seeds=1, notes=[])
    s["word_order"] = {}
    s["law"]["form"] = None
    for x in r["bridge"]["samples"]:
        x["captioner"] = "decoder"
    r["modalities"] = {"skipped": "no image or sketch encoder in this preset"}
    s["config"]["name"] = "quick"
    return fx


def no_samples(fx: dict[str, Any]) -> dict[str, Any]:
    """No scene samples, theorem checks skipped, modalities without a captioner or a text-good
    column."""
    fx = copy.deepcopy(fx)
    r = fx["results"]
    r["bridge"]["samples"] = []
    r["prove"] = {"passed": None, "skipped": True}
    r["modalities"]["captioners"] = None
    m = r["modalities"]["evidence"]["matrix"]
    m["names"] = [n if n != "text-good" else "text-good-renamed" for n in m["names"]]
    return fx


CASES = {"demo": lambda fx: fx, "variant": variant, "no_samples": no_samples}


def render_case(name: str, out: Path, missing: tuple[str, ...] = ()) -> str:
    """The report of case ``name``, its figures in ``out`` (less ``missing``)."""
    for f in FIGURES:
        if f not in missing:
            (out / f).write_bytes(PNG)
    fx = CASES[name](demo_fixture())
    return render_html(fx["summary"], fx["results"], out)


@pytest.mark.parametrize("name", sorted(CASES))
def test_report_text_is_the_stored_text(name, tmp_path):
    missing = ("law_fit.png",) if name == "variant" else ()
    got = visible_text(render_case(name, tmp_path, missing))
    path = FIXTURES / f"report_text_{name}.txt"
    if os.environ.get("PRH_WRITE_REPORT_TEXT"):  # regenerate on purpose, then review the diff
        path.write_text("\n".join(got) + "\n")
    assert got == path.read_text().splitlines()


def test_claims_of_the_stored_summary_are_its_claims():
    """``claims`` (split into its three verdicts and evidence lines) gives what the demo wrote."""
    from prh.demo.report import claims

    s = demo_fixture()["summary"]
    assert _rounded(json.loads(json.dumps(claims(s)))) == _rounded(s["claims"])


def _rounded(x):
    """``x`` with every float at 10 significant digits: a slope's last bits follow the BLAS
    build (seen: ...5758 vs ...5548 in the 17th digit), the claims' logic does not."""
    if isinstance(x, float):
        return float(f"{x:.10g}")
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_rounded(v) for v in x]
    return x


def test_values_are_escaped_and_the_markup_is_the_templates(tmp_path):
    fx = demo_fixture()
    s, r = fx["summary"], fx["results"]
    s["claims"][0]["evidence"] = "good <script>alert(1)</script> & bad"
    r["bridge"]["samples"][0]["reference"] = "a <b>bold</b> cube"
    r["prove"]["checks"][0]["passed"] = False
    page = render_html(s, r, tmp_path)
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; bad" in page
    assert "a &lt;b&gt;bold&lt;/b&gt; cube" in page
    assert "<b>FAIL</b>" in page and "<i>chance</i>" in page
    assert page.count("no figure") == 3  # curves, bars, law; the heatmap is left out
