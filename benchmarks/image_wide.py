"""Image JEPAs wider than the gap, read through their own top 8 cross-view components (issue 31).

    PYTHONPATH=src python benchmarks/image_wide.py --out runs/image-wide --embed-dim 16
        [--samples 51200] [--seeds 0,1,2] [--render-cache runs/rl/cache0] [--threads 2]

Trains (or reuses, by folder) one good-view image JEPA per seed with the demo's image recipe
(:data:`prh.demo.config.DEMO_IMAGE_ENCODER`: frozen EfficientNet-Lite0 maps through block 15 at
128 px pooled by moments, the scratch CNN beside them; batch 128, lr 3e-3, cosine decay to 0.1,
warm-up 5%, 64 px renders, 2 cached views per state, the 1,944 training states) but with an
output ``--embed-dim`` wide instead of the moving cave's gap ``k = 8``. A whitened JEPA's optimum
at width ``w`` is the top-``w`` eigenspace of its pair kernel, which holds the top 8; so an
embedding with room for the near-cut interaction modes (``g7``, ``g8``) and the simple modes just
below the cut (``g10``, the column) need not swap one for the other.

Each run is read through its own spectral read-out: the top 8 components of the cross-view
eigenproblem of 8,192 fresh positive pairs of its training law
(:func:`prh.training.moving.run_positive_pairs`, draw 123; no theory, no held-out state); then as
``benchmarks/image_reach.py`` reads every image encoder (the demo's states, width-fair held-out cc
against ``g*`` with its 95% interval, the held-out R^2 of ``g1``-``g12``). At width 8 the read-out
is an invertible linear map of the embedding, which leaves the canonical correlations unchanged.
``--modality sketch`` trains the same encoder on sketches and reads it against the sketch
modality's own theory embedding (:func:`prh.world.observation.theory_of_observations`; a
sketch shows no colour). Prints one table; figures in docs/training.md ("Wider than the gap").
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

from image_reach import BELOW, K, _embed, _states
from mode_rows import mode_cells, mode_header, read_modes


def recipe(samples: int, seed: int, width: int, cache: str | None, modality: str = "image"):
    """The demo's image recipe at ``samples`` pairs and output width ``width`` (``modality``
    ``sketch``: the same encoder on sketches)."""
    from prh.demo.config import DEMO_IMAGE_ENCODER
    from prh.training.image_layers import image_layered_configs

    flat = {"world": "moving", "views": "good", "samples": samples, "batch_size": 128,
            "lr": 3e-3, "seed": seed, "train_scenes": 1944, "checkpoint_every": 0,
            **DEMO_IMAGE_ENCODER.to_dict(), "cache_dir": cache, "modality": modality}  # fmt: skip
    train, image = image_layered_configs([flat])
    return dataclasses.replace(train, model_overrides={"embed_dim": width}), image


def read(run_dir: Path, out: Path, world, fit, test, modality: str = "image") -> dict:
    """The run's width-fair reading against its modality's own theory embedding (``g*`` for
    renders) through its spectral read-out."""
    from prh.training.moving import run_positive_pairs
    from prh.training.readout import DRAW, PAIRS, readout_of_pairs
    from prh.world.observation import theory_of_observations

    if modality == "image":
        g_fit, g_test = (world.theory_embedding(ids, K + BELOW) for ids in (fit, test))
    else:
        g_fit, g_test = (
            theory_of_observations(world, modality, ids, K + BELOW) for ids in (fit, test)
        )
    x_fit, x_test = (
        _embed(str(run_dir), split, ids, out / f"{run_dir.name}-{split}.safetensors", 64, modality)
        for split, ids in (("train", fit), ("test", test))
    )
    a, b = run_positive_pairs(run_dir, PAIRS, seed=DRAW).embedding()
    x_fit, x_test = x_fit[:, : a.shape[1]], x_test[:, : a.shape[1]]  # the padded rows' JEPA part
    r = readout_of_pairs(a, b, K)  # what prh readout stores
    return read_modes(r.apply(x_fit), r.apply(x_test), g_fit, g_test, K)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--embed-dim", type=int, default=16, help="JEPA output width (default 16)")
    ap.add_argument("--samples", type=int, default=51200)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--render-cache", default=None, help="a shared render cache folder")
    ap.add_argument("--threads", type=int, default=2)
    own = "sketch: read against the sketch modality's own theory embedding"
    ap.add_argument("--modality", choices=("image", "sketch"), default="image", help=own)
    a = ap.parse_args()
    from prh.training.image import train_image

    out, rows = Path(a.out), []
    out.mkdir(parents=True, exist_ok=True)
    world, fit, test = _states()
    for seed in (int(s) for s in a.seeds.split(",")):
        run_dir = out / f"s{seed}"
        t0 = time.time()
        if not (run_dir / "model.safetensors").exists():
            train, image = recipe(a.samples, seed, a.embed_dim, a.render_cache, a.modality)
            train_image(train, image, run_dir, progress=False, threads=a.threads)
        t1 = time.time()
        row = read(run_dir, out, world, fit, test, a.modality)
        rows.append({"seed": seed, "train_s": round(t1 - t0, 1),
                     "read_s": round(time.time() - t1, 1), **row})  # fmt: skip
        print(
            f"seed {seed}: cc {row['cc']:.3f} ({rows[-1]['train_s']} s train, "
            f"{rows[-1]['read_s']} s read)",
            flush=True,
        )
    (out / "image_wide.json").write_text(json.dumps({"args": vars(a), "rows": rows}, indent=1))
    print(f"{'seed':>4} {'cc':>6} {'95% interval':>15} {'min':>6}  " + mode_header(K, BELOW))
    for r in rows:
        ci = f"[{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]"
        print(f"{r['seed']:>4} {r['cc']:6.3f} {ci:>15} {min(r['correlations']):6.3f}  "
              + mode_cells(r))  # fmt: skip


if __name__ == "__main__":
    main()
