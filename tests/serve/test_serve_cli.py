"""`prh serve` argument and run-folder errors: one clear line, exit status 2, nothing served."""

from __future__ import annotations

import importlib.util
import socket

import pytest

import prh.cli
from prh.cli import main


@pytest.fixture(autouse=True)
def only_serve(monkeypatch):
    # Other subcommands may be mid-construction in the shared tree; test ours alone.
    monkeypatch.setattr(prh.cli, "COMMANDS", {"serve": prh.cli.COMMANDS["serve"]})


def test_missing_run_is_one_clear_line(tmp_path, capsys):
    assert main(["serve", "--run", str(tmp_path / "nope"), "--port", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert (
        err
        == f"prh serve: error: --run {tmp_path / 'nope'}: no such folder; make one with `prh demo`"
    )


def test_run_is_required_unless_the_colour_control_is_asked_for(capsys):
    assert main(["serve"]) == 2
    assert "--run RUN is required" in capsys.readouterr().err


def test_a_folder_that_is_not_a_demo_run(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("hello")
    with socket.socket() as s:  # a port that is free now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["serve", "--run", str(tmp_path), "--port", str(port)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("prh serve: error: ") and err.count("\n") == 0
    if importlib.util.find_spec("prh.caption") is None:
        assert "captioning is not available" in err
    else:
        assert err == (
            f"prh serve: error: --run {tmp_path}: not a caption run (no caption/caption.json); "
            "make one with `prh caption --build` or `prh demo`"
        )


def test_busy_port_is_reported(tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        assert main(["serve", "--captioner", "colour", "--port", str(port)]) == 2
    assert f"--port {port}: cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


@pytest.mark.parametrize("port", ["0", "65536", "http"])
def test_port_is_validated(port, capsys):
    with pytest.raises(SystemExit) as e:
        main(["serve", "--captioner", "colour", "--port", port])
    assert e.value.code == 2
    assert "expected a port in [1, 65535]" in capsys.readouterr().err


def test_defaults_bind_loopback():
    parser = prh.cli.build_parser()
    args = parser.parse_args(["serve", "--run", "r"])
    assert (args.host, args.port, args.max_queue, args.workers) == ("127.0.0.1", 8000, 64, 1)


@pytest.mark.slow
def test_prh_serve_process_answers_on_loopback_and_stops(tmp_path):
    import subprocess
    import sys
    import time

    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # The serve subcommand alone (other subcommands may be mid-construction in the shared tree).
    launch = (
        "import argparse, sys; from prh.cli import serve as s; p = argparse.ArgumentParser(); "
        "s.add_arguments(p); sys.exit(s.run(p.parse_args(sys.argv[1:])))"
    )
    cmd = [sys.executable, "-c", launch, "--captioner", "colour", "--port", str(port)]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "prh serve did not answer within 60 s"
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        assert health.json()["captioner"] == "mean-colour control (no model)"
        assert httpx.get(f"http://127.0.0.1:{port}/").status_code == 200
    finally:
        proc.terminate()
        proc.wait(10)
    err = proc.stderr.read()
    assert f"open http://127.0.0.1:{port}/" in err and "warning" not in err
