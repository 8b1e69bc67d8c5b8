"""Word collapse at one small budget: still-world documents, narrations, and a good-view JEPA.

    PYTHONPATH=src python benchmarks/bench_word_collapse.py --samples 4096 --out runs/wc

Trains three tiny text models with the same seed and budget (rows: documents or pairs) and
prints the centred cosine among the world's 8 shape words and among its 10 colour words in each
one's token embeddings (:mod:`prh.metrics.word_collapse`; the issue's figures used the probe's
6 colours, shown in brackets), the same centred on the tokens the run's text uses (most rows of
a small world's vocabulary are pieces its text never uses), and what a row reads (captions and
mean tokens):

- ``next-token, still world``: documents of 4 captions of one cave scene (``doc_captions=4``,
  the demo's next-token documents, ``max_len`` 192);
- ``next-token, narrations``: the moving world's narrations (8 frames, 25 steps apart, one
  narrator style; ``max_len`` 264: :func:`prh.views.narration.max_narration_tokens`);
- ``good-view JEPA, moving``: two captions of one trajectory 175 steps apart.

Issue 23's target: next-token's centred cosine <= 0.5 for shape words and for colour words.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from prh.metrics.word_collapse import PROBE_COLOURS, word_collapse_of
from prh.training import load_run, train, train_config
from prh.training.data import default_data_factory
from prh.views.documents import mean_tokens_per_row
from prh.world.scenes import COLOURS, SHAPES

RUNS = {
    "next-token, still world": dict(world="cave", views="next-token", doc_captions=4, max_len=192),
    "next-token, narrations": dict(
        world="moving", views="next-token", narration_len=8, max_len=264
    ),
    "good-view JEPA, moving": dict(world="moving", views="good"),
}


def measure(name: str, over: dict, samples: int, seed: int, out: Path) -> dict:
    cfg = train_config("tiny", samples=samples, seed=seed, checkpoint_every=0, log_every=0, **over)
    folder = out / name.replace(",", "").replace(" ", "-")
    t = time.time()
    if not (folder / "model.safetensors").exists():
        train(cfg, folder, progress=False, threads=1)
    seconds = time.time() - t
    run = load_run(folder, device="cpu")
    r = word_collapse_of(run, SHAPES, COLOURS)
    probe = word_collapse_of(run, SHAPES, PROBE_COLOURS)
    _, ds = default_data_factory(cfg, folder, 0, 1, False, lambda: None)
    batches = [ds.batch(i) for i in range(4)]
    tokens = mean_tokens_per_row(batches)
    used = np.unique(np.concatenate([b[k][b[k + "_mask"]].numpy() for b in batches
                                     for k in ("tokens", "a", "b") if k in b]))  # fmt: skip
    own = word_collapse_of(run, SHAPES, COLOURS, centre_ids=used)
    captions = over.get("narration_len") or over.get("doc_captions") or 2
    return {"name": name, "shape": r.shape, "colour": r.colour, "probe_colour": probe.colour,
            "used_shape": own.shape, "used_colour": own.colour, "used": used.size,
            "vocab": run.tokenizer.vocab_size, "captions": captions, "tokens": tokens,
            "seconds": seconds}  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samples", type=int, default=4096, help="rows per run (default 4096)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("runs/word-collapse"), help="run folders")
    a = p.parse_args()
    torch.set_num_threads(1)
    rows = [measure(name, over, a.samples, a.seed, a.out) for name, over in RUNS.items()]
    print(f"tiny preset, {a.samples} rows (batch 128), seed {a.seed}; centred cosine")
    print(f"{'run':<26} {'shape words':>11} {'colour words':>17} {'centred on used':>16} "
          f"{'captions/row':>12} {'tokens/row':>10} {'train s':>8}")  # fmt: skip
    for r in rows:
        colour = f"{r['colour']:.2f} [{r['probe_colour']:.2f}]"
        used = f"{r['used_shape']:.2f} / {r['used_colour']:.2f}"
        print(f"{r['name']:<26} {r['shape']:>11.2f} {colour:>17} {used:>16} "
              f"{r['captions']:>12} {r['tokens']:>10.1f} {r['seconds']:>8.0f}")  # fmt: skip
    print(
        "centred on used: shape / colour words centred on the mean of the tokens the run's "
        "batches use (" + ", ".join(f"{r['used']} of {r['vocab']}" for r in rows) + ")"
    )


if __name__ == "__main__":
    main()
