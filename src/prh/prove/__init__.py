"""Executable checks of every theorem statement in ``docs/theory.md`` (``prh prove``).

Each check is a function ``check_x(config: ProveConfig) -> CheckResult``; :func:`run_checks`
runs a selection by name. The names are imported on first use, so that ``prh --help`` (which
reads :mod:`prh.prove.command`'s bounds) does not load scipy.
"""

from prh.lazy import lazy_exports

_WHERE = {
    "CHECK_NAMES": "prh.prove.runner",
    "CheckResult": "prh.prove.result",
    "ProveConfig": "prh.prove.result",
    "run_check": "prh.prove.runner",
    "run_checks": "prh.prove.runner",
    "select_checks": "prh.prove.runner",
}

__all__ = ["CHECK_NAMES", "CheckResult", "ProveConfig", "run_check", "run_checks", "select_checks"]

__getattr__, __dir__ = lazy_exports("prh.prove", globals(), _WHERE)
