"""Serve a web page that captions an image through one rotation.

Loads a demo run (frozen vision encoder, rotation, text-only caption decoder) once, then serves a
page where you drop an image and see its caption, the five nearest captions with their scores, and
the run's alignment numbers and bound plot. Binds to 127.0.0.1 unless --host says otherwise.
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
from pathlib import Path

from prh.cli._args import MAX_THREADS, bounded_int, seed
from prh.errors import InputError

MAX_UPLOAD_MB = 1024  # an upload is held in memory while it is decoded
MAX_WORKERS = 256
MAX_QUEUE = 100_000


def port_number(text: str) -> int:
    """A TCP port in [1, 65535]."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port in [1, 65535], got {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port in [1, 65535], got {value}")
    return value


def host_name(text: str) -> str:
    """A host name or address to bind: non-empty, no spaces, encodable as a DNS name."""
    if not text or text != text.strip() or any(c.isspace() for c in text):
        raise argparse.ArgumentTypeError(f"expected a host name or IP address, got {text!r}")
    if ":" not in text:  # an IPv6 address is not a DNS name
        try:
            text.encode("idna")
        except UnicodeError:
            raise argparse.ArgumentTypeError(
                f"expected a host name or IP address, got {text!r}"
            ) from None
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of ``prh serve``."""
    parser.add_argument("--run", type=Path,
                        help="demo run folder from `prh demo`: encoder, rotation, decoder, "
                        "summary.json")  # fmt: skip
    parser.add_argument("--host", type=host_name, default="127.0.0.1",
                        help="interface to bind (default 127.0.0.1: "
                        "this machine only)")  # fmt: skip
    parser.add_argument("--port", type=port_number, default=8000, help="TCP port (default 8000)")
    parser.add_argument("--max-queue", type=bounded_int(MAX_QUEUE, "requests"), default=64,
                        help="requests admitted at once, running or waiting; more get HTTP 503; "
                        "default 64")  # fmt: skip
    parser.add_argument("--workers", type=bounded_int(MAX_WORKERS, "workers"), default=1,
                        help="captions computed concurrently, each in its own "
                        "thread (default 1)")  # fmt: skip
    parser.add_argument("--threads", type=bounded_int(MAX_THREADS, "threads"), default=None,
                        help="torch threads of the vision encoder (default: "
                        "torch's own choice)")  # fmt: skip
    parser.add_argument("--max-upload-mb", type=bounded_int(MAX_UPLOAD_MB, "MiB"), default=10,
                        help=f"largest accepted upload in MiB (1 to {MAX_UPLOAD_MB}); larger gets "
                        "HTTP 413 (default 10)")  # fmt: skip
    parser.add_argument("--world-seed", type=seed, default=None,
                        help="seed of the world that 'random scene' draws from (default: the "
                        "run's, else 0)")  # fmt: skip
    parser.add_argument("--captioner", choices=("run", "colour"), default="run",
                        help="'run': the run's model (default); 'colour': the model-free "
                        "mean-colour control, for trying the server "
                        "without a trained run")  # fmt: skip


def _check_port_free(host: str, port: int) -> None:
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


def run(args: argparse.Namespace) -> int:
    """Load the models, then serve until interrupted."""
    import numpy as np
    import uvicorn

    from prh.serve.app import create_app
    from prh.serve.colour import ColourCaptioner
    from prh.serve.limits import uvicorn_limits
    from prh.serve.runinfo import captioner_name, load_run_captioner, run_world
    from prh.serve.scenes import SceneSource
    from prh.world.registry import world_names

    if args.captioner == "run" and args.run is None:
        raise InputError("--run RUN is required (a demo run folder), or use --captioner colour")
    if args.run is not None and not args.run.exists():
        raise InputError(f"--run {args.run}: no such folder; make one with `prh demo`")
    if args.run is not None and not args.run.is_dir():
        raise InputError(f"--run {args.run}: is a file, expected a demo run folder")
    world_name, run_seed = run_world(args.run)
    if world_name not in world_names():  # else every /api/scene would fail (issue 36)
        raise InputError(
            f"--run {args.run}: its manifest names world {world_name[:40]!r}; expected one of "
            f"{', '.join(world_names())}"
        )
    _check_port_free(args.host, args.port)

    t0 = time.perf_counter()
    if args.captioner == "colour":
        captioner, name = ColourCaptioner(), "mean-colour control (no model)"
    else:
        captioner = load_run_captioner(args.run, args.threads)
        name = captioner_name(args.run, captioner)
    # One warm-up call so the first visitor does not pay for lazy initialisation.
    captioner.caption(np.full((224, 224, 3), 127, dtype=np.uint8))
    load_s = time.perf_counter() - t0

    world_seed = args.world_seed if args.world_seed is not None else run_seed
    app = create_app(
        captioner,
        run_dir=args.run,
        max_upload_bytes=args.max_upload_mb * 1024 * 1024,
        max_queue=args.max_queue,
        workers=args.workers,
        scenes=SceneSource(world_seed=world_seed, world=world_name),
        captioner_name=name,
    )
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"prh serve: {name} loaded in {load_s:.1f} s", file=sys.stderr)
    print(f"prh serve: open http://{host}:{args.port}/  (Ctrl-C stops)", file=sys.stderr)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"prh serve: warning: listening on {args.host}, reachable from other machines",
            file=sys.stderr,
        )
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False,
                **uvicorn_limits())  # fmt: skip
    return 0
