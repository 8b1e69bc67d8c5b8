"""The demo's output folder and its inputs, checked before any step runs (``prh demo``).

:func:`open_demo_folder` refuses, each in one line and before anything is written: an ``--out``
that holds something other than a demo (a ``prh train`` run, say), a frozen vision encoder that
reads no images, scene counts the world (or corpus) cannot give, a corpus that names no train
split (its text runs would train on the held-out photos), and a folder whose text runs trained
on another corpus than ``--corpus`` (another path, or the same path whose caption files changed
since: the runs would be reused as if they had read this corpus).

Layer: orchestration (reads the folder and the corpus's files; writes only the empty folder).
"""

from __future__ import annotations

import os
from pathlib import Path

from prh.demo.config import DemoConfig
from prh.errors import InputError

DEMO_MARKERS = ("demo.json", "summary.json", "steps")
"""What a demo writes first (``demo.json``) or last (``summary.json``), and its per-step cache."""


def check_demo_folder(out: Path) -> None:
    """Refuse an ``--out`` that exists, holds files and is not a demo's folder (a ``prh train``
    run, say): the demo would write its steps and runs among them (issue 36)."""
    if not out.is_dir():
        return
    entries = sorted(p.name for p in out.iterdir())
    if entries and not any((out / m).exists() for m in DEMO_MARKERS):
        what = " (a prh train run)" if "config.json" in entries else ""
        raise InputError(
            f"--out {out}: not a demo folder{what}: it holds {entries[0]!r} and no demo.json; "
            "give a new or empty folder, or one a demo wrote"
        )


def check_vision(cfg: DemoConfig) -> None:
    """Refuse a frozen ``vision`` encoder that is not an image encoder (``minilm``, say)."""
    from prh.encoders import load_encoder

    enc = load_encoder(cfg.vision)
    if enc.modality != "image":
        raise InputError(f"--vision {cfg.vision}: a {enc.modality} encoder reads no images; "
                         "expected an image encoder (efficientnet-lite0, hf:..., a prh image "
                         "run)")  # fmt: skip


def check_corpus_split(cfg: DemoConfig) -> None:
    """Refuse a corpus that names no train split: its text runs train on every image
    (:func:`prh.training.data.corpus_split`), the held-out test photos included."""
    from prh.demo.protocol import text_recipe
    from prh.training.data import corpus_split

    if cfg.corpus and corpus_split(text_recipe(cfg))[1] is None:
        raise InputError(
            f"--corpus {cfg.corpus}: names no train split, so its text runs would train on "
            "every photo, the held-out ones included; give it a train split (split lists, a "
            "'split' field, a captions_train*.json)"
        )


def check_corpus_runs(out: Path, corpus: str) -> None:
    """Refuse a demo folder holding a text run trained on another corpus than ``corpus`` (or
    on the same path before its files changed), by each run's stored corpus record."""
    from prh.caption.build import same_corpus
    from prh.data.record import corpus_digest
    from prh.jsonio import read_json

    digest = None
    for cfg_file in sorted(out.glob("sweep-*/runs/*/config.json")):
        record = read_json(cfg_file, "--out").get("corpus")
        if not isinstance(record, dict):
            continue  # a world's run: its cell ids never match a corpus's
        if digest is None:
            digest = corpus_digest(corpus, record.get("format", ""))[0]
        if not same_corpus(str(record.get("path", "")), corpus) or record.get("sha256") != digest:
            raise InputError(
                f"--out {out}: its text run {cfg_file.parent.name} trained on the corpus "
                f"{record.get('path')} (sha256 {str(record.get('sha256'))[:12]}...), not on "
                f"--corpus {corpus} (sha256 {digest[:12]}...); give a new --out"
            )


def open_demo_folder(cfg: DemoConfig, out: str | os.PathLike[str]) -> Path:
    """Check ``cfg`` and ``out`` (module docstring), then create ``out``; return it.

    Raises
    ------
    InputError
        One line naming the first problem; nothing is written.
    """
    from prh.demo.world import check_world_sizes
    from prh.io import check_output_dir, check_writable

    path = check_output_dir(out, "--out")
    check_demo_folder(path)
    check_vision(cfg)
    check_world_sizes(cfg)
    check_corpus_split(cfg)
    if cfg.corpus and path.is_dir():
        check_corpus_runs(path, cfg.corpus)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"--out {path}: cannot create the folder ({e.strerror})") from None
    check_writable(path / "summary.json", "--out")
    return path
