"""Match two unpaired feature files without any pairs: recover the correspondence and rotation.

``--method shape`` (the default) aligns the two clouds by their shapes. Without class lists,
rows are matched one to one (class-level QAP for up to --class-max rows, sample-level
Wasserstein-Procrustes above). With --classes-x/--classes-y (one label per row), the class means
are matched (quadratic assignment over within-modality kernels). Accuracy is reported when the
truth is known: equal id sets (rows) or equal class names (classes).

``--method spectral`` finds the rotation from each modality's own positive pairs
(``--pairs-x A B``, ``--pairs-y A B``: two feature files per side, row i of A and of B one
positive pair; :mod:`prh.bridge.spectral`), then matches the rows of --x and --y through it. It
writes the report (--json) and, with --out, the map (a ``.safetensors`` map and its ``.json``
sidecar, as ``prh bridge fit`` writes them; ``prh bridge apply`` applies it). When the
eigenvalues are too close (or a sign unreadable) to pin the rotation it says so in one line and
exits 1, writing the report but no map, unless --allow-unpinned.
"""

from __future__ import annotations

import argparse

from prh.cli._args import as_request, positive_int, seed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--method", choices=("shape", "spectral"), default="shape",
                        help="shape: align the clouds' shapes (default); spectral: the rotation "
                        "from each modality's own positive pairs "
                        "(--pairs-x, --pairs-y)")  # fmt: skip
    for side in ("x", "y"):
        parser.add_argument(f"--pairs-{side}", nargs=2, metavar=("A", "B"), default=None,
                            help=f"spectral: two feature files of {side.upper()}'s own positive "
                            "pairs (row i of A and of B: two observations of one trajectory at "
                            "the world's lag)")  # fmt: skip
    parser.add_argument("--out", default=None,
                        help="spectral: map file to write (.safetensors + "
                        ".json sidecar)")  # fmt: skip
    parser.add_argument("--k", type=positive_int, default=None,
                        help="spectral: components (default: the smaller numerical rank of the "
                        "two sides' pairs, so a JEPA embedding zero-padded to a layer's width "
                        "counts its own width)")  # fmt: skip
    parser.add_argument("--assign", choices=("auto", "hungarian", "nearest", "none"), default=None,
                        help="spectral: how rows of --x are matched to rows of --y through the "
                        "map (default auto: one to one when the counts agree, else each row's "
                        "nearest)")  # fmt: skip
    parser.add_argument("--sign-from", choices=("all", "unpaired"), default=None,
                        help="spectral: rows whose third moments fix the signs (default all: "
                        "--x/--y and the first halves of the pairs; "
                        "unpaired: --x/--y only)")  # fmt: skip
    parser.add_argument("--allow-unpinned", action="store_true", default=None,
                        help="spectral: write the map and exit 0 even when the rotation cannot be "
                        "pinned")  # fmt: skip
    parser.add_argument("--x", required=True, help="feature file of modality X (N, L, D_x)")
    parser.add_argument("--y", required=True, help="feature file of modality Y (N, L, D_y)")
    parser.add_argument("--classes-x", help="text file, one class label per row of X")
    parser.add_argument("--classes-y", help="text file, one class label per row of Y")
    parser.add_argument("--json", required=True, help="where to write the result (JSON)")
    parser.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    parser.add_argument("--layer-x", type=int, default=-1,
                        help="layer of X (index, default -1 = last)")  # fmt: skip
    parser.add_argument("--layer-y", type=int, default=-1,
                        help="layer of Y (index, default -1 = last)")  # fmt: skip
    parser.add_argument("--kernel", choices=("linear", "cosine", "rbf"), default="linear",
                        help="within-modality kernel")  # fmt: skip
    parser.add_argument("--polish", choices=("none", "2opt"), default="none",
                        help="2-opt on the QAP objective at the end")  # fmt: skip
    parser.add_argument("--class-max", type=positive_int, default=2000,
                        help="largest row count matched by the class-level solver (rows); above: "
                        "sample level")  # fmt: skip
    parser.add_argument("--seed", type=seed, default=0,
                        help="random seed (integer in [0, 2**32 - 1]; default 0)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """The flags as a :class:`~prh.bridge.match_files.MatchRequest`, matched by
    :func:`~prh.bridge.match_files.match_files`; exit 1 when a spectral rotation is not pinned
    (and --allow-unpinned was not given)."""
    from prh.bridge.match_files import MatchRequest, match_files

    pinned = match_files(as_request(MatchRequest, args))
    return 0 if pinned or args.allow_unpinned else 1
