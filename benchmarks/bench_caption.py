"""Which map captions best? One trained decoder, the map swapped, scored on held-out scenes.

Takes a caption run (``prh caption --build``), refits the map on the run's own fitting pairs
(``caption/pairs.safetensors``) for each variant, and scores on the first ``--n`` test scenes:
the map's image -> caption retrieval (R@1, R@5 among the n scenes, against the mean embedding of
each scene's 5 reference captions), the decoder's greedy captions and the nearest-train-caption
baseline (BLEU-4, ROUGE-L, CIDEr x 100, simple tokenizer: no Java). The decoder and its CapDec
noise stay those of the run (trained for the run's own map), so the rows isolate the map.

    python benchmarks/bench_caption.py --run runs/demo --image-features test_effnet.safetensors

``--image-features`` is ``prh embed efficientnet-lite0 --world cave --modality image --split test
--n 500 --efficientnet-layers head --out FILE`` (else the renders are encoded here).
"""

from __future__ import annotations

import argparse
import time

VARIANTS = [
    ("semi-orthogonal", 32),
    ("semi-orthogonal", 64),
    ("semi-orthogonal", 256),
    ("ridge", 64),
    ("ridge", 256),
]


def main() -> None:
    import torch

    from prh.bridge import VisionProjector, retrieval
    from prh.bridge.caption_metrics import score_captions
    from prh.caption import load_captioner
    from prh.caption.build import render_features, stored_features
    from prh.caption.pipeline import resolve_text_run
    from prh.io import read_tensors
    from prh.training import load_run
    from prh.world import CaveWorld, WorldConfig

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True, help="caption run folder")
    ap.add_argument("--image-features", default=None, help="prh embed file of the test scenes")
    ap.add_argument("--n", type=int, default=500, help="held-out scenes (default 500)")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    cap = load_captioner(args.run)
    info = cap.info
    w = info["world"]
    world = CaveWorld(WorldConfig(seed=w["seed"]))
    scenes = [int(i) for i in world.split("test")[: args.n]]
    ids = [world.image_id(i) for i in scenes]
    refs = {k: world.captions(i, 5, w["seed"]) for k, i in zip(ids, scenes)}
    if args.image_features:
        feats = stored_features(args.image_features, world, scenes, info["vision"])
    else:
        feats = render_features(cap.vision, world, scenes, image_size=w["image_size"])
    run = load_run(resolve_text_run(cap.folder, info), device="cpu")
    ref_emb = run.embed_texts([c for k in ids for c in refs[k]]).reshape(len(ids), 5, -1)
    target = cap.normalizer.transform(ref_emb.mean(1))  # (n, E)
    pairs = read_tensors(cap.folder / "pairs.safetensors")

    rows = []
    for kind, dims in VARIANTS:
        t0 = time.perf_counter()
        cap.projector = VisionProjector(dims, kind).fit(pairs["x"], pairs["y"])
        cond = cap.conditions(feats)
        rec = retrieval(cond, target, ks=(1, 5)).x_to_y
        greedy = dict(zip(ids, cap.generate(cond, beam=1)))
        near = dict(zip(ids, [r[0][0] for r in cap.nearest(cond, k=1)]))
        m = ("BLEU-4", "ROUGE-L", "CIDEr")
        sg = score_captions(refs, greedy, metrics=m, tokenizer="simple")
        sn = score_captions(refs, near, metrics=m, tokenizer="simple")
        rows.append((kind, dims, rec[1], rec[5], sg, sn, time.perf_counter() - t0))

    own = f"{info['map']['kind']} k={info['map']['vision_dims']}"
    print(f"run {args.run}: {info['vision']}, {info['n_pairs']} pairs, decoder trained for {own}")
    head = (f"{'map':<16}{'k':>5}{'R@1':>7}{'R@5':>7}{'dec B4':>8}{'dec R-L':>8}{'dec CIDEr':>10}"
            f"{'ret B4':>8}{'ret CIDEr':>10}{'s':>6}")  # fmt: skip
    print(head)
    print("-" * len(head))
    for kind, dims, r1, r5, sg, sn, s in rows:
        print(
            f"{kind:<16}{dims:>5}{100 * r1:>7.1f}{100 * r5:>7.1f}{100 * sg['BLEU-4']:>8.1f}"
            f"{100 * sg['ROUGE-L']:>8.1f}{100 * sg['CIDEr']:>10.1f}{100 * sn['BLEU-4']:>8.1f}"
            f"{100 * sn['CIDEr']:>10.1f}{s:>6.0f}"
        )
    print(f"(n = {len(ids)} held-out scenes; chance R@1 = {100 / len(ids):.1f}; x100)")


if __name__ == "__main__":
    main()
