"""prh's processes keep freed memory in glibc's heap; PRH_MALLOC=system opts out."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = "from prh.memory import keep_freed_memory; print(keep_freed_memory())"


def _probe(**env: str) -> str:
    full = {k: v for k, v in os.environ.items() if k != "PRH_MALLOC"} | env
    done = subprocess.run([sys.executable, "-c", PROBE], env=full, capture_output=True, text=True,
                          check=True)  # fmt: skip
    return done.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_applied_on_glibc_and_refused_when_opted_out():
    import platform

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("not glibc")
    assert _probe() == "True"
    assert _probe(PRH_MALLOC="system") == "False"
    assert _probe(PRH_MALLOC="SYSTEM") == "False"


def test_a_prh_command_runs_under_it():
    """The console entry applies it before the command and the command still runs."""
    done = subprocess.run([sys.executable, "-m", "prh", "--version"], capture_output=True,
                          text=True, check=True)  # fmt: skip
    assert done.stdout.strip()
