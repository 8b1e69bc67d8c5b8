"""Launch a test worker under ``torch.distributed.run`` with two CPU ranks (gloo).

One launch is retried once, and only when a rank died of SIGABRT: gloo on CPU can abort a rank
while it tears its threads down ("terminate called without an active exception"), a race inside
torch that one CI run of 2,452 tests hit once and 60 local launches under load never did. Any
other failure (a Python error, a timeout, a wrong result) fails at once, and so does a second
abort; the first abort's stderr stays in the failure message.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ABORTED = "Signal 6 (SIGABRT)"


def launch(worker: Path, args: list[str], port_base: int, timeout: int) -> None:
    """Run ``worker args`` on two ranks; raise AssertionError with the stderr tail on failure."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    tails = []
    for attempt in range(2):
        port = str(port_base + (os.getpid() + attempt) % 2000)
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
               "--master-port", port, str(worker), *args]  # fmt: skip
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        if proc.returncode == 0:
            return
        tails.append(proc.stderr[-3000:])
        if ABORTED not in proc.stderr:
            break
    raise AssertionError("\n--- next launch ---\n".join(tails))
