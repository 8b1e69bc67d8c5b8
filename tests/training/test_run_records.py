"""A run folder's start and finish records: command, host, resolved device, resumed-from step."""

import json
import sys

from fakes import fake_factory, tiny_config

from prh.training import train


def _train(cfg, out, **kw):
    return train(cfg, out, progress=False, threads=1, data_factory=fake_factory, **kw)


def test_start_finish_and_resume_records(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["prh", "train", "--out", str(tmp_path / "run")])
    cfg = tiny_config()
    run = _train(cfg, tmp_path / "run", stop_after=7)  # killed at step 7, checkpoint at 4
    meta = json.loads((run / "meta.json").read_text())
    assert meta["command"] == ["prh", "train", "--out", str(tmp_path / "run")]
    assert meta["host"] and meta["started"] and meta["device"] == "cpu"
    assert "finished" not in meta  # a killed run has no finish record
    monkeypatch.setattr(sys, "argv", ["prh", "train", "--resume", str(run)])
    capsys.readouterr()
    _train(cfg, run, resume=True)
    assert f"prh train: resuming {run} from step 4" in capsys.readouterr().err
    meta = json.loads((run / "meta.json").read_text())
    (resume,) = meta["resumes"]
    assert resume["from_step"] == 4 and resume["command"][-2:] == ["--resume", str(run)]
    assert meta["finished"] >= meta["started"] and meta["final_step"] == 12
