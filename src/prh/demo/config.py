"""What ``prh demo`` runs: one frozen dataclass and three presets.

Budgets (2 cores, no GPU): ``quick`` within 5 minutes, ``default`` (what ``make demo`` runs)
within 20 minutes, ``full`` about 65 minutes. The sizes below were chosen from measured costs
(``docs/reproduce.md``, section "Demo"): a tiny-preset JEPA sample costs about 3.7 ms of CPU, a
next-token document of four captions about 6.8 ms, EfficientNet-Lite0 about 0.15 CPU-seconds per
224 px image, an image/sketch encoder (fine-tuned EfficientNet-Lite0 tail, 25,600 pairs) about 11
CPU-minutes.

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
from dataclasses import asdict, dataclass, replace
from typing import Any

from prh.errors import InputError

MODALITY_RUNS = ("image-good", "image-bad", "sketch-good")
"""The image/sketch encoders a demo can train (:data:`prh.demo.protocol.IMAGE_RUNS`)."""


@dataclass(frozen=True)
class DemoConfig:
    """Everything that determines the demo's numbers.

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
    seed, world_seed : int
        Base seed of every run and the world's seed.
    preset : str
        Text model preset of every trained encoder.
    vision, text_baseline : str
        Frozen encoder specs (:func:`prh.encoders.load_encoder`): the image model every text
        encoder is measured against, and the pretrained text baseline.
    eval_scenes : int
        Held-out scenes (test split) on which alignment is measured and the bridge is tested.
    bridge_scenes : int
        Training-split scenes whose (image, caption) pairs fit the bridge maps.
    samples : int
        Budget of the good / bad runs (pairs seen); next-token runs see
        ``next_token_factor x samples`` documents.
    next_token_factor : int
        How many times the good-view budget the next-token runs get (1: equal samples). More
        gives next-token the paper's kind of head start (it gave next-token 42x more samples).
    curve_seeds : int
        Seeds of the good-view and next-token runs (``seed .. seed + curve_seeds - 1``): the
        sample-efficiency ratio's interval needs at least 3.
    doc_captions, doc_max_len : int
        The fair next-token protocol: each next-token training row is a document of
        ``doc_captions`` captions of one scene (so a continuation is predictable from its prefix
        only through the scene), of at most ``doc_max_len`` tokens.
    eval_every : int
        Samples between two evaluations of a run against the vision features (the curves).
    law_rhos : tuple of float
        Mixture runs for the law besides rho = 0 (the bad run) and rho = 1 (the good run).
    law_samples : tuple of int
        Fit sample counts of the law (multiples of ``eval_every``).
    heldout_samples : tuple of int
        Off-grid sample counts at which held-out runs are evaluated.
    heldout_runs : int
        Held-out mixture runs at random off-grid rho (fresh seeds), each repeated with another
        seed for the spread.
    null, bootstrap : int
        Permutations for the calibrated score and bootstrap resamples for the interval.
    k : int
        Mutual-kNN neighbours.
    train_scenes : int
        Training scenes the text corpus is built from.
    batch_size, lr, max_len : int, float, int
        Training recipe (tiny preset defaults; the learning rate is constant after warm-up, so
        that a point of a curve equals a run stopped there).
    workers, threads : int
        Parallel training processes and torch threads in each.
    captioner : bool
        Build a captioner of the good run into ``OUT/caption`` (so ``prh caption --run OUT`` and
        ``prh serve --run OUT`` accept the demo folder): a map fitted on the bridge scenes and a
        decoder trained for ``decoder_steps`` steps on captions of ``decoder_scenes`` scenes; with
        ``decoder_steps = 0`` the nearest-caption (retrieval) captioner, no decoder (those
        captions are its gallery).
    modalities : tuple of str
        Image/sketch encoders trained apart on their own views (:data:`MODALITY_RUNS`:
        ``image-good``, ``image-bad``, ``sketch-good``) and compared with every text encoder
        (:mod:`prh.demo.modalities`); empty: the step is skipped.
    image_samples, image_lr, image_size, image_train_scenes : int, float, int, int
        Their recipe: pairs seen, learning rate, render side (px) and training scenes (2 cached
        views each), batch ``batch_size``.
    backbone, freeze_until, backbone_size, scratch_branch : str, int, int, bool
        The pretrained backbone, its last frozen block, the side its input is resized to, and
        whether a from-scratch CNN branch runs beside it (:mod:`prh.models.backbone`).
    pair_free_samples : bool
        Sample-level pair-free matching as well as class level (seconds per pair).
    zero_pair_captioner : bool
        Build and score the image-good captioner with zero pairs beside the paired one.
    spectral_pairs : int
        Positive pairs each good-view run draws of its own for the spectral pair-free map
        (:mod:`prh.demo.spectral`; 0: skipped).
    """

    name: str = "default"
    world: str = "moving"
    control: str = "cave"
    seed: int = 0
    world_seed: int = 0
    preset: str = "tiny"
    vision: str = "efficientnet-lite0"
    text_baseline: str = "minilm"
    eval_scenes: int = 216
    bridge_scenes: int = 500
    samples: int = 32768
    next_token_factor: int = 1
    curve_seeds: int = 1
    doc_captions: int = 4
    doc_max_len: int = 192
    eval_every: int = 1024
    law_rhos: tuple[float, ...] = (0.25, 0.5, 0.75)
    law_samples: tuple[int, ...] = (2048, 4096, 8192, 16384)
    heldout_samples: tuple[int, ...] = (3072, 6144, 12288)
    heldout_runs: int = 2
    null: int = 100
    bootstrap: int = 200
    k: int = 10
    train_scenes: int = 1944
    batch_size: int = 128
    lr: float = 1e-3
    max_len: int = 48
    workers: int = 2
    threads: int = 1
    captioner: bool = True
    decoder_steps: int = 400
    decoder_scenes: int = 1944
    modalities: tuple[str, ...] = ("image-good",)
    image_samples: int = 25600
    image_lr: float = 3e-4
    image_size: int = 64
    image_train_scenes: int = 1944
    backbone: str = "none"
    freeze_until: int = 10
    backbone_size: int = 128
    scratch_branch: bool = False
    pair_free_samples: bool = True
    zero_pair_captioner: bool = False
    spectral_pairs: int = 8192

    def __post_init__(self) -> None:
        for f in ("seed", "world_seed", "decoder_steps", "spectral_pairs"):
            if getattr(self, f) < 0:
                raise InputError(f"demo: {f} must be >= 0, got {getattr(self, f)}")
        for f in ("samples", "eval_every", "batch_size", "workers", "threads", "null",
                  "bootstrap", "k", "train_scenes", "decoder_scenes", "max_len", "curve_seeds",
                  "doc_captions", "doc_max_len"):  # fmt: skip
            if getattr(self, f) < 1:
                raise InputError(f"demo: {f} must be >= 1, got {getattr(self, f)}")
        if self.samples % self.eval_every or self.eval_every % self.batch_size:
            raise InputError(
                f"demo: samples ({self.samples}) must be a multiple of eval_every "
                f"({self.eval_every}), itself a multiple of the batch ({self.batch_size})"
            )
        if not 1 <= self.next_token_factor <= 1000:
            raise InputError(
                f"demo: next_token_factor must be in 1..1000, got {self.next_token_factor}"
            )
        if self.curve_seeds >= 1000:
            raise InputError(f"demo: curve_seeds must be < 1000, got {self.curve_seeds}")
        for s in (*self.law_samples, *self.heldout_samples):
            if s % self.eval_every or s > self.samples:
                raise InputError(
                    f"demo: law sample count {s} must be a multiple of eval_every "
                    f"({self.eval_every}) and at most samples ({self.samples})"
                )
        if set(self.law_samples) & set(self.heldout_samples):
            raise InputError("demo: held-out sample counts must be off the fit grid")
        if self.heldout_runs * len(self.heldout_samples) > (len(self.law_rhos) + 2) * len(
            self.law_samples
        ):
            raise InputError("demo: more held-out points than fit points")
        self._check_world()
        self._check_modalities()
        if self.eval_scenes <= self.k or self.bridge_scenes <= self.k:
            raise InputError(f"demo: need more than k = {self.k} scenes")

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

    def control_config(self) -> DemoConfig:
        """The control's config: the same budgets and sizes on ``control``, one seed, no
        captioner and no control of its own (:mod:`prh.demo.control` trains its good and bad
        text runs and its image/sketch runs)."""
        if not self.control:
            raise InputError("demo: this config has no control world")
        return replace(
            self, name=f"{self.name}-control", world=self.control, control="",
            curve_seeds=1, captioner=False, zero_pair_captioner=False,
        )  # fmt: skip

    def _check_modalities(self) -> None:
        """The image, sketch and captioner settings (issue 13's step)."""
        unknown = [m for m in self.modalities if m not in MODALITY_RUNS]
        if unknown or len(set(self.modalities)) != len(self.modalities):
            raise InputError(
                f"demo: modalities {list(self.modalities)}: expected distinct names among "
                f"{', '.join(MODALITY_RUNS)}"
            )
        if self.image_samples < 1 or self.image_samples % self.batch_size:
            raise InputError(
                f"demo: image_samples ({self.image_samples}) must be a positive multiple of the "
                f"batch ({self.batch_size})"
            )
        if self.image_train_scenes < 2:
            raise InputError(
                f"demo: image_train_scenes must be >= 2, got {self.image_train_scenes}"
            )
        if self.zero_pair_captioner and "image-good" not in self.modalities:
            raise InputError("demo: zero_pair_captioner needs the image-good run in modalities")

    @property
    def nt_samples(self) -> int:
        """The next-token runs' budget: ``next_token_factor x samples``."""
        return self.next_token_factor * self.samples

    @property
    def law_run_samples(self) -> int:
        """Budget of the mixture runs: the largest sample count the law needs."""
        return max((*self.law_samples, *self.heldout_samples))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def digest(self, *fields: str) -> str:
        """A short hash of the named fields (all when none): names cached files."""
        d = self.to_dict()
        if fields:
            d = {f: d[f] for f in fields}
        blob = json.dumps(d, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:10]


DEFAULT = DemoConfig()
FULL = DemoConfig(
    name="full",
    next_token_factor=4,
    curve_seeds=3,
    heldout_runs=4,
    modalities=("image-good", "image-bad", "sketch-good"),
    zero_pair_captioner=True,
)
QUICK = DemoConfig(
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
)


PRESETS = {"quick": QUICK, "default": DEFAULT, "full": FULL}


def demo_config(preset: str = "default", **overrides: Any) -> DemoConfig:
    """The ``quick``, ``default`` or ``full`` preset with ``overrides`` (``None`` values keep the
    preset)."""
    if preset not in PRESETS:
        raise InputError(f"demo: unknown preset {preset!r}; expected one of {sorted(PRESETS)}")
    base = PRESETS[preset]
    unknown = set(overrides) - set(DemoConfig.__dataclass_fields__)
    if unknown:
        raise InputError(f"demo: unknown setting(s) {sorted(unknown)}")
    given = {k: v for k, v in overrides.items() if v is not None}
    if given.get("world") == base.control and "control" not in given:
        given["control"] = ""  # the preset's control world is now the world: no control
    return replace(base, **given)
