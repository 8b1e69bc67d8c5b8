"""Training throughput: samples/s, tokens/s and model FLOP utilisation (MFU), plus the data rate.

MFU = model FLOP/s / machine matmul FLOP/s, both measured in this run, with the same thread count.
Model FLOPs per step follow Kaplan et al. (2020) / nanoGPT: ``6 N`` per token (forward + backward,
``N`` = non-embedding parameters: an embedding lookup is not a matmul) plus attention
``12 L T d`` per token. A JEPA step encodes both sides: ``2 B T`` tokens.

With ``--image``: the image pipeline against the image model instead. Training rate = images
per second through forward + backward of an :class:`~prh.models.ImageEncoder` JEPA step (a pair
is two images); data rate = images per second that the input pipeline delivers, from the render
cache (:mod:`prh.views.render_cache`: good pairs, bad pairs) and, for comparison, drawn on the fly
(:class:`prh.views.ImageViewDataset`). Target: data rate >= 3x training rate.

Usage::

    python benchmarks/bench_train.py --presets tiny,small --threads 2
    python benchmarks/bench_train.py --image --presets tiny --image-size 64 --batch-size 128
"""

from __future__ import annotations

import argparse
import time

import torch

from prh.models import TextEncoder, count_parameters, model_config
from prh.training import train_config
from prh.training.distributed import DistInfo
from prh.training.loop import LossContext, make_optimizer, train_step


def matmul_flops(n: int = 1024, repeats: int = 20) -> float:
    """Measured fp32 matmul FLOP/s of this machine (best of ``repeats``)."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    for _ in range(3):
        a @ b
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best


def bench_model(preset: str, batch: int, T: int, steps: int, vocab: int = 2048) -> dict:
    torch.manual_seed(0)
    cfg = train_config(preset, batch_size=batch, max_len=T, samples=batch * 1000, lr=1e-4)
    mcfg = model_config(preset, vocab, max_len=T)
    model = TextEncoder(mcfg)
    opt = make_optimizer(model, cfg.optim)
    ctx = LossContext(cfg, DistInfo(), torch.device("cpu"))
    g = torch.Generator().manual_seed(0)
    full = torch.ones(batch, T, dtype=torch.bool)  # no padding: every token counts
    b = {"a": torch.randint(5, vocab, (batch, T), generator=g), "a_mask": full,
         "b": torch.randint(5, vocab, (batch, T), generator=g), "b_mask": full}  # fmt: skip
    train_step(model, opt, b, 0, ctx)  # warm-up
    t = time.perf_counter()
    for i in range(steps):
        train_step(model, opt, b, i + 1, ctx)
    dt = (time.perf_counter() - t) / steps
    n_all = count_parameters(model)
    n_emb = model.trunk.tok.weight.numel() + model.trunk.pos.weight.numel()
    tokens = 2 * batch * T
    flops = tokens * (6 * (n_all - n_emb) + 12 * mcfg.n_layers * T * mcfg.d_model)
    return {"preset": preset, "params": n_all, "step_s": dt, "samples_s": batch / dt,
            "tokens_s": tokens / dt, "flops_s": flops / dt}  # fmt: skip


def bench_data(batch: int, T: int, n_batches: int, scenes: int) -> float:
    """Pairs per second produced by prh.views on the cave world (tokenised, padded)."""
    from prh.views import TextTokenizer, make_view_dataset
    from prh.world import CaveWorld, WorldConfig

    world = CaveWorld(WorldConfig(seed=0))
    corpus = world.corpus(world.split("train")[:scenes], captions_per_scene=5, seed=0)
    tok = TextTokenizer.train(corpus.texts(), vocab_size=2048)
    ds = make_view_dataset(corpus, "good", tok, batch_size=batch, max_len=T, seed=0)
    ds.batch(0)
    t = time.perf_counter()
    for i in range(n_batches):
        ds.batch(i + 1)
    return batch * n_batches / (time.perf_counter() - t)


def bench_image_model(preset: str, batch: int, size: int, steps: int) -> float:
    """Images per second through one JEPA step (forward + backward + AdamW) of the image CNN."""
    from prh.training.image import build_image_model, image_loss

    cfg = train_config(preset, batch_size=batch, samples=batch * 1000)
    model, _ = build_image_model(cfg)
    opt = make_optimizer(model, cfg.optim)
    ctx = LossContext(cfg, DistInfo(), torch.device("cpu"), loss_fn=image_loss)
    g = torch.Generator().manual_seed(0)
    b = {"a": torch.rand(batch, 3, size, size, generator=g),
         "b": torch.rand(batch, 3, size, size, generator=g)}  # fmt: skip
    train_step(model, opt, b, 0, ctx)  # warm-up
    t = time.perf_counter()
    for i in range(steps):
        train_step(model, opt, b, i + 1, ctx)
    return 2 * batch * steps / (time.perf_counter() - t)


def bench_image_data(batch: int, size: int, scenes: int, views: int, workers: int) -> dict:
    """Images/s: building the cache, cached good and bad pairs, and renders drawn on the fly."""
    from prh.views.image import ImageViewDataset
    from prh.views.render_cache import CachedViewDataset, render_views
    from prh.world import CaveWorld, WorldConfig

    world = CaveWorld(WorldConfig(seed=0))
    ids = world.split("train")[:scenes]
    t = time.perf_counter()
    cache = render_views(0, "image", size, views, ids, workers=workers)
    out = {"cache build": cache.shape[0] * cache.shape[1] / (time.perf_counter() - t)}
    for kind in ("good", "bad"):
        ds = CachedViewDataset(cache, ids, kind, batch_size=batch, seed=0)
        n = 10 if kind == "good" else 3
        t = time.perf_counter()
        for i in range(n):
            ds.batch(i)
        out[f"cache, {kind} pairs"] = 2 * batch * n / (time.perf_counter() - t)
    fly = ImageViewDataset(world, "good", size, batch_size=16, seed=0, scene_ids=ids)
    t = time.perf_counter()
    fly.batch(0)
    out["on the fly, good pairs (1 process)"] = 2 * 16 / (time.perf_counter() - t)
    return out


def main_image(args: argparse.Namespace) -> None:
    print(f"threads {args.threads}; {args.image_size} px, batch {args.batch_size} pairs")
    train_rates = {
        p: bench_image_model(p, args.batch_size, args.image_size, args.steps)
        for p in args.presets.split(",")
    }
    data = bench_image_data(
        args.batch_size, args.image_size, args.scenes, args.views, args.render_workers
    )
    print(f"{'what':<38} {'images/s':>10} {'x tiny training':>16}")
    base = train_rates.get("tiny", next(iter(train_rates.values())))
    for p, r in train_rates.items():
        print(f"{'training, ' + p + ' (fwd+bwd+AdamW)':<38} {r:>10,.0f} {r / base:>16.2f}")
    for name, r in data.items():
        if name == "cache build":
            name = f"cache build ({args.render_workers} workers, once)"
        print(f"{name:<38} {r:>10,.0f} {r / base:>16.2f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--image", action="store_true", help="benchmark the image pipeline and CNN")
    p.add_argument("--image-size", type=int, default=64, help="image side in px (--image)")
    p.add_argument("--views", type=int, default=4, help="cached views per scene (--image)")
    p.add_argument("--render-workers", type=int, default=2, help="cache builders (--image)")
    p.add_argument("--presets", default="tiny,small")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    p.add_argument("--batch-size", type=int, default=64, help="pairs per step")
    p.add_argument("--max-len", type=int, default=48, help="tokens per sequence")
    p.add_argument("--steps", type=int, default=3, help="timed steps per preset")
    p.add_argument("--data-batches", type=int, default=20)
    p.add_argument("--scenes", type=int, default=2000, help="world scenes in the data benchmark")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    if args.image:
        main_image(args)
        return
    peak = matmul_flops()
    print(f"threads {args.threads}; measured fp32 matmul: {peak / 1e9:.1f} GFLOP/s")
    print(f"{'preset':<7} {'params':>8} {'step s':>7} {'samples/s':>10} {'tokens/s':>10} "
          f"{'GFLOP/s':>8} {'MFU':>6}")  # fmt: skip
    for preset in args.presets.split(","):
        r = bench_model(preset, args.batch_size, args.max_len, args.steps)
        mfu = r["flops_s"] / peak
        print(
            f"{preset:<7} {r['params'] / 1e6:>7.1f}M {r['step_s']:>7.2f} {r['samples_s']:>10.1f} "
            f"{r['tokens_s']:>10.0f} {r['flops_s'] / 1e9:>8.1f} {mfu:>6.1%}"
        )
    rate = bench_data(args.batch_size, args.max_len, args.data_batches, args.scenes)
    print(f"data pipeline (prh.views, good pairs, tokenised): {rate:,.0f} pairs/s")


if __name__ == "__main__":
    main()
