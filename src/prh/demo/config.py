"""What ``prh demo`` runs: a config composed of five parts, and three presets.

A :class:`DemoConfig` names the world, the seeds, the frozen encoders and the processes, and
holds one part per thing it configures: :class:`TextRecipe` (how every text encoder trains),
:class:`SweepPlan` (which runs the sweep trains: curves and the law's points),
:class:`ImageRecipe` (the image/sketch encoders), :class:`CaptionRecipe` (the captioners) and
:class:`Measure` (how embeddings are compared). Each part checks its own fields; the config
checks the rules between parts. The presets are small differences from :data:`DEFAULT`
(:meth:`DemoConfig.with_settings`), and :func:`demo_config` takes the flat setting names
(``samples=``, ``image_samples=``, ...), routed to their part by one table (:data:`SETTINGS`).

Budgets (2 cores, no GPU): ``quick`` within 5 minutes, ``default`` (what ``make demo`` runs)
measured at 12 min 45 s wall and 1,336.5 CPU-seconds from an empty folder on 2 quiet cores (commit
8eda0c7; within issue 31's 15 minutes and 1,500 CPU-seconds, which the same recipe missed at 22 min
05 s before the trunk was folded and the spectral draws cached), ``full`` measured at 41 min 48 s
wall and 4,252.7 CPU-seconds from an empty folder on 2 cores (commit 8eda0c7, with
:data:`DEMO_IMAGE_ENCODER`; within issue 31's 60 minutes, which the scratch CNN's recipe missed at
97.9 minutes at commit 4df7d94), then at 71 min 14 s and 7,078.4 CPU-seconds with the literal
step's 131,072-sample runs (commit 8af56ca) on a machine whose unchanged steps took 1.28-1.72x as
long: about 50 minutes on 8eda0c7's machine, an estimate. The sizes below were chosen from
measured costs (``docs/reproduce.md``, section "Demo"): a tiny-preset JEPA sample costs about 3.7
ms of CPU, a next-token document of four captions about 6.8 ms, EfficientNet-Lite0 about 0.15
CPU-seconds per 224 px image, an image/sketch encoder (:data:`DEMO_IMAGE_ENCODER`: frozen
EfficientNet-Lite0 maps under a trained head, the scratch CNN beside it, 25,600 pairs) about 79
seconds wall in the default demo.

- ``quick``: claim 1 only has the figures it needs; claims 2 and 3 are INCONCLUSIVE by their
  rules (one seed, too few held-out points).
- ``default``: every claim's figures at one seed; claims 2 and 3 stay INCONCLUSIVE for the same
  reasons, and the report points to ``--full``; one image encoder (good views) against the text
  encoders (issue 13's pair).
- ``full``: 3 seeds of the good-view and next-token curves, next-token at 4x the good-view
  budget, and 12 held-out law points with repeats: what claims 2 and 3 need; image-good,
  image-bad and sketch-good encoders and the zero-pair captioner.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar

from prh.errors import InputError
from prh.training.image_config import ImageConfig

MODALITY_RUNS = ("image-good", "image-bad", "sketch-good")
"""The image/sketch encoders a demo can train (:data:`prh.demo.protocol.IMAGE_RUNS`)."""


class _Part:
    """A part of :class:`DemoConfig`: its fields' setting names and its own checks."""

    SETTING: ClassVar[dict[str, str]] = {}
    """Field -> setting name, where they differ (``ImageRecipe.lr`` is ``image_lr``)."""

    NESTED: ClassVar[dict[str, tuple[str, ...]]] = {}
    """Field holding a library config -> the fields of it that are settings, by their own
    names (``ImageRecipe.encoder``, an :class:`~prh.training.ImageConfig`: ``backbone``, ...)."""

    ORDER: ClassVar[tuple[str, ...]] = ()
    """The settings' order in :meth:`DemoConfig.to_dict`, where it is not the fields'."""

    @classmethod
    def settings(cls) -> dict[str, str]:
        """Setting name -> its field (``"encoder.backbone"`` for a nested config's field)."""
        out: dict[str, str] = {}
        for f in fields(cls):  # type: ignore[arg-type]
            for path in [f"{f.name}.{n}" for n in cls.NESTED.get(f.name, ())] or [f.name]:
                out[cls.SETTING.get(path, path.rpartition(".")[2])] = path
        return {k: out[k] for k in cls.ORDER} if cls.ORDER else out

    @classmethod
    def setting(cls, name: str) -> str:
        return cls.SETTING.get(name, name)

    def _at_least(self, low: int, *names: str) -> None:
        for f in names:
            if getattr(self, f) < low:
                raise InputError(
                    f"demo: {self.setting(f)} must be >= {low}, got {getattr(self, f)}"
                )


@dataclass(frozen=True)
class TextRecipe(_Part):
    """How every text encoder trains (the cave runner's recipe, :func:`prh.demo.protocol.backend`).

    Attributes
    ----------
    preset : str
        Text model preset of every trained encoder.
    samples : int
        Budget of the good / bad runs (pairs seen); next-token runs see
        ``next_token_factor x samples`` documents.
    batch_size, lr, max_len : int, float, int
        Training recipe (tiny preset defaults; the learning rate is constant after warm-up, so
        that a point of a curve equals a run stopped there). The image runs share the batch.
    train_scenes : int
        Training scenes the text corpus is built from.
    next_token_factor : int
        How many times the good-view budget the next-token runs get (1: equal samples). More
        gives next-token the paper's kind of head start (it gave next-token 42x more samples).
    doc_captions, doc_max_len : int
        The fair next-token protocol: each next-token training row is a document of
        ``doc_captions`` captions of one scene (so a continuation is predictable from its prefix
        only through the scene), of at most ``doc_max_len`` tokens.
    literal_samples : int
        Budget of the literal step's text-good runs, on literal and on partial captions alike,
        trained by the converged recipe (:func:`prh.demo.protocol.converged_backend`: cosine
        decay and a 5% warm-up). ``--full``'s 131,072 carry every mode of ``g*`` on literal
        captions (3 of 3 seeds); the default demo's 32,768, its budget, do not (at 65,536 none of
        3 seeds carried ``g7``; docs/training.md, "The last direction"). The sample-efficiency
        curves keep the sweep's protocol.
    """

    preset: str = "tiny"
    samples: int = 32768
    batch_size: int = 128
    lr: float = 1e-3
    max_len: int = 48
    train_scenes: int = 1944
    next_token_factor: int = 1
    doc_captions: int = 4
    doc_max_len: int = 192
    literal_samples: int = 32768

    def __post_init__(self) -> None:
        self._at_least(1, "samples", "batch_size", "train_scenes", "max_len", "doc_captions",
                       "doc_max_len", "literal_samples")  # fmt: skip
        if not 1 <= self.next_token_factor <= 1000:
            raise InputError(
                f"demo: next_token_factor must be in 1..1000, got {self.next_token_factor}"
            )

    @property
    def nt_samples(self) -> int:
        """The next-token runs' budget: ``next_token_factor x samples``."""
        return self.next_token_factor * self.samples


@dataclass(frozen=True)
class SweepPlan(_Part):
    """Which runs the sweep trains and where their curves are read
    (:func:`prh.demo.protocol.grid`).

    Attributes
    ----------
    eval_every : int
        Samples between two evaluations of a run against the vision features (the curves).
    curve_seeds : int
        Seeds of the good-view and next-token runs (``seed .. seed + curve_seeds - 1``): the
        sample-efficiency ratio's interval needs at least 3.
    law_rhos : tuple of float
        Mixture runs for the law besides rho = 0 (the bad run) and rho = 1 (the good run).
    law_samples : tuple of int
        Fit sample counts of the law (multiples of ``eval_every``).
    heldout_samples : tuple of int
        Off-grid sample counts at which held-out runs are evaluated.
    heldout_runs : int
        Held-out mixture runs at random off-grid rho (fresh seeds), each repeated with another
        seed for the spread.
    """

    eval_every: int = 1024
    curve_seeds: int = 1
    law_rhos: tuple[float, ...] = (0.25, 0.5, 0.75)
    law_samples: tuple[int, ...] = (2048, 4096, 8192, 16384)
    heldout_samples: tuple[int, ...] = (3072, 6144, 12288)
    heldout_runs: int = 2

    def __post_init__(self) -> None:
        self._at_least(1, "eval_every", "curve_seeds")
        if self.curve_seeds >= 1000:
            raise InputError(f"demo: curve_seeds must be < 1000, got {self.curve_seeds}")
        if set(self.law_samples) & set(self.heldout_samples):
            raise InputError("demo: held-out sample counts must be off the fit grid")
        fit_points = (len(self.law_rhos) + 2) * len(self.law_samples)
        if self.heldout_runs * len(self.heldout_samples) > fit_points:
            raise InputError("demo: more held-out points than fit points")

    @property
    def law_run_samples(self) -> int:
        """Budget of the mixture runs: the largest sample count the law needs."""
        return max((*self.law_samples, *self.heldout_samples))


DEMO_IMAGE_ENCODER = ImageConfig(
    render_views=2,
    backbone="efficientnet-lite0",
    freeze_until=15,
    backbone_size=128,
    scratch_branch=True,
    pool="moments",
)
"""The demo's image/sketch encoder (issue 31, docs/training.md "A recipe that learns shape"):
EfficientNet-Lite0 frozen through its last block (its maps computed once per cached view), a
trained head over those maps pooled by their mean and first moments, and the from-scratch CNN
beside it, trained on good views at ``image_lr`` 3e-3. The scratch CNN alone (``backbone=none``)
carries colour and position but no shape mode."""


@dataclass(frozen=True)
class ImageRecipe(_Part):
    """The image/sketch encoders trained apart on their own views (:mod:`prh.demo.modalities`,
    :func:`prh.demo.protocol.image_backend`); their batch is the text recipe's.

    Attributes
    ----------
    modalities : tuple of str
        The runs (:data:`MODALITY_RUNS`: ``image-good``, ``image-bad``, ``sketch-good``),
        compared with every text encoder; empty: the step is skipped.
    samples, lr, train_scenes : int, float, int
        Their recipe (settings ``image_samples``, ``image_lr``, ``image_train_scenes``): pairs
        seen, learning rate and training scenes.
    encoder : ImageConfig
        What every image run is (:class:`prh.training.ImageConfig`, two cached views per
        scene; default :data:`DEMO_IMAGE_ENCODER`); settings ``image_size`` (render side, px),
        ``backbone``, ``freeze_until``, ``backbone_size``, ``scratch_branch``
        (:mod:`prh.models.backbone`) and ``image_pool`` (its ``pool``).
    embed_dim : int
        Setting ``image_embed_dim``: the output width every image/sketch run trains at (0: the
        demo's encoder width, :meth:`DemoConfig.encoder_width`). Wider than that, each run is
        read out to the encoder width by its own positive pairs before anything reads it
        (:func:`prh.training.readout_fit.fit_readout`, stored as the run's ``prh readout``):
        the top cross-view components, with no theory and no held-out state. A whitened JEPA
        wider than the gap holds the top eigenspace without trading a near-cut mode for a simpler
        one below it (docs/training.md, "Wider than the gap"). Needs a moving world.
    """

    SETTING: ClassVar[dict[str, str]] = {
        "samples": "image_samples", "lr": "image_lr", "train_scenes": "image_train_scenes",
        "encoder.pool": "image_pool", "embed_dim": "image_embed_dim",
    }  # fmt: skip
    NESTED: ClassVar[dict[str, tuple[str, ...]]] = {
        "encoder": (
            "image_size", "backbone", "freeze_until", "backbone_size", "scratch_branch", "pool",
        ),
    }  # fmt: skip
    ORDER: ClassVar[tuple[str, ...]] = (
        "modalities", "image_samples", "image_lr", "image_size", "image_train_scenes",
        "backbone", "freeze_until", "backbone_size", "scratch_branch", "image_pool",
        "image_embed_dim",
    )  # fmt: skip

    modalities: tuple[str, ...] = ("image-good",)
    samples: int = 25600
    lr: float = 3e-3
    train_scenes: int = 1944
    encoder: ImageConfig = DEMO_IMAGE_ENCODER  # frozen: one shared default is safe
    embed_dim: int = 0

    def __post_init__(self) -> None:
        unknown = [m for m in self.modalities if m not in MODALITY_RUNS]
        if unknown or len(set(self.modalities)) != len(self.modalities):
            raise InputError(
                f"demo: modalities {list(self.modalities)}: expected distinct names among "
                f"{', '.join(MODALITY_RUNS)}"
            )
        self._at_least(2, "train_scenes")
        self._at_least(0, "embed_dim")


@dataclass(frozen=True)
class CaptionRecipe(_Part):
    """The captioners of the demo folder (:mod:`prh.demo.captioner`).

    Attributes
    ----------
    build : bool
        Build a captioner of the good run into ``OUT/caption`` (setting ``captioner``; so
        ``prh caption --run OUT`` and ``prh serve --run OUT`` accept the demo folder): a map
        fitted on the bridge scenes and a decoder trained for ``decoder_steps`` steps on captions
        of ``decoder_scenes`` scenes; with ``decoder_steps = 0`` the nearest-caption (retrieval)
        captioner, no decoder (those captions are its gallery).
    zero_pair : bool
        Build and score the image-good captioner with zero pairs beside the paired one (setting
        ``zero_pair_captioner``).
    """

    SETTING: ClassVar[dict[str, str]] = {"build": "captioner", "zero_pair": "zero_pair_captioner"}

    build: bool = True
    decoder_steps: int = 400
    decoder_scenes: int = 1944
    zero_pair: bool = False

    def __post_init__(self) -> None:
        self._at_least(0, "decoder_steps")
        self._at_least(1, "decoder_scenes")


@dataclass(frozen=True)
class Measure(_Part):
    """How embeddings are compared and the bridge is tested.

    Attributes
    ----------
    eval_scenes : int
        Held-out scenes (test split) on which alignment is measured and the bridge is tested.
    bridge_scenes : int
        Training-split scenes whose (image, caption) pairs fit the bridge maps.
    k : int
        Mutual-kNN neighbours.
    null, bootstrap : int
        Permutations for the calibrated score and bootstrap resamples for the interval.
    pair_free_samples : bool
        Sample-level pair-free matching as well as class level (seconds per pair).
    spectral_pairs : int
        The most positive pairs each good-view run draws of its own for the spectral pair-free
        map, drawn until every component is separated (:mod:`prh.demo.spectral`; 0: skipped;
        else at least :data:`prh.bridge.spectral.MIN_START`).
    """

    eval_scenes: int = 216
    bridge_scenes: int = 500
    k: int = 10
    null: int = 100
    bootstrap: int = 200
    pair_free_samples: bool = True
    spectral_pairs: int = 8192

    def __post_init__(self) -> None:
        self._at_least(1, "null", "bootstrap", "k")
        self._at_least(0, "spectral_pairs")
        from prh.bridge.spectral import MIN_START

        if 0 < self.spectral_pairs < MIN_START:
            raise InputError(
                f"demo: spectral_pairs {self.spectral_pairs} is below the spectral method's "
                f"minimum of {MIN_START} pairs a side (0 skips it)"
            )
        if self.eval_scenes <= self.k or self.bridge_scenes <= self.k:
            raise InputError(f"demo: need more than k = {self.k} scenes")


PARTS: dict[str, type[_Part]] = {
    "text": TextRecipe, "sweep": SweepPlan, "image": ImageRecipe, "caption": CaptionRecipe,
    "measure": Measure,
}  # fmt: skip
""":class:`DemoConfig`'s attribute -> its part's class."""


@dataclass(frozen=True)
class DemoConfig:
    """Everything that determines the demo's numbers: the world, seeds, frozen encoders and
    processes, and one part per thing configured.

    Attributes
    ----------
    name : str
        ``quick``, ``default`` or ``full`` (for the report).
    world : str
        The world every encoder trains and is measured on (registry name): ``moving`` (default:
        the moving cave, whose good views have a spectral gap, docs/world.md) or ``cave`` (the
        still world).
    control : str
        The world of the control (``""``: none): the text good / bad runs and the image/sketch
        runs again on it at the same budgets and sizes, measured the same way
        (:mod:`prh.demo.control`); the default demo's control is the still ``cave``.
    literal : str
        The literal-caption twin of ``world`` (``""``: none): its states, renders and pair kernel,
        captions that state every factor. A text-good run trains on it at the text-good recipe
        and budget (``curve_seeds`` seeds), judged against the same image encoder as text-good
        (:mod:`prh.demo.literal`; needs the image-good run).
    corpus : str
        A caption corpus with its photos (``""``: none; else ``world`` is ``"corpus"``): the
        path of :func:`prh.data.image_corpus.load_image_corpus` (COCO, Flickr, JSONL), whose
        train split every text encoder trains on and whose test split is held out
        (:mod:`prh.world.corpus`). It has no control, twin, image runs or theory.
    seed, world_seed : int
        Base seed of every run and the world's seed.
    vision, text_baseline : str
        Frozen encoder specs (:func:`prh.encoders.load_encoder`): the image model every text
        encoder is measured against, and the pretrained text baseline.
    workers, threads : int
        Parallel training processes and torch threads in each.
    embed_dim : int
        The JEPA output width of every text, image and sketch encoder it trains (0: each world's
        own: the moving cave's gap ``k = 8``, the theorem's width; the preset's on a world
        without a gap). The control sets it to the main runs' width (:meth:`control_config`).
    text, sweep, image, caption, measure
        The parts: :class:`TextRecipe`, :class:`SweepPlan`, :class:`ImageRecipe`,
        :class:`CaptionRecipe`, :class:`Measure`.
    """

    name: str = "default"
    world: str = "moving"
    control: str = "cave"
    literal: str = "moving-literal"
    corpus: str = ""
    seed: int = 0
    world_seed: int = 0
    vision: str = "efficientnet-lite0"
    text_baseline: str = "minilm"
    workers: int = 2
    threads: int = 1
    embed_dim: int = 0
    text: TextRecipe = field(default_factory=TextRecipe)
    sweep: SweepPlan = field(default_factory=SweepPlan)
    image: ImageRecipe = field(default_factory=ImageRecipe)
    caption: CaptionRecipe = field(default_factory=CaptionRecipe)
    measure: Measure = field(default_factory=Measure)

    def __post_init__(self) -> None:
        for f in ("seed", "world_seed", "embed_dim"):
            if getattr(self, f) < 0:
                raise InputError(f"demo: {f} must be >= 0, got {getattr(self, f)}")
        for f in ("workers", "threads"):
            if getattr(self, f) < 1:
                raise InputError(f"demo: {f} must be >= 1, got {getattr(self, f)}")
        self._check_budgets()
        self._check_world()
        if self.image.samples < 1 or self.image.samples % self.text.batch_size:
            raise InputError(
                f"demo: image_samples ({self.image.samples}) must be a positive multiple of the "
                f"batch ({self.text.batch_size})"
            )
        if self.caption.zero_pair and "image-good" not in self.image.modalities:
            raise InputError("demo: zero_pair_captioner needs the image-good run in modalities")
        if self.image.embed_dim and self.image.embed_dim < self.encoder_width():
            raise InputError(
                f"demo: image_embed_dim {self.image.embed_dim} is below the encoders' width "
                f"{self.encoder_width()}: a read-out keeps that many directions (0: train at it)"
            )

    def _check_budgets(self) -> None:
        """The sweep's sample counts against the text recipe's budget and batch."""
        samples, every, batch = self.text.samples, self.sweep.eval_every, self.text.batch_size
        if samples % every or every % batch:
            raise InputError(
                f"demo: samples ({samples}) must be a multiple of eval_every ({every}), itself "
                f"a multiple of the batch ({batch})"
            )
        for s in (*self.sweep.law_samples, *self.sweep.heldout_samples):
            if s % every or s > samples:
                raise InputError(
                    f"demo: law sample count {s} must be a multiple of eval_every ({every}) and "
                    f"at most samples ({samples})"
                )
        if self.text.literal_samples % every:
            raise InputError(
                f"demo: literal_samples ({self.text.literal_samples}) must be a multiple of "
                f"eval_every ({every})"
            )

    def _check_world(self) -> None:
        """The world and the control's are registry names, and differ (sizes against the
        worlds' splits: :func:`prh.demo.world.check_world_sizes`, before any work)."""
        from prh.world.registry import world_names

        names = world_names()
        if self.world not in names:
            raise InputError(f"demo: unknown world {self.world!r}; expected one of {names}")
        if self.control and (self.control not in names or self.control == self.world):
            raise InputError(
                f"demo: control {self.control!r}: expected '' (none) or a world other than "
                f"{self.world!r} among {names}"
            )
        if self.literal and (self.literal not in names or self.literal == self.world):
            raise InputError(
                f"demo: literal {self.literal!r}: expected '' (none) or the literal-caption twin "
                f"of {self.world!r} among {names}"
            )
        self._check_corpus()

    def _check_corpus(self) -> None:
        """A corpus is world ``corpus``, and the steps it cannot feed are off (the control and
        the twin are generated worlds; an image/sketch run trains on a world's renders)."""
        from prh.world import world_offers

        if bool(self.corpus) != world_offers(self.world, "spec"):
            raise InputError("demo: give a corpus path exactly when the world is 'corpus' "
                             f"(world {self.world!r}, corpus {self.corpus!r})")  # fmt: skip
        if self.corpus and (self.control or self.literal or self.image.modalities):
            raise InputError(
                "demo: a corpus has no control world, literal twin or image/sketch runs (they "
                "train on a generated world's renders); set control, literal and modalities off"
            )

    def with_settings(self, **settings: Any) -> DemoConfig:
        """This config with ``settings`` by their flat names (:data:`SETTINGS`: ``samples``,
        ``image_lr``, ``captioner``, ...), each routed to its part; every part and the whole
        checked once, with all of them applied."""
        _refuse_unknown(settings)
        top: dict[str, Any] = {}
        parts: dict[str, dict[str, Any]] = {}
        for name, value in settings.items():
            part, f = SETTINGS[name]
            (parts.setdefault(part, {}) if part else top)[f] = value
        for part, changes in parts.items():
            top[part] = _replace_paths(getattr(self, part), changes)
        return replace(self, **top)

    def control_config(self) -> DemoConfig:
        """The control's config: the same budgets and sizes on ``control``, one seed, no
        captioner and no control of its own (:mod:`prh.demo.control` trains its good and bad
        text runs and its image/sketch runs). Its encoders have the main runs' output width
        (:meth:`encoder_width`), not the control world's default: the same encoders. Its
        image/sketch runs train at that width even where the main ones are wider
        (``image_embed_dim``): a read-out needs lag pairs, which a still world does not have."""
        if not self.control:
            raise InputError("demo: this config has no control world")
        return self.with_settings(
            name=f"{self.name}-control", world=self.control, control="", literal="",
            curve_seeds=1, captioner=False, zero_pair_captioner=False,
            embed_dim=self.encoder_width(), image_embed_dim=0,
        )  # fmt: skip

    def encoder_width(self) -> int:
        """The JEPA output width of the encoders this config trains: ``embed_dim`` when set,
        else what the world sets for its text runs (:func:`prh.training.data.world_model_defaults`:
        its gap ``k``), else the text preset's width."""
        from prh.models.config import PRESETS
        from prh.training import train_config
        from prh.training.data import world_model_defaults

        if self.embed_dim:
            return self.embed_dim
        preset = PRESETS[self.text.preset]["embed_dim"]
        if self.corpus:  # a caption corpus has no gap
            return preset
        train = train_config(self.text.preset, world=self.world, world_seed=self.world_seed)
        return int(world_model_defaults(train).get("embed_dim", preset))

    def reads_out_images(self) -> bool:
        """Whether the image/sketch runs train wider than :meth:`encoder_width` and are read
        out to it (``image_embed_dim``)."""
        return self.image.embed_dim > self.encoder_width()

    def literal_config(self) -> DemoConfig:
        """The literal twin's config: the text recipe, budgets, sizes and seeds on ``literal``,
        no control, no twin, no captioner, no image run and no next-token documents of its own
        (:mod:`prh.demo.literal` trains its text-good runs alone and compares them with the main
        demo's image-good; the twin does not move, so it has no narrations to tell)."""
        if not self.literal:
            raise InputError("demo: this config has no literal-caption world")
        return self.with_settings(
            name=f"{self.name}-literal", world=self.literal, control="", literal="",
            modalities=(), captioner=False, zero_pair_captioner=False, doc_captions=1,
            samples=self.text.literal_samples,
        )  # fmt: skip

    def partial_config(self) -> DemoConfig:
        """The literal step's partial-caption side: :meth:`literal_config` on ``world`` itself
        (its text-good runs at ``literal_samples`` with the literal runs' recipe, so that the two
        caption kinds differ in their captions alone)."""
        return replace(self.literal_config(), name=f"{self.name}-partial", world=self.world)

    def to_dict(self) -> dict[str, Any]:
        """Every setting by its flat name (what ``demo.json`` and ``summary.json`` record, and
        what the report reads; :func:`dataclasses.asdict` gives the nested form)."""
        return {
            name: _get_path(getattr(self, part), f) if part else getattr(self, f)
            for name, (part, f) in SETTINGS.items()
        }

    def digest(self, *settings: str) -> str:
        """A short hash of the named settings (flat names; when none, all but :data:`ADDED`):
        names cached files."""
        d = self.to_dict()
        d = {f: d[f] for f in settings} if settings else {f: d[f] for f in d if f not in ADDED}
        blob = json.dumps(d, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:10]


SETTINGS: dict[str, tuple[str, str]] = {
    **{f.name: ("", f.name) for f in fields(DemoConfig) if f.name not in PARTS},
    **{name: (part, path) for part, cls in PARTS.items() for name, path in cls.settings().items()},
}
"""Flat setting name -> (part, its field) (part ``""``: a field of :class:`DemoConfig` itself;
``"encoder.backbone"``: a field of a library config the part holds): the names
:func:`demo_config`, :meth:`DemoConfig.with_settings`, :meth:`DemoConfig.to_dict` and
:meth:`DemoConfig.digest` take."""


ADDED = ("literal", "corpus", "embed_dim", "literal_samples", "image_embed_dim")
"""Settings added after the demo folders' step-cost files were named (``costs-<digest>``, the
one cache named by every setting): left out of :meth:`DemoConfig.digest` of all settings, so a
folder keeps the costs it recorded; a step they add records its cost under its own name."""


def _get_path(obj: Any, path: str) -> Any:
    for name in path.split("."):
        obj = getattr(obj, name)
    return obj


def _replace_paths(obj: Any, changes: dict[str, Any]) -> Any:
    """``obj`` with ``changes`` by field paths (``"encoder.backbone"``: a nested config's)."""
    nested: dict[str, dict[str, Any]] = {}
    own = {}
    for path, value in changes.items():
        head, dot, rest = path.partition(".")
        if dot:
            nested.setdefault(head, {})[rest] = value
        else:
            own[path] = value
    own.update({k: _replace_paths(getattr(obj, k), v) for k, v in nested.items()})
    return replace(obj, **own)


def _refuse_unknown(settings: dict[str, Any]) -> None:
    unknown = set(settings) - set(SETTINGS)
    if unknown:
        raise InputError(f"demo: unknown setting(s) {sorted(unknown)}")


DEFAULT = DemoConfig()
FULL = DEFAULT.with_settings(
    name="full",
    next_token_factor=4,
    curve_seeds=3,
    heldout_runs=4,
    modalities=MODALITY_RUNS,
    zero_pair_captioner=True,
    literal_samples=131_072,  # the literal step trained to the optimum (docs/training.md)
)
QUICK = DEFAULT.with_settings(
    name="quick",
    eval_scenes=200,
    bridge_scenes=200,
    samples=8192,
    law_rhos=(0.5,),
    law_samples=(2048, 4096, 8192),
    heldout_samples=(3072, 6144),
    heldout_runs=1,
    null=50,
    bootstrap=100,
    decoder_steps=0,  # a decoder alone would take most of the 5 minutes: nearest caption
    decoder_scenes=1000,
    modalities=(),  # one image encoder alone takes about 6 minutes on 2 cores
    literal="",  # its comparison needs the image encoder
)


SCALE = DEFAULT.with_settings(
    name="scale",
    control="",
    literal="",
    modalities=(),  # a corpus (what this preset is for) trains no image/sketch run
    preset="small",  # 12 layers, d_model 384: the text model a GPU trains in minutes
    samples=524_288,  # 4.4 passes over COCO 2017's 118,287 train photos
    batch_size=512,
    max_len=64,
    doc_max_len=256,
    eval_every=32_768,
    curve_seeds=3,
    law_samples=(65_536, 131_072, 262_144, 524_288),
    heldout_samples=(98_304, 196_608, 393_216),
    heldout_runs=4,
    eval_scenes=5_000,  # COCO 2017 val, whole
    bridge_scenes=10_000,
    null=200,
    bootstrap=500,
    pair_free_samples=False,  # seconds per pair at 5,000 held-out images
    decoder_scenes=20_000,
    decoder_steps=2_000,
    workers=1,  # one GPU: one run at a time, each on the whole device
    threads=8,
)
"""One GPU on a photo corpus (COCO 2017, Flickr30k): budgets in ``docs/caption.md``."""


PRESETS = {"quick": QUICK, "default": DEFAULT, "full": FULL, "scale": SCALE}

CORPUS_OFF = {"control": "", "literal": "", "modalities": (), "zero_pair_captioner": False}
"""What a corpus demo turns off (:meth:`DemoConfig._check_corpus`)."""


def demo_config(preset: str = "default", **overrides: Any) -> DemoConfig:
    """The ``quick``, ``default`` or ``full`` preset with ``overrides`` by their flat setting
    names (:data:`SETTINGS`; ``None`` values keep the preset). The text model preset, a setting
    whose name this function's first argument takes, is ``with_settings(preset=...)``."""
    if preset not in PRESETS:
        raise InputError(f"demo: unknown preset {preset!r}; expected one of {sorted(PRESETS)}")
    base = PRESETS[preset]
    _refuse_unknown(overrides)
    given = {k: v for k, v in overrides.items() if v is not None}
    if given.get("corpus"):  # a corpus is its own world, without what needs a generated one
        given = {**CORPUS_OFF, "world": "corpus", **given}
    world = given.get("world")
    if world is not None and world == base.control and "control" not in given:
        given["control"] = ""  # the preset's control world is now the world: no control
    if world is not None and world != base.world and "literal" not in given:
        given["literal"] = ""  # the preset's literal twin is the preset world's, not this one's
    return base.with_settings(**given)
