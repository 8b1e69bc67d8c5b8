"""Issue 31's literal captioners through other image runs: ``--full``'s literal step, with its
image-good run swapped.

    PYTHONPATH=src python benchmarks/wide_caption.py --out runs/wide-caption \\
        --text-run TEXT_RUN IMAGE_RUN [IMAGE_RUN ...]

Each image run (a ``prh train --modality image`` folder; a stored ``prh readout`` applies) is
embedded as the demo's modalities step embeds image-good (``prh.demo.modalities.embed_runs``:
the held-out and bridge states of the moving world), then given the two captioners of the
literal step, judged by its targets (``prh.demo.literal_caption.literal_captioners``: a paired
map and a zero-pair one under one text-only decoder trained on TEXT_RUN's literal captions). The
config is ``--full``'s literal twin, so the demo's own image-good run reproduces the demo's
figures. Prints one row per image run; figures in docs/training.md ("Captioners through the
16-wide image runs").
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def caption_row(out: Path, text_run: Path, image_run: Path) -> dict:
    """The literal step's captioners between ``text_run`` and ``image_run``, cached under
    ``out/<image run's name>``."""
    from prh.demo.config import demo_config
    from prh.demo.context import Context
    from prh.demo.literal_caption import literal_captioners
    from prh.demo.modalities import embed_runs

    full = demo_config("full")
    ctx = Context(full.literal_config(), out / image_run.name, print)
    # the bridge and held-out states of the main world: the demo embeds image-good there
    features = embed_runs(Context(full, out / image_run.name, print), {"image-good": image_run})
    t0 = time.time()
    cap = literal_captioners(ctx, text_run, image_run, features["image-good"])
    cap.pop("evaluations", None)
    return {"image": str(image_run), "seconds": round(time.time() - t0, 1), **cap}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("images", nargs="+", help="prh train image run folders")
    ap.add_argument("--text-run", required=True, help="a literal-caption text-good run")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = [caption_row(out, Path(a.text_run), Path(r)) for r in a.images]
    (out / "wide_caption.json").write_text(json.dumps({"args": vars(a), "rows": rows}, indent=1))
    print(f"{'image run':<30} {'paired':>6} {'oracle':>6} {'share':>5} {'zero':>6} {'ratio':>5} "
          f"{'near':>6} {'uncond':>6} {'shuf':>6} {'match':>5}  met")  # fmt: skip
    for r in rows:
        match = (r.get("match") or {}).get("accuracy", 0)
        met = "".join("y" if t["met"] else "n" for t in r["targets"])
        print(f"{r['image'][-30:]:<30} {100 * r['paired']:6.1f} {100 * r['oracle']:6.1f} "
              f"{r['paired'] / r['oracle']:5.0%} {100 * r['zero_pair']:6.1f} {r['ratio']:5.0%} "
              f"{100 * r['nearest_caption']:6.1f} {100 * r['unconditional']:6.1f} "
              f"{100 * r['shuffled']:6.1f} {match:5.3f}  {met}")  # fmt: skip


if __name__ == "__main__":
    main()
