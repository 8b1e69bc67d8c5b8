"""The demo's text training step on its two worlds: one padded forward vs length groups.

The default demo's control (:mod:`prh.demo.control`) trains text good and bad on the still
``cave`` world at the main budget; its runs logged ~195 samples/s against ~440 for the main
sweep's same-budget runs on ``moving`` (issue 31). The difference is the worlds' captions: the
cave's scenes hold one or two objects and their captions run to 48 tokens (mean ~23, so every
batch pads to 48), the moving cave's one object gives ~10 tokens. A JEPA batch encoded as one
padded forward spends most of its work on padding; :func:`prh.training.loop.pooled_by_length`
encodes it in groups of similar length (same embeddings up to rounding).

For each world this times :func:`prh.training.loop.train_step` (forward, backward, AdamW) on the
demo's own batches (its text recipe: preset tiny, batch 128, max_len 48, lr 1e-3; the world's
model defaults, or ``--embed-dim``) with one padded forward (``before``) and with length groups
(``after``), the two interleaved step by step so that load drift hits both alike; the median
of ``--steps`` steps after one warm-up each. Single thread by default (the demo trains its text
runs one thread per process, two processes at once).

With ``--vision``: the control's (and the main demo's) ``vision`` step instead, the frozen
EfficientNet-Lite0 on batches of 16 cave renders at 224 px: the package's NCHW network
(``before``) against the encoder's channels-last one (``after``), interleaved, median of
``--steps`` batches (images/s, forward only; rendering is the same in both and left out).

With ``--encode``: the control's spectral pair-free draw of text pairs
(:func:`prh.training.moving.run_positive_pairs` encodes 2 x 8,192 captions per text run), as
:func:`prh.training.api.encode_texts` of ``--steps`` x 256 cave captions with the tiny encoder:
batches of 256 in the given order (``before``) against batches by length (``after``),
interleaved, median of 3 (captions/s).

Usage::

    python benchmarks/bench_control.py --steps 12
    python benchmarks/bench_control.py --steps 12 --embed-dim 8
    python benchmarks/bench_control.py --vision --steps 6
    python benchmarks/bench_control.py --encode --steps 16
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch

from prh.training import train_config
from prh.training.api import build_model
from prh.training.data import default_data_factory
from prh.training.distributed import DistInfo
from prh.training.loop import LossContext, make_optimizer, train_step

BEFORE_ROWS = 1 << 30  # one group: the single padded forward of before issue 31


def world_batches(world: str, steps: int, embed_dim: int) -> tuple:
    """``(cfg, vocab_size, batches)``: the demo text recipe's good-view batches on ``world``."""
    overrides = {"embed_dim": embed_dim} if embed_dim else {}
    cfg = train_config(
        "tiny", world=world, views="good", batch_size=128, lr=1e-3, max_len=48,
        samples=128 * (steps + 1), min_lr_frac=1.0, model_overrides=overrides,
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as d:
        tok, ds = default_data_factory(cfg, Path(d), 0, 1, True, lambda: None)
    return cfg, tok.vocab_size, [ds.batch(i) for i in range(steps + 1)]


def time_world(world: str, steps: int, embed_dim: int) -> dict:
    """Median step seconds before and after on ``world``, with the batches' token counts."""
    cfg, vocab, batches = world_batches(world, steps, embed_dim)
    runs = {}
    for name, rows in (("before", BEFORE_ROWS), ("after", 64)):
        model, mcfg = build_model(cfg, vocab)
        ctx = LossContext(cfg, DistInfo(), torch.device("cpu"), group_rows=rows)
        runs[name] = (model, make_optimizer(model, cfg.optim), ctx, [])
    for i, b in enumerate(batches):
        for model, opt, ctx, times in runs.values():  # interleaved: one load for both
            t = time.perf_counter()
            train_step(model, opt, b, i, ctx)
            if i:  # the first step is warm-up
                times.append(time.perf_counter() - t)
    masks = [m for b in batches for m in (b["a_mask"], b["b_mask"])]
    tokens = sum(int(m.sum()) for m in masks) / sum(m.shape[0] for m in masks)
    widths = [max(int(m.any(0).nonzero().max()) + 1 for m in ms) for ms in zip(*[iter(masks)] * 2)]
    padded = statistics.mean(widths)  # what one padded forward of a batch is trimmed to
    out = {"world": world, "embed_dim": mcfg.embed_dim, "tokens": tokens, "padded": padded}
    for name, (*_, times) in runs.items():
        out[name] = cfg.batch_size / statistics.median(times)
    return out


def time_vision(steps: int, batch: int = 16) -> dict:
    """Images/s of the frozen vision encoder's forward, NCHW (before) vs channels-last."""
    from prh.encoders import load_encoder
    from prh.encoders.base import images_to_tensor_input
    from prh.models.efficientnet import build_efficientnet_lite0
    from prh.world import make_world

    world = make_world("cave", seed=0)
    ids = [int(i) for i in world.split("test")[: batch * steps]]
    renders = [world.render(i) for i in ids]
    xs = [torch.from_numpy(images_to_tensor_input(renders[j : j + batch], 224))
          for j in range(0, len(ids), batch)]  # fmt: skip
    enc = load_encoder("efficientnet-lite0")
    plain = build_efficientnet_lite0(pretrained=True).eval()
    times: dict[str, list[float]] = {"before": [], "after": []}
    with torch.inference_mode():
        for x in [xs[0], *xs]:  # the first batch twice: warm-up
            for name in times:
                t = time.perf_counter()
                if name == "before":
                    enc.net, keep = plain, enc.net
                    enc.forward_layers(x)
                    enc.net = keep
                else:
                    enc.forward_layers(x.contiguous(memory_format=torch.channels_last))
                times[name].append(time.perf_counter() - t)
    return {k: batch / statistics.median(v[1:]) for k, v in times.items()}


def time_encode(steps: int, batch: int = 256) -> dict:
    """Captions/s of encode_texts on cave captions: given-order batches vs length batches."""
    from prh.training.api import encode_texts
    from prh.training.loop import trim
    from prh.world import make_world

    cfg, vocab, _ = world_batches("cave", 0, 0)
    with tempfile.TemporaryDirectory() as d:
        tok, _ = default_data_factory(cfg, Path(d), 0, 1, True, lambda: None)
    world = make_world("cave", seed=0)
    texts = [world.captions(int(i), 1, seed=7)[0] for i in world.split("train")[: steps * batch]]
    model, _ = build_model(cfg, vocab)
    model.eval()

    def before() -> None:  # the loop encode_texts ran before issue 31: batches in given order
        with torch.no_grad():
            for i in range(0, len(texts), batch):
                model.encode(*trim(*tok.encode_batch(texts[i : i + batch], 48)))

    runs = {"before": before, "after": lambda: encode_texts(model, tok, texts, 48)}
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(3):
        for name, fn in runs.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return {k: len(texts) / statistics.median(v) for k, v in times.items()}


def pair_table(what: str, row: str, unit: str, r: dict, digits: int) -> None:
    """One before/after row under its header: rates in ``unit`` and the speed-up."""
    head = ["", f"before {unit}", f"after {unit}"]
    w = [max(len(what), len(row)), len(head[1]), len(head[2])]
    print(f"| {what:<{w[0]}} | {head[1]} | {head[2]} | x    |")
    print("|" + "|".join("-" * (n + 2) for n in w) + "|------|")
    print(f"| {row:<{w[0]}} | {r['before']:>{w[1]}.{digits}f} | {r['after']:>{w[2]}.{digits}f} "
          f"| {r['after'] / r['before']:.2f} |")  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--worlds", default="cave,moving")
    p.add_argument("--steps", type=int, default=12, help="timed steps per variant")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--embed-dim", type=int, default=0, help="JEPA width (0: world default)")
    p.add_argument("--vision", action="store_true", help="time the frozen vision encoder")
    p.add_argument("--encode", action="store_true", help="time encode_texts on cave captions")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    print(f"threads {a.threads}, load average {os.getloadavg()[0]:.2f} (1 min) at the start")
    if a.encode:
        pair_table("encode_texts, cave", "tiny, batch 256", "captions/s", time_encode(a.steps), 0)
        return
    if a.vision:
        pair_table("vision encoder", "efficientnet-lite0", "images/s", time_vision(a.steps), 1)
        return
    print(
        "| world  | E  | tokens/caption | padded to | before samples/s | after samples/s | x    |"
    )
    print(
        "|--------|----|----------------|-----------|------------------|-----------------|------|"
    )
    for world in a.worlds.split(","):
        r = time_world(world, a.steps, a.embed_dim)
        x = r["after"] / r["before"]
        print(f"| {world:<6} | {r['embed_dim']:<2} | {r['tokens']:>14.1f} | {r['padded']:>9.1f} "
              f"| {r['before']:>16.0f} | {r['after']:>15.0f} | {x:.2f} |")  # fmt: skip
    print(f"load average {os.getloadavg()[0]:.2f} (1 min) at the end")


if __name__ == "__main__":
    main()
