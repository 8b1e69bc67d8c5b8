"""Captioning through one map: a frozen vision encoder, a rotation, a decoder trained on text only.

Public API: :class:`Captioner`, :class:`CaptionResult`, :func:`load_captioner`,
:func:`build_caption_run` (:mod:`.build`); :func:`evaluate_captioner`,
:class:`CaptionEvalResult`, :func:`compare_captioners` (:mod:`.evaluate`); the decoder in
:mod:`.decoder`. See ``docs/caption.md``. The names are imported on first use, so that ``prh
--help`` (which reads :mod:`prh.caption.commands`' bounds) does not load the bridge and scipy.
"""

from prh.lazy import lazy_exports

_WHERE = {
    "CaptionBuildConfig": "prh.caption.build",
    "CaptionEvalResult": "prh.caption.evaluate",
    "CaptionResult": "prh.caption.pipeline",
    "Captioner": "prh.caption.pipeline",
    "build_caption_run": "prh.caption.build",
    "compare_captioners": "prh.caption.evaluate",
    "evaluate_captioner": "prh.caption.evaluate",
    "load_captioner": "prh.caption.pipeline",
}

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

__getattr__, __dir__ = lazy_exports("prh.caption", globals(), _WHERE)
