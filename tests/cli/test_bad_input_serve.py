"""`prh serve`: every bad argument is one line, exit status 2, before anything is served."""

from __future__ import annotations

import json
import socket

import pytest


@pytest.mark.parametrize(
    "flags, match",
    [
        (["--port", "0"], "--port: expected a port in"),
        (["--port", "65536"], "--port"),
        (["--port", "http"], "--port"),
        (["--host", "bad..host"], "--host: expected a host name or IP address"),
        (["--host", "two words"], "--host"),
        (["--host="], "--host"),
        (["--host", "nonexistent.invalid"], "--host nonexistent.invalid: cannot resolve"),
        (["--max-upload-mb", "0"], "--max-upload-mb"),
        (["--max-upload-mb", "100000"], "--max-upload-mb: expected 1 to 1,024 MiB"),
        (["--threads", "100000"], "--threads: expected 1 to 1,024 threads"),
        (["--workers", "0"], "--workers"),
        (["--workers", "100000"], "--workers"),
        (["--max-queue", "-1"], "--max-queue"),
        (["--world-seed", "-1"], "--world-seed: expected a seed"),
        (["--captioner", "gpt"], "--captioner"),
    ],
)
def test_bad_arguments(bad_input, flags, match):
    bad_input(["serve", "--captioner", "colour", *flags], match=match)


def test_run_is_a_file(bad_input, tmp_path):
    f = tmp_path / "summary.json"
    f.write_text("{}")
    bad_input(["serve", "--run", f], inputs=[f], match="is a file, expected a demo run folder")
    bad_input(
        ["serve", "--captioner", "colour", "--run", f], inputs=[f], match="is a file, expected"
    )


def test_run_is_missing_or_not_a_caption_run(bad_input, tmp_path):
    bad_input(["serve", "--run", tmp_path / "nope"], match="no such folder")
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"train": {}}))  # a training run, not a demo
    with socket.socket() as s:  # a port that is free now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = ["serve", "--run", run, "--port", port]
    bad_input(argv, inputs=[run / "config.json"], match=f"--run {run}: not a caption run")


def test_run_is_required(bad_input):
    bad_input(["serve"], match="--run RUN is required")
