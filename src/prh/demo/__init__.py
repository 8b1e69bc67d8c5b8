"""``prh demo``: the paper's three claims reproduced on the cave world, with a report.

:func:`run_demo` (:mod:`.pipeline`) runs the steps; :class:`DemoConfig` / :func:`demo_config`
(:mod:`.config`) say what; :mod:`.report` writes ``summary.json`` and ``report.html``. See
``docs/demo.md``.
"""

from prh.demo.config import DemoConfig, demo_config
from prh.demo.pipeline import run_demo

__all__ = ["DemoConfig", "demo_config", "run_demo"]
