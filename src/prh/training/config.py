"""Training configuration: one frozen dataclass, presets per model size, CLI overrides last."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from prh.errors import InputError
from prh.optim import warmup_cosine_lr, warmup_steps
from prh.training.sinks import parse_sinks
from prh.views.narration import (
    NARRATION_STRIDE,
    check_narration,
    check_stride,
    max_narration_tokens,
)
from prh.views.text import KINDS as TEXT_VIEW_KINDS
from prh.world.registry import world_names, world_offers

VIEWS = TEXT_VIEW_KINDS  # one list of view kinds: prh.views defines them
# Longest sequence a model is built for: its position table is (max_len, d), so an unbounded
# value would allocate without limit (captions are tens of tokens).
MAX_LEN = 4096
OBJECTIVES = ("whitened", "soft", "sigreg")

# Fields added after the first release, omitted from to_dict() at these defaults.
OPTIONAL_DEFAULTS: dict[str, Any] = {
    "world_themes": 0,
    "theme_strength": 2.0,
    "doc_captions": 1,
    "doc_style": False,
    "narration_len": 0,
    "narration_stride": NARRATION_STRIDE,
    "eval_theory": None,
    "log": "none",
}

# The optimiser's fields, stored flat in ``config.json``'s "train" and named flat by
# ``train_config``, ``--set`` and ``--config`` (:class:`OptimConfig`, :attr:`TrainConfig.optim`).
OPTIM_FIELDS = ("lr", "weight_decay", "warmup_frac", "min_lr_frac", "grad_clip")

# World fields a corpus run omits from to_dict() at their defaults (a corpus has no world).
WORLD_FIELDS = ("world", "world_seed", "captions_per_scene", "train_scenes")

# Optimiser defaults per model size (smaller models tolerate larger steps).
PRESET_DEFAULTS: dict[str, dict[str, Any]] = {
    "tiny": {"lr": 1e-3, "batch_size": 128},
    "small": {"lr": 5e-4, "batch_size": 256},
    "base": {"lr": 2e-4, "batch_size": 512},
}


def _knob(
    default: Any,
    help: str,
    part: str = "optimiser",
    metavar: str = "",
    choices: tuple = (),
    within: str = "",
) -> Any:
    """A field with a ``prh train`` flag: its ``help``, the ``part`` whose help group lists it
    (``optimiser``, ``model``, ``data``, ``world``, ``evaluation``, ``output``), its ``metavar``,
    ``choices`` and range (``within``, a key of :data:`RANGES`) ride in the field's metadata, from
    which :func:`prh.cli.config_flags.field_flags` derives the flag (name, type, default, help,
    rule); the config checks the same range (:func:`check_ranges`): one declaration."""
    meta = {"help": help, "part": part, "metavar": metavar, "choices": choices, "range": within}
    return field(default=default, metadata=meta)


# A knob's range, by name: (test, what an int is expected to be, what a float is).
RANGES: dict[str, tuple[Callable[[float], bool], str, str]] = {
    "positive": (lambda v: v > 0, "a positive integer", "a finite positive number"),
    "nonnegative": (lambda v: v >= 0, "an integer >= 0", "a finite number >= 0"),
    "fraction": (lambda v: 0 <= v <= 1, "a number in [0, 1]", "a number in [0, 1]"),
}


def range_error(kind: str, rng: str, value: Any) -> str | None:
    """``expected <range>, got <value>`` when ``value`` (of annotated type ``kind``) is outside
    the range named ``rng`` (NaN is outside every one); None inside it or without a range."""
    if not rng:
        return None
    test, as_int, as_float = RANGES[rng]
    if test(value) and math.isfinite(value):
        return None
    return f"expected {as_int if kind == 'int' else as_float}, got {value}"


def check_ranges(config: Any) -> None:
    """Refuse a field of dataclass ``config`` outside its declared range (one line naming it)."""
    for f in fields(config):
        message = range_error(str(f.type), f.metadata.get("range", ""), getattr(config, f.name))
        if message:
            raise InputError(f"{f.name}: {message}")


@dataclass(frozen=True)
class OptimConfig:
    """AdamW and its schedule, shared by text and image runs (:attr:`TrainConfig.optim`).

    Attributes
    ----------
    lr, weight_decay, warmup_frac, min_lr_frac, grad_clip : float
        AdamW (peak rate ``lr``, finite and > 0; no decay on biases and norms) with linear
        warm-up over ``warmup_frac`` of the steps, then cosine decay to ``min_lr_frac * lr``;
        gradient norm clipped at ``grad_clip`` (0 disables).
    """

    lr: float = _knob(1e-3, "peak learning rate", metavar="LR", within="positive")
    weight_decay: float = _knob(0.01, "AdamW weight decay (none on biases and norms)")
    warmup_frac: float = _knob(0.05, "fraction of the steps of linear warm-up, 0..1")
    min_lr_frac: float = _knob(0.1, "cosine decay ends at this fraction of --lr, 0..1")
    grad_clip: float = _knob(1.0, "gradient-norm clip (0 disables)")

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise InputError(f"lr must be a finite number > 0, got {self.lr}")
        for name, hi in (("weight_decay", math.inf), ("grad_clip", math.inf),
                         ("warmup_frac", 1.0), ("min_lr_frac", 1.0)):  # fmt: skip
            value = getattr(self, name)
            if not 0.0 <= value <= hi:  # NaN fails too
                span = "in [0, 1]" if hi == 1.0 else "a finite number >= 0"
                raise InputError(f"{name} must be {span}, got {value}")

    def lr_at(self, step: int, total: int) -> float:
        """Learning rate at ``step`` (0-based) of ``total``: warm-up, then cosine decay."""
        warm = warmup_steps(self.warmup_frac, total)
        return warmup_cosine_lr(step, self.lr, total, warm, self.min_lr_frac)


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a training run (with the code revision and the seed).

    Attributes
    ----------
    world, corpus : str or None
        Exactly one: ``"cave"`` (the embedded world's training scenes) or a caption-corpus path.
    views : {"good", "bad", "next-token", "mixture"}
        Positive-pair policy; ``next-token`` trains the causal LM baseline instead of a JEPA.
    rho : float
        Fraction of good views (``mixture`` only; good = 1, bad = 0).
    samples : int
        Budget: pairs (JEPA) or sequences (LM) seen. ``steps = ceil(samples / batch_size)``.
    preset : {"tiny", "small", "base"}
        Model size (see :mod:`prh.models.config`).
    seed : int
        Seeds the model initialisation, the data order and the tokenizer corpus.
    batch_size : int
        Global batch (pairs or sequences per step, over all data-parallel ranks).
    optim : OptimConfig
        AdamW and its schedule (``config.json`` stores its fields flat, and
        :func:`train_config`, ``--set`` and ``--config`` name them flat: ``lr``, ...).
    max_len : int
        Tokens per sequence (longer captions are truncated).
    objective : {"whitened", "soft", "sigreg"}
        JEPA anti-collapse: hard batch whitening, soft penalty ``beta``, or SIGReg
        (weight ``sigreg_lambda``).
    vocab_size : int
        Tokenizer vocabulary trained on the corpus.
    world_seed, captions_per_scene, train_scenes : int
        Which world, how many captions per scene, how many training scenes (0 = the whole split).
    world_themes, theme_strength : int, float
        Scene themes of the world (0: none, today's world; see :mod:`prh.world.themes`).
    doc_captions : int
        Next-token only: captions of one scene per document (1: a single caption).
    doc_style : bool
        Next-token only: each document's captions share one style (register, vocabulary, order;
        :mod:`prh.world.styles`), from a pool of ``captions_per_scene`` documents per scene.
    narration_len, narration_stride : int
        Next-token on a moving world: each document narrates ``narration_len`` frames of one
        trajectory, ``narration_stride`` chain steps apart, in one narrator style
        (:mod:`prh.views.narration`); 0 frames: no narration (one caption a row).
    eval_features : str or None
        Feature file to measure alignment against during training (ids ``scene_{i}``).
    eval_theory : str or None
        Theory embedding ``g*`` of world states (ids ``scene_{i}``) to measure the held-out
        canonical correlation against during training (:mod:`prh.training.theory_eval`).
    eval_every, checkpoint_every, log_every : int
        In steps (0 = only at the end).
    log : str
        Sinks that get a copy of ``metrics.jsonl``'s numbers (:mod:`prh.training.sinks`):
        ``"none"``, ``"tensorboard"``, ``"wandb"`` or both, comma-separated.
    """

    world: str | None = "cave"
    corpus: str | None = None
    views: str = "good"
    rho: float = 1.0
    samples: int = _knob(
        32_000, "budget: pairs (JEPA) or sequences (LM) seen", "data", "SAMPLES", within="positive"
    )
    preset: str = "tiny"
    seed: int = 0
    batch_size: int = _knob(
        128, "global batch in pairs/sequences per step", metavar="BATCH_SIZE", within="positive"
    )
    optim: OptimConfig = field(default_factory=OptimConfig)
    max_len: int = 48
    objective: str = _knob(
        "whitened", "JEPA anti-collapse: batch whitening, soft penalty, SIGReg",
        choices=OBJECTIVES,
    )  # fmt: skip
    whiten_eps: float = _knob(
        1e-4,
        "whitened objective: ridge on the batch covariance, relative to its mean variance",
    )
    beta: float = _knob(1.0, "soft objective: weight of the whitening penalty (>= 0)")
    sigreg_lambda: float = _knob(
        0.05, "SIGReg weight lam: (1-lam) pred + lam SIGReg, 0..1", within="fraction"
    )
    sigreg_slices: int = _knob(256, "SIGReg random directions per step", within="positive")
    vocab_size: int = _knob(2048, "tokenizer vocabulary trained on the corpus", "model")
    world_seed: int = 0
    captions_per_scene: int = 5
    train_scenes: int = 0
    world_themes: int = _knob(
        0, "scene themes of the world (0: none; docs/world.md)", "world", "T", within="nonnegative"
    )
    theme_strength: float = _knob(2.0, "how narrow a theme is", "world", "X", within="nonnegative")
    doc_captions: int = _knob(
        1, "next-token: captions of one scene per document (give --max-len about 48 D)", "world",
        "D", within="positive",
    )  # fmt: skip
    doc_style: bool = _knob(
        False, "next-token: a document's captions share one style (register, vocabulary, order)",
        "world",
    )  # fmt: skip
    narration_len: int = _knob(
        0,
        "next-token on --world moving: frames per narration document, 2..64 (0: none, one "
        "caption a row; docs/world.md, Narrations)",
        "world",
    )
    narration_stride: int = _knob(
        NARRATION_STRIDE, "chain steps between two frames of a narration, 1..10000", "world"
    )
    eval_features: str | None = None
    eval_theory: str | None = None
    eval_every: int = _knob(
        0, "evaluate every N steps (0: only at the end)", "evaluation", "N", within="nonnegative"
    )
    checkpoint_every: int = _knob(
        200, "checkpoint every N steps (0: never)", "output", "N", within="nonnegative"
    )
    log_every: int = 10
    log: str = _knob(
        "none", "also log metrics.jsonl's numbers to tensorboard (RUN/tb), wandb (offline unless "
        "WANDB_MODE is set; RUN/wandb), or both: tensorboard,wandb", "output", "SINKS",
    )  # fmt: skip
    model_overrides: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if (self.world is None) == (self.corpus is None):
            raise InputError("give exactly one of --world and --corpus")
        if self.world is not None and self.world not in world_names():
            raise InputError(
                f"unknown world {self.world!r}; expected one of {', '.join(world_names())}"
            )
        if self.views not in VIEWS:
            raise InputError(f"unknown views {self.views!r}; expected one of {list(VIEWS)}")
        if self.objective not in OBJECTIVES:
            raise InputError(
                f"unknown objective {self.objective!r}; expected one of {list(OBJECTIVES)}"
            )
        if not 0.0 <= self.rho <= 1.0:
            raise InputError(f"rho must be in [0, 1], got {self.rho}")
        for name in ("max_len", "vocab_size"):
            if getattr(self, name) < 1:
                raise InputError(f"{name} must be >= 1, got {getattr(self, name)}")
        check_ranges(self)
        if self.world_themes and not world_offers(self.world, "themes"):
            raise InputError("world_themes applies to --world cave only")
        if (self.doc_captions > 1 or self.doc_style) and self.views != "next-token":
            raise InputError("doc_captions and doc_style apply to --views next-token only")
        if self.doc_style and not world_offers(self.world, "doc_style"):
            raise InputError("doc_style needs --world cave (styles regenerate captions)")
        self._check_narration()
        parse_sinks(self.log)
        if self.max_len > MAX_LEN:
            raise InputError(f"max_len must be <= {MAX_LEN} tokens, got {self.max_len}")
        if not (math.isfinite(self.whiten_eps) and self.whiten_eps > 0):
            raise InputError(f"whiten_eps must be a finite number > 0, got {self.whiten_eps}")
        if not (math.isfinite(self.beta) and self.beta >= 0):
            raise InputError(f"beta must be a finite number >= 0, got {self.beta}")

    def _check_narration(self) -> None:
        """Narration fields: in range, on a moving world's next-token run, within ``max_len``."""
        if self.narration_len == 0:
            if self.narration_stride != NARRATION_STRIDE:
                check_stride(self.narration_stride)  # a stride out of range is named first
                raise InputError("narration_stride applies to narrations: give narration_len too")
            return
        check_narration(self.narration_len, self.narration_stride)
        if self.corpus is not None:
            raise InputError("narrations tell a moving world's trajectories; a corpus has none "
                             "(use --world moving)")  # fmt: skip
        if not world_offers(self.world, "narration"):
            raise InputError(f"narrations need --world moving (--world {self.world} does not "
                             "move: no trajectory to narrate)")  # fmt: skip
        if self.views != "next-token":
            raise InputError(f"narrations are next-token documents; --views {self.views} takes "
                             "none (use --views next-token)")  # fmt: skip
        if self.doc_captions > 1 or self.doc_style:
            raise InputError("narrations are the documents: give narration_len or doc_captions/"
                             "doc_style, not both")  # fmt: skip
        need = max_narration_tokens(self.narration_len)
        if need > self.max_len:
            raise InputError(
                f"a narration of {self.narration_len} frames is up to {need} tokens, longer than "
                f"max_len {self.max_len} (the model's context): give max_len >= {need}"
            )

    @property
    def steps(self) -> int:
        return math.ceil(self.samples / self.batch_size)

    @property
    def is_lm(self) -> bool:
        return self.views == "next-token"

    def to_dict(self) -> dict[str, Any]:
        """The flat record of ``config.json``'s ``"train"`` (the optimiser's fields in its
        place, between ``batch_size`` and ``max_len``)."""
        d = flat_fields(self)
        # Fields of the fair next-token protocol are written only when set: a config without
        # them serialises (and hashes, e.g. a demo run folder's name) exactly as before.
        for name, default in OPTIONAL_DEFAULTS.items():
            if d[name] == default:
                del d[name]
        if self.corpus is not None:  # a corpus run records no world (prh.training.corpus_record)
            for name in WORLD_FIELDS:
                if d[name] == TrainConfig.__dataclass_fields__[name].default or name == "world":
                    del d[name]
        d["steps"] = self.steps
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrainConfig:
        """The config of a flat record (:meth:`to_dict`; derived keys such as ``steps`` are
        skipped) or of one with a nested ``"optim"``."""
        flat = {**{k: v for k, v in d.items() if k != "optim"}, **d.get("optim", {})}
        known = {k: v for k, v in flat.items() if k in FLAT_KEYS}
        if known.get("corpus") is not None:
            known.setdefault("world", None)  # a corpus run's dict omits its (null) world
        return from_flat(known)


def flat_fields(cfg: TrainConfig) -> dict[str, Any]:
    """Every field of ``cfg`` by its flat name (:data:`FLAT_KEYS`), the optimiser's in place of
    ``optim``, in field order (copies: :func:`dataclasses.asdict`)."""
    out: dict[str, Any] = {}
    for name, value in asdict(cfg).items():
        out.update(value if name == "optim" else {name: value})
    return out


FLAT_KEYS = tuple(flat_fields(TrainConfig()))
"""The names a :class:`TrainConfig` is built from (:func:`from_flat`): its fields, the
optimiser's in place of ``optim``."""


def from_flat(flat: dict[str, Any]) -> TrainConfig:
    """A :class:`TrainConfig` of flat names (:data:`FLAT_KEYS`): the optimiser's fields go to
    its :class:`OptimConfig`, the rest are fields."""
    optim = {k: v for k, v in flat.items() if k in OPTIM_FIELDS}
    rest = {k: v for k, v in flat.items() if k not in OPTIM_FIELDS}
    return TrainConfig(**rest, optim=OptimConfig(**optim))


def train_config(preset: str = "tiny", **overrides: Any) -> TrainConfig:
    """Defaults, then the preset's optimiser defaults, then ``overrides`` by their flat names
    (:data:`FLAT_KEYS`: ``lr=`` sets ``optim.lr``; ``None`` = keep)."""
    if preset not in PRESET_DEFAULTS:
        raise InputError(f"unknown preset {preset!r}; expected one of {sorted(PRESET_DEFAULTS)}")
    unknown = set(overrides) - set(FLAT_KEYS)
    if unknown:
        raise InputError(f"unknown TrainConfig field(s) {sorted(unknown)}")
    given = {k: v for k, v in overrides.items() if v is not None}
    base = {"preset": preset, **PRESET_DEFAULTS[preset]}
    if "corpus" in given:
        base["world"] = None
    return from_flat({**base, **given})


def check_batch(cfg: TrainConfig, mcfg: Any = None) -> None:
    """Refuse a JEPA batch too small to estimate an ``embed_dim`` covariance (``mcfg``: the
    model's :class:`prh.models.ModelConfig`, default the preset's)."""
    from prh.models import model_config  # torch: only when a model is built

    mcfg = mcfg or model_config(cfg.preset, 1, max_len=cfg.max_len, **cfg.model_overrides)
    # Whitening 2B rows in E dims overfits the batch when E is not small against 2B: with
    # E >= B the pairs can be made to coincide exactly, a batch-level collapse.
    if not cfg.is_lm and 2 * cfg.batch_size < 4 * mcfg.embed_dim:
        raise InputError(
            f"batch size {cfg.batch_size} too small to whiten a {mcfg.embed_dim}-dim embedding "
            f"(need 2 x batch >= 4 x embed_dim)"
        )
