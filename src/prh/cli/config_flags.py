"""Flags derived from config dataclasses: a field with ``metadata={"help": ...}`` becomes
``--field-name`` (type from its annotation, default and help from the field), so a knob added to
the config has its flag without a hand-mirrored ``add_argument``.

Used by :mod:`prh.cli.train` for the optimiser, whitening, vocabulary and model-shape knobs of
:class:`~prh.training.config.TrainConfig` and :class:`~prh.models.ModelConfig`.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from prh.training.config import range_error
from prh.training.config_layers import parse_value


@dataclass(frozen=True)
class FieldFlag:
    """One derived flag: ``flag`` (``--d-model``) sets config ``key`` (``model.d_model``)
    through argparse ``dest`` (the field name), parsed as ``kind`` (the annotation)."""

    key: str
    dest: str
    kind: str
    default: Any
    help: str
    metavar: str = ""
    part: str = ""
    choices: tuple[str, ...] = ()
    within: str = ""

    @property
    def flag(self) -> str:
        return "--" + self.dest.replace("_", "-")


def field_flags(cls: type, prefix: str = "") -> tuple[FieldFlag, ...]:
    """The flags of the fields of dataclass ``cls`` that carry a ``help``; keys ``prefix`` +
    field name (``"model."`` for the model's)."""
    return tuple(
        FieldFlag(
            prefix + f.name,
            f.name,
            str(f.type),
            f.default,
            f.metadata["help"],
            f.metadata.get("metavar", ""),
            f.metadata.get("part", ""),
            tuple(f.metadata.get("choices", ())),
            f.metadata.get("range", ""),
        )
        for f in fields(cls)
        if "help" in f.metadata
    )


def value_type(kind: str, rng: str = ""):
    """An argparse ``type`` parsing a value of annotated type ``kind`` in the range named
    ``rng`` (:data:`prh.training.config.RANGES`)."""

    def parse(text: str) -> Any:
        try:
            value = parse_value(kind, text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"expected {kind} ({e})") from None
        message = range_error(kind, rng, value)
        if message:
            raise argparse.ArgumentTypeError(message)
        return value

    parse.__name__ = kind  # argparse names the type in its message
    return parse


def add_field_flags(
    p: Any,
    flags: Sequence[FieldFlag],
    title: str | None,
    defaults: Mapping[str, str] | None = None,
) -> None:
    """Add ``flags`` in a help group ``title`` of parser ``p`` (``title`` None: ``p`` is the
    group); each parser default is None (a flag left out is told from one given; the config's
    default applies). A ``bool`` field's flag takes no value (given: true). ``defaults``: how
    the help states a flag's default, by dest (else the field's)."""
    group = p if title is None else p.add_argument_group(title)
    for f in flags:
        default = f"{f.default:g}" if isinstance(f.default, float) else f.default
        shown = (defaults or {}).get(f.dest) or f"default {default}"
        if f.kind == "bool":
            group.add_argument(f.flag, dest=f.dest, action="store_const", const=True,
                               default=None, help=f.help)  # fmt: skip
            continue
        if f.choices:
            group.add_argument(f.flag, dest=f.dest, choices=f.choices, default=None,
                               help=f"{f.help} ({shown})")  # fmt: skip
            continue
        kind = value_type(f.kind, f.within)
        group.add_argument(f.flag, dest=f.dest, metavar=f.metavar or f.kind.upper(), type=kind,
                           default=None, help=f"{f.help} ({shown})")  # fmt: skip


def given_field_flags(args: argparse.Namespace, flags: Sequence[FieldFlag]) -> dict[str, Any]:
    """``{key: value}`` of the derived flags given on the command line."""
    return {f.key: getattr(args, f.dest) for f in flags if getattr(args, f.dest, None) is not None}
