"""``prh serve``: a web page that captions an image through one rotation.

``create_app(captioner, run_dir)`` builds the FastAPI app (see :mod:`prh.serve.app`);
:func:`decode_image` is the safe upload decoder; :class:`ColourCaptioner` is the model-free control
used by tests and the load test.
"""

from prh.imageio import ImageLimits, ImageRejected, decode_image
from prh.serve.colour import ColourCaptioner

__all__ = ["ColourCaptioner", "ImageLimits", "ImageRejected", "create_app", "decode_image"]


def __getattr__(name: str) -> object:
    # Lazy, so that importing prh.serve does not import FastAPI.
    if name == "create_app":
        from prh.serve.app import create_app

        return create_app
    raise AttributeError(name)
