"""Benchmark of the cave world: caption, render and view-batch throughput, and what a frozen
ImageNet model sees in the renders.

Run: ``python benchmarks/bench_world.py [--encoder efficientnet-lite0] [--probe-scenes 400]``.

Table 1 (speed): seconds and rate for 100k captions (target: under 10 s), renders at 64 and
224 px, sketches, and one batch of each text view kind (64 pairs) and of image views.
Table 2 (optional, ``--encoder``): leave-one-out kNN accuracy (k = 10, cosine) of shape, colour,
size class and row of single-object scenes from the encoder's final-layer features, beside a
random-init copy of the same network, raw pixels, and chance. It shows whether the frozen model
sees shapes and colours in the renders.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _time(fn, repeat: int = 1) -> float:
    """CPU seconds of the calling process per call: robust to other jobs on a shared machine
    (every step here runs on one thread)."""
    t = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - t) / repeat


def speed_table(seed: int) -> list[tuple[str, float, str]]:
    import torch

    from prh.views import ImageViewDataset, TextTokenizer, make_view_dataset
    from prh.world import CaveWorld, WorldConfig

    torch.set_num_threads(1)
    rows = []
    world = None

    def build() -> None:
        nonlocal world
        world = CaveWorld(WorldConfig(seed=seed))

    rows.append(("world init (20k distinct scenes)", _time(build), ""))
    wall = time.perf_counter()
    s = _time(lambda: [world.captions(i, 5, seed=1) for i in range(20_000)])
    wall = time.perf_counter() - wall
    rows.append(
        ("100k captions (20k scenes x 5)", s, f"{100_000 / s:,.0f} captions/s; wall {wall:.1f} s")
    )
    for size, n in ((64, 200), (224, 40)):
        s = _time(lambda size=size, n=n: [world.render(i, 3, size) for i in range(n)]) / n
        rows.append((f"render {size} px", s, f"{1 / s:,.0f} images/s"))
    s = _time(lambda: [world.sketch(i, 3, 64) for i in range(100)]) / 100
    rows.append(("sketch 64 px", s, f"{1 / s:,.0f} images/s"))
    texts = world.corpus(world.split("train")[:2000]).texts()
    t = time.perf_counter()
    tok = TextTokenizer.train(texts, vocab_size=2048)  # multi-threaded in Rust: wall seconds
    rows.append(
        (
            "train WordPiece on 10k captions (wall s)",
            time.perf_counter() - t,
            f"{tok.vocab_size} tokens",
        )
    )
    for kind in ("good", "bad", "next-token", "mixture"):
        ds = make_view_dataset(world, kind, tok, rho=0.5, batch_size=64, seed=seed)
        ds.batch(0)
        s = _time(lambda ds=ds: [ds.batch(i) for i in range(1, 21)]) / 20
        rows.append((f"text views {kind}, batch 64", s, f"{64 / s:,.0f} pairs/s"))
    for kind in ("good", "bad"):
        ids = ImageViewDataset(world, kind, size=64, batch_size=32, seed=seed)
        s = _time(lambda ids=ids: [ids.batch(i) for i in range(3)]) / 3
        rows.append((f"image views {kind} 64 px, batch 32", s, f"{32 / s:,.0f} pairs/s"))
    return rows


def _knn_accuracy(x: np.ndarray, labels: np.ndarray, k: int = 10) -> float:
    """Leave-one-out majority vote of the k nearest neighbours (cosine), ties to the nearest."""
    x = x / (np.linalg.norm(x, axis=1, keepdims=True) + 1e-12)
    sim = x @ x.T
    np.fill_diagonal(sim, -np.inf)
    nn = np.argsort(-sim, axis=1)[:, :k]  # (N, k)
    hits = 0
    for i in range(len(x)):
        votes = np.bincount(labels[nn[i]], minlength=labels.max() + 1)
        best = np.flatnonzero(votes == votes.max())
        pred = next(labels[j] for j in nn[i] if labels[j] in best)
        hits += pred == labels[i]
    return hits / len(x)


def probe_table(spec: str, n: int, seed: int) -> list[tuple[str, dict[str, float]]]:
    from prh.encoders import load_encoder
    from prh.world import CaveWorld, WorldConfig

    world = CaveWorld(WorldConfig(seed=seed, num_scenes=2000, max_objects=1))
    ids = range(n)
    objs = [world.scene(i).objects[0] for i in ids]
    labels = {
        "shape": np.array([o.shape for o in objs]),
        "colour": np.array([o.colour for o in objs]),
        "size": np.array([o.size for o in objs]),
        "row": np.array([o.row for o in objs]),
    }
    images = [world.render(i, nuisance_seed=i, size=224) for i in ids]
    out = [("chance (majority class)", {k: np.bincount(v).max() / n for k, v in labels.items()})]
    pixels = np.stack([np.asarray(im[::4, ::4], dtype=np.float32).ravel() for im in images])
    out.append(
        (
            "raw pixels (56 px)",
            {k: _knn_accuracy(pixels - pixels.mean(0), v) for k, v in labels.items()},
        )
    )
    for name in (spec, f"random:{spec}"):
        feats = load_encoder(name).encode_images(images)[:, -1, :]  # (N, D) final layer
        out.append((name, {k: _knn_accuracy(feats, v) for k, v in labels.items()}))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--encoder", default=None, help="frozen image encoder spec for table 2")
    ap.add_argument("--probe-scenes", type=int, default=400, help="single-object scenes probed")
    args = ap.parse_args()
    print("| step | CPU seconds | rate |\n|---|---:|---:|")
    for name, s, rate in speed_table(args.seed):
        print(f"| {name} | {s:.4f} | {rate} |")
    if args.encoder:
        print(f"\nkNN@10 accuracy on {args.probe_scenes} single-object scenes, 224 px:\n")
        print("| features | shape | colour | size | row |\n|---|---:|---:|---:|---:|")
        for name, acc in probe_table(args.encoder, args.probe_scenes, args.seed):
            print(
                f"| {name} | "
                + " | ".join(f"{acc[k]:.3f}" for k in ("shape", "colour", "size", "row"))
                + " |"
            )


if __name__ == "__main__":
    main()
