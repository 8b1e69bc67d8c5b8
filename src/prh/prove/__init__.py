"""Executable checks of every theorem statement in ``docs/theory.md`` (``prh prove``).

Each check is a function ``check_x(config: ProveConfig) -> CheckResult``; :func:`run_checks`
runs a selection by name.
"""

from prh.prove.result import CheckResult, ProveConfig
from prh.prove.runner import CHECK_NAMES, run_check, run_checks, select_checks

__all__ = ["CHECK_NAMES", "CheckResult", "ProveConfig", "run_check", "run_checks", "select_checks"]
