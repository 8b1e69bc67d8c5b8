"""The server's limits under hostile load (issue 36): upload memory and stalled connections.

    python benchmarks/bench_serve_limits.py [--uploads 200] [--upload-mb 10] [--max-queue 8]
                                            [--stalled 1100]

- ``uploads``: ``prh serve --captioner colour --max-queue Q`` in its own process; ``--uploads``
  clients post one ``--upload-mb`` MiB multipart body each, all at once, streamed from one shared
  buffer (so the load generator's own memory stays small). The row gives the server's resident
  memory before the burst and its peak (``VmHWM`` from ``/proc``), their difference against the
  bound ``Q x upload limit``, and how each upload was answered.
- ``stalled``: ``--stalled`` connections opened and never sent a complete request head; the row
  gives how many the server had closed after its 10 s header timeout (measured from the last
  connect), and whether ``/api/health`` still answered while they were open.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import resource
import socket
import subprocess
import sys
import time

import httpx

_LAUNCH = (
    "import argparse, sys; from prh.cli import serve as s; p = argparse.ArgumentParser(); "
    "s.add_arguments(p); sys.exit(s.run(p.parse_args(sys.argv[1:])))"
)
MIB = 2**20


def _kib(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def start_server(flags: list[str]) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-c", _LAUNCH, "--captioner", "colour", *flags,
           "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/api/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("prh serve did not answer within 120 s")


async def burst(url: str, n: int, size: int) -> collections.Counter:
    """``n`` uploads of ``size`` bytes at once; answers counted by status (or error name)."""
    boundary = "b0undary"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"image\"; filename=\"x.png\""
            "\r\nContent-Type: image/png\r\n\r\n").encode()  # fmt: skip
    tail = f"\r\n--{boundary}--\r\n".encode()
    payload = memoryview(b"\x89PNG\r\n\x1a\n" + bytes(size - len(head) - len(tail) - 8))
    length = len(head) + len(payload) + len(tail)
    headers = {"content-type": f"multipart/form-data; boundary={boundary}",
               "content-length": str(length)}  # fmt: skip
    counts: collections.Counter = collections.Counter()

    async def body():
        yield head
        for i in range(0, len(payload), MIB):
            yield bytes(payload[i : i + MIB])
            await asyncio.sleep(0)
        yield tail

    limits = httpx.Limits(max_connections=n, max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=120, limits=limits) as c:

        async def one() -> None:
            try:
                r = await c.post(url + "/api/caption", content=body(), headers=headers)
                counts[r.status_code] += 1
            except httpx.HTTPError as e:
                counts[type(e).__name__] += 1

        await asyncio.gather(*(one() for _ in range(n)))
    return counts


def bench_uploads(n: int, mb: int, queue: int) -> dict:
    proc, url = start_server(["--max-queue", str(queue), "--max-upload-mb", str(mb)])
    try:
        time.sleep(1)
        before = _kib(proc.pid, "VmRSS")
        t0 = time.perf_counter()
        counts = asyncio.run(burst(url, n, mb * MIB - 1024))
        wall = time.perf_counter() - t0
        peak = _kib(proc.pid, "VmHWM")
        alive = httpx.get(url + "/api/health", timeout=5).status_code == 200
    finally:
        proc.terminate()
        proc.wait(10)
    return {"uploads": n, "mb": mb, "queue": queue, "rss_mib": before / 1024,
            "peak_mib": peak / 1024, "growth_mib": (peak - before) / 1024, "bound_mib": queue * mb,
            "answers": dict(counts), "wall_s": wall, "alive": alive}  # fmt: skip


def bench_stalled(n: int) -> dict:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, n + 256)), hard))
    proc, url = start_server([])
    socks: list[socket.socket] = []
    try:
        for _ in range(n):
            try:
                s = socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), 5)
            except OSError:
                break
            s.sendall(b"GET /api/health HTTP/1.1\r\n")  # a head that never ends
            socks.append(s)
        opened = time.monotonic()
        try:
            alive = httpx.get(url + "/api/health", timeout=5).status_code
        except httpx.HTTPError as e:
            alive = type(e).__name__
        time.sleep(max(0.0, opened + 12 - time.monotonic()))
        closed = 0
        for s in socks:
            s.setblocking(False)
            try:
                closed += s.recv(1) == b""
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
    finally:
        for s in socks:
            s.close()
        proc.terminate()
        proc.wait(10)
    return {"stalled": len(socks), "closed_after_12s": closed, "health_while_open": alive}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--uploads", type=int, default=200)
    p.add_argument("--upload-mb", type=int, default=10)
    p.add_argument("--max-queue", type=int, default=8)
    p.add_argument("--stalled", type=int, default=1100)
    a = p.parse_args(argv)
    u = bench_uploads(a.uploads, a.upload_mb, a.max_queue)
    print("| uploads x MiB | --max-queue | server RSS before | peak | growth | bound Q x limit "
          "| answers | wall |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    answers = ", ".join(f"{k}: {v}" for k, v in sorted(u["answers"].items(), key=str))
    print(f"| {u['uploads']} x {u['mb']} | {u['queue']} | {u['rss_mib']:.0f} MiB | "
          f"{u['peak_mib']:.0f} MiB | {u['growth_mib']:.0f} MiB | {u['bound_mib']} MiB | "
          f"{answers} | {u['wall_s']:.1f} s |")  # fmt: skip
    s = bench_stalled(a.stalled)
    print()
    print("| stalled connections | closed 12 s after the last opened | /api/health while open |")
    print("|---|---|---|")
    print(f"| {s['stalled']} | {s['closed_after_12s']} | {s['health_while_open']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
