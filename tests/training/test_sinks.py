"""--log tensorboard / wandb: a copy of metrics.jsonl's numbers, never instead of it.

TensorBoard's event files are read back with tensorboard's own EventAccumulator and must equal
``metrics.jsonl`` step for step (also across a kill and resume, whose redone steps are purged);
W&B is checked through a fake ``wandb`` module (the real one is not installable offline), which
records what ``wandb.init`` was asked and every ``log``.
"""

from __future__ import annotations

import importlib.machinery
import json
import sys
import types

import numpy as np
import pytest
from fakes import fake_factory, tiny_config

import prh.cli as cli
from prh.errors import InputError
from prh.training import train
from prh.training.rundir import read_metrics, run_state
from prh.training.sinks import parse_sinks, scalars

NO_TB = "tensorboard not installed: pip install 'prh[tensorboard]'"


def _train(cfg, out, **kw):
    return train(cfg, out, progress=False, threads=1, data_factory=fake_factory, **kw)


def metric_scalars(run) -> dict[str, list[tuple[int, float]]]:
    """``{tag: [(step, value), ...]}`` of metrics.jsonl, the reference (values as float32,
    TensorBoard's scalar type)."""
    out: dict[str, list[tuple[int, float]]] = {}
    for record in read_metrics(run):
        step, values = scalars(record)
        for k, v in values.items():
            out.setdefault(k, []).append((step, float(np.float32(v))))
    return out


def tb_scalars(run) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run / "tb"))
    acc.Reload()
    return {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in acc.Tags()["scalars"]}


def test_tensorboard_events_equal_metrics_jsonl_across_a_resume(tmp_path):
    pytest.importorskip("tensorboard", reason=NO_TB)
    cfg = tiny_config(log="tensorboard", eval_every=0)
    run = _train(cfg, tmp_path / "run", stop_after=7)  # killed at 7, last checkpoint at 4
    assert run_state(run) == "started"  # tb/ is the run's own: the folder resumes
    _train(cfg, run, resume=True)
    reference = metric_scalars(run)
    assert [s for s, _ in reference["loss"]] == list(range(1, 13))  # every step once
    # steps 5-7 ran twice; their first samples_per_s (timing) differs from the redo's, so
    # equality here says the purge kept only the redone steps, as metrics.jsonl does
    assert tb_scalars(run) == reference


def test_cli_tensorboard_end_to_end(tmp_path, capsys):
    pytest.importorskip("tensorboard", reason=NO_TB)
    out = tmp_path / "run"
    argv = ["train", "--out", str(out), "--log", "tensorboard", "--samples", "128",
            "--batch-size", "64", "--d-model", "32", "--n-layers", "1", "--n-heads", "2",
            "--d-ff", "64", "--embed-dim", "8", "--vocab-size", "128", "--max-len", "24",
            "--no-progress", "--set", "log_every=1"]  # fmt: skip
    assert cli.main(argv) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert json.loads((out / "config.json").read_text())["train"]["log"] == "tensorboard"
    assert tb_scalars(out) == metric_scalars(out) and metric_scalars(out)["loss"]


class FakeWandb(types.ModuleType):
    """A stand-in for ``wandb``: ``init`` returns a run that records its ``log`` calls."""

    def __init__(self) -> None:
        super().__init__("wandb")
        self.__spec__ = importlib.machinery.ModuleSpec("wandb", None)
        self.inits: list[dict] = []
        self.logged: list[tuple[int, dict]] = []
        self.finished = 0

    def Settings(self, **kw):  # wandb's name
        return kw

    def init(self, **kw):
        self.inits.append(kw)
        fake = self
        return types.SimpleNamespace(
            log=lambda values, step: fake.logged.append((step, dict(values))),
            finish=lambda: setattr(fake, "finished", fake.finished + 1),
        )


@pytest.mark.parametrize("env_mode", [None, "online"])
def test_wandb_offline_unless_the_user_says(tmp_path, monkeypatch, env_mode):
    fake = FakeWandb()
    monkeypatch.setitem(sys.modules, "wandb", fake)
    if env_mode is None:
        monkeypatch.delenv("WANDB_MODE", raising=False)
    else:
        monkeypatch.setenv("WANDB_MODE", env_mode)
    run = _train(tiny_config(log="wandb"), tmp_path / "run")
    (init,) = fake.inits
    assert init["mode"] == (env_mode or "offline")  # no network unless asked for
    assert init["dir"] == str(run) and init["name"] == "run"
    assert init["config"] == json.loads((run / "config.json").read_text())
    assert fake.finished == 1
    expected = [scalars(r) for r in read_metrics(run)]
    assert fake.logged == expected and len(expected) == 12
    assert (run / "metrics.jsonl").stat().st_size > 0  # beside it, never instead


@pytest.mark.parametrize("sink", ["tensorboard", "wandb"])
def test_missing_package_is_one_line_before_any_folder(tmp_path, capsys, monkeypatch, sink):
    monkeypatch.setitem(sys.modules, sink, None)  # as if not installed
    out = tmp_path / "run"
    assert cli.main(["train", "--out", str(out), "--log", sink, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"prh train: error: --log {sink}: {sink} is not installed; pip install 'prh[{sink}]'"
    )
    assert not out.exists()
    with pytest.raises(ModuleNotFoundError, match=rf"pip install 'prh\[{sink}\]'"):
        _train(tiny_config(log=sink), out)  # the Python entry point says the same
    assert not out.exists()


@pytest.mark.parametrize(
    "value, message",
    [("tb", "unknown sink 'tb'"), ("tensorboard,tensorboard", "names a sink twice")],
)
def test_bad_log_value_is_refused(tmp_path, capsys, value, message):
    out = tmp_path / "run"
    assert cli.main(["train", "--out", str(out), "--log", value, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not out.exists()
    with pytest.raises(InputError, match=message):
        tiny_config(log=value)


def test_parse_sinks_and_scalars():
    assert parse_sinks("none") == () and parse_sinks("wandb, tensorboard") == (
        "wandb",
        "tensorboard",
    )
    record = {"step": 3, "samples": 48, "loss": 0.5, "flag": True, "nan": float("nan"), "e": "x"}
    assert scalars(record) == (3, {"samples": 48.0, "loss": 0.5})
    assert scalars({"error": "diverged"}) == (None, {})


def test_log_default_keeps_config_json_as_before():
    assert "log" not in tiny_config().to_dict()  # hashes of existing runs do not move
    assert tiny_config(log="tensorboard").to_dict()["log"] == "tensorboard"


def test_sink_folders_belong_to_the_run(tmp_path):
    """tb/ and wandb/ (W&B nests its run folders) are a run's own files: the folder is still a
    prh run (resumable, clearable), and clearing it removes them whole."""
    from prh.training.rundir import clear_incomplete

    run = tmp_path / "run"
    (run / "tb").mkdir(parents=True)
    (run / "tb" / "events.out.tfevents.1.host.1.0").write_bytes(b"x")
    (run / "wandb" / "offline-run-1" / "files").mkdir(parents=True)
    (run / "wandb" / "offline-run-1" / "files" / "config.yaml").write_text("a: 1\n")
    (run / "config.json").write_text(json.dumps({"train": {}}))
    assert run_state(run) == "incomplete"
    clear_incomplete(run)
    assert run_state(run) == "empty"
    (run / "notes.txt").write_text("mine")
    assert run_state(run) == "foreign"  # anything else still makes it someone else's


def test_wandb_one_run_per_start_and_resume(tmp_path, monkeypatch):
    """A kill and a resume: two W&B runs; the second logs from the checkpoint on, equal to
    metrics.jsonl's records there (the first keeps the steps the resume redid)."""
    fake = FakeWandb()
    monkeypatch.setitem(sys.modules, "wandb", fake)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    cfg = tiny_config(log="wandb")
    run = _train(cfg, tmp_path / "run", stop_after=7)  # last checkpoint at 4
    first = list(fake.logged)
    _train(cfg, run, resume=True)
    assert len(fake.inits) == 2 and fake.finished == 2
    assert [s for s, _ in first] == list(range(1, 8))
    resumed = fake.logged[len(first) :]
    assert resumed == [scalars(r) for r in read_metrics(run)][4:]  # steps 5..12
