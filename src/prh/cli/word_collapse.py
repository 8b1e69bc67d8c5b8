"""Word collapse of text runs: the centred cosine among the world's shape words and among its
colour words in each run's token embeddings (near 1: merged; near 0: distinct). A next-token LM
on still-world documents merges them; a good-view JEPA, or an LM on narrations of the moving
world, keeps them apart (docs/world.md, "Narrations"; prh.metrics.word_collapse).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from prh.jsonio import read_json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN", help="text run folders (prh train)")
    parser.add_argument("--probe-colours", action="store_true",
                        help="the shared probe's 6 colour words instead of "
                        "the world's 10")  # fmt: skip


def check_text_run(run_dir: Path) -> None:
    """One line unless ``run_dir`` is a folder whose ``config.json`` is a text run's."""
    import json

    from prh.errors import InputError

    if not run_dir.is_dir():
        raise InputError(f"{run_dir}: no such run folder")
    try:
        stored = read_json(run_dir / "config.json")
    except FileNotFoundError:
        raise InputError(f"{run_dir}: not a prh run folder (no config.json)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{run_dir}/config.json: unreadable ({e})") from None
    modality = stored.get("modality", "text") if isinstance(stored, dict) else None
    if modality != "text":
        raise InputError(f"{run_dir}: {modality!r} run; word collapse reads a text run's "
                         "token embeddings")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from prh.metrics.word_collapse import PROBE_COLOURS, word_collapse_of
    from prh.training.api import load_run
    from prh.world.scenes import COLOURS, SHAPES

    for run_dir in args.runs:  # every folder checked before any model loads
        check_text_run(Path(run_dir))
    colours = PROBE_COLOURS if args.probe_colours else COLOURS
    width = max(len(str(r)) for r in args.runs)
    print(f"{'run':<{width}}  {'shape words':>11}  {'colour words':>12}")
    for run_dir in args.runs:
        res = word_collapse_of(load_run(run_dir, device="cpu"), SHAPES, colours)
        note = f"  (not in the vocabulary: {', '.join(res.missing)})" if res.missing else ""
        print(f"{run_dir:<{width}}  {res.shape:>11.2f}  {res.colour:>12.2f}{note}")
    return 0
