"""glibc's default allocator against :func:`prh.memory.keep_freed_memory`, on the demo's work.

    PYTHONPATH=src python benchmarks/bench_alloc.py [--threads 2] [--skip-train]

Each row runs in its own process twice, once with ``PRH_MALLOC=system`` (glibc as it comes:
every allocation over 32 MiB mapped fresh from the kernel and unmapped when freed) and once with
prh's setting (``mallopt(M_MMAP_MAX, 0)``, 1 GiB trim threshold), and reports wall seconds and
the process's user and system CPU seconds:

- ``encode``: the demo's image encoder (:data:`prh.demo.config.DEMO_IMAGE_ENCODER`, seeded
  EfficientNet-Lite0) forward on 1,024 renders at 64 px in batches of 128, as the spectral
  draws and embeddings run it;
- ``train text``: ``prh train`` of a text JEPA (tiny preset, moving world, good views), 8,192
  samples;
- ``train image``: ``prh train`` of the demo's image recipe on good views, 5,120 pairs, on a
  render cache built beforehand (not timed).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENCODE = """
import time, torch
from dataclasses import replace
from prh.memory import keep_freed_memory
keep_freed_memory()
torch.set_num_threads({threads})
from prh.demo.config import DEMO_IMAGE_ENCODER
from prh.training import train_config
from prh.training.image import build_image_model
image = replace(DEMO_IMAGE_ENCODER, backbone="random:efficientnet-lite0")
model = build_image_model(train_config("tiny", world="moving"), image)[0].eval()
x = torch.rand(1024, 3, 64, 64, generator=torch.Generator().manual_seed(0))
with torch.no_grad():
    model(x[:128])
    t = time.perf_counter()
    for i in range(0, 1024, 128):
        model(x[i:i + 128])
print(1024 / (time.perf_counter() - t))
"""


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float, str]:
    """Wall, user and system seconds of ``cmd`` (a child process) and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)}: exit {done.returncode}: {done.stderr.strip()}")
    out = done.stdout
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--skip-train", action="store_true", help="the encode row only")
    a = ap.parse_args()
    prh = [sys.executable, "-m", "prh"]
    base = {**os.environ, "OMP_NUM_THREADS": str(a.threads)}
    tmp = Path(tempfile.mkdtemp(prefix="bench-alloc-"))
    image = ["--modality", "image", "--image-size", "64", "--render-views", "2",
             "--train-scenes", "1944", "--render-cache", str(tmp / "cache"),
             "--backbone", "efficientnet-lite0", "--freeze-until", "15", "--backbone-size", "128",
             "--pool", "moments", "--scratch-branch", "--lr", "3e-3"]  # fmt: skip
    common = ["train", "--world", "moving", "--views", "good", "--batch-size", "128",
              "--checkpoint-every", "0", "--threads", str(a.threads)]  # fmt: skip
    rows: list[tuple[str, list[str]]] = [
        ("encode", [sys.executable, "-c", ENCODE.format(threads=a.threads)])
    ]
    if not a.skip_train:
        # the render cache and trunk maps, built once outside the timing
        subprocess.run([*prh, *common, *image, "--samples", "128", "--out", str(tmp / "warm")],
                       env=base, check=True, capture_output=True)  # fmt: skip
        rows += [
            ("train text", [*prh, *common, "--samples", "8192", "--out", str(tmp / "t")]),
            ("train image", [*prh, *common, *image, "--samples", "5120", "--out", str(tmp / "i")]),
        ]
    print(f"threads {a.threads}; each row a fresh process")
    print("| work        | allocator         | wall s | user s | sys s | images/s |")
    print("|-------------|-------------------|--------|--------|-------|----------|")
    for name, cmd in rows:
        for label, env in (("glibc default", {**base, "PRH_MALLOC": "system"}),
                           ("keep_freed_memory", base)):  # fmt: skip
            run = [f"{c}-{label[0]}" if c in (str(tmp / "t"), str(tmp / "i")) else c
                   for c in cmd]  # fmt: skip
            wall, user, sys_s, out = timed(run, env)
            rate = f"{float(out.split()[-1]):8.1f}" if name == "encode" else "       -"
            cells = f"{wall:6.1f} | {user:6.1f} | {sys_s:5.1f} | {rate}"
            print(f"| {name:<11} | {label:<17} | {cells} |", flush=True)
    subprocess.run(["rm", "-rf", str(tmp)], check=True)


if __name__ == "__main__":
    main()
