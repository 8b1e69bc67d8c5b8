"""Load test of ``prh serve``: 200 requests, 20 at a time, over loopback, bounded in time.

    python benchmarks/bench_serve.py [--run RUN] [--requests 200] [--concurrency 20]

Rows, side by side:
- ``direct``: the same images decoded and captioned in-process, one after another (the floor: no
  HTTP, no queue);
- ``server``: ``prh serve`` in its own process on 127.0.0.1, ``--concurrency`` clients posting
  multipart uploads through httpx; latency is per answered request, from send to parsed reply
  (so it includes the wait in the server's queue); "refuse ms" is the median time to a refusal;
- ``overload``: the same load against ``prh serve --max-queue concurrency/4``: the bound must
  answer the rest with 503 at once, not let them pile up.

The captioner is the run's (``--run`` with ``prh.caption`` installed), else the model-free
mean-colour control; the table says which. Images are generated held-out world scenes (224 px PNG).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np


def _pct(x: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(x), q)) if x else float("nan")


def _images(n: int) -> list[bytes]:
    from prh.imageio import encode_png

    try:
        from prh.serve.scenes import SceneSource

        src = SceneSource(size=224)
        return [src.png(s) for s in range(n)]
    except ImportError:  # no world: textured noise, same size
        rng = np.random.default_rng(0)
        return [encode_png(rng.integers(0, 256, (224, 224, 3), dtype=np.uint8)) for _ in range(n)]


def bench_direct(captioner: Any, images: list[bytes], n: int) -> dict[str, Any]:
    """Decode and caption ``n`` uploads serially, in-process."""
    from prh.imageio import decode_image

    lat = []
    t0 = time.perf_counter()
    for i in range(n):
        t = time.perf_counter()
        captioner.caption(decode_image(images[i % len(images)]))
        lat.append(time.perf_counter() - t)
    wall = time.perf_counter() - t0
    return {"ok": n, "errors": 0, "status": {"200": n}, "lat": lat, "refused": [], "wall": wall}


async def _load(url: str, images: list[bytes], n: int, conc: int, limit_s: float) -> dict[str, Any]:
    import httpx

    lat: list[float] = []  # answered requests
    refused: list[float] = []  # everything else (503 from the queue bound, errors)
    status: dict[str, int] = {}
    sem = asyncio.Semaphore(conc)
    limits = httpx.Limits(max_connections=conc, max_keepalive_connections=conc)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=limit_s) as client:

        async def one(i: int) -> None:
            async with sem:
                files = {"image": (f"scene-{i}.png", images[i % len(images)], "image/png")}
                t = time.perf_counter()
                try:
                    r = await client.post("/api/caption", files=files)
                    ok = r.status_code == 200 and isinstance(r.json().get("caption"), str)
                    key = str(r.status_code) if ok or r.status_code != 200 else "bad-body"
                except httpx.HTTPError as e:
                    key = type(e).__name__
                (lat if key == "200" else refused).append(time.perf_counter() - t)
                status[key] = status.get(key, 0) + 1

        t0 = time.perf_counter()
        await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(n))), limit_s)
        wall = time.perf_counter() - t0
    ok = status.get("200", 0)
    return {
        "ok": ok,
        "errors": n - ok,
        "status": status,
        "lat": lat,
        "refused": refused,
        "wall": wall,
    }


_LAUNCH = (
    "import argparse, sys; from prh.cli import serve as s; p = argparse.ArgumentParser(); "
    "s.add_arguments(p); sys.exit(s.run(p.parse_args(sys.argv[1:])))"
)


def bench_server(flags: list[str], images: list[bytes], n: int, conc: int, limit_s: float) -> dict:
    """Start ``prh serve FLAGS`` in its own process on a free loopback port; post ``n`` uploads.

    A separate process keeps the load generator's Python work off the server's GIL.
    """
    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-c", _LAUNCH, *flags, "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + limit_s
        while True:  # models load before the port opens
            if proc.poll() is not None:
                raise SystemExit(f"prh serve exited with {proc.returncode}: {proc.stderr.read()}")
            if time.monotonic() > deadline:
                raise SystemExit(f"prh serve did not answer within {limit_s:.0f} s")
            try:
                if httpx.get(url + "/api/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        return asyncio.run(_load(url, images, n, conc, limit_s))
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--run", type=Path, help="demo run folder (default: mean-colour control)")
    p.add_argument("--requests", type=int, default=200, help="requests per row (default 200)")
    p.add_argument("--concurrency", type=int, default=20, help="clients at once (default 20)")
    p.add_argument("--time-limit", type=float, default=300.0, help="seconds per row (default 300)")
    p.add_argument("--json", type=Path, help="also write the rows here")
    args = p.parse_args(argv)

    from prh.serve.colour import ColourCaptioner

    if args.run is not None:
        from prh.serve.runinfo import load_run_captioner

        captioner, name = load_run_captioner(args.run), f"run {args.run}"
        flags = ["--run", str(args.run)]
    else:
        captioner, name = ColourCaptioner(), "mean-colour control (no model)"
        flags = ["--captioner", "colour"]
    images = _images(16)
    captioner.caption(np.zeros((224, 224, 3), np.uint8))  # warm-up, as prh serve does
    n, c = args.requests, args.concurrency
    overload = ["--max-queue", str(max(1, c // 4))]
    rows = {
        "direct": bench_direct(captioner, images, n),
        "server": bench_server(flags, images, n, c, args.time_limit),
        "overload": bench_server(flags + overload, images, n, c, args.time_limit),
    }
    print(f"captioner: {name}; {n} requests, {c} concurrent, 224 px PNG scenes, 127.0.0.1")
    head = f"{'row':<9} {'ok':>4} {'errors':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}"
    print(head + f" {'req/s':>7} {'refuse ms':>9}  status")
    out = {}
    for key, r in rows.items():
        ms = [x * 1000 for x in r["lat"]]
        out[key] = {
            "captioner": name,
            "requests": n,
            "concurrency": 1 if key == "direct" else c,
            "ok": r["ok"],
            "errors": r["errors"],
            "status": r["status"],
            "p50_ms": _pct(ms, 50),
            "p99_ms": _pct(ms, 99),
            "max_ms": max(ms, default=float("nan")),
            "req_per_s": n / r["wall"],
            "refuse_p50_ms": _pct([x * 1000 for x in r["refused"]], 50),
        }
        o = out[key]
        print(
            f"{key:<9} {o['ok']:>4} {o['errors']:>6} {o['p50_ms']:>8.1f} {o['p99_ms']:>8.1f} "
            f"{o['max_ms']:>8.1f} {o['req_per_s']:>7.1f} {o['refuse_p50_ms']:>9.1f}  "
            f"{json.dumps(o['status'])}"
        )
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    # The server row must be clean; the overload row must have refused some (the bound works).
    return 0 if rows["server"]["errors"] == 0 and rows["overload"]["status"].get("503") else 1


if __name__ == "__main__":
    sys.exit(main())
