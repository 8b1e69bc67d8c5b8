"""The demo's modalities step: image and sketch encoders trained apart, one rotation, no pairs.

Issue 13's experiment on the demo's world. Each image/sketch encoder of ``cfg.image.modalities`` is
trained alone (one cell of a sweep, :func:`prh.demo.protocol.image_runs`, trained in-process by
:func:`prh.training.image.train_image`: EfficientNet-Lite0's early blocks frozen,
its later blocks and a whitened-JEPA head fine-tuned, :mod:`prh.models.backbone`) on its own
views of the training scenes: ``image-good`` two renders of one scene (independent nuisance),
``image-bad`` two crops / colour jitters of one render, ``sketch-good`` two sketches of one
scene. Then, on the held-out scenes, with the bridge scenes as the maps' training rows:

- what each image encoder sees: leave-one-out kNN@k accuracy of the largest object's shape and
  colour and of the object count, per layer (:mod:`prh.training.image_probe`);
- the **modality evidence** (:func:`prh.bridge.evidence.modality_evidence`) of every feature set
  (text JEPAs, next-token, MiniLM, the random-init control, EfficientNet-Lite0, the image and
  sketch encoders): mutual-kNN@k with a bootstrap interval and linear CKA (best layer pair), the
  rotation score of every ordered pair (JEPA embeddings, last layer) and pair-free matching of
  the listed pairs, class level (shape, colour) and sample level;
- issue 13's targets, each met or missed, from those figures (:func:`targets`).

The runs go to ``OUT/modalities/sweep-<hash>/runs/<cell id>/`` (one sweep per runner settings
and seed, :func:`prh.demo.protocol.image_sweep_dir`; its ``results.jsonl`` names each run's
folder), the render caches to ``OUT/modalities/render_cache/`` (drawn once, before the runs
start), the features to ``OUT/features/``; a rerun reuses finished runs (by cell id) and
resumes an unfinished one from its latest checkpoint.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from prh.demo import protocol
from prh.demo.config import DemoConfig
from prh.demo.context import Context
from prh.demo.figures import above, at_least, fig, interval
from prh.demo.sweeps import run_cells
from prh.demo.world import demo_world, scene_ids
from prh.world.ids import scene_id

TEXT_SETS = {
    "text-good": "good",
    "text-good-s1": "good-s1",
    "text-bad": "bad",
    "next-token": "next-token",
    "minilm": "minilm",
    "random-init": "random-init",
}
"""Evidence name -> the ``embed`` step's text encoder (next-token mean-pooled, as the PRH
benchmark pools language models). ``text-good-s1``, the good-view JEPA's second seed (present
when the preset runs several seeds), is the within-modality control: how far apart two
encoders trained on the SAME views land."""

VISION = "efficientnet-lite0"

GOOD_PAIRS = (
    ("image-good", "text-good"),
    ("sketch-good", "text-good"),
    ("image-good", "sketch-good"),
)
"""Pairs whose two sides were each trained on good views: the theorem's one-rotation pairs."""


def train_runs(ctx: Context) -> dict[str, Path]:
    """Train (or resume, or reuse) every run of ``cfg.image.modalities``: cells of one sweep
    (:func:`prh.demo.protocol.image_runs`, the ``cave-image`` runner), ``cfg.workers`` at a time,
    in this process (one worker) or a local pool; name -> run folder."""
    cfg = ctx.cfg
    if not cfg.image.modalities:
        return {}
    sweep = protocol.image_sweep_dir(ctx.out, cfg)
    runner = protocol.image_backend(cfg, ctx.path("modalities", "render_cache"))
    workers = max(1, min(cfg.workers, len(cfg.image.modalities)))
    s, rows = run_cells(ctx, protocol.image_runs(cfg), runner, sweep, what="image ",
                        workers=workers)  # fmt: skip
    if s.skipped:
        ctx.log(f"  {s.skipped} finished run(s) reused ({sweep.relative_to(ctx.out)})")
    return protocol.image_run_dirs(cfg, rows, sweep)


def read_out_runs(
    ctx: Context, runs: Mapping[str, Path], pairs: int | None = None
) -> dict[str, list[float]]:
    """Store each wide run's read-out to the encoders' width (``prh readout RUN --k K``: the top
    cross-view components of ``pairs`` fresh positive pairs of its own training law, by default
    ``prh readout``'s count and draw), so that every later step loads it that wide. A stored
    read-out of these weights, width, pairs and draw is kept (any other is measured again).
    Name -> the cross-view eigenvalues of all its directions."""
    import torch

    from prh.errors import CheckpointError
    from prh.training.api import load_run
    from prh.training.readout import DRAW, PAIRS, load_readout, save_readout
    from prh.training.readout_fit import fit_readout

    cfg, k, pairs = ctx.cfg, ctx.cfg.encoder_width(), pairs or PAIRS
    torch.set_num_threads(max(1, cfg.workers * cfg.threads))
    spectra = {}
    for name, d in runs.items():
        try:
            r = load_readout(d, cfg.image.embed_dim)
        except CheckpointError:  # the run was retrained since: measure it again
            r = None
        if r is None or (r.k, r.pairs, r.draw) != (k, pairs, DRAW):  # not the demo's own
            t0 = time.time()
            r = fit_readout(load_run(d, device="cpu", readout=False), k, pairs)
            save_readout(d, r)
            ctx.log(f"  {name}: read out {r.width} -> {k} wide on {r.pairs} of its own pairs "
                    f"({time.time() - t0:.0f} s)")  # fmt: skip
        spectra[name] = [float(v) for v in r.eigenvalues]
        ctx.log(f"  {name} cross-view eigenvalues: "
                + " ".join(f"{v:.3f}" for v in spectra[name]))  # fmt: skip
    return spectra


def run_settings(cfg: DemoConfig) -> dict[str, dict[str, Any]]:
    """Name -> ``{"train", "image"}``: the :class:`~prh.training.TrainConfig` and
    :class:`~prh.training.ImageConfig` (as dictionaries) each run of ``cfg.image.modalities`` trains
    with (the render cache's folder left out: where it lies changes nothing)."""
    runner = protocol.image_backend(cfg, Path("render_cache"))
    out = {}
    for name, cell in zip(
        cfg.image.modalities, protocol.image_runs(cfg).cells(cfg.seed), strict=True
    ):
        train, image = runner.configs(cell, Path("."))
        img = {k: v for k, v in image.to_dict().items() if k != "cache_dir"}
        out[name] = {"train": train.to_dict(), "image": img}
    return out


def embed_runs(ctx: Context, runs: Mapping[str, Path]) -> dict[str, dict[str, Path]]:
    """Every layer of each run on the held-out scenes (``test``) and the bridge scenes
    (``train``), renders or sketches at nuisance seed 0, as the vision step draws them."""
    import torch

    from prh.features import save_features
    from prh.training.image import draw_scenes, load_image_run

    cfg = ctx.cfg
    torch.set_num_threads(max(1, cfg.workers * cfg.threads))
    test, train = scene_ids(cfg, demo_world(cfg))
    out: dict[str, dict[str, Path]] = {}
    for name, d in runs.items():
        tag = f"{d.name}-{cfg.digest('eval_scenes', 'bridge_scenes')}"
        paths = {
            s: ctx.path("features", f"{name}-{s}-{tag}.safetensors") for s in ("test", "train")
        }
        if not all(p.is_file() for p in paths.values()):
            run = load_image_run(d, "cpu")
            for split, ids in (("test", test), ("train", train)):
                feats = run.encode_images(draw_scenes(run.config, run.image, ids))
                meta = {
                    "encoder": str(d),
                    "modality": "image",
                    "layer_dims": json.dumps(layer_widths(feats)),
                }
                save_features(paths[split], feats, ids=[scene_id(i) for i in ids], metadata=meta)
        out[name] = paths
    return out


def probe(test: Mapping[str, Path], labels: Mapping[str, np.ndarray], k: int) -> dict:
    """kNN@k accuracy of each factor at the embedding (last layer) and the best layer, with
    chance, for every image/sketch feature set."""
    from prh.features import load_features
    from prh.metrics.probe import chance
    from prh.training.image_probe import probe_table

    out: dict[str, Any] = {"chance": {f: float(chance(y)) for f, y in labels.items()}}
    for name, p in test.items():
        table = probe_table(np.asarray(load_features(p).features), dict(labels), k)
        out[name] = {
            f: {"embedding": float(acc[-1]), "best": float(max(acc)), "layers": acc}
            for f, acc in table.items()
        }
    return out


def evidence_sets(
    text: Mapping[str, Mapping[str, Path]],
    vision: Mapping[str, Path],
    images: Mapping[str, Mapping[str, Path]],
) -> dict[str, dict[str, Path]]:
    """Evidence name -> ``{"test", "train"}`` feature files: text sets, EfficientNet-Lite0,
    image/sketch encoders."""
    sets = {name: dict(text[src]) for name, src in TEXT_SETS.items() if src in text}
    sets[VISION] = {"test": Path(vision["test"]), "train": Path(vision["train"])}
    sets.update({n: dict(p) for n, p in images.items()})
    return sets


def pair_free_pairs(names: list[str]) -> list[tuple[str, str]]:
    """The pairs matched without pairs: the good-view pairs present, then their controls
    (EfficientNet-Lite0 and image-bad against the text JEPA)."""
    want = [*GOOD_PAIRS, (VISION, "text-good"), ("image-bad", "text-good")]
    return [(a, b) for a, b in want if a in names and b in names]


def targets(ev: Mapping[str, Any], probes: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Issue 13's targets, each ``{"target", "figure", "met"}`` (``met`` None when a figure it
    reads is undefined), from the evidence dictionary and the probes."""
    m = ev["matrix"]
    rows: list[dict[str, Any]] = []
    for name in ("image-good", "sketch-good"):
        rows += _probe_targets(name, probes)
        rows += _interval_targets(m, name)
    for a, b in GOOD_PAIRS:
        if a in m["names"] and b in m["names"]:
            r = lower_rotation(m, a, b)
            rows.append(_row(f"rotation score {a}~{b} >= 0.9 (lower of both ways)",
                             fig(r) + _recall_note(m, a, b), at_least(r, 0.9)))  # fmt: skip
    for pf in ev["pair_free"]:
        if (pf["x"], pf["y"]) == GOOD_PAIRS[0]:  # issue 13 sets these for image ~ text only
            rows += _pair_free_targets(pf)  # (a sketch has no colour); others reported only
    return rows


def _row(target: str, figure: str, met: bool | None) -> dict[str, Any]:
    return {"target": target, "figure": figure, "met": met}


def _probe_targets(name: str, probes: Mapping[str, Any]) -> list[dict[str, Any]]:
    if name not in probes:
        return []
    factors = ("shape", "colour") if name == "image-good" else ("shape",)
    return [
        _row(f"{name} kNN@10 {f} >= 0.6 (embedding)", fig(acc), at_least(acc, 0.6))
        for f in factors
        for acc in [probes[name][f]["embedding"]]
    ]


def _interval_targets(m: Mapping[str, Any], name: str) -> list[dict[str, Any]]:
    rows = []
    for control in (VISION, "image-bad"):
        a, b = _knn_cell(m, name, "text-good"), _knn_cell(m, control, "text-good")
        if a is None or b is None:
            continue
        figure = f"{fig(a[0], '.4f')} {interval(*a[1])} vs {fig(b[0], '.4f')} {interval(*b[1])}"
        rows.append(_row(f"{name}~text-good above {control}~text-good, intervals apart",
                         figure, above(a[1][0], b[1][1])))  # fmt: skip
    return rows


def _knn_cell(m: Mapping[str, Any], a: str, b: str) -> tuple[Any, list[Any]] | None:
    names = m["names"]
    if a not in names or b not in names:
        return None
    i, j = names.index(a), names.index(b)
    return m["mutual_knn"][i][j], [m["mutual_knn_ci_low"][i][j], m["mutual_knn_ci_high"][i][j]]


def lower_rotation(m: Mapping[str, Any], a: str, b: str) -> float | None:
    """The lower of the two ways' rotation scores (undefined if either is)."""
    i, j = m["names"].index(a), m["names"].index(b)
    s = [m["rotation"][i][j], m["rotation"][j][i]]
    return None if any(v is None for v in s) else min(s)


def _pair_free_targets(pf: Mapping[str, Any]) -> list[dict[str, Any]]:
    pair = f"{pf['x']}~{pf['y']}"
    rows = [
        _row(f"pair-free {pair} {f} classes exact", fig(c["accuracy"], ".2f"), bool(c["exact"]))
        for f, c in (pf.get("classes") or {}).items()
    ]
    s = pf.get("samples")
    if s:
        ratio = s["times_chance"]
        figure = (f"{fig(s['accuracy'], '.4f')} ({fig(ratio, '.1f')}x chance "
                  f"{fig(s['chance'], '.4f')})")  # fmt: skip
        rows.append(_row(f"pair-free {pair} samples >= 10x chance", figure, at_least(ratio, 10)))
    return rows


def layer_widths(features: np.ndarray) -> list[int]:
    """True width of each zero-padded layer of ``features`` ``(N, L, D)``: one past its last
    column that is non-zero in some row (a pooled activation or an embedding coordinate is never
    exactly zero on every scene)."""
    nz = np.abs(np.asarray(features)).max(0) > 0  # (L, D)
    return [int(np.flatnonzero(row)[-1]) + 1 if row.any() else 1 for row in nz]


def load_sets(sets: Mapping[str, Mapping[str, Path]]) -> tuple[dict, dict, dict]:
    from prh.features import load_features

    train, test, dims = {}, {}, {}
    for name, paths in sets.items():
        for split, store in (("train", train), ("test", test)):
            fs = load_features(paths[split])
            store[name] = np.asarray(fs.features, dtype=np.float32)
            if split == "test":
                meta = fs.metadata.get("layer_dims")
                dims[name] = json.loads(meta) if meta else layer_widths(store[name])
    return train, test, dims


def evidence(ctx: Context, sets: Mapping[str, Mapping[str, Path]]) -> dict[str, Any]:
    """:func:`prh.bridge.evidence.modality_evidence` of ``sets`` (cached by their files), its
    heatmap written to ``OUT/modalities.png``."""
    from prh.bridge.evidence import EvidenceConfig, modality_evidence
    from prh.world.factors import scene_factors

    cfg = ctx.cfg
    files = "|".join(f"{n}:{Path(p['test']).name}:{Path(p['train']).name}" for n, p in sets.items())
    h = hashlib.sha256(
        f"{files}|{cfg.digest('k', 'bootstrap', 'seed', 'pair_free_samples')}".encode()
    ).hexdigest()[:10]

    def go() -> dict[str, Any]:
        world = demo_world(cfg)
        test_ids, _ = scene_ids(cfg, world)
        f = scene_factors(world, test_ids)
        train, test, dims = load_sets(sets)
        ecfg = EvidenceConfig(
            k=cfg.measure.k,
            bootstrap=cfg.measure.bootstrap,
            seed=cfg.seed,
            samples=cfg.measure.pair_free_samples,
        )
        ev = modality_evidence(
            train,
            test,
            {"shape": f["shape"], "colour": f["colour"]},
            pair_free_pairs=pair_free_pairs(list(sets)),
            config=ecfg,
            layer_dims=dims,
        )
        ctx.path("modalities.png").write_bytes(ev.heatmap_png())
        return ev.to_dict()

    value, _ = ctx.cached_json(f"modalities-evidence-{h}", go)
    return value


def _recall_note(m: Mapping[str, Any], a: str, b: str) -> str:
    """`` (R@1 orthonormal / ridge: a->b .. / .., b->a .. / ..; chance ..)``: a score near 1 with
    both maps near chance says the two maps are equally poor, not that the encoders are one
    rotation apart."""
    got = {}
    for p in m.get("pairs", []):
        if {p["x"], p["y"]} == {a, b} and p.get("orthonormal") and p.get("ridge"):
            got[p["x"]] = p
    if len(got) < 2:
        return ""
    parts = [
        f"{x}->{y} {fig(got[x]['orthonormal']['r1'])} / {fig(got[x]['ridge']['r1'])}"
        for x, y in ((a, b), (b, a))
    ]
    return f" (R@1 orthonormal / ridge: {', '.join(parts)}; chance {fig(got[a]['chance_r1'])})"


@dataclass(frozen=True)
class ModalityEvidence:
    """What the modalities step gives the steps after it.

    Attributes
    ----------
    section : dict
        The summary's and report's ``modalities`` section: ``{"runs", "settings", "probe",
        "evidence", "targets", "heatmap", "captioners"}``, or ``{"skipped": reason}``.
    image_runs : dict of str to Path
        The image/sketch runs trained (the theory step's spectral maps draw their own pairs).
    sets : dict or None
        The feature sets compared (:func:`evidence_sets`; the theory step measures the same).
    """

    section: dict[str, Any]
    image_runs: dict[str, Path] = field(default_factory=dict)
    sets: dict[str, Any] | None = None

    @property
    def names(self) -> list[str] | None:
        """The compared sets in the evidence matrix's order (``None`` when none was made)."""
        ev = self.section.get("evidence")
        return ev["matrix"]["names"] if ev else None


def step_modalities(
    ctx: Context,
    text: Mapping[str, Mapping[str, Path]],
    vision: Mapping[str, Path],
    text_runs: Mapping[str, Path],
) -> ModalityEvidence:
    """Train, embed, probe and compare (module docstring)."""
    cfg = ctx.cfg
    if not cfg.image.modalities:
        ctx.log("  no image or sketch encoder in this preset (the default demo trains one)")
        return ModalityEvidence({"skipped": "no image or sketch encoder in this preset"})
    runs = train_runs(ctx)
    readouts = read_out_runs(ctx, runs) if cfg.reads_out_images() else {}
    images = embed_runs(ctx, runs)
    text = dict(text)
    if "good-s1" in text_runs:  # the within-modality control
        from prh.demo.steps import embed_text
        from prh.encoders import load_encoder

        s1 = text_runs["good-s1"]
        text["good-s1"] = embed_text(ctx, "good-s1", s1.name, lambda: load_encoder(str(s1)))
    probes = probe_images(ctx, images, vision)
    sets = evidence_sets(text, vision, images)
    ev = evidence(ctx, sets)
    _log_evidence(ctx, ev)
    rows = targets(ev, probes)
    captioners = None
    if cfg.caption.zero_pair and "image-good" in runs:
        from prh.demo.captioner import zero_pair_captioners

        captioners = zero_pair_captioners(
            ctx, text_runs["good"], runs["image-good"], images["image-good"]
        )
        rows += captioner_targets(captioners)
    log_targets(ctx, rows)
    section = {
        "runs": {n: str(d.relative_to(ctx.out)) for n, d in runs.items()},
        "settings": run_settings(cfg),
        "probe": probes,
        "evidence": ev,
        "targets": rows,
        "heatmap": "modalities.png",
        "captioners": captioners,
    }
    if readouts:  # the runs trained wide and read out by their own pairs
        section["readout"] = {"width": cfg.image.embed_dim, "k": cfg.encoder_width(),
                              "eigenvalues": readouts}  # fmt: skip
    return ModalityEvidence(section, dict(runs), sets)


def probe_images(
    ctx: Context, images: Mapping[str, Mapping[str, Path]], vision: Mapping[str, Path]
) -> dict[str, Any]:
    """kNN probes of the scenes' factors in each trained image/sketch encoder's and the frozen
    vision encoder's held-out features (:func:`probe`), each logged."""
    from prh.world.factors import scene_factors

    cfg = ctx.cfg
    world = demo_world(cfg)
    test_ids, _ = scene_ids(cfg, world)
    probes = probe(
        {**{n: p["test"] for n, p in images.items()}, VISION: Path(vision["test"])},
        scene_factors(world, test_ids),
        cfg.measure.k,
    )
    for name in (*images, VISION):
        p = probes[name]
        ctx.log(
            f"  {name:<18} kNN@{cfg.measure.k} embedding: shape {fig(p['shape']['embedding'])} "
            f"colour {fig(p['colour']['embedding'])} count {fig(p['count']['embedding'])}"
        )
    return probes


def log_targets(ctx: Context, rows: list[dict[str, Any]]) -> None:
    """One line per target: its figure and whether it was met."""
    for r in rows:
        label = {True: "met", False: "MISSED", None: "undefined"}[r["met"]]
        ctx.log(f"  target {r['target']}: {r['figure']} ({label})")


def captioner_targets(cap: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Issue 13's two captioner targets from :func:`prh.caption.evaluate.compare_captioners`."""
    m = cap["metric"]
    p, z, near = (100 * cap[k] for k in ("paired", "zero_pair", "nearest_caption"))
    return [
        {
            "target": f"paired captioner beats the nearest caption ({m})",
            "figure": f"{fig(p, '.1f')} vs {fig(near, '.1f')}",
            "met": bool(cap["paired_beats_nearest"]),
        },
        {
            "target": f"zero-pair captioner >= 80% of the paired one ({m})",
            "figure": f"{fig(z, '.1f')} vs {fig(p, '.1f')} ({fig(cap['ratio'], '.0f', 100)}%)",
            "met": at_least(cap["ratio"], 0.8),
        },
    ]


def _log_evidence(ctx: Context, ev: Mapping[str, Any]) -> None:
    m = ev["matrix"]
    names = m["names"]
    t = names.index("text-good") if "text-good" in names else None
    if t is not None:
        for i, n in enumerate(names):
            if i == t:
                continue
            ci = interval(m["mutual_knn_ci_low"][i][t], m["mutual_knn_ci_high"][i][t])
            ctx.log(
                f"  {n:<18}~text-good mutual-kNN {fig(m['mutual_knn'][i][t], '.4f')} {ci} "
                f"CKA {fig(m['cka'][i][t])} rotation {fig(m['rotation'][i][t])}"
            )
    for pf in ev["pair_free"]:
        cls = ", ".join(
            f"{f} {fig(c['accuracy'], '.2f')}{' exact' if c['exact'] else ''}"
            for f, c in (pf.get("classes") or {}).items()
        )
        s = pf.get("samples")
        smp = (
            ""
            if not s
            else f"; samples {fig(s['accuracy'], '.4f')} ({fig(s['times_chance'], '.1f')}x chance)"
        )
        ctx.log(f"  pair-free {pf['x']}~{pf['y']}: {cls}{smp}")
