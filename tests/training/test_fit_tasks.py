"""One trainer over task plugins: the shared optimiser config, one typed run, image run folders."""

import json

import numpy as np
import pytest
from fakes import CharTokenizer, fake_factory, tiny_config

from prh.errors import InputError
from prh.training import OptimConfig, load_run, train, train_config
from prh.training.lifecycle import Run
from prh.training.rundir import run_state


def test_optim_config_is_composed_without_changing_the_stored_layout():
    cfg = train_config("tiny", lr=3e-3, grad_clip=0.0)
    assert cfg.optim == OptimConfig(lr=3e-3, weight_decay=0.01, warmup_frac=0.05, grad_clip=0.0)
    stored = cfg.to_dict()
    assert stored["lr"] == 3e-3 and "optim" not in stored  # config.json stays flat
    assert type(cfg).from_dict(stored) == cfg
    with pytest.raises(InputError, match="lr must be a finite number"):
        train_config("tiny", lr=float("nan"))
    assert OptimConfig().lr_at(0, 10) == pytest.approx(cfg.optim.lr_at(0, 10) / 3)  # peak 1e-3


def test_load_run_returns_one_typed_run_whose_encode_is_canonical(tmp_path):
    run_dir = train(tiny_config(samples=32), tmp_path / "run", progress=False, threads=1,
                    data_factory=fake_factory)  # fmt: skip
    run = load_run(run_dir, device="cpu", tokenizer_loader=CharTokenizer.load)
    assert isinstance(run, Run) and run.modality == "text"
    texts = ["a red cube", "two blue balls"]
    np.testing.assert_array_equal(run.encode(texts), run.encode_texts(texts))


def test_an_image_runs_render_cache_is_part_of_its_folder(tmp_path):
    run = tmp_path / "run"
    (run / "render_cache").mkdir(parents=True)
    (run / "render_cache" / "image-w0-16px.npy").write_bytes(b"")
    (run / "config.json").write_text(json.dumps({"modality": "image", "train": {}}))
    assert run_state(run) == "incomplete"  # a failed start: cleared, not refused as foreign
    (run / "render_cache" / "nested").mkdir()
    assert run_state(run) == "foreign"
