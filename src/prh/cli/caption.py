"""Caption an image through one map, score captions of held-out scenes, or build a caption run.

`prh caption --run RUN --image PNG [--beam N]` prints the caption of an image: frozen vision
encoder -> fitted map into the text JEPA's space -> decoder trained on text only.
`prh caption --eval --run RUN --world cave --n 500 [--json PATH]` scores the decoder (greedy and
beam), the nearest-train-caption baseline and the text oracle with BLEU-4, ROUGE-L, CIDEr (and
METEOR with --meteor) against the world's reference captions of held-out scenes.
`prh caption --build --text-run RUNS/good --out RUN` fits the map on paired train scenes, trains
the decoder on captions alone and writes RUN/caption/.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from prh.cli._args import positive_int

DEFAULT_MAX_IMAGE_MB = 10


def _noise(text: str) -> str | float:
    if text == "gap":
        return text
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'gap' or a number >= 0, got {text!r}") from None
    if not v >= 0:
        raise argparse.ArgumentTypeError(f"expected 'gap' or a number >= 0, got {text!r}")
    return v


def add_arguments(parser: argparse.ArgumentParser) -> None:
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--eval", action="store_true", help="score captions of held-out scenes")
    mode.add_argument("--build", action="store_true", help="build RUN/caption/ from a text run")
    parser.add_argument(
        "--run", type=Path, help="run folder holding caption/ (from --build or prh demo)"
    )
    parser.add_argument(
        "--image", type=Path, nargs="+", help="image file(s) to caption (PNG, JPEG, ...)"
    )
    parser.add_argument(
        "--beam", type=positive_int, default=None,
        help="beam width (caption: default 1 = greedy; --eval: the beam row, default 3)",
    )  # fmt: skip
    parser.add_argument("--nearest", action="store_true", help="also print the 5 nearest captions")
    parser.add_argument(
        "--vision", default=None,
        help="frozen image encoder spec (--build: default efficientnet-lite0; otherwise the "
        "run's own, override only with an encoder of the same output)",
    )  # fmt: skip
    parser.add_argument(
        "--max-image-mb", type=positive_int, default=DEFAULT_MAX_IMAGE_MB,
        help=f"largest image file accepted, in MB (default {DEFAULT_MAX_IMAGE_MB})",
    )  # fmt: skip
    parser.add_argument(
        "--image-features", type=Path, default=None,
        help="prh embed image feature file of the scenes (--build: pair scenes, --eval: test "
        "scenes) to use instead of encoding the renders again",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write the result as JSON to this file")
    parser.add_argument("--threads", type=positive_int, default=None, help="torch CPU threads")
    parser.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    ev = parser.add_argument_group("--eval")
    ev.add_argument("--world", choices=("cave",), default="cave", help="world of the run (cave)")
    ev.add_argument("--n", type=positive_int, default=500, help="held-out scenes (default 500)")
    ev.add_argument("--refs", type=positive_int, default=5, help="references per scene (default 5)")
    ev.add_argument("--meteor", action="store_true", help="also METEOR (starts Java; slow)")
    ev.add_argument(
        "--tokenizer", choices=("ptb", "simple"), default=None,
        help="caption tokenizer for scoring (default ptb when java is installed, else simple)",
    )  # fmt: skip
    b = parser.add_argument_group("--build")
    b.add_argument("--text-run", type=Path, help="text JEPA run from prh train (the shared space)")
    b.add_argument("--out", type=Path, help="run folder to write caption/ into")
    b.add_argument(
        "--n-pairs",
        type=positive_int,
        default=1000,
        help="train scenes paired with renders to fit the map (default 1000)",
    )
    b.add_argument(
        "--decoder-scenes",
        type=positive_int,
        default=2000,
        help="train scenes whose captions train the decoder (default 2000)",
    )
    b.add_argument(
        "--decoder-steps",
        type=positive_int,
        default=1500,
        help="decoder optimiser steps of 128 captions (default 1500)",
    )
    b.add_argument(
        "--map", choices=("semi-orthogonal", "orthogonal", "ridge"), default="semi-orthogonal",
        help="map into the text space: semi-orthogonal (orthonormal rows, default), "
        "orthogonal (needs --vision-dims = E) or ridge (unconstrained baseline)",
    )  # fmt: skip
    b.add_argument(
        "--vision-dims",
        type=positive_int,
        default=64,
        help="PCA dims of the image features before the map (default 64)",
    )
    b.add_argument(
        "--noise",
        type=_noise,
        default="gap",
        help="CapDec noise std: 'gap' (from held-out pairs, default) or a number (0 = off)",
    )
    b.add_argument(
        "--image-size", type=positive_int, default=224, help="render side in pixels (default 224)"
    )
    b.add_argument(
        "--pair-free", action="store_true",
        help="fit the map without pairs: shuffle the captions and recover the match (prh match)",
    )  # fmt: skip
    b.add_argument("--seed", type=int, default=0, help="decoder seed (default 0)")


def run(args: argparse.Namespace) -> int:
    from prh.errors import InputError

    if args.json is not None:
        from prh.io import check_writable

        check_writable(args.json, "--json")
    if args.build:
        return _build(args)
    if args.run is None:
        raise InputError("--run RUN is required (a run folder holding caption/)")
    if args.eval:
        return _eval(args)
    if not args.image:
        raise InputError("give --image PNG to caption, --eval to score, or --build to build")
    return _caption(args)


def _captioner(args: argparse.Namespace, beam: int = 1):
    from prh.caption import load_captioner

    vision = None
    if args.vision:
        from prh.encoders import load_encoder

        vision = load_encoder(args.vision, efficientnet_layers="head", threads=args.threads)
    return load_captioner(args.run, beam=beam, threads=args.threads, vision=vision)


def read_image(path: Path, max_mb: int):
    """Decode an image file with the serve app's guarded decoder (size, format, bombs)."""
    from prh.errors import InputError
    from prh.serve.images import ImageLimits, decode_image

    if not path.is_file():
        raise InputError(f"--image {path}: no such file")
    limit = max_mb * 1024 * 1024
    size = path.stat().st_size
    if size > limit:
        raise InputError(f"--image {path}: {size} bytes, larger than the limit of {max_mb} MB")
    try:
        return decode_image(path.read_bytes(), ImageLimits(max_bytes=limit))
    except InputError as e:
        raise InputError(f"--image {path}: {e}") from None


def _caption(args: argparse.Namespace) -> int:
    images = [read_image(p, args.max_image_mb) for p in args.image]  # fail before loading models
    captioner = _captioner(args, beam=args.beam or 1)
    kind = getattr(captioner, "kind", "decoder")
    if kind != "decoder":
        print(f"captioner: {captioner.label}")
    out = []
    for path, image in zip(args.image, images):
        r = captioner.caption(image)
        prefix = f"{path}: " if len(images) > 1 else ""
        print(prefix + r.caption)
        if args.nearest:
            for text, score in r.nearest:
                print(f"  {score:+.3f}  {text}")
        out.append(
            {
                "image": str(path),
                "captioner": kind,
                "caption": r.caption,
                "nearest": [{"caption": c, "score": s} for c, s in r.nearest],
                "seconds": r.seconds,
            }
        )
    if args.json is not None:
        from prh.io import write_json

        write_json(args.json, out[0] if len(out) == 1 else out)
    return 0


def _eval(args: argparse.Namespace) -> int:
    from prh.caption import evaluate_captioner

    captioner = _captioner(args)
    res = evaluate_captioner(
        captioner,
        n=args.n,
        beam=args.beam or 3,
        refs=args.refs,
        meteor=args.meteor,
        tokenizer=args.tokenizer,
        image_features=args.image_features,
        progress=not args.no_progress,
    )
    print(res.table())
    for note in res.config.get("notes", []):
        print(f"note: {note}", file=sys.stderr)
    if args.json is not None:
        from prh.io import write_json

        write_json(args.json, res.to_dict())
    return 0


def _build(args: argparse.Namespace) -> int:
    from prh.caption import build_caption_run
    from prh.errors import InputError

    if args.text_run is None or args.out is None:
        raise InputError("--build needs --text-run RUN (a prh train run) and --out RUN")
    out = build_caption_run(
        args.text_run,
        args.out,
        vision=args.vision or "efficientnet-lite0",
        n_pairs=args.n_pairs,
        decoder_scenes=args.decoder_scenes,
        map_kind=args.map,
        vision_dims=args.vision_dims,
        decoder_steps=args.decoder_steps,
        noise=args.noise,
        image_size=args.image_size,
        seed=args.seed,
        threads=args.threads,
        image_features=args.image_features,
        pair_free=args.pair_free,
        progress=not args.no_progress,
    )
    info = json.loads((out / "caption" / "caption.json").read_text())
    print(
        f"{out}: caption run ({info['vision']} -> {info['map']['kind']} map -> decoder), "
        f"map R^2 {info['map']['r2_train']:.3f}, gap {info['gap']:.4f}, "
        f"decoder loss {info['decoder_loss_final']:.3f}, {info['seconds']['total_s']:.0f} s"
    )
    if info.get("pair_free"):
        print(f"pair-free match accuracy {info['pair_free']['accuracy']:.3f} (no pairs used)")
    if args.json is not None:
        from prh.io import write_json

        write_json(args.json, info)
    return 0
