"""A run directory that describes itself.

Layout::

    RUN/
      config.json          resolved TrainConfig (+ "model": the resolved ModelConfig)
      meta.json            prh's source (git revision of a prh checkout, else the installed
                           version), package versions, seed, device, threads, world size, times
      metrics.jsonl        one JSON object per logged step / evaluation
      tokenizer.json       the tokenizer trained on the run's corpus (prh.views.TextTokenizer)
      checkpoints/         step_XXXXXXXX.safetensors + step_XXXXXXXX.json (latest two)
      render_cache/        image/sketch runs without --cache-dir: the cached renders
      tb/                  --log tensorboard: TensorBoard event files (prh.training.sinks)
      wandb/               --log wandb: the W&B run's files (offline unless WANDB_MODE is set)
      model.safetensors    final weights (written last: its presence means the run finished)
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from prh.io import atomic_write, write_json
from prh.jsonio import loads, read_json

MODEL_FILE = "model.safetensors"  # the finished model's weights
MODEL_FORMAT = "prh-model/1"

PACKAGES = ("prh", "torch", "numpy", "scipy", "safetensors", "tokenizers")


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        r = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def git_revision(package_dir: Path | None = None) -> str | None:
    """Git revision of prh's own source (``-dirty`` when modified), or None when not in a checkout.

    Only a git checkout OF PRH counts: the repository found above ``package_dir`` must track this
    very ``prh/__init__.py``. An installed prh (site-packages, perhaps inside a virtual environment
    inside the user's own repository) has no revision of its own; reporting that repository's
    HEAD would attribute the run to the wrong code.
    """
    here = (package_dir or Path(__file__).resolve().parent.parent).resolve()
    init = here / "__init__.py"
    top = _git(["rev-parse", "--show-toplevel"], here)
    if top is None or not init.is_file():
        return None
    if _git(["ls-files", "--error-unmatch", str(init)], here) is None:
        return None  # the repository above does not track this file: not a checkout of prh
    rev = _git(["rev-parse", "HEAD"], here)
    if rev is None:
        return None
    dirty = _git(["status", "--porcelain", "--untracked-files=no"], here)
    return rev + ("-dirty" if dirty else "")


def prh_source() -> dict[str, str | None]:
    """``{"version": ..., "git": revision or None}``: what code a run was made with."""
    from prh import __version__

    return {"version": __version__, "git": git_revision()}


def package_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def write_meta(
    run_dir: Path,
    *,
    seed: int,
    device: str,
    threads: int,
    world_size: int,
    resumed_from: int | None = None,
) -> None:
    """Write ``meta.json``, the start record: what ran (``command``, ``host``, code, versions,
    the resolved ``device``) and when (``started``). Kept across resumes: a resume appends its
    own record, with the step it resumed from, to ``resumes``."""
    path = run_dir / "meta.json"
    now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    if path.exists():
        meta = read_json(path)
        src = prh_source()
        meta.setdefault("resumes", []).append(
            {
                "at": now,
                "from_step": resumed_from,
                "command": sys.argv,
                "host": platform.node(),
                "git": src["git"],
                "prh_version": src["version"],
                "device": device,
                "threads": threads,
            }
        )
        meta.pop("finished", None)  # the run goes on: finished again when it ends
    else:
        src = prh_source()
        meta = {
            "git": src["git"],  # None unless prh runs from a git checkout of prh itself
            "prh_version": src["version"],
            "versions": package_versions(),
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "seed": seed,
            "device": device,
            "threads": threads,
            "world_size": world_size,
            "cpu_count": os.cpu_count(),
            "command": sys.argv,
            "host": platform.node(),
            "started": now,
        }
    write_json(path, meta)


def finish_meta(run_dir: Path, step: int) -> None:
    """The finish record in ``meta.json``: ``finished`` (time) and ``final_step``."""
    path = run_dir / "meta.json"
    meta = json.loads(path.read_text()) if path.exists() else {}
    meta.update(finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"), final_step=step)
    write_json(path, meta)


class MetricsLog:
    """Append-only ``metrics.jsonl``; each line is flushed so a killed run keeps its history.

    On resume, lines from steps after the checkpoint are dropped first (they will be redone).
    """

    def __init__(self, path: Path, resume_step: int | None = None) -> None:
        self.path = path
        if resume_step is not None and path.exists():
            kept = []
            for line in path.read_text().splitlines():
                try:
                    if loads(line, path).get("step", 0) <= resume_step:
                        kept.append(line)
                except ValueError:
                    continue  # a line cut by a kill
            with atomic_write(path, "w") as f:
                f.write("".join(k + "\n" for k in kept))

    def write(self, record: dict[str, Any]) -> None:
        with open(self.path, "a") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()


def read_metrics(run_dir: Path) -> list[dict[str, Any]]:
    path = Path(run_dir) / "metrics.jsonl"
    if not path.exists():
        return []
    return [loads(x, path) for x in path.read_text().splitlines() if x.strip()]


# Files a run writes; anything else in a folder means it is not (only) a prh run.
RUN_FILES = ("config.json", "meta.json", "metrics.jsonl", "tokenizer.json", "model.safetensors")
CHECKPOINTS = "checkpoints"
RENDER_CACHE = "render_cache"  # an image run's cached renders (rebuilt when cleared)
TB_DIR = "tb"  # --log tensorboard's event files
LOG_DIRS = (TB_DIR, "wandb")  # the folders of the metric sinks (prh.training.sinks)


def run_state(run_dir: Path) -> str:
    """What ``run_dir`` holds, as one word.

    ``"absent"`` (no such path), ``"file"`` (a regular file), ``"empty"`` (an empty folder),
    ``"finished"`` (``model.safetensors`` written), ``"started"`` (at least one complete
    checkpoint), ``"incomplete"`` (only the files of a start that stopped before its first
    checkpoint: a tokenizer, a config, metrics, the sinks' folders, temporary files) or
    ``"foreign"`` (anything else).
    """
    p = Path(run_dir)
    if not p.exists():
        return "absent"
    if not p.is_dir():
        return "file"
    entries = list(p.iterdir())
    if not entries:
        return "empty"
    if any(not _is_run_entry(e) for e in entries) or not _is_run_config(p / "config.json"):
        return "foreign"
    if (p / "model.safetensors").is_file():
        return "finished"
    folder = p / CHECKPOINTS
    if folder.is_dir() and any(_is_sidecar(c) for c in folder.iterdir()):
        return "started"
    return "incomplete"


def _is_run_entry(e: Path) -> bool:
    if e.name == CHECKPOINTS:
        return e.is_dir() and all(_is_checkpoint_file(c) for c in e.iterdir())
    if e.name == RENDER_CACHE:
        return e.is_dir() and all(c.is_file() for c in e.iterdir())
    if e.name in LOG_DIRS:
        return e.is_dir()  # a sink's own layout (W&B nests its run folders)
    return e.is_file() and (e.name in RUN_FILES or _is_temp(e))


def _is_run_config(path: Path) -> bool:
    """True when ``path`` is absent or a prh run config (``{"train": {...}, ...}``): a folder
    with someone else's ``config.json`` is not ours to clear."""
    if not path.exists():
        return True
    try:
        data = read_json(path)
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(data, dict) and isinstance(data.get("train"), dict)


def _is_temp(e: Path) -> bool:
    # prh.io.atomic_write's temporary names: ".<name>.<random>.tmp"
    return e.name.startswith(".") and e.name.endswith(".tmp")


def _is_sidecar(e: Path) -> bool:
    return e.is_file() and e.name.startswith("step_") and e.suffix == ".json"


def _is_checkpoint_file(e: Path) -> bool:
    return e.is_file() and (
        (e.name.startswith("step_") and e.suffix in (".json", ".safetensors")) or _is_temp(e)
    )


def clear_incomplete(run_dir: Path) -> None:
    """Delete what a start that stopped before its first checkpoint left in ``run_dir``.

    Only an ``"incomplete"`` folder (see :func:`run_state`) is touched: it holds no trained
    weights, so nothing of value is lost; the folder itself is kept.
    """
    p = Path(run_dir)
    if run_state(p) != "incomplete":
        raise ValueError(f"{p}: not an incomplete run folder")
    for e in p.iterdir():
        shutil.rmtree(e) if e.is_dir() else e.unlink()


def read_meta(run_dir: Path) -> dict[str, Any]:
    """``meta.json`` of a run (``{}`` when absent or unreadable)."""
    try:
        meta = read_json(Path(run_dir) / "meta.json")
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}
