"""One progress reporter for every long step (embed, null and bootstrap, match, sweep, train).

On a terminal it draws a ``tqdm`` bar on stderr. Anywhere else (a log file, a pipe, a cluster job)
it writes plain lines, at most one every ``interval`` seconds (10 s by default) and a last line with
the final count, and never a carriage return, so a log file stays one line per update; a step that
ends within the interval writes nothing. ``enabled=False`` (the ``--no-progress``
and ``--quiet`` flags) silences it completely.

Three ways to use it::

    for x in progress(items, "embed text", enabled=not args.quiet):   # an iterable
        ...

    with Progress(total=steps, desc="train", unit="step") as bar:      # a counter
        bar.update(1, loss=f"{loss:.4f}")

    encoder.encode_texts(texts, progress=Progress(None, "embed"))      # a (done, total) callback
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, TypeVar

T = TypeVar("T")

PLAIN_INTERVAL_S = 10.0  # seconds between plain lines: a long run logs a few hundred lines


def _clock(seconds: float) -> str:
    s = max(0, int(seconds))
    return (
        f"{s // 3600}h{s % 3600 // 60:02d}m{s % 60:02d}s"
        if s >= 3600
        else f"{s // 60}m{s % 60:02d}s"
    )


class Progress:
    """A progress counter drawn as a tqdm bar (terminal) or plain rate-limited lines (otherwise).

    Parameters
    ----------
    total : int or None
        Number of units of work (None when unknown; a ``(done, total)`` call sets it).
    desc : str
        What is being done, e.g. ``"embed text"``; the start of every line.
    enabled : bool
        False prints nothing at all.
    unit : str
        Name of one unit of work (``"it"``, ``"step"``, ``"image"``).
    initial : int
        Position to start from (a resumed run); rates count only the work done here.
    interval : float, optional
        Minimum seconds between plain lines (default :data:`PLAIN_INTERVAL_S`; 0: a line per
        update). Ignored by the tqdm bar.
    stream : file, optional
        Where to write (default: ``sys.stderr`` at construction time).
    tty : bool, optional
        Force the bar (True) or plain lines (False); default: ``stream.isatty()``.
    log : callable, optional
        Send each plain line to ``log(line)`` instead of ``stream`` (a run's own logger); implies
        plain lines.
    """

    def __init__(
        self,
        total: int | None,
        desc: str,
        *,
        enabled: bool = True,
        unit: str = "it",
        initial: int = 0,
        interval: float | None = None,
        stream: IO[str] | None = None,
        tty: bool | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.total, self.desc, self.enabled, self.unit = total, desc, enabled, unit
        self.n = self.start = int(initial)
        self.interval = PLAIN_INTERVAL_S if interval is None else float(interval)
        self.stream = stream if stream is not None else sys.stderr
        self.log = log
        self.postfix = ""
        self.t0 = time.perf_counter()
        self._last_t, self._last_n = self.t0, None
        self._closed = False
        self._bar = None
        if enabled and log is None and (tty if tty is not None else _isatty(self.stream)):
            from tqdm import tqdm

            self._bar = tqdm(
                total=total,
                desc=desc,
                unit=unit,
                initial=self.n,
                file=self.stream,
                dynamic_ncols=True,
                leave=True,
                mininterval=0.2,
            )

    @property
    def rate(self) -> float:
        """Units per second since construction (work done here only)."""
        return (self.n - self.start) / max(time.perf_counter() - self.t0, 1e-9)

    def update(self, n: int = 1, **postfix: Any) -> None:
        """Advance by ``n`` units; ``postfix`` items (``loss="0.31"``) are shown after the count."""
        self.set(self.n + n, **postfix)

    def set(self, done: int, **postfix: Any) -> None:
        """Move to absolute position ``done``."""
        if postfix:
            self.postfix = ", ".join(f"{k} {v}" for k, v in postfix.items())
        delta, self.n = int(done) - self.n, int(done)
        if not self.enabled or self._closed:
            return
        if self._bar is not None:
            if postfix:
                self._bar.set_postfix_str(self.postfix, refresh=False)
            self._bar.update(delta)
            return
        now = time.perf_counter()
        finished = self.total is not None and self.n >= self.total
        if now - self._last_t >= self.interval or (finished and self._worth_a_last_line(now)):
            self._line(now)

    def __call__(self, done: int, total: int | None = None) -> None:
        """The ``progress(done, total)`` callback form used by encoders and embedding loops."""
        if total is not None and total != self.total:
            self.total = total
            if self._bar is not None:
                self._bar.total = total
        self.set(done)

    def write(self, msg: str) -> None:
        """A message line that does not break the bar."""
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.write(msg, file=self.stream)
        else:
            self._emit(msg)

    def close(self) -> None:
        """Finish: close the bar, or write the final plain line if it was not written yet."""
        if self._closed:
            return
        self._closed = True
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.close()
        elif self._last_n != self.n and self._worth_a_last_line(time.perf_counter()):
            self._line(time.perf_counter())

    def _worth_a_last_line(self, now: float) -> bool:
        """A step shorter than the interval stays silent; a longer one ends with its last count."""
        return self.n > self.start and (self._last_n is not None or now - self.t0 >= self.interval)

    def _line(self, now: float) -> None:
        elapsed = now - self.t0
        rate = (self.n - self.start) / max(elapsed, 1e-9)
        count = f"{self.n}/{self.total}" if self.total else f"{self.n}"
        parts = [f"{self.desc}: {count} {self.unit}"]
        if self.total:
            parts[0] += f" ({100.0 * self.n / self.total:.0f}%)"
        parts.append(f"{rate:,.1f} {self.unit}/s")
        parts.append(f"{_clock(elapsed)} elapsed")
        if self.total and rate > 0 and self.n < self.total:
            parts.append(f"{_clock((self.total - self.n) / rate)} left")
        self._emit(", ".join(parts) + (f" | {self.postfix}" if self.postfix else ""))
        self._last_t, self._last_n = now, self.n

    def _emit(self, line: str) -> None:
        if self.log is not None:
            self.log(line)
        else:
            self.stream.write(line + "\n")
            self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Iter(Progress):
    def __init__(self, items: Iterable[T], desc: str, **kw: Any) -> None:
        total = kw.pop("total", None)
        if total is None:
            try:
                total = len(items)  # type: ignore[arg-type]
            except TypeError:
                total = None
        super().__init__(total, desc, **kw)
        self._items = items

    def __iter__(self) -> Iterator[T]:
        try:
            for x in self._items:
                yield x
                self.update(1)
        finally:
            self.close()


def progress(
    items: Iterable[T] | int | None, desc: str, *, enabled: bool = True, **kw: Any
) -> Progress:
    """A :class:`Progress` over ``items`` (iterate it) or over ``items`` units (an int total).

    Keyword arguments are those of :class:`Progress` (``unit``, ``interval``, ``stream``, ...).
    """
    if items is None or isinstance(items, int):
        return Progress(items, desc, enabled=enabled, **kw)
    return _Iter(items, desc, enabled=enabled, **kw)


def _isatty(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def quiet_third_party() -> None:
    """Silence transformers', huggingface_hub's and datasets' per-load progress bars and advice
    (prh's commands report progress themselves), through their logging APIs: the environment is
    left as it was. Packages that are not installed are skipped."""
    import importlib

    for module, calls in (
        ("transformers.utils.logging", ("disable_progress_bar", "set_verbosity_error")),
        ("huggingface_hub.utils", ("disable_progress_bars",)),
        ("datasets.utils.logging", ("disable_progress_bar", "set_verbosity_error")),
    ):
        try:
            lib = importlib.import_module(module)
        except ImportError:  # optional packages; specs that need them say so
            continue
        for name in calls:
            getattr(lib, name)()
