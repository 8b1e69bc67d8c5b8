"""Issue 21's targets, each met or missed by a rule fixed before the run (``docs/demo.md``).

Read from the theory section of the main world (:func:`prh.demo.theory.theory_section`), its
modalities matrix (:func:`prh.demo.modalities.evidence`) and the control's
(:mod:`prh.demo.control`). A target whose figure is undefined reads "undefined", neither met
nor missed; a target whose encoders the preset does not train is left out.

1. the world: the top ``k >= 8`` eigenvalues at least 0.02 apart and a gap of at least 0.05;
2. every good-view encoder's theory cc >= 0.8, its bad-view twin's interval below its own;
3. every good-view pair across modalities: cc >= 0.8 and linear CKA >= 0.7, its cc interval
   above every bad-view pair's; the rotation score (lower way) >= 0.9 with the orthonormal map's
   held-out R^2 (lower way) >= 0.5;
4. every good-view pair's cc on the main world above the control's, intervals apart;
5. (issue 22) every good-view pair's spectral pair-free map (:mod:`prh.demo.spectral`): held-out
   R^2 >= 90 % of the paired orthonormal map's, R@1 >= 80 % of the paired map's and >= 10x
   chance; on the control (no gap) the method refuses to pin the rotation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prh.demo.figures import above, at_least, fig, interval
from prh.demo.modalities import GOOD_PAIRS

TWINS = {"text-good": "text-bad", "image-good": "image-bad"}
"""A good-view encoder -> its bad-view twin (same modality, recipe and budget)."""
BAD = ("text-bad", "image-bad")
TRAINED = ("text-good", "text-bad", "image-good", "image-bad", "sketch-good")
MODALITY = {n: n.split("-")[0] for n in TRAINED}


def _row(target: str, figure: str, met: bool | None) -> dict[str, Any]:
    return {"target": target, "figure": figure, "met": met}


def _both(*checks: bool | None) -> bool | None:
    """All met (``None`` when any is undefined)."""
    return None if any(c is None for c in checks) else all(checks)


def world_targets(sp: Mapping[str, Any]) -> list[dict[str, Any]]:
    if sp.get("eigenvalues") is None:
        return [_row("the world's top k eigenvalues distinct with a gap", "no spectrum", False)]
    figure = (f"k = {sp['k']}, smallest separation {sp['min_separation']:.4f}, gap "
              f"{sp['gap']:.4f}")  # fmt: skip
    met = _both(sp["k"] >= 8, at_least(sp["min_separation"], 0.02), at_least(sp["gap"], 0.05))
    return [_row("world: k >= 8, top-k eigenvalues >= 0.02 apart, gap >= 0.05", figure, met)]


def encoder_targets(tc: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for good in ("text-good", "image-good", "sketch-good"):
        if good not in tc:
            continue
        g = tc[good]
        rows.append(_row(f"{good} theory cc >= 0.8", f"{fig(g['mean'])} {interval(*g['ci'])}",
                         at_least(g["mean"], 0.8)))  # fmt: skip
        bad = TWINS.get(good)
        if bad in tc:
            b = tc[bad]
            figure = (
                f"{fig(g['mean'])} {interval(*g['ci'])} vs {fig(b['mean'])} {interval(*b['ci'])}"
            )
            rows.append(_row(f"{good} theory cc above {bad}'s, intervals apart", figure,
                             above(g["ci"][0], b["ci"][1])))  # fmt: skip
    return rows


def _cell(pairs: Mapping[str, Any], a: str, b: str, key: str = "cc") -> Any:
    names = pairs["names"]
    if a not in names or b not in names:
        return None
    return pairs[key][names.index(a)][names.index(b)]


def _cc(pairs: Mapping[str, Any], a: str, b: str) -> tuple[Any, Any, Any] | None:
    if _cell(pairs, a, b) is None:
        return None
    return tuple(_cell(pairs, a, b, k) for k in ("cc", "cc_ci_low", "cc_ci_high"))


def _r2(m: Mapping[str, Any], a: str, b: str) -> float | None:
    got = [
        p["orthonormal"]["r2"]
        for p in m.get("pairs", [])
        if {p["x"], p["y"]} == {a, b} and p.get("orthonormal")
    ]
    return None if len(got) < 2 or any(v is None for v in got) else min(got)


def bad_pairs(names: list[str]) -> list[tuple[str, str]]:
    """Cross-modal pairs of trained encoders with a bad-view side."""
    trained = [n for n in names if n in TRAINED]
    return [
        (a, b)
        for i, a in enumerate(trained)
        for b in trained[i + 1 :]
        if MODALITY[a] != MODALITY[b] and (a in BAD or b in BAD)
    ]


def pair_targets(pairs: Mapping[str, Any], m: Mapping[str, Any]) -> list[dict[str, Any]]:
    from prh.demo.modalities import lower_rotation

    rows = []
    worst_bad = [(p, _cc(pairs, *p)) for p in bad_pairs(pairs["names"])]
    worst_bad = [(p, c) for p, c in worst_bad if c is not None and c[2] is not None]
    for a, b in GOOD_PAIRS:
        c = _cc(pairs, a, b)
        if c is None:
            continue
        i, j = m["names"].index(a), m["names"].index(b)
        cka = m["cka"][i][j]
        rows.append(_row(f"{a}~{b} cc >= 0.8", f"{fig(c[0])} {interval(c[1], c[2])}",
                         at_least(c[0], 0.8)))  # fmt: skip
        rows.append(_row(f"{a}~{b} linear CKA >= 0.7", fig(cka), at_least(cka, 0.7)))
        if worst_bad:
            (x, y), w = max(worst_bad, key=lambda t: t[1][2])
            figure = f"{fig(c[1])} vs {x}~{y} {fig(w[2])} (interval ends)"
            rows.append(_row(f"{a}~{b} cc above every bad-view pair's, intervals apart",
                             figure, above(c[1], w[2])))  # fmt: skip
        r, r2 = lower_rotation(m, a, b), _r2(m, a, b)
        rows.append(_row(f"{a}~{b} rotation score >= 0.9 with orthonormal R^2 >= 0.5",
                         f"{fig(r)}, R^2 {fig(r2)}",
                         _both(at_least(r, 0.9), at_least(r2, 0.5))))  # fmt: skip
    return rows


def control_targets(pairs: Mapping[str, Any], control: Mapping[str, Any]) -> list[dict]:
    if "theory" not in control:
        return []
    cp = control["theory"]["pairs"]
    rows = []
    for a, b in GOOD_PAIRS:
        c, s = _cc(pairs, a, b), _cc(cp, a, b)
        if c is None or s is None:
            continue
        figure = f"{fig(c[0])} {interval(c[1], c[2])} vs {fig(s[0])} {interval(s[1], s[2])}"
        rows.append(_row(f"{a}~{b} cc on the moving world above the still world's, "
                         f"intervals apart", figure, above(c[1], s[2])))  # fmt: skip
    return rows


def spectral_targets(main: Mapping[str, Any], control: Mapping[str, Any]) -> list[dict]:
    rows = []
    for pair, m in (main.get("maps") or {}).items():
        if m.get("error"):
            rows.append(_row(f"spectral {pair}: the map is found", m["reason"], False))
            continue
        s, p, chance = m["spectral"], m["paired"], m["chance_r1"]
        rows.append(_row(f"spectral {pair} R^2 >= 90% of the paired map's",
                         f"{fig(s['r2'])} vs {fig(p['r2'])}",
                         at_least(s["r2"], 0.9 * p["r2"]) if p["r2"] > 0 else None))  # fmt: skip
        rows.append(_row(f"spectral {pair} R@1 >= 80% of the paired map's and >= 10x chance",
                         f"{fig(s['r1'])} vs {fig(p['r1'])} (chance {fig(chance)})",
                         _both(at_least(s["r1"], 0.8 * p["r1"]),
                               at_least(s["r1"], 10 * chance))))  # fmt: skip
    for pair, m in (control.get("maps") or {}).items():
        figure = "pinned" if m["pinned"] else f"not pinned: {m['reason']}"
        rows.append(_row(f"control {pair}: the spectral method refuses to pin a rotation",
                         figure, not m["pinned"]))  # fmt: skip
    return rows


def targets(
    theory: Mapping[str, Any], matrix: Mapping[str, Any] | None, control: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Every target of the module docstring that the run's encoders allow."""
    rows = world_targets(theory["spectrum"])
    if "skipped" not in theory["theory_cc"]:
        rows += encoder_targets(theory["theory_cc"])
    if matrix is not None:
        rows += pair_targets(theory["pairs"], matrix)
    rows += control_targets(theory["pairs"], control)
    cspec = (control.get("theory") or {}).get("spectral") or {}
    return rows + spectral_targets(theory.get("spectral") or {}, cspec)
