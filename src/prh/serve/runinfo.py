"""What the page shows about a run: its alignment numbers and the plots it may serve.

Only PNG files that lie directly in the run directory (or its ``plots/`` folder), under a plain
name, are listed at start-up; a request names a plot by that listed name and nothing else, so no
request path ever reaches the file system.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prh.errors import InputError, PrhError
from prh.io import json_safe
from prh.jsonio import read_json
from prh.provenance import expect_format

_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\.png$")
# Plots the page looks for first, in this order; any other safe PNG name is served too.
PREFERRED_PLOTS: tuple[str, ...] = ("bound.png", "alignment.png")
_MAX_SUMMARY_BYTES = 1024 * 1024


@dataclass(frozen=True)
class RunInfo:
    """The parts of a run directory that ``prh serve`` publishes.

    Attributes
    ----------
    name : str or None
        The run folder's name (None when serving without a run).
    alignment : dict or None
        ``summary.json["alignment"]``, e.g. ``{"good": 0.31, "bad": 0.12, ...}``.
    summary : dict
        The whole ``summary.json`` (empty without one).
    plots : dict of str to Path
        Whitelisted plot name -> file, fixed at start-up.
    """

    name: str | None = None
    alignment: dict[str, Any] | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    plots: dict[str, Path] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON for ``GET /api/run`` (non-finite numbers become null)."""
        return json_safe(
            {
                "run": self.name,
                "alignment": self.alignment,
                "plots": list(self.plots),
                "summary": self.summary,
            }
        )


def read_run_info(run_dir: str | Path | None) -> RunInfo:
    """Read ``summary.json`` and list the servable plots of ``run_dir``.

    Raises
    ------
    InputError
        When ``run_dir`` is not a folder or ``summary.json`` is not a JSON object.
    """
    if run_dir is None:
        return RunInfo()
    root = Path(run_dir)
    if not root.is_dir():
        raise InputError(f"--run {root}: no such folder")
    root = root.resolve()
    summary: dict[str, Any] = {}
    path = root / "summary.json"
    if path.is_file():
        if path.stat().st_size > _MAX_SUMMARY_BYTES:
            raise InputError(f"{path}: larger than {_MAX_SUMMARY_BYTES} bytes")
        try:
            summary = read_json(path)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise InputError(f"{path}: not valid JSON ({e})") from None
        if not isinstance(summary, dict):
            raise InputError(f"{path}: expected a JSON object, got {type(summary).__name__}")
        expect_format(summary, "demo-summary", path)
    alignment = summary.get("alignment")
    if alignment is not None and not isinstance(alignment, dict):
        raise InputError(f"{path}: 'alignment' should be an object, got {type(alignment).__name__}")
    return RunInfo(root.name, alignment, summary, _list_plots(root))


def _list_plots(root: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for folder in (root, root / "plots"):
        if not folder.is_dir():
            continue
        for p in sorted(folder.iterdir()):
            if not _SAFE_NAME.match(p.name) or p.name in found or not p.is_file():
                continue
            real = p.resolve()
            if real.parent != folder.resolve():  # a symlink pointing elsewhere is not served
                continue
            found[p.name] = real
    ordered = {n: found[n] for n in PREFERRED_PLOTS if n in found}
    ordered.update({n: p for n, p in found.items() if n not in ordered})
    return ordered


def run_world_seed(run_dir: Path | None) -> int:
    """The run's world seed, else 0 (:func:`run_world`)."""
    return run_world(run_dir)[1]


def run_world(run_dir: Path | None) -> tuple[str, int]:
    """The run's world ``(name, seed)``, else ``("cave", 0)``.

    Looked up in ``caption/caption.json`` (``world.name`` and ``world.seed``, written by
    ``prh.caption``), then in ``config.json`` (``world`` and ``world_seed``, ``world.seed`` or
    ``train.world_seed``); a name absent or not a string is the cave's.
    """
    if run_dir is None:
        return "cave", 0
    for path in (run_dir / "caption" / "caption.json", run_dir / "config.json"):
        try:
            cfg = read_json(path)
        except (OSError, ValueError):
            continue
        if not isinstance(cfg, dict):
            continue
        for section in (cfg, cfg.get("train")):
            if not isinstance(section, dict):
                continue
            world = section.get("world")
            if isinstance(world, dict) and isinstance(world.get("seed"), int):
                name = world.get("name")
                return (name if isinstance(name, str) else "cave"), world["seed"]
            if isinstance(section.get("world_seed"), int):
                return (world if isinstance(world, str) else "cave"), section["world_seed"]
    return "cave", 0


def run_world_options(run_dir: Path | None) -> dict[str, Any]:
    """The options of the run's world beyond its seed (a corpus world's ``{"spec"}``), from
    ``caption/caption.json``'s ``world.options``; ``{}`` when there are none."""
    if run_dir is None:
        return {}
    try:
        info = read_json(run_dir / "caption" / "caption.json")
    except (OSError, ValueError):
        return {}
    world = info.get("world") if isinstance(info, dict) else None
    options = world.get("options") if isinstance(world, dict) else None
    return dict(options) if isinstance(options, dict) else {}


def load_run_captioner(run_dir: Path, threads: int | None = None) -> Any:
    """Load the run's captioner once, with one clear line if ``run_dir`` is not a demo run."""
    if not run_dir.exists():
        raise InputError(f"--run {run_dir}: no such folder; make one with `prh demo`")
    if not run_dir.is_dir():
        raise InputError(f"--run {run_dir}: is a file, expected a demo run folder")
    from prh.caption import load_captioner

    try:
        return load_captioner(run_dir, threads=threads)
    except PrhError:
        raise
    except (FileNotFoundError, KeyError) as e:
        raise InputError(
            f"--run {run_dir}: not a demo run (missing {e}); make one with `prh demo`"
        ) from None


def captioner_name(run_dir: Path, captioner: Any) -> str:
    """What the page calls a run's captioner: ``run NAME``, plus what it is when it does not
    generate (``run demo, nearest-caption retrieval (...)``)."""
    name = f"run {run_dir.name}"
    if getattr(captioner, "kind", "decoder") != "decoder":
        name += f", {captioner.label}"
    return name
