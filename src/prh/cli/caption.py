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
import math
import os
import sys
from pathlib import Path

from prh.cli._args import positive_int, seed
from prh.jsonio import read_json
from prh.world.registry import world_names

DEFAULT_MAX_IMAGE_MB = 10
MAX_REFS = 100  # references per scene in --eval (COCO has 5; the grammar runs short far above)
IMAGE_SIZES = (16, 1024)  # render side the cave world accepts, in pixels
MAX_BEAM = 64  # beams beyond this only cost memory (10**10 asked the allocator for 80 GB)


def _noise(text: str) -> str | float:
    if text == "gap":
        return text
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected 'gap' or a finite number >= 0, got {text!r}"
        ) from None
    if not (math.isfinite(v) and v >= 0):
        raise argparse.ArgumentTypeError(f"expected 'gap' or a finite number >= 0, got {text!r}")
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
        help=f"beam width, 1..{MAX_BEAM} (caption: default 1 = greedy; --eval: the beam row, "
        "default 3)",
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
    parser.add_argument(
        "--threads", type=positive_int, default=None,
        help="torch CPU threads (1 to the machine's CPU count)",
    )  # fmt: skip
    parser.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    _eval_flags(parser.add_argument_group("--eval"))
    _build_flags(parser.add_argument_group("--build"))


def _eval_flags(ev: argparse._ArgumentGroup) -> None:
    ev.add_argument(
        "--world", choices=world_names(), default="cave", help="world of the run (cave)"
    )
    ev.add_argument("--n", type=positive_int, default=500, help="held-out scenes (default 500)")
    ev.add_argument(
        "--refs", type=positive_int, default=5,
        help=f"references per scene (1..{MAX_REFS}; default 5)",
    )  # fmt: skip
    ev.add_argument("--meteor", action="store_true", help="also METEOR (starts Java; slow)")
    ev.add_argument(
        "--paired-run", type=Path, default=None, metavar="RUN",
        help="also score this captioner (built with pairs) on the same scenes and references and "
        "report --run's CIDEr as a fraction of it, beside the nearest-caption baseline",
    )  # fmt: skip
    ev.add_argument(
        "--tokenizer", choices=("ptb", "simple"), default=None,
        help="caption tokenizer for scoring (default ptb when java is installed, else simple)",
    )  # fmt: skip


def _build_flags(b: argparse._ArgumentGroup) -> None:
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
    _map_flags(b)


def _map_flags(b: argparse._ArgumentGroup) -> None:
    """--build: the map, its inputs and the decoder's seed."""
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
        "--image-size",
        type=positive_int,
        default=224,
        help=f"render side in pixels ({IMAGE_SIZES[0]}..{IMAGE_SIZES[1]}; default 224)",
    )
    b.add_argument(
        "--pair-free", action="store_true",
        help="fit the map without pairs: shuffle the captions and recover the match (prh match)",
    )  # fmt: skip
    b.add_argument(
        "--pair-free-method", choices=("auto", "spectral", "shape"), default="auto",
        help="with --pair-free: spectral (the rotation from each run's own positive pairs; "
        "--vision must be a prh image run), shape (frozen encoders), or auto (default: "
        "spectral when --vision is a prh run)",
    )  # fmt: skip
    b.add_argument(
        "--pair-free-classes", action="store_true",
        help="with --pair-free: start the match from the rotation between class means (largest "
        "object's shape and colour, each side labelled on its own; still no image-caption pair)",
    )  # fmt: skip
    b.add_argument(
        "--seed", type=seed, default=0, help="decoder seed (in [0, 2**32 - 1]; default 0)"
    )


def run(args: argparse.Namespace) -> int:
    from prh.errors import InputError
    from prh.io import guard_outputs

    # Everything a user typed is checked here, before a model loads or a folder is made.
    cpus = os.cpu_count() or 1
    if args.threads is not None and args.threads > cpus:
        raise InputError(f"--threads {args.threads}: this machine has {cpus} CPUs")
    if args.beam is not None and args.beam > MAX_BEAM:
        raise InputError(f"--beam must be 1 to {MAX_BEAM}, got {args.beam}")
    inputs = _check_build(args) if args.build else _check_run(args)
    if args.image_features is not None:
        _need_file(args.image_features, "--image-features", "a feature file")
        inputs.append(args.image_features)
    guard_outputs({"--json": args.json}, inputs=inputs)
    from prh.progress import quiet_third_party

    quiet_third_party()  # a vision model's "Loading weights" bar; prh reports its own progress
    if args.build:
        return _build(args)
    if args.eval:
        return _eval(args)
    return _caption(args)


def _check_build(args: argparse.Namespace) -> list[Path]:
    """Refuse bad --build flags; return the inputs (the text run)."""
    from prh.errors import InputError
    from prh.io import check_output_dir, refuse_input_overwrite

    if args.text_run is None or args.out is None:
        raise InputError("--build needs --text-run RUN (a prh train run) and --out RUN")
    if args.n_pairs < 4 or args.decoder_scenes < 2:  # a 4:1 split of pairs fits and probes
        raise InputError(
            f"--n-pairs must be >= 4 and --decoder-scenes >= 2, got {args.n_pairs} and "
            f"{args.decoder_scenes}"
        )
    if args.pair_free_classes and not args.pair_free:
        raise InputError("--pair-free-classes needs --pair-free (it anchors the pair-free map)")
    if args.pair_free_method != "auto" and not args.pair_free:
        raise InputError("--pair-free-method needs --pair-free")
    lo, hi = IMAGE_SIZES
    if not lo <= args.image_size <= hi:
        raise InputError(f"--image-size must be {lo} to {hi} pixels, got {args.image_size}")
    _need_folder(args.text_run, "--text-run", "a prh train run folder")
    inputs = [args.text_run]
    if args.vision and Path(args.vision).is_dir():  # a prh image run or a model folder
        inputs.append(Path(args.vision))
    # --out resolved (symlinks, ``..``) against every input folder before it is made or locked
    refuse_input_overwrite({"--out": args.out}, inputs)
    check_output_dir(args.out, "--out")
    return inputs


def _check_run(args: argparse.Namespace) -> list[Path]:
    """Refuse bad caption / --eval flags; return the inputs (run files, text run, images)."""
    from prh.errors import InputError

    if args.run is None:
        raise InputError("--run RUN is required (a run folder holding caption/)")
    if not args.eval and not args.image:
        raise InputError("give --image PNG to caption, --eval to score, or --build to build")
    if args.eval and args.beam is not None and args.beam < 2:
        raise InputError(f"--beam for the --eval beam row must be >= 2, got {args.beam}")
    if args.eval and args.refs > MAX_REFS:
        raise InputError(f"--refs must be 1 to {MAX_REFS} references per scene, got {args.refs}")
    if args.paired_run is not None and not args.eval:
        raise InputError("--paired-run goes with --eval")
    inputs = _run_inputs(args.run, with_text_run=True)
    if args.paired_run is not None:
        if args.paired_run.resolve() == args.run.resolve():
            raise InputError(f"--paired-run {args.paired_run}: the same run as --run")
        inputs += _run_inputs(args.paired_run, with_text_run=True)
    for path in args.image or ():
        _need_file(path, "--image", "an image file")
    return inputs + list(args.image or ())


def _need_file(path: Path, flag: str, what: str) -> None:
    from prh.errors import InputError

    if path.is_dir():
        raise InputError(f"{flag} {path}: is a folder, expected {what}")
    if path.exists() and not path.is_file():
        raise InputError(
            f"{flag} {path}: not a regular file (a device or a pipe?), expected {what}"
        )
    if not path.is_file():
        raise InputError(f"{flag} {path}: no such file")


def _need_folder(path: Path, flag: str, what: str) -> None:
    from prh.errors import InputError

    if path.exists() and not path.is_dir():
        raise InputError(f"{flag} {path}: is a file, expected {what}")
    if not path.is_dir():
        raise InputError(f"{flag} {path}: no such folder")


def _run_inputs(run: Path, with_text_run: bool) -> list[Path]:
    """What a caption run's reader opens: the run folder (its manifest and tensors) and, for
    --eval, the text run its manifest names. Any --json among them would destroy the run."""
    from prh.caption.pipeline import caption_folder, read_manifest

    folder = caption_folder(run)  # one line for a file, a missing folder, or no caption model
    inputs = [run, folder]
    if with_text_run:
        text_run = read_manifest(folder).get("text_run")
        if isinstance(text_run, str) and text_run:
            p = Path(text_run)
            inputs.append(p if p.is_absolute() else folder / p)
    return inputs


def _captioner(args: argparse.Namespace, beam: int = 1, run: Path | None = None):
    from prh.caption import load_captioner

    vision = None
    if args.vision:
        from prh.encoders import load_encoder

        vision = load_encoder(args.vision, efficientnet_layers="head", threads=args.threads)
    return load_captioner(run or args.run, beam=beam, threads=args.threads, vision=vision)


def read_image(path: Path, max_mb: int):
    """Decode an image file with the one guarded decoder (:mod:`prh.imageio`), as serve does."""
    from prh.errors import InputError
    from prh.imageio import ImageLimits
    from prh.imageio import read_image as decode_file

    _need_file(path, "--image", "an image file")
    try:
        return decode_file(path, ImageLimits(max_bytes=max_mb * 1024 * 1024))
    except InputError as e:
        raise InputError(f"--image {e}") from None


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
    from prh.caption import compare_captioners, evaluate_captioner
    from prh.provenance import stamped

    kw = dict(
        n=args.n,
        beam=args.beam or 3,
        refs=args.refs,
        meteor=args.meteor,
        tokenizer=args.tokenizer,
        image_features=args.image_features,
        progress=not args.no_progress,
    )
    res = evaluate_captioner(_captioner(args), **kw)
    print(res.table())
    for note in res.config.get("notes", []):
        print(f"note: {note}", file=sys.stderr)
    out = res.to_dict()
    if args.paired_run is not None:
        paired = evaluate_captioner(_captioner(args, run=args.paired_run), **kw)
        print(f"\npaired captioner ({args.paired_run}):\n{paired.table()}")
        cmp = compare_captioners(res, paired)
        print(
            f"\nCIDEr x100: {args.run} {100 * cmp['zero_pair']:.1f} ({cmp['rows']['zero_pair']}), "
            f"paired {100 * cmp['paired']:.1f} ({cmp['rows']['paired']}), nearest caption "
            f"{100 * cmp['nearest_caption']:.1f}; ratio {cmp['ratio']:.3f}"
        )
        out |= {"paired": paired.to_dict(), "comparison": cmp}
    if args.json is not None:
        from prh.io import json_safe, write_json

        inputs = [Path(args.run) / "caption" / "caption.json", args.image_features]
        if args.paired_run is not None:
            inputs.append(Path(args.paired_run) / "caption" / "caption.json")
        write_json(args.json, json_safe(stamped("caption-eval", out, inputs=inputs, options=args)))
    return 0


def _build(args: argparse.Namespace) -> int:
    from prh.caption import build_caption_run

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
        pair_free_classes=args.pair_free_classes,
        pair_free_method=args.pair_free_method,
        progress=not args.no_progress,
    )
    info = read_json(out / "caption" / "caption.json")
    print(
        f"{out}: caption run ({info['vision']} -> {info['map']['kind']} map -> decoder), "
        f"map R^2 {info['map']['r2_train']:.3f}, gap {info['gap']:.4f}, "
        f"decoder loss {info['decoder_loss_final']:.3f}, {info['seconds']['total_s']:.0f} s"
    )
    if info.get("pair_free"):
        pf = info["pair_free"]
        how = (
            f"spectral, from each run's own {pf['pairs']} positive pairs; "
            + ("pinned" if pf["pinned"] else f"NOT pinned: {pf['reason']}")
            if pf.get("method") == "spectral"
            else f"shape, start {pf['start']}"
        )
        print(
            f"pair-free match accuracy {pf['accuracy']:.3f} (chance {pf['chance']:.4f}; {how}; "
            "no image-caption pair used)"
        )
    if args.json is not None:
        from prh.io import write_json

        write_json(args.json, info)
    return 0
