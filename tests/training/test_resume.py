import json

import pytest
import torch
from fakes import CharTokenizer, fake_factory, tiny_config
from safetensors.torch import load_file

import prh.training.loop as loop_mod
from prh.errors import CheckpointError, InputError, TrainingError
from prh.training import TrainConfig, load_run, train
from prh.training.checkpoint import latest_checkpoint, load_checkpoint
from prh.training.rundir import read_metrics


def _train(cfg, out, **kw):
    return train(cfg, out, progress=False, threads=1, data_factory=fake_factory, **kw)


@pytest.mark.parametrize("views", ["good", "next-token"])
def test_killed_and_resumed_equals_uninterrupted_bitwise(tmp_path, views):
    cfg = tiny_config(views=views)
    straight = _train(cfg, tmp_path / "straight")
    # "Kill" after 7 steps (no checkpoint at the kill: the last one is at step 4), then resume.
    killed = _train(cfg, tmp_path / "killed", stop_after=7)
    assert not (killed / "model.safetensors").exists()
    assert latest_checkpoint(killed / "checkpoints").name == "step_00000004.json"
    _train(cfg, killed, resume=True)
    a = load_file(str(straight / "model.safetensors"))
    b = load_file(str(killed / "model.safetensors"))
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k
    # The metrics of the resumed run hold each step once, like the straight run's.
    steps = [r["step"] for r in read_metrics(killed) if "loss" in r]
    assert steps == list(range(1, 13))
    assert [r["loss"] for r in read_metrics(killed)] == [r["loss"] for r in read_metrics(straight)]


def test_run_directory_describes_itself_and_loads(tmp_path):
    run = _train(tiny_config(), tmp_path / "run")
    config = json.loads((run / "config.json").read_text())
    meta = json.loads((run / "meta.json").read_text())
    assert config["train"]["views"] == "good" and config["model"]["d_model"] == 32
    assert meta["seed"] == 0 and meta["threads"] == 1 and meta["device"] == "cpu"
    assert "torch" in meta["versions"] and "git" in meta
    loaded = load_run(run, tokenizer_loader=CharTokenizer.load)
    feats = loaded.encode_texts(["a cat", "the dog sat", "x"], batch_size=2)
    # 1 block -> embedding layer, last layer, and the zero-padded projection: (3, 3, 32)
    assert feats.shape == (3, 3, 32) and feats.dtype == "float32"
    assert (feats[:, -1, 8:] == 0).all()
    assert loaded.embed_texts(["a cat"]).shape == (1, 8)
    # Losses went down: the JEPA learned something about the scenes.
    losses = [r["loss"] for r in read_metrics(run)]
    assert min(losses[-3:]) < losses[0]


def test_same_seed_same_weights_different_seed_differs(tmp_path):
    a = load_file(str(_train(tiny_config(samples=48), tmp_path / "a") / "model.safetensors"))
    b = load_file(str(_train(tiny_config(samples=48), tmp_path / "b") / "model.safetensors"))
    c = load_file(
        str(_train(tiny_config(samples=48, seed=1), tmp_path / "c") / "model.safetensors")
    )
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)


def test_nan_loss_stops_and_keeps_last_good_checkpoint(tmp_path, monkeypatch):
    real = loop_mod.compute_loss

    def poisoned(model, batch, step, ctx):
        loss, logs = real(model, batch, step, ctx)
        if step >= 6:
            return loss * float("nan"), {**logs, "loss": float("nan")}
        return loss, logs

    monkeypatch.setattr(loop_mod, "compute_loss", poisoned)
    with pytest.raises(TrainingError, match=r"non-finite loss \(nan\) at step 6.*step_00000004"):
        _train(tiny_config(), tmp_path / "run")
    good = load_checkpoint(latest_checkpoint(tmp_path / "run" / "checkpoints"))
    assert good.step == 4
    assert all(torch.isfinite(v).all() for v in good.model.values())


def test_corrupt_and_foreign_checkpoints_are_one_clear_error(tmp_path):
    run = _train(tiny_config(), tmp_path / "run", stop_after=5)
    last = latest_checkpoint(run / "checkpoints")
    last.with_suffix(".safetensors").write_bytes(b"\x00garbage")
    with pytest.raises(CheckpointError, match="corrupt or missing checkpoint tensors"):
        _train(tiny_config(), run, resume=True)
    last.write_text(json.dumps({"format": "someone-else/3"}))
    with pytest.raises(CheckpointError, match="expected format 'prh-checkpoint/1'"):
        _train(tiny_config(), run, resume=True)
    with pytest.raises(InputError, match="no such run folder to resume"):
        _train(tiny_config(), tmp_path / "nothing", resume=True)
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "notes.txt").write_text("mine")
    with pytest.raises(CheckpointError, match="not a prh run directory"):
        _train(tiny_config(), tmp_path / "foreign", resume=True)


def test_weights_of_another_model_are_refused(tmp_path):
    run = _train(tiny_config(samples=32), tmp_path / "run")
    cfg = json.loads((run / "config.json").read_text())
    cfg["model"]["d_model"] = 64
    (run / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError, match="has shape"):
        load_run(run, tokenizer_loader=CharTokenizer.load)


def test_bad_configs_and_existing_folder(tmp_path):
    _train(tiny_config(samples=16), tmp_path / "run")
    with pytest.raises(InputError, match="holds a finished run; choose another --out"):
        _train(tiny_config(samples=16), tmp_path / "run")
    with pytest.raises(InputError, match="too small to whiten"):
        _train(tiny_config(batch_size=4), tmp_path / "other")
    with pytest.raises(InputError, match="unknown views"):
        tiny_config(views="great")
    with pytest.raises(InputError, match="exactly one of --world and --corpus"):
        TrainConfig(world=None)
    assert not (tmp_path / "other").exists()  # refused before anything was written
