"""Caption an image through one map, score captions of held-out scenes, or build a caption run.

`prh caption --run RUN --image PNG [--beam N]` prints the caption of an image: frozen vision
encoder -> fitted map into the text JEPA's space -> decoder trained on text only.
`prh caption --eval --run RUN --world cave --n 500 [--json PATH]` scores the decoder (greedy and
beam), the nearest-train-caption baseline and the text oracle with BLEU-4, ROUGE-L, CIDEr (and
METEOR with --meteor) against the world's reference captions of held-out scenes.
`prh caption --build --text-run RUNS/good --out RUN [--corpus SPEC]` fits the map on paired train
scenes (a corpus's train photos), trains the decoder on captions alone and writes RUN/caption/.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from prh.caption.commands import IMAGE_SIZES, MAX_BEAM, MAX_REFS
from prh.cli._args import as_request, nonnegative_float, positive_int, seed
from prh.world.registry import world_names

DEFAULT_MAX_IMAGE_MB = 10


def _noise(text: str) -> str | float:
    try:
        return text if text == "gap" else nonnegative_float(text)
    except argparse.ArgumentTypeError:
        msg = f"expected 'gap' or a finite number >= 0, got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--eval", action="store_true", help="score captions of held-out scenes")
    mode.add_argument("--build", action="store_true", help="build RUN/caption/ from a text run")
    parser.add_argument("--run", type=Path,
                        help="run folder holding caption/ (from --build or prh demo)")  # fmt: skip
    parser.add_argument("--image", type=Path, nargs="+",
                        help="image file(s) to caption (PNG, JPEG, ...)")  # fmt: skip
    parser.add_argument("--beam", type=positive_int, default=None,
                        help=f"beam width, 1..{MAX_BEAM} (caption: default 1 = greedy; --eval: "
                        "the beam row, default 3)")  # fmt: skip
    parser.add_argument("--nearest", action="store_true", help="also print the 5 nearest captions")
    parser.add_argument("--vision", default=None,
                        help="frozen image encoder spec (--build: default efficientnet-lite0; "
                        "otherwise the run's own, override only with an encoder of the same "
                        "output)")  # fmt: skip
    parser.add_argument("--max-image-mb", type=positive_int, default=DEFAULT_MAX_IMAGE_MB,
                        help="largest image file accepted, in MB "
                        f"(default {DEFAULT_MAX_IMAGE_MB})")  # fmt: skip
    parser.add_argument("--image-features", type=Path, default=None,
                        help="prh embed image feature file of the scenes (--build: pair scenes, "
                        "--eval: test scenes) to use instead of encoding "
                        "the renders again")  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write the result as JSON to this file")
    parser.add_argument("--threads", type=positive_int, default=None,
                        help="torch CPU threads (1 to the machine's CPU count)")  # fmt: skip
    parser.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    _eval_flags(parser.add_argument_group("--eval"))
    _build_flags(parser.add_argument_group("--build"))


def _eval_flags(ev: argparse._ArgumentGroup) -> None:
    ev.add_argument("--world", choices=world_names(), default="cave",
                    help="world of the run (cave)")  # fmt: skip
    ev.add_argument("--n", type=positive_int, default=500, help="held-out scenes (default 500)")
    ev.add_argument("--refs", type=positive_int, default=5,
                    help=f"references per scene (1..{MAX_REFS}; default 5)")  # fmt: skip
    ev.add_argument("--meteor", action="store_true", help="also METEOR (starts Java; slow)")
    ev.add_argument("--paired-run", type=Path, default=None, metavar="RUN",
                    help="also score this captioner (built with pairs) on the same scenes and "
                    "references and report --run's CIDEr as a fraction of it, beside the "
                    "nearest-caption baseline")  # fmt: skip
    ev.add_argument("--tokenizer", choices=("ptb", "simple"), default=None,
                    help="caption tokenizer for scoring (default ptb when java is installed, else "
                    "simple)")  # fmt: skip


def _build_flags(b: argparse._ArgumentGroup) -> None:
    b.add_argument("--text-run", type=Path, help="text JEPA run from prh train (the shared space)")
    b.add_argument("--out", type=Path, help="run folder to write caption/ into")
    b.add_argument(
        "--corpus",
        type=Path,
        help="a caption corpus with its photos (COCO folder, "
        "Flickr token file, JSONL) to pair, train the decoder on and score on",
    )
    b.add_argument("--n-pairs", type=positive_int, default=1000,
                   help="train scenes paired with renders to fit the map "
                   "(default 1000)")  # fmt: skip
    b.add_argument("--decoder-scenes", type=positive_int, default=2000,
                   help="train scenes whose captions train the decoder "
                   "(default 2000)")  # fmt: skip
    b.add_argument("--decoder-steps", type=positive_int, default=1500,
                   help="decoder optimiser steps of 128 captions (default 1500)")  # fmt: skip
    _map_flags(b)


def _map_flags(b: argparse._ArgumentGroup) -> None:
    """--build: the map, its inputs and the decoder's seed."""
    b.add_argument("--map", choices=("semi-orthogonal", "orthogonal", "ridge"),
                   default="semi-orthogonal",
                   help="map into the text space: semi-orthogonal (orthonormal rows, default), "
                   "orthogonal (needs --vision-dims = E) or ridge "
                   "(unconstrained baseline)")  # fmt: skip
    b.add_argument("--vision-dims", type=positive_int, default=64,
                   help="PCA dims of the image features before the map (default 64)")  # fmt: skip
    b.add_argument("--noise", type=_noise, default="gap",
                   help="CapDec noise std: 'gap' (from held-out pairs, default) or a number (0 = "
                   "off)")  # fmt: skip
    b.add_argument("--image-size", type=positive_int, default=224,
                   help=f"render side in pixels ({IMAGE_SIZES[0]}..{IMAGE_SIZES[1]}; "
                   "default 224)")  # fmt: skip
    b.add_argument("--pair-free", action="store_true",
                   help="fit the map without pairs: shuffle the captions and recover the match "
                   "(prh match)")  # fmt: skip
    b.add_argument("--pair-free-method", choices=("auto", "spectral", "shape"), default="auto",
                   help="with --pair-free: spectral (the rotation from each run's own positive "
                   "pairs; --vision must be a prh image run), shape (frozen encoders), or auto "
                   "(default: spectral when --vision is a prh run)")  # fmt: skip
    b.add_argument("--pair-free-classes", action="store_true",
                   help="with --pair-free: start the match from the rotation between class means "
                   "(largest object's shape and colour, each side labelled on its own; still no "
                   "image-caption pair)")  # fmt: skip
    b.add_argument("--seed", type=seed, default=0,
                   help="decoder seed (in [0, 2**32 - 1]; default 0)")  # fmt: skip
    b.add_argument("--device", default=None, help="where the captions are embedded and the "
                   "decoder trains: cpu (default), cuda, cuda:N or auto")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """The flags as a :class:`~prh.caption.commands.CaptionRequest`, done by
    :func:`~prh.caption.commands.caption_command`."""
    from prh.caption.commands import CaptionRequest, caption_command

    caption_command(as_request(CaptionRequest, args))
    return 0
