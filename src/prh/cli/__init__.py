"""The ``prh`` command: one entry point, one module per subcommand.

Each subcommand module defines ``add_arguments(parser)`` and ``run(args) -> int`` and imports its
heavy dependencies (torch, transformers) inside ``run``, so ``prh --help`` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import Iterator, Sequence
from typing import NoReturn

from prh import __version__
from prh.errors import PrhError, missing_extra
from prh.locks import released

# name -> (module, one-line help). Order is the order of ``prh --help``.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("prh.cli.demo", "reproduce the paper's three claims on the cave world, with a report"),
    "prove": ("prh.cli.prove", "run executable checks of every theorem statement"),
    "serve": ("prh.cli.serve", "serve a web page that captions an image through one rotation"),
    "train": ("prh.cli.train", "train a text JEPA (good/bad/mixed views) or a next-token LM"),
    "readout": (
        "prh.cli.readout",
        "keep a wide JEPA run's top-k cross-view components as its embedding",
    ),
    "embed": ("prh.cli.embed", "embed world scenes or a corpus with a frozen encoder or a run"),
    "world": ("prh.cli.world", "sample the cave world: scene images, sketches and captions"),
    "data": ("prh.cli.data", "inspect a caption corpus (COCO, Flickr, CSV, JSONL, HF datasets)"),
    "sweep": ("prh.cli.sweep", "train and measure a grid of runs (rho x samples x seed)"),
    "fit-law": ("prh.cli.fit_law", "fit scaling laws of alignment in (rho, samples)"),
    "efficiency": ("prh.cli.efficiency", "samples each objective needs to reach an alignment"),
    "measure": ("prh.cli.measure", "measure alignment of two feature files, with null and CI"),
    "bridge": ("prh.cli.bridge", "fit or apply one linear map (rotation) between two encoders"),
    "match": ("prh.cli.match", "match two unpaired feature files: correspondence without pairs"),
    "caption": ("prh.cli.caption", "caption an image through one map; score or build a captioner"),
    "word-collapse": (
        "prh.cli.word_collapse",
        "do a text run's shape words and colour words stay distinct? (centred cosine)",
    ),
}


class OneLineParser(argparse.ArgumentParser):
    """An argparse parser whose errors are one line (``prh CMD: error: ...``), exit status 2.

    argparse prints the whole usage block before the message; a user who typed one bad flag wants
    the one line that names it (``--help`` still shows the usage).
    """

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with one sub-parser per command."""
    parser = OneLineParser(
        prog="prh",
        description="The Platonic Representation Hypothesis, made executable.",
    )
    parser.add_argument("--version", action="version", version=f"prh {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, (module_name, help_text) in COMMANDS.items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=help_text, description=module.__doc__)
        module.add_arguments(p)
        p.set_defaults(_run=module.run, _command=name)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the command; return the exit status.

    Any :class:`~prh.errors.PrhError` becomes one line on stderr and status 2 (no traceback).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with released(), _process_group_left():  # every lock taken; a torchrun group joined
            return int(args._run(args) or 0)
    except PrhError as e:
        print(f"prh {args._command}: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        # A file the OS refused (permissions, a full disk, a folder where a file was expected):
        # the user's input, not a bug in prh, so one line rather than a traceback.
        print(f"prh {args._command}: error: {_describe_os_error(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"prh {args._command}: interrupted", file=sys.stderr)
        return 130
    except ModuleNotFoundError as e:
        # The core installs without torch (measuring .npy files needs numpy alone): a command
        # that needs an optional package says which extra brings it, in one line.
        hint = missing_extra(e)
        if hint is None:
            raise
        print(f"prh {args._command}: error: {hint}", file=sys.stderr)
        return 2


@contextlib.contextmanager
def _process_group_left() -> Iterator[None]:
    """Leave the ``torchrun`` process group a command joined, however the command ends
    (``prh.training.distributed.leave_process_group``); commands that never imported torch's
    distributed package pay nothing."""
    try:
        yield
    finally:
        if "torch.distributed" in sys.modules:
            from prh.training.distributed import leave_process_group

            leave_process_group()


def _describe_os_error(e: OSError) -> str:
    what = e.strerror or str(e)
    return f"{e.filename}: {what}" if e.filename else what


def entry() -> None:
    """Console-script entry point: the process is prh's, so its allocator keeps freed memory
    (:func:`prh.memory.keep_freed_memory`: large tensors without a page fault per page per
    batch); :func:`main` called from another program leaves that program's allocator alone."""
    from prh.memory import keep_freed_memory

    keep_freed_memory()
    sys.exit(main())
