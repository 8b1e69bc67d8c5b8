"""The demo's training runs: which ones, trained in parallel processes, resumable, with progress.

Every run is a :func:`prh.training.train` run directory under ``OUT/runs/<name>-<hash>`` where the
hash covers its whole :class:`~prh.training.TrainConfig`, so a rerun (or a ``--quick`` demo next
to a full one) reuses exactly the runs whose configuration matches. A run is finished when its
``model.safetensors`` exists; a run left without it by a kill resumes from its last checkpoint.

Each run evaluates itself against the frozen vision features of the held-out scenes every
``eval_every`` samples (the training eval hook: mutual-kNN, k = 10, best layer pair), which gives
the alignment-vs-samples curves without retraining at every budget.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from prh.demo.config import DemoConfig


@dataclass(frozen=True)
class RunSpec:
    """One training run of the demo.

    ``role`` is ``curve`` (good / bad / next-token at the full budget) or ``fit`` / ``heldout`` /
    ``repeat`` (mixture runs for the law; ``point`` pairs a held-out run with its repeat).
    """

    name: str
    role: str
    views: str
    rho: float | None
    samples: int
    seed: int
    point: int | None = None


def heldout_rhos(cfg: DemoConfig) -> list[float]:
    """Off-grid rho values of the held-out runs (seeded; never a fit value, never 0 or 1)."""
    rng = np.random.default_rng([cfg.seed, 4243])
    grid = {0.0, 1.0, *cfg.law_rhos}
    out: list[float] = []
    while len(out) < cfg.heldout_runs:
        r = round(float(rng.uniform(0.05, 0.95)), 3)
        if all(abs(r - g) > 0.05 for g in (*grid, *out)):
            out.append(r)
    return out


def run_specs(cfg: DemoConfig) -> list[RunSpec]:
    """Every run the demo trains, longest first (good, next-token, bad, then the law's)."""
    s = cfg.seed
    specs = [
        RunSpec("good", "curve", "good", None, cfg.samples, s),
        RunSpec("next-token", "curve", "next-token", None, cfg.samples, s),
        RunSpec("bad", "curve", "bad", None, cfg.samples, s),
    ]
    n = cfg.law_run_samples
    for r in cfg.law_rhos:
        specs.append(RunSpec(f"mix{r:g}", "fit", "mixture", float(r), n, s))
    for i, r in enumerate(heldout_rhos(cfg)):
        specs.append(RunSpec(f"heldout{i}", "heldout", "mixture", r, n, s + 1000 + i, i))
        specs.append(RunSpec(f"repeat{i}", "repeat", "mixture", r, n, s + 2000 + i, i))
    return specs


def train_cfg(spec: RunSpec, cfg: DemoConfig, eval_features: Path):
    """The :class:`~prh.training.TrainConfig` of one run."""
    from prh.training.config import train_config

    return train_config(
        cfg.preset,
        views=spec.views,
        rho=spec.rho,
        samples=spec.samples,
        seed=spec.seed,
        world_seed=cfg.world_seed,
        batch_size=cfg.batch_size,
        lr=cfg.lr,
        max_len=cfg.max_len,
        min_lr_frac=1.0,  # constant after warm-up: a curve point = a run stopped there
        warmup_frac=min(0.05, 8 * cfg.batch_size / spec.samples),
        train_scenes=cfg.train_scenes,
        eval_features=str(eval_features),
        eval_every=cfg.eval_every // cfg.batch_size,
        checkpoint_every=max(1, cfg.eval_every // cfg.batch_size) * 4,
        log_every=max(1, cfg.eval_every // cfg.batch_size),
    )


def run_dir(spec: RunSpec, cfg: DemoConfig, eval_features: Path, runs: Path) -> Path:
    """``runs/<name>-<hash of the resolved training config>``."""
    d = train_cfg(spec, cfg, eval_features).to_dict()
    d["eval_features"] = Path(d["eval_features"]).name  # the folder may move
    h = hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:10]
    return runs / f"{spec.name}-{h}"


def is_finished(path: Path) -> bool:
    return (path / "model.safetensors").is_file()


def _train_one(spec: RunSpec, cfg: DemoConfig, eval_features: str, path: str) -> str:
    """Worker: train (or resume) one run; returns its folder."""
    from prh.training import train

    p = Path(path)
    resume = p.exists() and any((p / "checkpoints").glob("*.json"))
    if p.exists() and not resume:
        shutil.rmtree(p)  # killed before its first checkpoint: start again
    tc = train_cfg(spec, cfg, Path(eval_features))
    train(tc, p, progress=False, resume=resume, threads=cfg.threads, device="cpu")
    return path


def read_evals(path: Path) -> list[tuple[int, float]]:
    """``(samples, eval_mutual_knn)`` records of a run's ``metrics.jsonl``, in order."""
    f = path / "metrics.jsonl"
    if not f.is_file():
        return []
    out: dict[int, float] = {}
    for line in f.read_text().splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue  # a line being written
        if "eval_mutual_knn" in r:
            out[int(r["samples"])] = float(r["eval_mutual_knn"])
    return sorted(out.items())


def _last_metrics(path: Path) -> dict[str, Any]:
    f = path / "metrics.jsonl"
    if not f.is_file():
        return {}
    last: dict[str, Any] = {}
    for line in f.read_text().splitlines()[-4:]:
        try:
            r = json.loads(line)
        except ValueError:
            continue
        last.update(r)
    return last


def train_all(
    specs: list[RunSpec],
    cfg: DemoConfig,
    eval_features: Path,
    runs: Path,
    log: Callable[[str], None] = print,
    poll_s: float = 10.0,
) -> dict[str, Path]:
    """Train every unfinished run in ``cfg.workers`` processes; return ``name -> run folder``.

    Progress: one line per active run every ``poll_s`` seconds (samples, loss, last alignment).
    """
    import multiprocessing

    runs.mkdir(parents=True, exist_ok=True)
    paths = {s.name: run_dir(s, cfg, eval_features, runs) for s in specs}
    todo = [s for s in specs if not is_finished(paths[s.name])]
    for s in specs:
        if s not in todo:
            log(f"  {s.name:<11} done already ({paths[s.name].name})")
    if not todo:
        return paths
    t0 = time.perf_counter()

    def report(active: list[RunSpec]) -> None:
        for s in active:
            m = _last_metrics(paths[s.name])
            if not m:
                continue
            ev = read_evals(paths[s.name])
            align = f", alignment {ev[-1][1]:.3f}" if ev else ""
            loss = f", loss {m['loss']:.3f}" if "loss" in m else ""
            log(
                f"  {s.name:<11} {int(m.get('samples', 0)):>6}/{s.samples} samples{loss}{align}"
                f"  [{time.perf_counter() - t0:5.0f}s]"
            )

    if cfg.workers <= 1:
        for s in todo:
            log(
                f"  {s.name:<11} training {s.samples} samples ({s.views}"
                + (f", rho {s.rho:g})" if s.rho is not None else ")")
            )
            _train_one(s, cfg, str(eval_features), str(paths[s.name]))
            ev = read_evals(paths[s.name])
            last = f", alignment {ev[-1][1]:.3f}" if ev else ""
            log(f"  {s.name:<11} finished{last}  [{time.perf_counter() - t0:5.0f}s]")
        return paths
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=cfg.workers, mp_context=ctx) as pool:
        futs = {
            pool.submit(_train_one, s, cfg, str(eval_features), str(paths[s.name])): s for s in todo
        }
        pending = set(futs)
        while pending:
            done = {f for f in pending if f.done()}
            for f in done:
                f.result()  # re-raise a worker's error here
                s = futs[f]
                ev = read_evals(paths[s.name])
                last = f", alignment {ev[-1][1]:.3f}" if ev else ""
                log(f"  {s.name:<11} finished{last}  [{time.perf_counter() - t0:5.0f}s]")
            pending -= done
            if not pending:
                break
            try:
                next(as_completed(pending, timeout=poll_s))
            except TimeoutError:
                report([futs[f] for f in pending if f.running()])
    return paths
