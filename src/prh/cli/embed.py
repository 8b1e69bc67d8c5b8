"""Embed the cave world's scenes (or a caption corpus) with a frozen encoder or a trained run.

MODEL is a spec: efficientnet-lite0, random:efficientnet-lite0, minilm, hf:PATH_OR_ID,
onnx:PATH, features:PATH, or a `prh train` run directory. The output is a safetensors feature file
with `features` (N, L, D) float32 (every layer) and `ids` ("scene_{i}"), rows in the same order for
text and images of the same scenes, so `prh measure TEXT IMAGES` pairs them.

Text of a scene is ONE seeded caption by default (caption seed 0); --captions-per-scene K averages
K captions' features per layer. Images are rendered at --image-size px and resized by the encoder
(224 px for EfficientNet-Lite0).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from prh.cli._args import nonnegative_int, positive_int


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL", help="encoder spec or prh train run directory")
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--world", choices=["cave"], help="embed scenes of the embedded cave world")
    src.add_argument("--corpus", metavar="PATH", help="embed the images of a caption corpus")
    parser.add_argument(
        "--modality",
        choices=["text", "image", "sketch"],
        required=True,
        help="captions, rendered images, or line sketches (cave world only)",
    )
    parser.add_argument("--out", required=True, metavar="FILE", help="output .safetensors file")
    parser.add_argument(
        "--out-format",
        choices=["prh", "platonic-rep"],
        default=None,
        help="prh safetensors, or platonic-rep's .pt ({'feats': ...}, torch.save) (default: "
        "from the --out suffix, .pt is platonic-rep)",
    )
    parser.add_argument(
        "--n",
        metavar="N",
        type=positive_int,
        default=None,
        help="number of scenes/images (default: all)",
    )
    parser.add_argument(
        "--seed",
        metavar="S",
        type=nonnegative_int,
        default=None,
        help="world seed: which scenes exist (default: a run's world_seed, else 0)",
    )
    parser.add_argument(
        "--split",
        metavar="NAME",
        default=None,
        help="scene split: train, test or all for the world (default test); a corpus split name",
    )
    parser.add_argument(
        "--format", metavar="F", default=None, help="corpus format (default: detected)"
    )
    parser.add_argument(
        "--images", metavar="DIR", default=None, help="folder of a corpus's image files"
    )
    parser.add_argument(
        "--batch-size",
        metavar="N",
        type=positive_int,
        default=32,
        help="items per forward pass (default 32)",
    )
    parser.add_argument(
        "--captions-per-scene",
        metavar="K",
        type=positive_int,
        default=1,
        help="captions averaged per scene (default 1: one seeded caption)",
    )
    parser.add_argument(
        "--caption-seed",
        metavar="S",
        type=nonnegative_int,
        default=0,
        help="caption wording seed (default 0)",
    )
    parser.add_argument(
        "--nuisance-seed",
        metavar="S",
        type=nonnegative_int,
        default=0,
        help="render nuisance seed (default 0)",
    )
    parser.add_argument(
        "--image-size",
        metavar="PX",
        type=positive_int,
        default=224,
        help="render side in pixels (default 224)",
    )
    parser.add_argument(
        "--init-seed",
        metavar="S",
        type=nonnegative_int,
        default=0,
        help="seed of random: specs (default 0)",
    )
    parser.add_argument(
        "--efficientnet-layers",
        choices=["stages", "blocks", "head"],
        default="stages",
        help="EfficientNet outputs kept as layers (default stages: 7 stages + head)",
    )
    parser.add_argument(
        "--threads",
        metavar="N",
        type=positive_int,
        default=None,
        help="CPU threads for the encoder (default: the CPUs this process may use)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")


def run(args: argparse.Namespace) -> int:
    from prh.encoders import load_encoder
    from prh.encoders.embed import EmbedConfig, embed_corpus, embed_world
    from prh.errors import InputError
    from prh.features import save_features, save_platonic_rep
    from prh.io import check_writable

    out = check_writable(args.out, "--out")
    out_format = args.out_format or ("platonic-rep" if out.suffix.lower() == ".pt" else "prh")
    want = ".pt" if out_format == "platonic-rep" else ".safetensors"
    if out.suffix.lower() != want:
        raise InputError(f"--out {out}: expected a {want} file name for --out-format {out_format}")
    threads = args.threads or len(os.sched_getaffinity(0))
    cfg = EmbedConfig(
        modality=args.modality,
        captions_per_scene=args.captions_per_scene,
        caption_seed=args.caption_seed,
        nuisance_seed=args.nuisance_seed,
        image_size=args.image_size,
        batch_size=args.batch_size,
    )
    if args.model in ("minilm", "all-minilm-l6-v2") or args.model.startswith(("hf:", "onnx:")):
        _quiet_transformers()
    # Check the source before loading a model: a bad corpus or split fails in a second.
    if args.world:
        world, scene_ids, source = _world_scenes(args)
    else:
        corpus, source = _corpus(args)
    t0 = time.perf_counter()
    encoder = load_encoder(
        args.model,
        seed=args.init_seed,
        threads=threads,
        efficientnet_layers=args.efficientnet_layers,
    )
    encoder.check_modality("text" if args.modality == "text" else "image")
    t_load = time.perf_counter() - t0
    progress = None if args.quiet else _Progress(f"embed {args.modality}")
    t1 = time.perf_counter()
    if args.world:
        features, ids = embed_world(encoder, world, scene_ids, cfg, progress)
    else:
        features, ids = embed_corpus(encoder, corpus, cfg, args.images, progress)
    seconds = time.perf_counter() - t1
    if progress is not None:
        progress.close()
    metadata = {
        "encoder": encoder.spec,
        "modality": "text" if args.modality == "text" else "image",
        "input": args.modality,
        "source": source,
        "layer_dims": json.dumps([int(d) for d in encoder.layer_dims]),
        "layer_names": json.dumps(list(encoder.layer_names)),
        "config": json.dumps(cfg.__dict__),
    }
    if out_format == "platonic-rep":
        module = getattr(encoder, "model", None)  # a torch-backed encoder: its num_params
        has_params = hasattr(module, "parameters")
        n_params = sum(p.numel() for p in module.parameters()) if has_params else None
        save_platonic_rep(out, features, ids, metadata, encoder.layer_dims, n_params)
    else:
        save_features(out, features, ids, metadata)
    n, layers, dim = features.shape
    print(
        f"wrote {out}: features ({n}, {layers}, {dim}) from {encoder.spec} [{args.modality}]"
        f" in {seconds:.1f} s ({n / max(seconds, 1e-9):.1f} items/s, {threads} threads;"
        f" model load {t_load:.1f} s)"
    )
    return 0


def _world_scenes(args):
    from prh.errors import InputError
    from prh.world import CaveWorld, WorldConfig

    if args.images or args.format:
        raise InputError("--images/--format apply to --corpus only")
    seed = args.seed if args.seed is not None else _run_world_seed(args.model)
    world = CaveWorld(WorldConfig(seed=seed, image_size=args.image_size))
    split = args.split or "test"
    scene_ids = world.split(split)
    if args.n is not None:
        if args.n > len(scene_ids):
            raise InputError(f"--n {args.n}: split {split!r} has only {len(scene_ids)} scenes")
        scene_ids = scene_ids[: args.n]
    return world, scene_ids, f"world:cave seed={seed} split={split} n={len(scene_ids)}"


def _run_world_seed(model: str) -> int:
    """The ``world_seed`` a ``prh train`` run was trained on (0 for any other MODEL)."""
    from pathlib import Path

    from prh.encoders.stored import is_run_dir

    path = Path(model).expanduser()
    if not is_run_dir(path):
        return 0
    try:
        stored = json.loads((path / "config.json").read_text())
        return int(stored.get("train", stored).get("world_seed", 0))
    except (OSError, ValueError, TypeError, AttributeError):
        return 0  # load_run reports a broken run directory with a clear message


def _corpus(args):
    from prh.data import load_corpus
    from prh.errors import InputError

    if args.modality == "sketch":
        raise InputError("--modality sketch exists only for --world cave")
    corpus = load_corpus(args.corpus, format=args.format)
    if args.split:
        corpus = corpus.split(args.split)
    if args.n is not None:
        if args.n > len(corpus):
            raise InputError(f"--n {args.n}: corpus {args.corpus} has only {len(corpus)} images")
        corpus = corpus.subset(corpus.image_ids[: args.n])
    return corpus, f"corpus:{args.corpus} split={args.split or 'all'} n={len(corpus)}"


def _quiet_transformers() -> None:
    """Silence transformers' per-load progress bars and advice (the CLI reports progress itself)."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from transformers.utils import logging

        logging.disable_progress_bar()
        logging.set_verbosity_error()
    except ImportError:  # transformers is optional; specs that need it say so
        pass


class _Progress:
    """One self-overwriting line on stderr: done/total, items/s."""

    def __init__(self, label: str) -> None:
        self.label, self.t0, self.last = label, time.perf_counter(), 0.0
        self.tty = sys.stderr.isatty()

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        if done < total and now - self.last < (0.2 if self.tty else 5.0):
            return
        self.last = now
        rate = done / max(now - self.t0, 1e-9)
        end = "\r" if self.tty and done < total else "\n"
        print(f"{self.label}: {done}/{total} ({rate:.1f} items/s)", end=end, file=sys.stderr)

    def close(self) -> None:
        sys.stderr.flush()
