"""Inspect a caption corpus: COCO JSON, Karpathy JSON, Flickr token files, CSV, JSONL, HF datasets.

``prh data inspect PATH [--format F]`` prints ``{"images", "captions", "min_per_image",
"max_per_image"}`` as JSON, plus the format and the sizes of any splits. Images with fewer than
``--min-captions`` captions are an error unless ``--drop-few`` (drop them) is given.
"""

from __future__ import annotations

import argparse
import json

from prh.cli._args import positive_int


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from prh.data.loaders import FORMATS

    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    i = sub.add_parser("inspect", help="print image and caption counts of a corpus as JSON")
    i.add_argument("path", help="corpus file or folder")
    i.add_argument("--format", choices=FORMATS, default=None,
                   help="corpus format (default: detect)")  # fmt: skip
    i.add_argument("--min-captions", type=positive_int, default=2,
                   help="captions an image needs (2 for good views); fewer is an error unless "
                   "--drop-few")  # fmt: skip
    i.add_argument("--drop-few", action="store_true", help="drop images below --min-captions")


def run(args: argparse.Namespace) -> int:
    from prh.data.loaders import detect_format, load_corpus

    fmt = args.format or detect_format(args.path)
    corpus = load_corpus(args.path, fmt, min_captions=1, on_few="keep")
    before = len(corpus)
    corpus = corpus.with_min_captions(args.min_captions, "drop" if args.drop_few else "error")
    report = corpus.summary()
    report["dropped"] = before - len(corpus)
    report["format"] = fmt
    report["splits"] = {k: len(v) for k, v in corpus.splits.items()}
    print(json.dumps(report, indent=2))
    return 0
