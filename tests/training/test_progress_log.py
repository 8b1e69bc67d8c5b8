"""Training progress in a log file: plain lines, no carriage return, silenced on demand."""

from fakes import fake_factory, tiny_config

import prh.progress
from prh.training import train


def test_training_progress_in_a_log_file_is_plain_lines(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(prh.progress, "PLAIN_INTERVAL_S", 0.0)  # a line per step
    train(tiny_config(), tmp_path / "run", progress=True, threads=1, data_factory=fake_factory)
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = [ln for ln in err.splitlines() if ln.startswith("train: ")]
    steps = tiny_config().steps
    assert [ln.split()[1] for ln in lines] == [f"{s}/{steps}" for s in range(1, steps + 1)]
    assert "| loss " in lines[-1]


def test_training_without_progress_prints_nothing(tmp_path, capsys):
    train(tiny_config(), tmp_path / "run", progress=False, threads=1, data_factory=fake_factory)
    assert capsys.readouterr().err == ""
