"""Captioners on literal captions (issue 31): the map through which literal text and images meet,
judged by the captions it makes.

With ``--full`` (``caption.zero_pair``) the literal twin gets the two captioners the modalities
step builds on partial captions (:func:`prh.demo.captioner.zero_pair_captioners`): the paired map
and the zero-pair one, each under a decoder trained on literal captions only, from image-good to
the twin's first text-good run, scored on the held-out states against literal references. Where
text identifies the state the theory allows one rotation, so the targets are stricter than the
partial captions' (:func:`literal_captioner_targets`): the paired captioner within 10% of the
oracle (the decoder fed the text encoder's own embedding of a reference), the zero-pair one within
10% of the paired, and both above every floor that does not see the map (the nearest caption, the
unconditional decoder, the shuffled map).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from prh.demo.context import Context
from prh.demo.figures import at_least, fig

ORACLE_SHARE = 0.9
"""The paired captioner's target, as a share of the oracle's CIDEr."""
ZERO_PAIR_SHARE = 0.9
"""The zero-pair captioner's target, as a share of the paired one's."""


def literal_captioners(
    lctx: Context, text_run: Path, image_run: Path, features: Mapping[str, Path]
) -> dict[str, Any]:
    """Build (or reuse) and score the paired and zero-pair captioners on the twin's ``text_run``
    (``lctx`` is the twin's context): :func:`prh.caption.evaluate.compare_captioners`'s figures
    with ``targets`` (:func:`literal_captioner_targets`) added."""
    from prh.demo.captioner import zero_pair_captioners
    from prh.demo.modalities import log_targets

    value = dict(zero_pair_captioners(lctx, text_run, image_run, features))
    value["targets"] = literal_captioner_targets(value)
    log_targets(lctx, value["targets"])
    return value


def literal_captioner_targets(cap: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The literal captioners' three targets (module docstring) from
    :func:`prh.caption.evaluate.compare_captioners`' dict; ``met`` None where a figure is
    missing (no decoder: no oracle and no floors)."""
    m = cap["metric"]
    p, z, near = (cap.get(k) for k in ("paired", "zero_pair", "nearest_caption"))
    oracle, floors = cap.get("oracle"), [cap.get("unconditional"), cap.get("shuffled"), near]
    known = [f for f in floors if f is not None]
    above = None if len(known) < 3 or p is None or z is None else min(p, z) > max(known)
    share = p / oracle if p is not None and oracle else None
    return [
        {
            "target": f"paired captioner >= {ORACLE_SHARE:.0%} of the oracle ({m})",
            "figure": f"{fig(p, '.1f', 100)} vs oracle {fig(oracle, '.1f', 100)}",
            "met": at_least(share, ORACLE_SHARE),
        },
        {
            "target": f"zero-pair captioner >= {ZERO_PAIR_SHARE:.0%} of the paired one ({m})",
            "figure": f"{fig(z, '.1f', 100)} vs {fig(p, '.1f', 100)} "
            f"({fig(cap.get('ratio'), '.0f', 100)}%)",
            "met": at_least(cap.get("ratio"), ZERO_PAIR_SHARE),
        },
        {
            "target": "both above the nearest caption, the unconditional decoder and the "
            f"shuffled map ({m})",
            "figure": f"paired {fig(p, '.1f', 100)}, zero-pair {fig(z, '.1f', 100)} vs nearest "
            f"{fig(near, '.1f', 100)}, unconditional {fig(cap.get('unconditional'), '.1f', 100)}, "
            f"shuffled {fig(cap.get('shuffled'), '.1f', 100)}",
            "met": above,
        },
    ]
