"""Run folders left by a failed start, resumed thread counts, divergence and device checks."""

import json

import pytest
import torch
from fakes import fake_factory, tiny_config
from safetensors.torch import load_file

from prh.device import resolve_device
from prh.errors import InputError, TrainingError
from prh.training import train
from prh.training.checkpoint import latest_checkpoint
from prh.training.rundir import clear_incomplete, run_state


def _train(cfg, out, **kw):
    kw.setdefault("threads", 1)
    return train(cfg, out, progress=False, data_factory=fake_factory, **kw)


def _weights(run):
    return load_file(str(run / "model.safetensors"))


def _leftover_of_a_failed_start(run, cfg=None):
    """What a start killed before its first checkpoint leaves: a tokenizer, maybe a config."""
    run.mkdir()
    (run / "tokenizer.json").write_text('{"kind": "stale"}')
    if cfg is not None:
        (run / "config.json").write_text(json.dumps({"train": cfg.to_dict(), "model": {}}))
        (run / "metrics.jsonl").write_text('{"step": 1, "loss": 9.0}\n')
        (run / "checkpoints").mkdir()
        (run / "checkpoints" / "step_00000004.safetensors").write_bytes(b"half-written")


def test_run_state_names_each_kind_of_folder(tmp_path):
    assert run_state(tmp_path / "none") == "absent"
    (tmp_path / "f").write_text("x")
    assert run_state(tmp_path / "f") == "file"
    (tmp_path / "e").mkdir()
    assert run_state(tmp_path / "e") == "empty"
    _leftover_of_a_failed_start(tmp_path / "i", tiny_config())
    assert run_state(tmp_path / "i") == "incomplete"
    (tmp_path / "i" / "notes.txt").write_text("mine")
    assert run_state(tmp_path / "i") == "foreign"
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "config.json").write_text('{"learning_rate": 3}')  # someone else's config
    assert run_state(tmp_path / "c") == "foreign"
    with pytest.raises(ValueError):
        clear_incomplete(tmp_path / "i")  # never deletes a folder with a foreign file
    assert (tmp_path / "i" / "notes.txt").read_text() == "mine"
    run = _train(tiny_config(), tmp_path / "s", stop_after=5)
    assert run_state(run) == "started"
    assert run_state(_train(tiny_config(samples=32), tmp_path / "done")) == "finished"


@pytest.mark.parametrize("with_config", [False, True])
def test_fresh_start_over_a_failed_start_equals_a_clean_run(tmp_path, with_config):
    cfg = tiny_config(samples=64)
    clean = _train(cfg, tmp_path / "clean")
    _leftover_of_a_failed_start(tmp_path / "retry", cfg if with_config else None)
    retry = _train(cfg, tmp_path / "retry")
    a, b = _weights(clean), _weights(retry)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert "stale" not in (retry / "tokenizer.json").read_text()
    losses = [json.loads(x) for x in (retry / "metrics.jsonl").read_text().splitlines()]
    assert losses[0]["loss"] != 9.0  # the failed start's metrics are gone


def test_resume_of_a_config_without_checkpoint_starts_from_step_0(tmp_path):
    cfg = tiny_config(samples=64)
    clean = _train(cfg, tmp_path / "clean")
    _leftover_of_a_failed_start(tmp_path / "r", cfg)
    (tmp_path / "r" / "tokenizer.json").unlink()
    _train(None, tmp_path / "r", resume=True)
    a, b = _weights(clean), _weights(tmp_path / "r")
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_resume_without_a_config_says_start_again(tmp_path):
    _leftover_of_a_failed_start(tmp_path / "r")
    with pytest.raises(InputError, match=r"nothing to resume; start it again with --out"):
        _train(None, tmp_path / "r", resume=True)
    (tmp_path / "f").write_text("x")
    with pytest.raises(InputError, match="is a file, expected a run folder"):
        _train(None, tmp_path / "f", resume=True)


def test_a_run_with_checkpoints_or_foreign_files_is_not_overwritten(tmp_path):
    run = _train(tiny_config(), tmp_path / "run", stop_after=5)
    before = latest_checkpoint(run / "checkpoints").read_bytes()
    with pytest.raises(InputError, match="holds a run with checkpoints; use --resume"):
        _train(tiny_config(), run)
    assert latest_checkpoint(run / "checkpoints").read_bytes() == before
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("years of work")
    with pytest.raises(InputError, match="not a prh run"):
        _train(tiny_config(), tmp_path / "mine")
    assert (tmp_path / "mine" / "thesis.tex").read_text() == "years of work"


def test_resume_uses_the_runs_own_thread_count(tmp_path):
    run = _train(tiny_config(), tmp_path / "run", threads=2, stop_after=5)
    torch.set_num_threads(1)
    train(None, run, progress=False, resume=True, data_factory=fake_factory)  # no threads given
    meta = json.loads((run / "meta.json").read_text())
    assert meta["threads"] == 2 and meta["resumes"][-1]["threads"] == 2
    torch.set_num_threads(1)


@pytest.mark.parametrize("lr", [1e30, 1e12])
def test_diverging_learning_rate_is_a_training_error_naming_the_step(tmp_path, lr):
    with pytest.raises(TrainingError, match=r"at step \d+.*smaller learning rate.*stopped"):
        _train(tiny_config(lr=lr, samples=16 * 40, warmup_frac=0.0), tmp_path / "run")
    records = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert "error" in records[-1]
    good = latest_checkpoint(tmp_path / "run" / "checkpoints")
    if good is not None:  # any checkpoint kept holds finite weights
        tensors = load_file(str(good.with_suffix(".safetensors")))
        assert all(torch.isfinite(v).all() for v in tensors.values())


def test_device_names_are_checked():
    assert resolve_device("cpu").type == "cpu"
    with pytest.raises(InputError, match="--device tpu: unknown device"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="CUDA is not available"):
            resolve_device("cuda")


def test_soft_objective_runs_without_warnings(tmp_path, recwarn):
    _train(tiny_config(samples=32, objective="soft"), tmp_path / "run")
    assert [str(w.message) for w in recwarn.list] == []


def test_one_resume_rule_auto_never_restart(tmp_path):
    """fit's ``resume``: "auto" continues a started run (the same bytes as a straight run) and
    starts an absent one (a finished one it loads: tests/scaling/test_cave_image.py); "never"
    refuses a started run; "restart" clears any run and trains it again; a foreign folder is
    refused by every mode."""
    cfg = tiny_config()  # 12 steps, a checkpoint every 4
    straight = _weights(_train(cfg, tmp_path / "straight"))
    assert _weights(_train(cfg, tmp_path / "absent", resume="auto")).keys() == straight.keys()
    killed = _train(cfg, tmp_path / "killed", stop_after=7)
    assert run_state(killed) == "started"
    with pytest.raises(InputError, match="a run with checkpoints; use --resume"):
        _train(cfg, killed, resume="never")
    _train(cfg, killed, resume="auto")
    assert all(torch.equal(_weights(killed)[k], straight[k]) for k in straight)
    (killed / "model.safetensors").write_bytes(b"stale")
    _train(cfg, killed, resume="restart")
    assert all(torch.equal(_weights(killed)[k], straight[k]) for k in straight)
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "notes.txt").write_text("mine")
    for mode in ("auto", "never", "restart"):
        with pytest.raises(InputError, match="not a prh run"):
            _train(cfg, tmp_path / "foreign", resume=mode)
    assert (tmp_path / "foreign" / "notes.txt").read_text() == "mine"
    with pytest.raises(InputError, match=r"resume 'sometimes': expected one of auto, never"):
        _train(cfg, tmp_path / "x", resume="sometimes")
    with pytest.raises(InputError, match="starts a run: give its config"):
        _train(None, tmp_path / "x", resume="restart")
