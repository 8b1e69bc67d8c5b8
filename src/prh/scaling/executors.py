"""Executors: where a sweep's cells run (in-process, a local process pool, a Ray cluster).

The sweep driver (:func:`prh.scaling.sweep.run_sweep`) decides *which* cells run and alone writes
``results.jsonl``; an executor only runs cells and hands back one :class:`Outcome` per cell as it
finishes, in any order. A cell's row depends only on the cell and the runner (never on where it
ran), so every executor gives the same rows up to order and ``seconds``.

An executor is a small object with

- ``name`` (str) and ``describe() -> str`` (one line for the progress output);
- ``session() -> context manager`` yielding a function ``run_cells(runner, cells, out_dir)`` that
  iterates over :class:`Outcome` s. Entering the session acquires the resources (starts a pool,
  connects to a cluster), so a cluster that cannot be reached is reported before any cell (or the
  runner's ``prepare``) runs; leaving it releases them, also when the driver stops early.

Executors:

- :class:`InProcess`: cells one after another in the driver process (one BLAS thread).
- :class:`LocalPool`: a ``spawn`` process pool of ``workers`` processes, one BLAS thread each. A
  worker exits when the driver dies, even by ``kill -9`` (Linux: ``PR_SET_PDEATHSIG``; elsewhere a
  thread that watches the parent's pid), so no orphan keeps computing.
- :class:`RayExecutor`: each cell is one Ray task on a running cluster (``address``: ``auto`` or
  ``host:port``), or on a local Ray instance it starts (``address=None``). A task asks for
  ``cpus_per_cell`` CPUs; Ray retries a task whose worker or node died. Workers import prh, so
  every node needs the same prh installed (and, for runners that write into the sweep folder, such
  as ``cave``, the folder must be on a filesystem every node mounts at the same path).

A Slurm executor (e.g. through ``submitit``) would be one more class with the same two methods.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib.util
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from threadpoolctl import threadpool_limits

from prh.errors import InputError, PrhError
from prh.provenance import format_id
from prh.scaling.backends import CellRunner
from prh.scaling.grid import Cell

_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


@dataclass(frozen=True)
class Outcome:
    """One finished cell: its results ``row``, or the ``error`` (a :class:`PrhError` message)."""

    cell: Cell
    row: dict[str, Any] | None
    error: str | None = None


RunCells = Callable[[CellRunner, Sequence[Cell], Path], Iterator[Outcome]]


class Executor(Protocol):
    name: str

    def describe(self) -> str: ...

    def session(self) -> contextlib.AbstractContextManager[RunCells]: ...


def _row(cell: Cell, runner: CellRunner, result: dict[str, Any], seconds: float) -> dict:
    options = runner.options()
    extra = {k: v for k, v in result.items() if k not in ("score", "calibrated")}
    row = {
        "format": format_id("result"),
        "cell_id": cell.cell_id(runner.name, options),
        "split": cell.split,
        "point": cell.point,
        "views": cell.views,
        "rho": cell.rho,
        "samples": cell.samples,
        "seed": cell.seed,
        "score": None if result["score"] is None else float(result["score"]),
        "calibrated": None if result.get("calibrated") is None else float(result["calibrated"]),
        "seconds": round(seconds, 4),
        "backend": runner.name,
        "config": cell.key(runner.name, options),
        "extra": extra,
    }
    # the modality only off text: the rows of text sweeps keep their layout
    return row if cell.modality == "text" else {**row, "modality": cell.modality}


def run_cell(runner: CellRunner, cell: Cell, out_dir: Path) -> dict[str, Any]:
    """Run one cell and return its results row (what every executor calls, wherever it runs).

    Raises
    ------
    PrhError
        When the runner's result has no ``score`` key (``None`` is allowed: a runner that
        trains without measuring).
    """
    t0 = time.perf_counter()
    result = runner(cell, out_dir)
    if "score" not in result:
        raise PrhError(f"backend {runner.name}: cell result lacks 'score'")
    return _row(cell, runner, result, time.perf_counter() - t0)


def _outcome(runner: CellRunner, cell: Cell, out_dir: Path) -> Outcome:
    """:func:`run_cell`, with a :class:`PrhError` turned into a failed outcome (not raised)."""
    try:
        return Outcome(cell, run_cell(runner, cell, out_dir))
    except PrhError as e:
        return Outcome(cell, None, str(e))


# --- in-process ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class InProcess:
    """Run cells one after another in the driver process."""

    name: str = "in-process"

    def describe(self) -> str:
        return "in-process"

    @contextlib.contextmanager
    def session(self) -> Iterator[RunCells]:
        def run_cells(runner: CellRunner, cells: Sequence[Cell], out_dir: Path):
            with threadpool_limits(1):
                for c in cells:
                    yield _outcome(runner, c, out_dir)

        yield run_cells


# --- local process pool -------------------------------------------------------------------------


def _exit_with_parent(parent_pid: int) -> None:
    """Make this process die when ``parent_pid`` (its parent) does, even by SIGKILL."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            # the kernel sends SIGKILL to us when the thread that forked us exits
            if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != parent_pid:  # it died before the call: nobody would signal us
                    os._exit(1)
                return

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="prh-parent-watch", daemon=True).start()


def _init_worker(parent_pid: int) -> None:
    from prh.memory import keep_freed_memory

    _exit_with_parent(parent_pid)
    threadpool_limits(1)  # for the worker's whole life
    keep_freed_memory()  # a worker is prh's own process: large tensors without page faults


@contextlib.contextmanager
def _single_thread_env() -> Iterator[None]:
    # spawn children read these at numpy import: one BLAS thread per worker, no oversubscription
    old = {k: os.environ.get(k) for k in _THREAD_VARS}
    os.environ.update(dict.fromkeys(_THREAD_VARS, "1"))
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@dataclass(frozen=True)
class LocalPool:
    """Run cells in ``workers`` spawned processes on this machine (see the module docstring)."""

    workers: int = 2
    name: str = "local"

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise InputError(f"--workers must be >= 1, got {self.workers}")

    def describe(self) -> str:
        return f"local pool of {self.workers} worker process(es)"

    @contextlib.contextmanager
    def session(self) -> Iterator[RunCells]:
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(
            self.workers, mp_context=ctx, initializer=_init_worker, initargs=(os.getpid(),)
        ) as ex:

            def run_cells(runner: CellRunner, cells: Sequence[Cell], out_dir: Path):
                with _single_thread_env():  # workers are spawned on submit and read it then
                    futures = {ex.submit(_outcome, runner, c, out_dir): c for c in cells}
                try:
                    for fut in as_completed(futures):
                        yield fut.result()
                finally:
                    for fut in futures:
                        fut.cancel()

            yield run_cells


# --- Ray ----------------------------------------------------------------------------------------


def _ray_cell(runner: CellRunner, cell: Cell, out_dir: str) -> Outcome:
    """The body of one Ray task: one cell, one BLAS thread (as in the local pool)."""
    with threadpool_limits(1):
        return _outcome(runner, cell, Path(out_dir))


_NO_RAY = "--executor ray needs the ray package: pip install 'prh[ray]' (or pip install ray)"


def _import_ray() -> Any:
    # prh never phones home: no usage statistics from a cluster it starts or joins
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError:
        raise InputError(_NO_RAY) from None
    return ray


def check_ray_address(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of ``HOST:PORT`` or ``ray://HOST:PORT``; ``None`` for ``auto``.

    Raises
    ------
    InputError
        For anything else.
    """
    a = address.strip()
    if a == "auto":
        return None
    host, sep, port = a.removeprefix("ray://").rpartition(":")
    if not (sep and host and port.isdigit() and 0 < int(port) < 65536):
        raise InputError(f"--address {address!r}: expected 'auto' or HOST:PORT (e.g. head:6379)")
    return host.strip("[]"), int(port)


# HTTP/2's client preface and an empty SETTINGS frame: a Ray head's GCS is a gRPC (HTTP/2)
# server and answers with a SETTINGS frame of its own (RFC 9113, section 3.4).
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_H2_SETTINGS = 0x04


def probe_head(host: str, port: int, timeout: float = 5.0) -> None:
    """Fail fast, in one line, when no Ray head answers at ``host:port``: nothing listens there,
    or something that is not a gRPC server does (``ray.init`` would retry for minutes and print
    a page of warnings)."""
    start = f"start one with `ray start --head --port {port}` on that machine"
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(_H2_PREFACE)
            frame = _recv_exactly(s, 9)  # a frame header: length (3), type (1), flags, stream
    except OSError as e:
        why = e.strerror or type(e).__name__
        raise InputError(
            f"--address {host}:{port}: no Ray head answers there ({why}); {start}"
        ) from None
    if len(frame) < 9 or frame[3] != _H2_SETTINGS:
        raise InputError(
            f"--address {host}:{port}: something listens there but it is not a Ray head (it "
            f"does not answer as a gRPC server); give the head's GCS port (default 6379) or {start}"
        )


def _recv_exactly(s: socket.socket, n: int) -> bytes:
    """Up to ``n`` bytes (fewer when the peer closes first); ``TimeoutError`` if it is silent."""
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


@dataclass(frozen=True)
class RayExecutor:
    """Run each cell as one Ray task (see the module docstring).

    Attributes
    ----------
    address : str or None
        ``auto`` (the cluster this machine belongs to), ``HOST:PORT`` of the head node, or
        ``None``: start a local Ray instance with ``local_cpus`` CPUs for this sweep only.
    local_cpus : int
        CPUs of the local instance (``address=None`` only).
    cpus_per_cell : int
        CPUs each task reserves (a cell that uses several threads should reserve them).
    max_in_flight : int or None
        At most this many cells submitted at once (``None``: all; the cluster queues them).
    max_retries : int
        Times Ray reruns a cell whose worker process or node died; after that the cell is listed
        as failed (and retried by the next run), the rest of the sweep goes on. An exception
        raised by the cell's own code is not retried: it stops the sweep, as it would locally.
    """

    address: str | None = None
    local_cpus: int = 2
    cpus_per_cell: int = 1
    max_in_flight: int | None = None
    max_retries: int = 3
    name: str = "ray"

    def __post_init__(self) -> None:
        if importlib.util.find_spec("ray") is None:  # said at once, not after the sweep starts
            raise InputError(_NO_RAY)
        if self.address is not None:
            check_ray_address(self.address)
        for what, v in (("local_cpus", self.local_cpus), ("cpus_per_cell", self.cpus_per_cell)):
            if v < 1:
                raise InputError(f"ray executor: {what} must be >= 1, got {v}")
        if self.max_in_flight is not None and self.max_in_flight < 1:
            raise InputError(f"ray executor: max_in_flight must be >= 1, got {self.max_in_flight}")
        if self.max_retries < 0:
            raise InputError(f"ray executor: max_retries must be >= 0, got {self.max_retries}")

    def describe(self) -> str:
        if self.address is None:
            return f"a local Ray instance of {self.local_cpus} CPU(s)"
        return f"the Ray cluster at {self.address}"

    def _init(self, ray: Any) -> None:
        import logging

        kw: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
        if self.address is None:
            # a private instance for this sweep: Ray's note that it made an auth token is noise
            logging.getLogger("ray._private.authentication").setLevel(logging.ERROR)
            kw.update(address="local", num_cpus=self.local_cpus, include_dashboard=False)
        else:
            head = check_ray_address(self.address)
            if head is not None:
                probe_head(*head)
            kw.update(address=self.address)
        try:
            ray.init(**kw)
        except (Exception, SystemExit) as e:  # Ray exits or raises its own types when it fails
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            logs = "" if self.address else " (Ray's logs: /tmp/ray/session_latest/logs)"
            raise InputError(
                f"ray: cannot start or reach {self.describe()}: {first}{logs}"
            ) from None

    @contextlib.contextmanager
    def session(self) -> Iterator[RunCells]:
        ray = _import_ray()
        if ray.is_initialized():
            raise InputError("ray is already initialised in this process; run the sweep alone")
        self._init(ray)
        try:
            task = ray.remote(num_cpus=self.cpus_per_cell, max_retries=self.max_retries)(_ray_cell)
            yield functools.partial(_ray_outcomes, ray, task, self.max_in_flight)
        finally:
            ray.shutdown()


def _ray_outcomes(
    ray: Any, task: Any, cap: int | None, runner: CellRunner, cells: Sequence[Cell], out_dir: Path
) -> Iterator[Outcome]:
    """Submit ``cells`` as ``task`` s (at most ``cap`` in flight); yield each as it finishes."""
    runner_ref = ray.put(runner)  # shipped once, not once per cell
    queue = list(cells)[::-1]
    cap = cap or len(queue)
    pending: dict[Any, Cell] = {}
    try:
        while queue or pending:
            while queue and len(pending) < cap:
                cell = queue.pop()
                pending[task.remote(runner_ref, cell, str(out_dir))] = cell
            [ref], _ = ray.wait(list(pending), num_returns=1)
            yield _ray_result(ray, ref, pending.pop(ref))
    finally:
        for ref in pending:  # the driver stopped early: leave no cell running for nobody
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)


def _ray_result(ray: Any, ref: Any, cell: Cell) -> Outcome:
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError:
        raise  # the cell's own code failed: a bug, which stops the sweep as it would locally
    except ray.exceptions.RayError as e:  # its worker or node died, more often than max_retries
        why = (str(e).strip().splitlines() or [""])[0][:200]
        return Outcome(cell, None, f"ray: {type(e).__name__}: {why}")
