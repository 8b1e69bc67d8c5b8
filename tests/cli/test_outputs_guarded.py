"""Nothing lost when two runs meet, nothing unbounded (issue 25).

One lock per output (a second writer is refused, naming the holder; a dead holder's lock is taken
over), multi-file outputs all or nothing (a full disk leaves none of them and names the path),
bounded worker counts, a memory estimate before a dense allocation, resumed weights byte-equal.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from prh.locks import hold_output, lock_path, release_all

PY = [sys.executable, "-m", "prh"]


def _paired(d: Path, n: int = 40, dim: int = 6, seed: int = 0) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dim)).astype(np.float32)
    q, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    np.save(d / "x.npy", x)
    np.save(d / "y.npy", (x @ q.T).astype(np.float32))
    return d / "x.npy", d / "y.npy"


def _cli(argv: list[str], **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run([*PY, *argv], capture_output=True, text=True, env=env, timeout=120, **kw)


# --- one lock per output -----------------------------------------------------------------------


class Holder:
    """Another process that takes ``output``'s lock and keeps it until killed."""

    def __init__(self, output: Path) -> None:
        code = f"from prh.locks import hold_output; import time; hold_output({str(output)!r}); "
        code += "print('held', flush=True); time.sleep(120)"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout.readline().strip() == "held"
        self.pid = self.proc.pid

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def test_a_held_output_is_refused_in_one_line_naming_the_holder(tmp_path, bad_input):
    x, y = _paired(tmp_path)
    out, run = tmp_path / "map.safetensors", tmp_path / "run"
    holders = [Holder(out), Holder(run)]
    try:
        err = bad_input(
            ["bridge", "fit", "--x", str(x), "--y", str(y), "--out", str(out)],
            inputs=[x, y],
            match=rf"--out .*map\.safetensors: in use by process {holders[0].pid} ",
        )
        assert "wait for it to finish" in err
        bad_input(
            ["train", "--out", str(run), "--samples", "64", "--batch-size", "64"],
            match=rf"--out .*run: in use by process {holders[1].pid}",
        )
    finally:
        for h in holders:
            h.kill()
    assert not out.exists() and not (tmp_path / "map.json").exists() and not run.exists()


def test_a_killed_holders_lock_is_taken_over(tmp_path):
    out = tmp_path / "m.safetensors"
    holder = Holder(out)
    try:
        assert lock_path(out).read_text().strip() == str(holder.pid)
        x, y = _paired(tmp_path)
        r = _cli(["bridge", "fit", "--x", str(x), "--y", str(y), "--out", str(out)])
        assert r.returncode == 2 and f"in use by process {holder.pid}" in r.stderr
    finally:
        holder.kill()
    r = _cli(["bridge", "fit", "--x", str(x), "--y", str(y), "--out", str(out)])
    assert r.returncode == 0, r.stderr
    assert out.is_file() and not lock_path(out).exists()  # taken over, released, removed
    hold_output(out)  # free again: the CLI released it when it returned
    release_all()


@pytest.mark.slow
def test_two_real_writers_race_one_wins_and_outputs_never_mix(tmp_path):
    """Two `prh bridge fit` on different data into one --out, started together: each race leaves
    one exit 0 and one exit 2 (or two 0s, one after the other), and map.json always describes
    the weights in map.safetensors."""
    import json

    from safetensors import safe_open

    from prh.bridge import load_map

    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    xa, ya = _paired(a, seed=1)
    xb, yb = _paired(b, seed=2)
    out = tmp_path / "map.safetensors"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for _ in range(3):
        procs = [
            subprocess.Popen(
                [*PY, "bridge", "fit", "--x", str(x), "--y", str(y), "--out", str(out)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for x, y in ((xa, ya), (xb, yb))
        ]
        results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
        codes = sorted(c for c, _ in results)
        assert codes in ([0, 0], [0, 2]), results
        for c, err in results:
            if c == 2:  # the winner may not have written its PID yet: "another process"
                assert err.count("\n") == 1 and ".prh-lock); wait for it to finish" in err
                assert re.search(r": in use by (process \d+|another process) \(lock ", err), err
        _, config = load_map(out)  # the sidecar, against the tensors' own copy of the config
        with safe_open(str(out), framework="numpy") as f:
            assert json.loads(f.metadata()["prh_map"]) == config


# --- all or nothing ----------------------------------------------------------------------------


def test_a_full_disk_leaves_no_partial_measure_outputs_and_names_the_path(
    tmp_path, monkeypatch, capsys
):
    from prh.cli import main

    x, y = _paired(tmp_path, n=30, dim=12)
    calls = {"n": 0}
    real = os.fsync

    def fsync(fd):  # the third file hits a full disk
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    out = tmp_path / "out"
    out.mkdir()
    argv = ["measure", str(x), str(y), "--metric", "all", "--k", "5", "--npy",
            str(out / "s.npy"), "--json", str(out / "s.json")]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "No space left on device" in err and str(out) in err
    assert sorted(p.name for p in out.iterdir()) == []  # no per-metric file, no temporary file


def test_bridge_fit_writes_the_map_and_its_sidecar_or_neither(tmp_path, monkeypatch):
    from prh.bridge import make_map, save_map

    x, y = (np.load(p) for p in _paired(tmp_path))
    m = make_map("orthogonal").fit(x, y)
    out = tmp_path / "m.safetensors"
    real = os.fsync
    calls = {"n": 0}

    def fsync(fd):
        calls["n"] += 1
        if calls["n"] == 2:  # the sidecar
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError, match="No space left") as e:
        save_map(out, m)
    assert e.value.filename == str(tmp_path / "m.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.npy", "y.npy"]


def test_outputs_take_the_umask_mode(tmp_path):
    from prh.io import write_all, write_json

    old = os.umask(0o022)
    try:
        write_json(tmp_path / "a.json", {"a": 1})
        write_all({tmp_path / "b.bin": b"b", tmp_path / "c.bin": b"c"})
    finally:
        os.umask(old)
    for name in ("a.json", "b.bin", "c.bin"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o644


# --- bounds ------------------------------------------------------------------------------------

CPUS = len(os.sched_getaffinity(0))


@pytest.mark.parametrize(
    "argv, match",
    [
        (
            ["train", "--modality", "image", "--out", "{t}/r", "--render-workers", "100000"],
            r"--render-workers: expected 1 to \d+ worker processes \(this machine's CPUs\), got "
            r"100,000",
        ),
        (
            ["sweep", "--preset", "demo", "--out", "{t}/s", "--workers", "100000"],
            r"--workers 100,000: expected 1 to \d+ local worker processes",
        ),
        (
            [
                "sweep",
                "--preset",
                "demo",
                "--out",
                "{t}/s",
                "--executor",
                "ray",
                "--workers",
                "100000",
            ],
            r"--workers 100,000: expected 1 to \d+ CPUs of local Ray",
        ),
        (
            ["demo", "--out", "{t}/d", "--workers", "100000"],
            r"--workers: expected 1 to \d+ worker processes",
        ),
        (
            ["train", "--modality", "image", "--out", "{t}/r", "--train-scenes", "99999999"],
            r"--train-scenes 99,999,999: the world has [\d,]+ training scenes",
        ),
    ],
    ids=["render-workers", "sweep workers", "ray local cpus", "demo workers", "train-scenes"],
)
def test_counts_beyond_the_machine_are_refused_before_work(tmp_path, bad_input, argv, match):
    bad_input([a.format(t=tmp_path) for a in argv], match=match)
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no folder made, no process started


def test_bridge_fit_estimates_memory_before_a_dense_allocation(tmp_path, bad_input):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "x.npy", rng.standard_normal((40, 300_000), dtype=np.float32))
    np.save(tmp_path / "y.npy", rng.standard_normal((40, 200_000), dtype=np.float32))
    bad_input(
        [
            "bridge",
            "fit",
            "--x",
            f"{tmp_path}/x.npy",
            "--y",
            f"{tmp_path}/y.npy",
            "--out",
            f"{tmp_path}/m.safetensors",
            "--kind",
            "semi-orthogonal",
        ],
        inputs=[tmp_path / "x.npy", tmp_path / "y.npy"],
        match=r"a semi-orthogonal map from d_x = 300,000 to d_y = 200,000 needs about [\d,.]+ GiB "
        r"of memory, [\d,.]+ GiB available",
    )


def test_the_memory_estimate_bounds_a_real_fit():
    """The estimate is an upper bound of what a fit really allocates (tracemalloc sees numpy)."""
    import tracemalloc

    from prh.bridge import make_map
    from prh.bridge.procrustes import fit_memory_bytes

    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((200, 300)), rng.standard_normal((200, 200))
    for kind, whiten in (("semi-orthogonal", False), ("semi-orthogonal", True), ("ridge", False)):
        tracemalloc.start()
        make_map(kind, **({"whiten": whiten} if kind != "ridge" else {})).fit(x, y)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        est = fit_memory_bytes(kind, 200, 300, 200, whiten=whiten)
        assert peak <= est <= 8 * peak, (kind, whiten, peak, est)


# --- the rest ------------------------------------------------------------------------------------


def test_ray_address_that_is_not_a_ray_head_is_one_line_at_once(tmp_path):
    pytest.importorskip("ray")
    import socket
    import threading

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    port = srv.getsockname()[1]

    def serve():  # an HTTP/1.1 server, say: it answers, but not as gRPC
        for _ in range(2):
            c, _ = srv.accept()
            c.recv(100)
            c.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
            c.close()

    threading.Thread(target=serve, daemon=True).start()
    t = time.perf_counter()
    r = _cli(["sweep", "--preset", "demo", "--out", str(tmp_path / "s"), "--executor", "ray",
              "--address", f"127.0.0.1:{port}"])  # fmt: skip
    assert time.perf_counter() - t < 30
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"127.0.0.1:{port}: something listens there but it is not a Ray head" in r.stderr
    srv.close()


def test_ray_start_failure_is_explained(monkeypatch):
    pytest.importorskip("ray")
    import ray

    from prh.errors import InputError
    from prh.scaling.executors import RayExecutor

    def boom(**kw):
        raise SystemExit(1)  # what Ray does when its raylet dies at start

    monkeypatch.setattr(ray, "init", boom)
    with pytest.raises(InputError, match=r"ray: cannot start or reach a local Ray instance .*logs"):
        RayExecutor(local_cpus=1)._init(ray)


def test_cuda_refused_without_cuda_whatever_the_backend(tmp_path, bad_input):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    x, y = _paired(tmp_path)
    bad_input(["measure", str(x), str(y), "--backend", "numpy", "--device", "cuda"],
              inputs=[x, y], match=r"--device cuda: CUDA is not available")  # fmt: skip


def test_unbiased_cka_is_undefined_where_cka_is():
    from prh.metrics import cka, unbiased_cka

    rng = np.random.default_rng(0)
    const = np.ones((50, 8), dtype=np.float32) * np.float32(0.3)
    b = rng.standard_normal((50, 5))
    assert np.isnan(cka(const, b)) and np.isnan(unbiased_cka(const, b))
    assert unbiased_cka(b, b) == pytest.approx(1.0)


def test_safetensors_files_are_byte_identical_across_processes(tmp_path):
    """safetensors writes its metadata in hash-map order, which changes between processes."""
    code = (
        "import sys, numpy as np; from prh.io import write_tensors; "
        "write_tensors(sys.argv[1], {'w': np.arange(6.0), 'b': np.ones(2, np.float32)}, "
        "metadata={k: k * 2 for k in 'abcdefghij'})"
    )
    digests = set()
    for i in range(4):
        p = tmp_path / f"{i}.safetensors"
        subprocess.run([sys.executable, "-c", code, str(p)], check=True, timeout=60)
        digests.add(hashlib.sha256(p.read_bytes()).hexdigest())
    assert len(digests) == 1
    from safetensors.numpy import load_file

    assert load_file(str(p))["w"].tolist() == list(np.arange(6.0))


def test_a_failed_caption_build_leaves_no_partial_caption_folder(
    tmp_path, monkeypatch, text_run, tiny_vit, caption_build_kw
):
    import prh.caption.build as build

    calls = {"n": 0}
    real = build.write_tensors

    def write_tensors(*a, **kw):  # the disk fills up after the first tensor file
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(a[0]))
        return real(*a, **kw)

    monkeypatch.setattr(build, "write_tensors", write_tensors)
    out = tmp_path / "run"
    with pytest.raises(OSError, match="No space left"):
        build.build_caption_run(text_run, out, vision=f"hf:{tiny_vit}", **caption_build_kw)
    assert not (out / "caption").exists()


def test_training_from_python_takes_the_run_folders_lock(tmp_path):
    """`prh.training.train` (the library, not only the CLI) refuses a folder another process
    writes, before any work."""
    from prh.errors import InputError
    from prh.training import train, train_config

    out = tmp_path / "run"
    holder = Holder(out)
    try:
        cfg = train_config("tiny", samples=64, batch_size=64, train_scenes=100, vocab_size=200)
        with pytest.raises(InputError, match=rf"in use by process {holder.pid}"):
            train(cfg, out, progress=False, threads=1)
    finally:
        holder.kill()
    assert not (out / "config.json").exists()
