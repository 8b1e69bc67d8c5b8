"""Captioning through one map: a frozen vision encoder, a rotation, a decoder trained on text only.

Public API: :class:`Captioner`, :class:`CaptionResult`, :func:`load_captioner`,
:func:`build_caption_run` (:mod:`.build`); :func:`evaluate_captioner`,
:class:`CaptionEvalResult`, :func:`compare_captioners` (:mod:`.evaluate`); the decoder in
:mod:`.decoder`. See ``docs/caption.md``.
"""

from prh.caption.build import CaptionBuildConfig, build_caption_run
from prh.caption.pipeline import Captioner, CaptionResult, load_captioner

__all__ = [
    "CaptionBuildConfig",
    "CaptionEvalResult",
    "CaptionResult",
    "Captioner",
    "build_caption_run",
    "compare_captioners",
    "evaluate_captioner",
    "load_captioner",
]


def __getattr__(name: str):
    if name in ("CaptionEvalResult", "compare_captioners", "evaluate_captioner"):
        from prh.caption import evaluate

        return getattr(evaluate, name)
    raise AttributeError(f"module 'prh.caption' has no attribute {name!r}")
