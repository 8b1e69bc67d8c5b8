"""Serve a web page that captions an image through one rotation.

Loads a demo run (frozen vision encoder, rotation, text-only caption decoder) once, then serves a
page where you drop an image and see its caption, the five nearest captions with their scores, and
the run's alignment numbers and bound plot. Binds to 127.0.0.1 unless --host says otherwise.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from prh.cli._args import MAX_THREADS, as_request, bounded_int, seed

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


def run(args: argparse.Namespace) -> int:
    """The flags as a :class:`~prh.serve.launch.ServeRequest`, served by
    :func:`~prh.serve.launch.serve` until interrupted."""
    from prh.serve.launch import ServeRequest, serve

    serve(as_request(ServeRequest, args))
    return 0
