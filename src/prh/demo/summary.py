"""The demo's ``summary.json`` as types: :class:`DemoSummary` and its small parts.

:meth:`DemoSummary.to_dict` writes the file's format ``prh-demo-summary/1`` key for key as it
always was (sections in the same order); :meth:`DemoSummary.from_dict` reads it back, and reads
summaries of older demos too (``docs/results/*/summary.json``: no theory sections, no
``runs``, no ``literal``), their missing sections ``None``. The protocol's sentences are
formatted from the config (:meth:`Protocol.of`), not written as prose beside it. Sections
whose shape belongs to one step (the bridge, the law, the modalities, ...) stay that step's
dicts.

Layer: plain data; no I/O (:func:`prh.demo.report.write_outputs` writes the file).
"""

from __future__ import annotations

import dataclasses
import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prh.encoders.registry import pretraining

REFERENCE_VISION = "DINOv2"  # the PRH reference's vision encoder, which the demo does not use
STAMP_KEYS = frozenset({"format", "prh_version", "inputs", "seed", "options", "git", "created"})
ADDED = frozenset({"literal"})
"""Sections added after the format's current writer's first files: written only when present."""


def ci_bounds(d: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """``(lo, hi)`` of an estimate's ``ci`` (``(None, None)`` when it has none or ``null``)."""
    ci = d.get("ci") or (None, None)
    return ci[0], ci[1]


@dataclass(frozen=True)
class Protocol:
    """What was measured, in a reader's words, each sentence formatted from the config."""

    vision: str
    metric: str
    captions: str
    next_token: str

    @classmethod
    def of(cls, cfg: Mapping[str, Any], level: float = 0.95) -> Protocol:
        """The protocol of a demo config (``DemoConfig.to_dict()``) whose null quantile is
        ``level``."""
        trained = pretraining(cfg["vision"])
        vision = f"{cfg['vision']} (frozen"
        vision += f", {trained}; not {REFERENCE_VISION})" if trained else ")"
        return cls(
            vision=vision,
            metric=f"mutual-kNN, k = {cfg['k']}, L2-normalised, max over layer pairs; calibrated "
            f"= score - {level:.0%} quantile of a permutation null",
            captions="one seeded caption per held-out scene (wording seed world_seed + 1)",
            next_token=(
                f"documents of {cfg['doc_captions']} captions of one training scene"
                f" (<= {cfg['doc_max_len']} tokens), "
                f"{cfg.get('next_token_factor', 1)}x the good-view budget in "
                "documents; measured on single held-out captions, every layer, mean-pooled "
                "(next-token) and last-token-pooled (next-token-last)"
            ),
        )

    def to_dict(self) -> dict[str, str]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Protocol:
        return cls(**{f.name: str(d.get(f.name, "")) for f in dataclasses.fields(cls)})


@dataclass(frozen=True)
class Machine:
    """Where the demo ran."""

    cpus: int | None
    platform: str
    python: str

    @classmethod
    def here(cls) -> Machine:
        return cls(os.cpu_count(), platform.platform(), platform.python_version())

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Machine:
        return cls(d.get("cpus"), str(d.get("platform", "")), str(d.get("python", "")))


@dataclass(frozen=True)
class WorldSummary:
    """The world the encoders trained on and its pair kernel's spectrum.

    ``spectrum`` is the top non-constant eigenvalues (``None``: no gap, or not computed);
    ``facts`` the rest of :func:`prh.demo.theory.world_spectrum` (``k``, ``gap``,
    ``min_separation``, ``lag``, ``reason``), empty when the theory step did not run.
    """

    name: str
    seed: int
    spectrum: list[float] | None = None
    facts: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, name: str, seed: int, spectrum: Mapping[str, Any] | None) -> WorldSummary:
        sp = dict(spectrum or {})
        eig = sp.pop("eigenvalues", None)
        return cls(name, seed, eig, sp)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "seed": self.seed, "spectrum": self.spectrum, **self.facts}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> WorldSummary:
        rest = {k: v for k, v in d.items() if k not in ("name", "seed", "spectrum")}
        return cls(d["name"], d["seed"], d.get("spectrum"), rest)


Section = dict[str, Any]


@dataclass(frozen=True)
class LiteralSummary:
    """The literal-caption twin (:mod:`prh.demo.literal`): text-good on literal captions beside
    text-good on partial ones, against the same image encoder, and the rule's verdict
    (:mod:`prh.demo.literal_rule`); ``skipped`` its reason when the demo did not run it.

    ``samples``, ``recipe``: the budget and converged recipe both caption kinds' runs trained
    with (:func:`prh.demo.protocol.converged_backend`; absent before it, when the partial side
    was the sweep's text-good). ``theory_cc``: each run, literal and partial, against g* and its
    own captions' theory (with its g* mode profile); ``pairs``: per caption kind
    (``literal``, ``partial``) the image~text pair seed by seed and the predicted ``k``
    correlations; ``verdict``: ``{label, reason, basis, rule, figures}``; ``captioners``
    (``--full``): the paired and zero-pair captioners on literal captions with their
    ``targets`` (:mod:`prh.demo.literal_caption`), else None; ``spectral``: the spectral
    pair-free map image-good ~ text-literal (:func:`prh.demo.spectral.spectral_section`).
    """

    world: str = ""
    image: str = ""
    seeds: int = 0
    samples: int | None = None
    recipe: Section | None = None
    runs: dict[str, str] = field(default_factory=dict)
    train_seconds: dict[str, float] = field(default_factory=dict)
    k: int | None = None
    theory_cc: Section = field(default_factory=dict)
    pairs: Section = field(default_factory=dict)
    verdict: Section | None = None
    spectral: Section | None = None
    captioners: Section | None = None
    skipped: str | None = None

    @property
    def label(self) -> str | None:
        """The verdict's label (``None`` when skipped)."""
        return None if self.verdict is None else self.verdict["label"]

    def to_dict(self) -> dict[str, Any]:
        if self.skipped is not None:
            return {"skipped": self.skipped}
        d = dataclasses.asdict(self)
        del d["skipped"]
        for key in ("spectral", "captioners", "samples", "recipe"):  # older summaries lack them
            if d[key] is None:  # (only --full builds the captioners)
                del d[key]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LiteralSummary:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


@dataclass(frozen=True)
class DemoSummary:
    """Everything ``summary.json`` holds, its sections in file order (see the module; a section
    an older summary lacks reads as empty or ``None``)."""

    alignment: dict[str, float | None] = field(default_factory=dict)
    alignment_calibrated: dict[str, float | None] = field(default_factory=dict)
    alignment_detail: dict[str, Section] = field(default_factory=dict)
    sample_efficiency: Section = field(default_factory=dict)
    theory_curves: Section | None = None
    word_order: Section = field(default_factory=dict)
    word_collapse: Section | None = None
    budget: list[Section] = field(default_factory=list)
    law: Section = field(default_factory=dict)
    prove: Section = field(default_factory=dict)
    bridge: Section = field(default_factory=dict)
    modalities: Section = field(default_factory=dict)
    world: WorldSummary | None = None
    theory_cc: Section | None = None
    spectral: Section | None = None
    theory_targets: list[Section] | None = None
    control: Section | None = None
    literal: LiteralSummary | None = None
    runs: list[Section] | None = None
    config: Section = field(default_factory=dict)
    timings: dict[str, dict[str, float]] = field(default_factory=dict)
    compute_cost: dict[str, dict[str, float]] = field(default_factory=dict)
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    machine: Machine | None = None
    protocol: Protocol | None = None
    claims: list[Section] | None = None
    theory_claims: list[Section] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``summary.json`` object (without the provenance header), every section; a section
        newer than the format (:data:`ADDED`) only when present, so that an older summary read
        back writes back key for key."""
        typed = (Protocol, Machine, WorldSummary, LiteralSummary)
        return {
            f.name: v.to_dict() if isinstance(v, typed) else v
            for f in dataclasses.fields(self)
            for v in (getattr(self, f.name),)
            if not (v is None and f.name in ADDED)
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DemoSummary:
        """A summary read back (a stamped file's header keys are skipped)."""
        known = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in d.items() if k in known and k not in STAMP_KEYS}
        typed = {"machine": Machine, "protocol": Protocol, "world": WorldSummary,
                 "literal": LiteralSummary}  # fmt: skip
        for name, kind in typed.items():
            if d.get(name):
                kw[name] = kind.from_dict(d[name])
        return cls(**kw)
