"""A :class:`~prh.training.config.TrainConfig` from layers: preset < config file < ``--set`` <
flags, each layer a flat ``{key: value}`` over the keys of :func:`known_keys`.

Keys are the ``TrainConfig`` fields and ``model.<field>`` for the :class:`prh.models.ModelConfig`
fields a run may override (``model.d_model``, ``model.n_layers``, ...). A run's saved
``config.json`` is a config file as it stands: its ``"train"`` section gives the fields, its
``"model"`` section the model keys (a value equal to the preset's is no override), its
``"corpus"`` record and the derived ``train.steps``, ``model.vocab_size`` and ``model.max_len``
are skipped.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from prh.errors import InputError
from prh.jsonio import read_json
from prh.training.config import PRESET_DEFAULTS, OptimConfig, TrainConfig, from_flat

# Written by a run, recomputed from the other keys: accepted in a file, never applied.
DERIVED = ("steps", "model.vocab_size", "model.max_len")
MODEL_SKIP = ("vocab_size", "max_len")  # from the tokenizer and TrainConfig.max_len
SOURCES = (("corpus", "world"), ("world", "corpus"))  # a run reads one of the two


def known_keys() -> dict[str, str]:
    """``{key: type}`` of every settable key (type as annotated: ``int``, ``float``, ``bool``,
    ``str``, ``str | None``)."""
    from prh.models import ModelConfig

    out: dict[str, str] = {}
    for f in fields(TrainConfig):
        if f.name == "optim":
            out.update({g.name: str(g.type) for g in fields(OptimConfig)})
        elif f.name != "model_overrides":
            out[f.name] = str(f.type)
    for f in fields(ModelConfig):
        if f.name not in MODEL_SKIP:
            out[f"model.{f.name}"] = str(f.type)
    return out


def unknown_key(key: str, where: str) -> InputError:
    """The one-line refusal of a key: it, and the keys there are."""
    return InputError(f"{where}: unknown key {key!r}; known keys: {', '.join(known_keys())}")


def parse_value(kind: str, text: str) -> Any:
    """``text`` as a value of the annotated type ``kind`` (:class:`ValueError` when it is not:
    an int, a finite float, true/false, a string; ``none``/``null`` for an optional)."""
    if "None" in kind and text.lower() in ("none", "null"):
        return None
    if kind == "bool":
        lowered = text.lower()
        if lowered not in ("true", "false", "1", "0", "yes", "no"):
            raise ValueError(f"expected true or false, got {text!r}")
        return lowered in ("true", "1", "yes")
    if kind == "int":
        return int(text)
    if kind == "float":
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(f"expected a finite number, got {text!r}")
        return value
    return text


def check_type(key: str, kind: str, value: Any, where: str) -> Any:
    """A JSON value of ``key`` checked against its type (an int is a float too)."""
    ok = {
        "bool": isinstance(value, bool),
        "int": isinstance(value, int) and not isinstance(value, bool),
        "float": isinstance(value, (int, float)) and not isinstance(value, bool),
        "str": isinstance(value, str),
    }.get(kind.replace(" | None", ""), True)
    if not ok and not (value is None and "None" in kind):
        raise InputError(f"{where}: {key} is {kind}, got {json.dumps(value)}")
    return float(value) if kind == "float" else value


def flatten(d: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A config mapping (flat keys, or a run's ``{"train", "model", "corpus"}``) as flat keys,
    type-checked; unknown keys refused."""
    known, out = known_keys(), {}
    items = list(d.items())
    for key, value in items:
        if key == "corpus" and isinstance(value, dict):
            continue  # a run's record of its corpus (the path is train.corpus)
        if key in ("train", "model", "model_overrides") and isinstance(value, dict):
            pre = "" if key == "train" else "model."
            items += [(pre + k, v) for k, v in value.items()]
            continue
        if key in DERIVED:
            continue
        if key not in known:
            raise unknown_key(key, where)
        out[key] = check_type(key, known[key], value, where)
    return out


def read_config_file(
    path: str | os.PathLike[str],
    check: Callable[[dict[str, Any], str], None] | None = None,
    flat: Callable[[Mapping[str, Any], str], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The flat keys of a JSON or YAML (``.yaml``, ``.yml``) config file (``--config FILE``);
    ``check(mapping, where)`` sees the file's mapping first (the command line refuses a config
    of another run kind there, naming the kind); ``flat`` turns it into keys (default
    :func:`flatten`, a text run's; an image run's is
    :func:`prh.training.image_layers.flatten_image`)."""
    where = f"--config {path}"
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{where}: {'is a folder' if p.is_dir() else 'no such file'}")
    yaml = p.suffix.lower() in (".yaml", ".yml")
    try:
        d = _read_yaml(p.read_text(encoding="utf-8"), where) if yaml else read_json(p)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{where}: not JSON ({e})") from None
    if not isinstance(d, dict):
        kind = "a YAML mapping" if yaml else "a JSON object"
        raise InputError(f"{where}: expected {kind}, got {type(d).__name__}")
    if check is not None:
        check(d, where)
    return (flat or flatten)(d, where)


_YAML_FLOAT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")


def _read_yaml(text: str, where: str) -> Any:
    """A YAML document (``yaml.safe_load``: plain data, no tags). PyYAML reads ``1e-3`` (no
    dot) as a string, YAML 1.2 and JSON as a number: read such strings as numbers."""
    from prh.errors import hint_extras

    yaml = hint_extras(importlib.import_module)("yaml")  # the `yaml` extra (pyyaml)
    try:
        d = yaml.safe_load(text)
    except yaml.YAMLError as e:
        first = str(e).strip().splitlines()[0]
        raise InputError(f"{where}: not YAML ({first})") from None
    if isinstance(d, dict):
        return {k: _number(v) for k, v in d.items()}
    return d


def _number(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _number(v) for k, v in value.items()}
    if isinstance(value, str) and _YAML_FLOAT.fullmatch(value):
        return float(value)
    return value


def parse_sets(
    items: Sequence[str],
    known: Mapping[str, str] | None = None,
    refuse: Callable[[str, str], InputError] = unknown_key,
) -> dict[str, Any]:
    """``--set key=value`` items as flat keys, each value parsed by its key's type (``known``:
    ``{key: type}``, default a text run's :func:`known_keys`; ``refuse(key, where)`` the
    refusal of any other key)."""
    known, out = known or known_keys(), {}
    for item in items:
        key, eq, text = item.partition("=")
        key = key.strip()
        if not eq:
            raise InputError(f"--set {item}: expected key=value")
        if key not in known:
            raise refuse(key, f"--set {item}")
        try:
            out[key] = parse_value(known[key], text)
        except ValueError as e:
            raise InputError(f"--set {item}: {key} is {known[key]} ({e})") from None
    return out


def merge(layers: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Later layers win, key by key; a layer that names a corpus (a world) and not the other
    source clears it, so that ``--corpus`` over a world run's config trains on the corpus."""
    out: dict[str, Any] = {}
    for layer in layers:
        layer = dict(layer)
        for source, other in SOURCES:
            if layer.get(source) is not None and other not in layer:
                layer[other] = None
        out.update(layer)
    return out


def implied_rho(merged: dict[str, Any], given_rho: bool) -> dict[str, Any]:
    """Good views are rho 1, bad rho 0: set when no layer gave rho, refused when one gave
    another; a mixture needs one."""
    views = merged.get("views", TrainConfig.views)
    implied = {"good": 1.0, "bad": 0.0}.get(views)
    if views == "mixture" and not given_rho:
        raise InputError("views mixture needs rho (--rho, or rho in --config / --set)")
    if implied is None:
        return merged
    if given_rho and merged["rho"] != implied:
        raise InputError(f"rho {merged['rho']:g}: views {views} implies rho {implied:g}")
    return {**merged, "rho": implied}


def layered_config(layers: Sequence[Mapping[str, Any]]) -> TrainConfig:
    """The :class:`TrainConfig` of flat-key ``layers`` (lowest first) over the preset's
    defaults; ``model.*`` keys that differ from the preset's model become ``model_overrides``."""
    from prh.models import model_config

    merged = merge(layers)
    preset = merged.get("preset", TrainConfig.preset)
    if preset not in PRESET_DEFAULTS:
        raise InputError(f"unknown preset {preset!r}; expected one of {sorted(PRESET_DEFAULTS)}")
    # rho counts as given when the layer that set views, or a later one, gives it: a file's
    # stored rho 0 of bad views is no refusal of a --set views=good over it
    last = max((i for i, layer in enumerate(layers) if "views" in layer), default=0)
    merged = implied_rho(merged, any("rho" in layer for layer in layers[last:]))
    base = {**PRESET_DEFAULTS[preset], **{k: v for k, v in merged.items() if "." not in k}}
    if base.get("corpus") is not None:
        base.setdefault("world", None)
    reference = model_config(preset, 1).to_dict()
    model = {k[6:]: v for k, v in merged.items() if k.startswith("model.")}
    overrides = {k: v for k, v in model.items() if v != reference[k]}
    return from_flat({**base, "model_overrides": overrides})
