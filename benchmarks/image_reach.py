"""Image encoders against the moving world's image theory, mode by mode (issue 31 item 4).

    PYTHONPATH=src python benchmarks/image_reach.py --out runs/image-reach MODEL [MODEL ...]

``MODEL`` is anything ``prh embed`` takes: a ``prh train --modality image`` run folder, or a
frozen encoder spec (``efficientnet-lite0``, ``random:efficientnet-lite0``). On the demo's states
of the moving cave (500 states of the training split to fit, the 216 held-out states to score;
renders under nuisance seed 0), each encoder's last layer is read through its top 8 principal
directions (fitted on the fit states: the width-fair read-out) and compared with the image
modality's own theory embedding, which for renders is ``g*`` itself (an image shows the whole
state):

- ``cc``: the mean of the 8 held-out canonical correlations with ``g*`` (95% bootstrap interval);
- ``R2 g1..g8``: the held-out R^2 of each eigenfunction ``g_j`` from those 8 directions (least
  squares fitted on the fit states): which of the theory's modes the encoder carries;
- ``R2 g9..g12``: the same for the first four modes below the cut, which no optimal 8-wide
  encoder carries: where a direction missing from ``g1..g8`` went instead.

Rendering and embedding the two splits (2,160 states) take a few minutes per encoder; the
feature files are kept in ``--out`` and reused. Prints one table; figures in docs/training.md
("Against the image theory").
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from mode_rows import mode_cells, mode_header, read_modes

K = 8  # the moving cave's gap_k
BELOW = 4  # modes below the cut also read (g9 .. g12)


def _states():
    from prh.world import make_world
    from prh.world.registry import split_sample

    world = make_world("moving", seed=0)
    return world, split_sample(world, "train", 500, from_end=True), split_sample(world, "test", 216)


def _embed(
    model: str, split: str, ids: list[int], out: Path, image_size: int, modality: str = "image"
) -> np.ndarray:
    """The last layer of ``model`` on the renders (or sketches) of ``ids`` of ``split`` (the
    whole split is embedded once into ``out`` and reused)."""
    from prh.encoders.embed_files import embed_to_files
    from prh.encoders.embed_request import EmbedRequest
    from prh.features import last_layer, load_features

    if not out.exists():
        req = EmbedRequest(modality=modality, model=model, world="moving", split=split,
                           out=str(out), image_size=image_size, no_progress=True)  # fmt: skip
        embed_to_files(req)
    f = load_features(out)
    row = {int(s.split("_")[1]): r for r, s in enumerate(f.ids)}
    return last_layer(f.features, f.layer_dims)[[row[i] for i in ids]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", help="prh train image runs or frozen encoder specs")
    ap.add_argument("--out", required=True, help="folder for the feature files and the JSON")
    ap.add_argument("--image-size", type=int, default=64, help="render size (default 64)")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    world, fit, test = _states()
    g_fit, g_test = world.theory_embedding(fit, K + BELOW), world.theory_embedding(test, K + BELOW)
    rows = []
    for i, model in enumerate(a.models):
        label = Path(model).name if Path(model).is_dir() else model.replace(":", "-")
        x_fit = _embed(model, "train", fit, out / f"{i}-{label}-train.safetensors", a.image_size)
        x_test = _embed(model, "test", test, out / f"{i}-{label}-test.safetensors", a.image_size)
        rows.append({"model": model, **read_modes(x_fit, x_test, g_fit, g_test, K)})
    (out / "image_reach.json").write_text(json.dumps(rows, indent=1))
    print(f"{'encoder':<34} {'cc vs g*':>8} {'95% interval':>15}  " + mode_header(K, BELOW))
    for r in rows:
        ci = f"[{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]"
        print(f"{r['model'][-34:]:<34} {r['cc']:8.3f} {ci:>15}  " + mode_cells(r))


if __name__ == "__main__":
    main()
