"""``prh serve`` as a library call: :func:`serve` loads a demo run's captioner once (or the
model-free colour control) and serves the page that captions an image through one rotation.
"""

from __future__ import annotations

import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from prh.errors import InputError


@dataclass(frozen=True)
class ServeRequest:
    """One ``prh serve``, a field per flag: the demo ``run`` (or ``captioner="colour"``), where
    to listen, and the server's limits."""

    run: Path | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    max_queue: int = 64
    workers: int = 1
    threads: int | None = None
    max_upload_mb: int = 10
    world_seed: int | None = None
    captioner: str = "run"


def check_port_free(host: str, port: int) -> None:
    """Refuse (one line) a host that does not resolve or a port this process cannot bind."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise InputError(f"--host {host}: cannot resolve ({e.strerror})") from None
    except UnicodeError:
        raise InputError(f"--host {host}: not a valid host name") from None
    family, _, _, _, addr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(addr)
        except OSError as e:
            raise InputError(
                f"--port {port}: cannot listen on {host}:{port} ({e.strerror}); pick another --port"
            ) from None


def _check_run(req: ServeRequest) -> tuple[str, int]:
    """The run folder checked (one line each) and the world its manifest names, with its seed."""
    from prh.serve.runinfo import run_world, run_world_options
    from prh.world.registry import make_world, world_names

    if req.captioner == "run" and req.run is None:
        raise InputError("--run RUN is required (a demo run folder), or use --captioner colour")
    if req.run is not None and not req.run.exists():
        raise InputError(f"--run {req.run}: no such folder; make one with `prh demo`")
    if req.run is not None and not req.run.is_dir():
        raise InputError(f"--run {req.run}: is a file, expected a demo run folder")
    world_name, run_seed = run_world(req.run)
    if world_name not in world_names():  # else every /api/scene would fail (issue 36)
        raise InputError(
            f"--run {req.run}: its manifest names world {world_name[:40]!r}; expected one of "
            f"{', '.join(world_names())}"
        )
    options = run_world_options(req.run)
    if options:  # a corpus world: a moved corpus is one line now, not an error per visitor
        make_world(world_name, seed=run_seed, **options)
    return world_name, run_seed


def serve(req: ServeRequest) -> None:
    """Check the run, the world and the port, load the captioner once, then serve the page
    until interrupted."""
    import numpy as np
    import uvicorn

    from prh.serve.app import create_app
    from prh.serve.colour import ColourCaptioner
    from prh.serve.limits import uvicorn_limits
    from prh.serve.runinfo import captioner_name, load_run_captioner, run_world_options
    from prh.serve.scenes import SceneSource

    world_name, run_seed = _check_run(req)
    check_port_free(req.host, req.port)

    t0 = time.perf_counter()
    if req.captioner == "colour":
        captioner, name = ColourCaptioner(), "mean-colour control (no model)"
    else:
        captioner = load_run_captioner(req.run, req.threads)
        name = captioner_name(req.run, captioner)
    # One warm-up call so the first visitor does not pay for lazy initialisation.
    captioner.caption(np.full((224, 224, 3), 127, dtype=np.uint8))
    load_s = time.perf_counter() - t0

    world_seed = req.world_seed if req.world_seed is not None else run_seed
    app = create_app(
        captioner,
        run_dir=req.run,
        max_upload_bytes=req.max_upload_mb * 1024 * 1024,
        max_queue=req.max_queue,
        workers=req.workers,
        scenes=SceneSource(world_seed, world=world_name, options=run_world_options(req.run)),
        captioner_name=name,
    )
    host = f"[{req.host}]" if ":" in req.host else req.host
    print(f"prh serve: {name} loaded in {load_s:.1f} s", file=sys.stderr)
    print(f"prh serve: open http://{host}:{req.port}/  (Ctrl-C stops)", file=sys.stderr)
    if req.host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"prh serve: warning: listening on {req.host}, reachable from other machines",
            file=sys.stderr,
        )
    uvicorn.run(app, host=req.host, port=req.port, log_level="warning", access_log=False,
                **uvicorn_limits())  # fmt: skip
