"""An image run's ``(TrainConfig, ImageConfig)`` from layers: the image run's defaults < config
file < ``--set`` < flags, as :mod:`prh.training.config_layers` does for text runs.

Keys are the :class:`~prh.training.TrainConfig` keys an image or sketch run takes (every flat key
of :func:`~prh.training.config_layers.known_keys` but the text-only ones, :data:`TEXT_ONLY`, and
the ``model.*`` shape keys other than ``model.embed_dim``, the JEPA's output width) and the
:class:`~prh.training.ImageConfig` fields (``image_size``, ``render_views``, ``cache_dir``,
``backbone``, ``freeze_until``, ...). An image run's saved ``config.json`` is a config file as it
stands: its ``"train"`` and ``"image"`` sections give the keys (an output width it was given, in
``model_overrides``, as ``model.embed_dim``); the text-only keys its ``"train"`` section records at
their defaults, and its ``"model"`` section (derived from the preset and the image settings), are
skipped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from prh.errors import InputError
from prh.training.config import TrainConfig
from prh.training.config_layers import check_type, known_keys, layered_config, merge, parse_sets
from prh.training.image_config import DEFAULT_TRAIN_SCENES, ImageConfig

# TrainConfig keys that only text runs read (the vocabulary, sequence length, corpus and the
# text world's documents): an image layer refuses them, a stored image run's are skipped.
TEXT_ONLY = ("vocab_size", "max_len", "corpus", "world_themes", "theme_strength",
             "doc_captions", "doc_style", "narration_len", "narration_stride")  # fmt: skip
IMAGE_FIELDS = tuple(f.name for f in fields(ImageConfig))
WIDTH = "model.embed_dim"  # the one model key an image run takes: its JEPA's output width
# What an image run starts from when no layer says otherwise (the flags' defaults).
IMAGE_RUN_DEFAULTS = {"world": "cave", "train_scenes": DEFAULT_TRAIN_SCENES}


def image_keys() -> dict[str, str]:
    """``{key: type}`` of every key an image run's layer may set."""
    keys = known_keys()
    train = {k: t for k, t in keys.items() if k not in TEXT_ONLY and "." not in k}
    return {**train, WIDTH: keys[WIDTH], **{f.name: str(f.type) for f in fields(ImageConfig)}}


def _refusal(key: str, where: str) -> InputError:
    if key in known_keys():
        return InputError(f"{where}: {key} is a setting of text runs, not of image runs")
    return InputError(f"{where}: unknown key {key!r}; known keys: {', '.join(image_keys())}")


def check_image_kind(d: Mapping[str, Any], where: str) -> None:
    """Refuse a text run's ``config.json`` (a ``"train"`` section and no ``"image"``)."""
    if isinstance(d.get("train"), dict) and not isinstance(d.get("image"), dict):
        raise InputError(f"{where}: the config of a text run; an image run's --config takes an "
                         "image run's config.json or flat keys")  # fmt: skip


def flatten_image(d: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A config mapping (flat keys, or an image run's ``{"modality", "train", "image",
    "model"}``) as flat keys, type-checked; text-only and unknown keys refused."""
    if isinstance(d.get("image"), dict):  # a stored image run: its derived parts skipped
        skip = (*TEXT_ONLY, "steps", "model_overrides")  # recorded or derived, not settings
        stored = d.get("train") or {}
        train = {k: v for k, v in stored.items() if k not in skip}
        width = (stored.get("model_overrides") or {}).get("embed_dim")
        d = {**train, **d["image"], **({WIDTH: width} if width is not None else {})}
    known, out = image_keys(), {}
    for key, value in d.items():
        if key not in known:
            raise _refusal(key, where)
        out[key] = check_type(key, known[key], value, where)
    return out


def parse_image_sets(items: Sequence[str]) -> dict[str, Any]:
    """``--set key=value`` items of an image run as flat keys, each parsed by its key's type."""
    return parse_sets(items, image_keys(), _refusal)


def image_layered_configs(
    layers: Sequence[Mapping[str, Any]],
) -> tuple[TrainConfig, ImageConfig]:
    """The run's configs of flat-key ``layers`` (lowest first) over :data:`IMAGE_RUN_DEFAULTS`:
    the image keys go to the :class:`ImageConfig`, the rest through
    :func:`~prh.training.config_layers.layered_config`."""
    from dataclasses import replace

    layers = [IMAGE_RUN_DEFAULTS, *layers]
    merged = merge(layers)
    image = {k: v for k, v in merged.items() if k in IMAGE_FIELDS}
    own = (*IMAGE_FIELDS, WIDTH)  # the width is set as given, not against a text preset's
    train = layered_config([{k: v for k, v in layer.items() if k not in own} for layer in layers])
    if merged.get(WIDTH) is not None:
        train = replace(train, model_overrides={**train.model_overrides,
                                                "embed_dim": merged[WIDTH]})  # fmt: skip
    return train, ImageConfig(**image)


def flat_image_config(train: TrainConfig, image: ImageConfig) -> dict[str, Any]:
    """An image run's configs as the flat keys its ``--config`` reads back (``--print-config``):
    the :class:`TrainConfig` keys an image run takes, then the :class:`ImageConfig` fields."""
    from prh.training.config import flat_fields

    keep = image_keys()
    kept = {k: v for k, v in flat_fields(train).items() if k in keep}
    width = train.model_overrides.get("embed_dim")
    return {**kept, **({WIDTH: width} if width is not None else {}), **image.to_dict()}


def print_image_config(train: TrainConfig, image: ImageConfig) -> int:
    """Print :func:`flat_image_config` as JSON (a ``--config`` file of an image run); 0."""
    import json

    print(json.dumps(flat_image_config(train, image), indent=2))
    return 0
