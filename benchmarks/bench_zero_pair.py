"""A captioner built with pairs against one built with none, on a demo folder's stored features.

From a ``prh demo`` output folder (its good text run and its image feature files: the bridge
scenes' renders fit the map, the held-out scenes' renders are scored), build two caption runs
into ``OUT/paired`` and ``OUT/zero-pair`` (``--pair-free --pair-free-classes``: the map is fitted
on pairs matched with no image-caption pair), score both on the same held-out scenes and
references, and print :func:`prh.caption.compare_captioners` (CIDEr x 100 of each and of the
nearest-caption baseline, and the zero-pair / paired ratio). ``--decoder-steps 0`` builds
nearest-caption captioners (minutes); the figures in docs/caption.md ("Zero pairs") come from

    python benchmarks/bench_zero_pair.py /work/baseline/quick /tmp/zero-pair --decoder-steps 0
"""

from __future__ import annotations

import argparse
import glob
import json
import shutil
from pathlib import Path


def _one(pattern: str) -> str:
    found = sorted(glob.glob(pattern))
    if not found:
        raise SystemExit(f"bench_zero_pair: no {pattern}")
    return found[0]


def main() -> None:
    import torch

    from prh.caption import (
        build_caption_run,
        compare_captioners,
        evaluate_captioner,
        load_captioner,
    )
    from prh.features import load_features
    from prh.world.factors import scene_ids_of

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("demo", type=Path, help="a prh demo output folder (runs/, features/)")
    p.add_argument("out", type=Path, help="folder for the two caption runs and result.json")
    p.add_argument("--decoder-steps", type=int, default=0, help="0: nearest-caption captioners")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    torch.set_num_threads(1)
    good = _one(str(args.demo / "runs" / "good-*"))
    v_train = _one(str(args.demo / "features" / "vision-train-*"))
    v_test = _one(str(args.demo / "features" / "vision-test-*"))
    scenes = tuple(int(i) for i in scene_ids_of(load_features(v_train).ids))
    n_test = load_features(v_test).n
    evals = {}
    for name, kw in (("paired", {}), ("zero-pair", {"pair_free": True, "pair_free_classes": True})):
        out = args.out / name
        shutil.rmtree(out, ignore_errors=True)
        build_caption_run(good, out, vision="efficientnet-lite0", image_features=v_train,
                          pair_scenes=scenes, decoder_steps=args.decoder_steps, seed=args.seed,
                          threads=1, progress=False, **kw)  # fmt: skip
        cap = load_captioner(out, threads=1)
        evals[name] = evaluate_captioner(cap, n=n_test, beam=2, image_features=v_test)
        print(f"{name}:\n{evals[name].table()}")
        info = json.loads((out / "caption" / "caption.json").read_text())
        if info.get("pair_free"):
            print(f"pair-free match: {json.dumps(info['pair_free'])}")
    cmp = compare_captioners(evals["zero-pair"], evals["paired"])
    print(json.dumps(cmp, indent=1))
    (args.out / "result.json").write_text(json.dumps({"comparison": cmp}, indent=1) + "\n")


if __name__ == "__main__":
    main()
