"""Fixtures for the serve tests: a run folder with plots and files that must not be served."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from serve_helpers import png_bytes, solid


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A demo-run-shaped folder: summary.json, two plots, and files that must not be served."""
    d = tmp_path / "demo-run"
    (d / "plots").mkdir(parents=True)
    summary = {
        "alignment": {
            "good": 0.31,
            "bad": 0.12,
            "next-token": 0.18,
            "minilm": {"score": 0.22, "ci": [0.2, 0.24]},
            "random-init": float("nan"),
        },
        "captioning": {"cider": 0.5},
    }
    (d / "summary.json").write_text(json.dumps(summary))
    (d / "bound.png").write_bytes(png_bytes(solid((0, 0, 255), (8, 8))))
    (d / "plots" / "alignment.png").write_bytes(png_bytes(solid((0, 255, 0), (8, 8))))
    (d / "model.safetensors").write_bytes(b"secret weights")
    (d / "notes.txt").write_bytes(b"not a plot")
    outside = tmp_path / "outside.png"
    outside.write_bytes(png_bytes(solid((1, 2, 3), (4, 4))))
    (d / "leak.png").symlink_to(outside)
    return d


@pytest.fixture(scope="session")
def caption_run(tmp_path_factory) -> Path:
    """A real, toy-size caption run: a one-step ``prh train`` text run, a random tiny ViT saved as
    a transformers folder, and ``prh.caption.build_caption_run`` over them (about 30 s, 1 thread).
    """
    pytest.importorskip("prh.caption", reason="prh.caption (the bridge part) absent")
    import torch
    from transformers import ViTConfig, ViTImageProcessor, ViTModel

    from prh.caption import build_caption_run
    from prh.training import train, train_config

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("serve-run")
    cfg = train_config(
        "tiny",
        samples=64,
        batch_size=64,
        train_scenes=100,
        world_seed=3,
        vocab_size=200,
        checkpoint_every=0,
        log_every=0,
    )
    text = train(cfg, root / "text", progress=False, threads=1)
    vit = root / "vit"
    torch.manual_seed(3)
    vcfg = ViTConfig(
        image_size=32,
        patch_size=8,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
    )
    ViTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(vit)
    ViTModel(vcfg, add_pooling_layer=False).save_pretrained(vit)
    return build_caption_run(
        text,
        root / "run",
        vision=f"hf:{vit}",
        n_pairs=24,
        decoder_scenes=30,
        vision_dims=8,
        decoder_steps=40,
        decoder_config={"d_model": 32, "n_layers": 1, "n_heads": 2, "d_ff": 64, "max_len": 40},
        image_size=32,
        progress=False,
        threads=1,
    )
