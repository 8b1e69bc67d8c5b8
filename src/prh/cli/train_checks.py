"""Checks a fresh ``prh train`` makes before its run folder exists (issue 36).

``--config`` and ``--set`` values pass through the very ``type`` and ``choices`` of the flag
that sets the same key (``--set seed=-1`` is refused by ``--seed``'s rule, in its words): each
key's range is declared once, on its flag. Keys without a flag of their own get the rule of
:data:`EXTRA_RULES`. Then the model's shape and batch are priced (:mod:`prh.models.budget`)
against the machine's free memory (:mod:`prh.training.preflight`, which a Python caller runs
too).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from prh.cli._args import nonnegative_int, seed
from prh.errors import InputError

# Config keys no flag sets, with the rule a flag would have.
EXTRA_RULES: dict[str, Callable[[str], Any]] = {
    "log_every": nonnegative_int,
    "world_seed": seed,
}


Rules = Mapping[str, argparse.Action]


@cache
def flag_rules(add_arguments: Callable[[argparse.ArgumentParser], None]) -> Rules:
    """``{dest: action}`` of the flags ``add_arguments`` declares (``prh train``'s: a dest is
    the config key it sets; the model-shape flags' dests are the ``model.`` keys without their
    prefix)."""
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    return {a.dest: a for a in parser._actions if a.option_strings}


def other_kind(key: str) -> str | None:
    """The run kind whose configuration has ``key`` when a text run's does not (None: none):
    image runs (:class:`~prh.training.ImageConfig`) or the demo
    (:data:`prh.demo.config.SETTINGS`)."""
    from prh.demo.config import SETTINGS
    from prh.training.config_layers import known_keys
    from prh.training.image_config import ImageConfig

    if key in known_keys():
        return None
    if key in ImageConfig.__dataclass_fields__ or key == "render_cache":
        return "image runs (prh train --modality image|sketch, as a flag)"
    if key in SETTINGS:
        return "prh demo"
    return None


def check_set_kinds(items: Any) -> None:
    """Refuse a ``--set KEY=VALUE`` whose key belongs to another run kind, naming the kind."""
    for item in items or ():
        key = item.partition("=")[0].strip()
        kind = other_kind(key)
        if kind is not None:
            raise InputError(f"--set {item}: {key} is a setting of {kind}, not of text runs")


def check_config_kind(d: Mapping[str, Any], where: str) -> None:
    """Refuse a config file of another run kind (an image run's ``config.json``, a demo's
    ``demo.json``), or a key of another kind, in one line naming the kind."""
    modality = d.get("modality")
    if isinstance(d.get("image"), dict) or modality in ("image", "sketch"):
        raise InputError(
            f"{where}: the config of an image run (modality {modality}); prh train --config "
            "takes a text run's (an image run continues with --resume RUN)"
        )
    if isinstance(d.get("config"), dict) and any(other_kind(k) for k in d["config"]):
        raise InputError(f"{where}: a prh demo config (demo.json), not a text run's")
    sections = [d, *(v for k, v in d.items() if k == "train" and isinstance(v, dict))]
    for key in (k for section in sections for k in section):
        kind = other_kind(key)
        if kind is not None:
            raise InputError(f"{where}: {key} is a setting of {kind}, not of text runs")


def _as_text(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def check_key(key: str, value: Any, where: str, rules: Rules) -> None:
    """Refuse ``value`` of config ``key`` when the flag setting ``key`` would refuse it.

    Raises
    ------
    InputError
        ``WHERE: KEY=VALUE: <the flag's own message> (as --flag)``.
    """
    if value is None or isinstance(value, bool):
        return  # optional left unset; booleans are typed by the config layer already
    action = rules.get(key.removeprefix("model."))
    rule = action.type if action is not None and action.type is not None else None
    rule = EXTRA_RULES.get(key, rule)
    text = _as_text(value)
    flag = action.option_strings[0] if action is not None else None
    try:
        if callable(rule):
            rule(text)
        if action is not None and action.choices is not None and value not in action.choices:
            raise ValueError(f"expected one of {', '.join(map(str, action.choices))}")
    except (argparse.ArgumentTypeError, ValueError, TypeError) as e:
        as_flag = f" (as {flag})" if flag else ""
        raise InputError(f"{where}: {key}={text}: {e}{as_flag}") from None


def check_layer(layer: Mapping[str, Any], where: str, rules: Rules) -> Mapping[str, Any]:
    """:func:`check_key` on every key of a config layer; returns the layer."""
    for key, value in layer.items():
        check_key(key, value, where, rules)
    return layer
