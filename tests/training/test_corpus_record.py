"""A corpus run records its corpus (path, format, split, counts, sha256) and no world fields;
a world run's config is unchanged; --config of a saved config.json reruns the same config."""

from __future__ import annotations

import argparse
import hashlib
import json

import pytest

from prh.cli import train as train_cli
from prh.training import train
from prh.training.config import TrainConfig, train_config

# The keys a world run's config.json "train" held before corpus records (must not change).
WORLD_KEYS = [
    "world", "corpus", "views", "rho", "samples", "preset", "seed", "batch_size", "lr",
    "weight_decay", "warmup_frac", "min_lr_frac", "grad_clip", "max_len", "objective",
    "whiten_eps", "beta", "sigreg_lambda", "sigreg_slices", "vocab_size", "world_seed",
    "captions_per_scene", "train_scenes", "eval_features", "eval_every", "checkpoint_every",
    "log_every", "model_overrides", "steps",
]  # fmt: skip


def _flickr(root, n=24):
    root.mkdir()
    lines = [f"im{i}.jpg#{j}\ta {j} dog runs on sand {i % 5}" for i in range(n) for j in range(3)]
    (root / "tok.txt").write_text("\n".join(lines) + "\n")
    (root / "x_trainImages.txt").write_text("".join(f"im{i}.jpg\n" for i in range(n - 4)))
    (root / "x_testImages.txt").write_text("".join(f"im{i}.jpg\n" for i in range(n - 4, n)))
    return root / "tok.txt"


def _config(*argv):
    p = argparse.ArgumentParser()
    train_cli.add_arguments(p)
    return train_cli.config_from_args(p.parse_args(list(argv)))


def test_world_config_keys_unchanged():
    assert list(train_config("tiny").to_dict()) == WORLD_KEYS


def test_corpus_run_records_its_corpus(tmp_path):
    tok = _flickr(tmp_path / "f")
    cfg = _config("--corpus", str(tok), "--samples", "16", "--batch-size", "16",
                  "--embed-dim", "8", "--max-len", "12", "--vocab-size", "64")  # fmt: skip
    run = train(cfg, tmp_path / "run", progress=False, threads=1)
    stored = json.loads((run / "config.json").read_text())
    rec = stored["corpus"]
    assert (rec["format"], rec["split"], rec["images"], rec["captions"]) == ("flickr", "train",
                                                                              20, 60)  # fmt: skip
    assert rec["files"]["tok.txt"] == hashlib.sha256(tok.read_bytes()).hexdigest()
    assert sorted(rec["files"]) == ["tok.txt", "x_testImages.txt", "x_trainImages.txt"]
    assert not {"world", "world_seed", "captions_per_scene", "train_scenes"} & set(stored["train"])
    assert stored["model"]["embed_dim"] == 8 and stored["train"]["vocab_size"] == 64
    assert TrainConfig.from_dict(stored["train"]) == cfg
    assert "world" not in json.loads((run / "meta.json").read_text())
    # the saved config.json is a --config file as it is: the same config again
    (tmp_path / "c.json").write_text((run / "config.json").read_text())
    assert _config("--config", str(tmp_path / "c.json")) == cfg


def test_old_corpus_config_still_loads():
    old = {**train_config("tiny").to_dict(), "world": None, "corpus": "c.jsonl"}
    assert TrainConfig.from_dict(old).corpus == "c.jsonl"


def test_resume_refuses_a_changed_corpus(tmp_path):
    from prh.errors import InputError

    tok = _flickr(tmp_path / "f")
    small = {"samples": 32, "batch_size": 16, "max_len": 12, "vocab_size": 64}
    cfg = train_config("tiny", corpus=str(tok), checkpoint_every=1,
                       model_overrides={"embed_dim": 8}, **small)  # fmt: skip
    train(cfg, tmp_path / "run", progress=False, threads=1, stop_after=1)
    tok.write_text(tok.read_text().replace("dog", "cat"))
    with pytest.raises(InputError, match="its files changed since the run started"):
        train(None, tmp_path / "run", progress=False, resume=True)


def test_layers_apply_in_order(tmp_path):
    (tmp_path / "c.json").write_text(json.dumps({"lr": 0.01, "samples": 999, "seed": 4,
                                                 "model": {"d_model": 64}}))  # fmt: skip
    cfg = _config("--preset", "small", "--config", str(tmp_path / "c.json"),
                  "--set", "samples=500", "--set", "model.n_layers=3", "--seed", "7")  # fmt: skip
    assert (cfg.optim.lr, cfg.batch_size, cfg.samples, cfg.seed) == (0.01, 256, 500, 7)
    assert cfg.model_overrides == {"d_model": 64, "n_layers": 3}
    assert _config("--set", "views=bad").rho == 0.0
    assert _config("--set", "corpus=c.jsonl").world is None


def test_flickr8k_record(shared_dir):
    from prh.training.data import corpus_record

    tok = shared_dir / "data" / "flickr8k" / "Flickr8k.token.txt"
    rec = corpus_record(train_config("tiny", corpus=str(tok)))
    assert (rec["split"], rec["images"], rec["captions"]) == ("train", 6000, 30000)
    assert len(rec["files"]) == 4 and len(rec["sha256"]) == 64
