"""The check registry and the runner behind ``prh prove``."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

from prh.errors import InputError
from prh.prove import alignment, moving, spectral
from prh.prove.result import CheckResult, ProveConfig

CheckFn = Callable[[ProveConfig], CheckResult]


def _registry() -> dict[str, CheckFn]:
    return {
        "closed-form": spectral.check_closed_form,
        "uniqueness": spectral.check_uniqueness,
        "platonic": alignment.check_platonic,
        "bound": alignment.check_bound,
        "views": alignment.check_views,
        "next-token": alignment.check_next_token,
        "training": spectral.check_training,
        "moving-world": moving.check_moving_world,
    }


CHECK_NAMES: tuple[str, ...] = (
    "closed-form",
    "uniqueness",
    "platonic",
    "bound",
    "views",
    "next-token",
    "moving-world",
    "training",  # last: the slowest (and tests read it from the end)
)


def select_checks(only: str | None) -> list[str]:
    """Parse ``--only NAME[,NAME]`` into check names (all when None), in registry order."""
    if only is None:
        return list(CHECK_NAMES)
    names = [n.strip() for n in only.split(",") if n.strip()]
    unknown = [n for n in names if n not in CHECK_NAMES]
    if unknown or not names:
        raise InputError(
            f"--only: unknown check {', '.join(unknown) or repr(only)}; "
            f"expected names from {', '.join(CHECK_NAMES)}"
        )
    return [n for n in CHECK_NAMES if n in names]


def run_check(name: str, config: ProveConfig) -> CheckResult:
    """Run one check and time it."""
    fn = _registry()[name]
    t0 = time.perf_counter()
    result = fn(config)
    return CheckResult(
        name=result.name,
        statement=result.statement,
        passed=bool(result.passed),
        figures=result.figures,
        seconds=time.perf_counter() - t0,
    )


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Limit BLAS to one thread while the checks run.

    Every matrix here is small (at most a few hundred rows): threads only add synchronisation,
    and on a loaded machine a multi-threaded BLAS made the ``bound`` check 8x slower.
    """
    import scipy.linalg  # noqa: F401  (load scipy's own BLAS now, so that the limit covers it)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def run_checks(
    names: list[str], config: ProveConfig, on_result: Callable[[CheckResult], None] | None = None
) -> list[CheckResult]:
    """Run the named checks in order; ``on_result`` sees each result as it arrives."""
    results = []
    with single_threaded_blas():
        for name in names:
            r = run_check(name, config)
            results.append(r)
            if on_result is not None:
                on_result(r)
    return results
