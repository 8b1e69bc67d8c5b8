"""`prh sweep` bad input (issue 11): one line, exit status 2, before any cell runs, nothing
touched; and a sweep killed with SIGKILL leaves no worker process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import prh

SRC = str(Path(prh.__file__).resolve().parents[1])


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--seed", "-1"], r"argument --seed: expected a seed"),
        (["--seed", "nan"], r"argument --seed"),
        (["--seed", "inf"], r"argument --seed"),
        (["--seed", "4294967296"], r"argument --seed"),
        (["--workers", "0"], r"argument --workers"),
        (["--workers", "nan"], r"argument --workers"),
        (["--preset", "huge"], r"argument --preset: invalid choice"),
        (["--executor", "slurm"], r"argument --executor: invalid choice"),
        (["--model-preset", "small"], r"--model-preset only apply to --backend cave"),
        (["--vision", "minilm"], r"--vision only apply to --backend cave"),
        (["--address", "head:6379"], r"--address needs --executor ray"),
        (["--executor", "ray", "--address", "head"], r"--address 'head': expected 'auto' or HOST"),
        (["--executor", "ray", "--address", "h:99999"], r"expected 'auto' or HOST:PORT"),
    ],
)
def test_bad_option_is_one_line_before_any_work(bad_input, tmp_path, argv, match):
    out = tmp_path / "sweep"
    bad_input(["sweep", "--out", out, *argv], match=match)
    assert not out.exists()  # refused before the folder (or a cell) was made


def test_unknown_model_preset_is_refused_before_the_vision_step(bad_input, tmp_path):
    # it used to embed every held-out scene (47 s) and then fail every cell
    out = tmp_path / "sweep"
    t0 = time.perf_counter()
    bad_input(["sweep", "--backend", "cave", "--model-preset", "huge", "--out", out],
              match=r"--model-preset 'huge': expected tiny, small or base")  # fmt: skip
    assert not out.exists() and time.perf_counter() - t0 < 20


def test_unknown_vision_spec_is_one_line(bad_input, tmp_path):
    bad_input(["sweep", "--backend", "cave", "--vision", "no-such-encoder", "--out", tmp_path],
              match=r"unknown encoder spec 'no-such-encoder'")  # fmt: skip
    assert not (tmp_path / "results.jsonl").read_text()  # no cell ran


def test_out_that_is_a_file_or_under_a_file(bad_input, tmp_path):
    f = tmp_path / "results.txt"
    f.write_text("precious\n")
    bad_input(["sweep", "--out", f], inputs=[f], match=r"--out .*is a file, expected a folder")
    bad_input(["sweep", "--out", f / "sub"], inputs=[f], match=r"is a file, so the folder cannot")


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_out_that_cannot_be_created(bad_input):
    bad_input(["sweep", "--out", "/proc/prh-sweep"], match=r"--out /proc/prh-sweep: cannot create")


def test_ray_executor_without_ray_is_one_line(bad_input, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    out = tmp_path / "sweep"
    bad_input(["sweep", "--executor", "ray", "--out", out], match=r"needs the ray package")
    assert not out.exists()


def _children(pid: int) -> list[tuple[int, str]]:
    """Descendants of ``pid`` as ``(pid, start time)`` (start time guards against pid reuse)."""
    parent: dict[int, int] = {}
    start: dict[int, str] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # exited meanwhile
            parent[int(d.name)], start[int(d.name)] = int(fields[1]), fields[19]
    found, frontier = [], [pid]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        found += [(c, start[c]) for c in kids]
        frontier += kids
    return found


def _alive(pid: int, started: str) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[19] == started and fields[0] != "Z"  # a zombie has exited


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigkilled_sweep_leaves_no_worker(tmp_path):
    out = tmp_path / "sweep"
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "prh",
            "sweep",
            "--preset",
            "paper-grid",
            "--workers",
            "2",
            "--out",
            str(out),
            "--no-progress",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        res = out / "results.jsonl"
        while time.monotonic() < deadline and proc.poll() is None:
            if res.exists() and res.stat().st_size > 0:
                break  # the pool's workers are computing
            time.sleep(0.05)
        assert proc.poll() is None, "the sweep ended before it could be killed"
        kids = _children(proc.pid)
        assert len(kids) >= 2  # the two pool workers (and the resource tracker)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(*k) for k in kids):
        time.sleep(0.1)
    left = [pid for pid, started in kids if _alive(pid, started)]
    for pid in left:  # do not leak them into the rest of the test session
        os.kill(pid, signal.SIGKILL)
    assert not left, f"processes {left} outlived the killed sweep"


def test_unreachable_ray_head_is_one_line_at_once(bad_input, tmp_path):
    pytest.importorskip("ray", reason="ray is not installed (pip install 'prh[ray]')")
    import socket

    with socket.socket() as s:  # a port nobody listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.perf_counter()
    bad_input(["sweep", "--executor", "ray", "--address", f"127.0.0.1:{port}", "--out", tmp_path],
              match=r"no Ray head answers there")  # fmt: skip
    assert time.perf_counter() - t0 < 30  # ray.init alone retries for minutes
    assert not (tmp_path / "results.jsonl").exists()  # no cell ran
