"""The ``prh serve`` web app: one page and a small JSON API over a loaded captioner.

Endpoints
---------
``GET /``                 the page (``static/index.html``; CSS and JS under ``/static``, no CDN)
``POST /api/caption``     multipart field ``image`` -> ``{"caption", "nearest": [{"caption",
                          "score"}], "seconds"}``
``GET /api/health``       liveness and queue occupancy
``GET /api/scene?seed=S`` a generated held-out world scene as PNG (``/api/scene/info`` its captions)
``GET /api/run``          the run's alignment numbers and the names of its plots
``GET /api/plots/{name}`` a plot from the run, by a name listed in ``/api/run`` only

Every error is JSON ``{"error": "..."}`` with a 4xx/5xx status; nothing a client sends stops the
server. The captioner is loaded once, before the app is built, and called in a worker thread
(``anyio.to_thread``) so the event loop keeps answering while a caption is computed. At most
``max_queue`` caption requests are admitted at once (running or waiting for one of ``workers``
slots); the next one gets 503 at once instead of waiting without bound.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from anyio import to_thread
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from prh.errors import InputError, PrhError
from prh.imageio import ImageLimits, ImageRejected, decode_image
from prh.serve.runinfo import RunInfo, read_run_info
from prh.serve.scenes import SceneSource, parse_seed

log = logging.getLogger("prh.serve")
STATIC_DIR = Path(__file__).resolve().parent / "static"
# Room for the multipart envelope (boundary, part headers) on top of the file itself.
MULTIPART_SLACK = 64 * 1024
N_NEAREST = 5
CSP = (
    "default-src 'self'; img-src 'self' blob: data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)


class Captioner(Protocol):
    """What the app needs: ``caption(image (H, W, 3) uint8) -> result`` with ``.caption`` (str),
    ``.nearest`` (list of (str, float), best first) and ``.seconds`` (float)."""

    def caption(self, image: np.ndarray) -> Any: ...


SECURITY_HEADERS = {
    "x-content-type-options": "nosniff",
    "content-security-policy": CSP,
    "referrer-policy": "no-referrer",
}


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


class _SecurityHeaders:
    """Pure ASGI middleware: adds ``nosniff`` and a same-origin-only CSP to every response."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                have = {k.lower() for k, _ in headers}
                headers += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()
                            if k.encode() not in have]  # fmt: skip
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


class _Gate:
    """Admission counter plus worker semaphore; the semaphore is remade per event loop."""

    def __init__(self, max_queue: int, workers: int) -> None:
        self.max_queue = max_queue
        self.workers = workers
        self.admitted = 0
        self._sem: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._sem is None or self._loop is not loop:
            self._sem, self._loop = asyncio.Semaphore(self.workers), loop
        return self._sem


def create_app(
    captioner: Captioner,
    run_dir: str | Path | None = None,
    max_upload_bytes: int = 10 * 1024 * 1024,
    max_queue: int = 64,
    *,
    workers: int = 1,
    max_pixels: int = 40_000_000,
    scenes: SceneSource | None = None,
    captioner_name: str | None = None,
) -> FastAPI:
    """Build the app around an already loaded captioner.

    Parameters
    ----------
    captioner : Captioner
        Called as ``captioner.caption(image)`` in a worker thread, at most ``workers`` at a time.
    run_dir : path, optional
        Demo run whose ``summary.json`` and PNG plots the page shows.
    max_upload_bytes : int
        Largest accepted image file; larger uploads get 413 (checked from ``Content-Length`` and
        again while the body streams in).
    max_queue : int
        Caption requests admitted at once (running plus waiting); more get 503.
    workers : int
        Captions computed concurrently (1 suits a CPU model that already uses every core).
    max_pixels : int
        Largest ``width * height`` accepted (decompression-bomb guard); larger gets 413.
    scenes : SceneSource, optional
        Source of ``/api/scene`` images; a default world (seed 0) when omitted.
    captioner_name : str, optional
        Shown by ``/api/health``; the captioner's class name by default.

    Returns
    -------
    FastAPI
    """
    if max_upload_bytes < 1 or max_queue < 1 or workers < 1 or max_pixels < 1:
        raise InputError(
            "max_upload_bytes, max_queue, workers and max_pixels must be >= 1, got "
            f"{max_upload_bytes}, {max_queue}, {workers}, {max_pixels}"
        )
    info: RunInfo = read_run_info(run_dir)
    limits = ImageLimits(max_bytes=max_upload_bytes, max_pixels=max_pixels)
    scene_source = scenes if scenes is not None else SceneSource()
    gate = _Gate(max_queue, workers)
    name = captioner_name or type(captioner).__name__

    app = FastAPI(title="prh serve", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(_SecurityHeaders)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    app.state.gate = gate
    app.state.run_info = info
    _error_handlers(app)
    _info_routes(app, info, gate, name)
    _scene_routes(app, scene_source)
    _caption_route(app, captioner, gate, limits, max_upload_bytes)
    return app


def _error_handlers(app: FastAPI) -> None:
    """Every error, framework or ours, as one JSON body ``{"error": ...}``."""

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail), getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, "; ".join(str(e.get("msg", e)) for e in exc.errors()) or "bad request")

    @app.exception_handler(Exception)
    async def _server_error(request: Request, exc: Exception) -> JSONResponse:
        # Starlette answers this from its outermost middleware, outside _SecurityHeaders: the
        # headers are set here too, so no answer goes out without them.
        log.error("request failed: %s: %s", type(exc).__name__, exc)
        return _error(500, f"internal error: {type(exc).__name__}", SECURITY_HEADERS)


def _info_routes(app: FastAPI, info: RunInfo, gate: _Gate, name: str) -> None:
    """The page, the health check, the run's summary and its plots."""

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html")

    @app.get("/api/health")
    async def health() -> dict[str, Any]:
        return {
            "status": "ok",
            "captioner": name,
            "run": info.name,
            "queue": {"admitted": gate.admitted, "max": gate.max_queue, "workers": gate.workers},
        }

    @app.get("/api/run")
    async def run_info() -> dict[str, Any]:
        return info.to_dict()

    @app.get("/api/plots/{plot_name}")
    async def plot(plot_name: str) -> Response:
        path = info.plots.get(plot_name)
        if path is None:
            listed = ", ".join(info.plots) or "none"
            return _error(404, f"no plot named {plot_name[:80]!r}; available: {listed}")
        return FileResponse(path, media_type="image/png")


def _scene_routes(app: FastAPI, scene_source: SceneSource) -> None:
    """A held-out scene's render by seed, and what it shows."""

    @app.get("/api/scene")
    async def scene(request: Request) -> Response:
        try:
            seed = parse_seed(request.query_params.get("seed"))
        except InputError as e:
            return _error(400, str(e))
        png = await to_thread.run_sync(scene_source.png, seed)
        return Response(
            png,
            media_type="image/png",
            headers={"cache-control": "public, max-age=86400", "x-prh-seed": str(seed)},
        )

    @app.get("/api/scene/info")
    async def scene_info(request: Request) -> Response:
        try:
            seed = parse_seed(request.query_params.get("seed"))
        except InputError as e:
            return _error(400, str(e))
        return JSONResponse(await to_thread.run_sync(scene_source.info, seed))


def _caption_route(
    app: FastAPI, captioner: Captioner, gate: _Gate, limits: ImageLimits, max_upload_bytes: int
) -> None:
    """``POST /api/caption``: admitted up to the queue limit, decoded under ``limits``,
    captioned in a worker thread."""

    def busy() -> JSONResponse:
        return _error(
            503,
            f"server busy: {gate.admitted} caption requests queued (limit {gate.max_queue})",
            {"retry-after": "1"},
        )

    @app.post("/api/caption")
    async def caption(request: Request) -> Response:
        if gate.admitted >= gate.max_queue:  # refused before a byte of the body is read
            return busy()
        gate.admitted += 1  # counted while its body streams in: memory <= queue x upload limit
        t_arrive = time.perf_counter()
        try:
            data = await _read_upload(request, max_upload_bytes)
            if isinstance(data, Response):
                return data
            async with gate.semaphore():
                t_start = time.perf_counter()
                image = await to_thread.run_sync(decode_image, data, limits)
                result = await to_thread.run_sync(captioner.caption, image)
        except ImageRejected as e:
            return _error(e.status, str(e))
        except PrhError as e:
            return _error(422, str(e))
        except Exception as e:  # the model failed: say so, keep serving
            log.exception("captioning failed")
            return _error(500, f"captioning failed: {type(e).__name__}")
        finally:
            gate.admitted -= 1
        return JSONResponse(
            {
                "caption": str(result.caption),
                "nearest": [
                    {"caption": str(c), "score": _num(s)}
                    for c, s in list(result.nearest)[:N_NEAREST]
                ],
                "seconds": _num(result.seconds),
                "queue_seconds": _num(t_start - t_arrive),
                "size": [int(image.shape[1]), int(image.shape[0])],
            }
        )


class _TooBig(Exception):
    """The body streamed past the upload limit."""


async def _read_upload(request: Request, max_bytes: int) -> bytes | Response:
    """The bytes of multipart field ``image``, or the error response to send instead.

    The body streams straight into the multipart parser (which spools a file part to disk past
    1 MiB), counted on the way: no second copy of it is held in memory, so an admitted upload
    costs about its own size once read (issue 36)."""
    limit = max_bytes + MULTIPART_SLACK
    too_big = f"upload is larger than the limit of {max_bytes} bytes"
    ctype = request.headers.get("content-type", "")
    if not ctype.lower().startswith("multipart/form-data"):
        return _error(415, "expected multipart/form-data with a file field 'image'")
    declared = request.headers.get("content-length")
    if declared is not None:
        if not (declared.strip().isascii() and declared.strip().isdigit()):
            return _error(400, f"bad Content-Length {declared[:20]!r}")
        if int(declared) > limit:
            return _error(413, too_big)
    # Count while streaming: a client may lie about, or omit, Content-Length (chunked encoding).
    seen = 0

    async def counted() -> dict[str, Any]:
        nonlocal seen
        message = await request.receive()
        seen += len(message.get("body", b""))
        if seen > limit:
            raise _TooBig
        return message

    try:
        form = await Request(request.scope, counted).form(max_files=1, max_fields=8)
    except _TooBig:
        return _error(413, too_big)
    except ClientDisconnect:
        return _error(400, "client went away before the upload was complete")
    except StarletteHTTPException as e:
        return _error(400, f"malformed multipart body: {e.detail}")
    except Exception as e:  # the multipart parser's own errors
        return _error(400, f"malformed multipart body: {e}")
    try:
        field = form.get("image")
        if not isinstance(field, UploadFile):
            return _error(400, "missing file field 'image' in the multipart form")
        data = await field.read()
    finally:
        await form.close()
    if len(data) > max_bytes:
        return _error(413, too_big)
    return data


def _num(x: Any) -> float | None:
    v = float(x)
    return v if math.isfinite(v) else None
