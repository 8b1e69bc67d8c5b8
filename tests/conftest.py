"""Shared test set-up: deterministic, single-threaded, offline."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared`` beside the repository; tests that need it skip when absent."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not present")
    return SHARED


# Toy-size caption run shared by the caption and serve tests (built once per session: ~15-30 s).
TINY_DECODER = {"d_model": 32, "n_layers": 1, "n_heads": 2, "d_ff": 64}


@pytest.fixture(scope="session")
def text_run(tmp_path_factory) -> Path:
    """A real (one-step) prh train run on the cave world: E = 32 (tiny preset)."""
    from prh.training import train, train_config

    out = tmp_path_factory.mktemp("runs") / "good"
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
    return train(cfg, out, progress=False, threads=1)


@pytest.fixture(scope="session")
def tiny_vit(tmp_path_factory) -> Path:
    """A random 3-layer ViT (hidden 16) on 32 px images, saved as a transformers folder."""
    import torch
    from transformers import ViTConfig, ViTImageProcessor, ViTModel

    folder = tmp_path_factory.mktemp("tiny-vit")
    torch.manual_seed(3)
    cfg = ViTConfig(
        image_size=32,
        patch_size=8,
        hidden_size=16,
        num_hidden_layers=3,
        num_attention_heads=2,
        intermediate_size=32,
    )
    ViTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(folder)
    ViTModel(cfg, add_pooling_layer=False).save_pretrained(folder)
    return folder


BUILD_KW = dict(
    n_pairs=24,
    decoder_scenes=30,
    vision_dims=8,
    decoder_steps=40,
    decoder_config=TINY_DECODER,
    image_size=32,
    progress=False,
    threads=1,
)


@pytest.fixture(scope="session")
def build_kw() -> dict:
    """Toy-size arguments of ``build_caption_run``."""
    return dict(BUILD_KW)


@pytest.fixture(scope="session")
def caption_build_kw() -> dict:
    """The toy caption build's settings (``caption_run``'s), for tests that build their own."""
    return dict(BUILD_KW)


@pytest.fixture(scope="session")
def caption_run(tmp_path_factory, text_run, tiny_vit) -> Path:
    """``build_caption_run`` at toy size (the run folder holding ``caption/``)."""
    from prh.caption import build_caption_run

    out = tmp_path_factory.mktemp("demo") / "run"
    return build_caption_run(text_run, out, vision=f"hf:{tiny_vit}", **BUILD_KW)


def run_bad_input(argv: list[str], inputs=(), capsys=None, match: str | None = None) -> str:
    """Run ``prh ARGV`` in-process and assert the bad-input contract; return the error line.

    The contract (issue 11): exit status 2, exactly one line on stderr that names the problem,
    no traceback, and every file in ``inputs`` byte-identical afterwards.
    """
    import re

    from prh.cli import main

    before = {Path(p): Path(p).read_bytes() for p in inputs}
    if capsys is not None:
        capsys.readouterr()
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as e:  # argparse errors exit through SystemExit
        rc = e.code
    err = capsys.readouterr().err if capsys is not None else ""
    assert rc == 2, f"exit status {rc}, expected 2; stderr: {err!r}"
    if capsys is not None:
        lines = err.strip().splitlines()
        assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}: {err!r}"
        assert "Traceback" not in err
        if match is not None:
            assert re.search(match, lines[0]), f"{match!r} not in {lines[0]!r}"
    for p, data in before.items():
        assert p.read_bytes() == data, f"input {p} changed"
    return err.strip()


@pytest.fixture
def bad_input(capsys):
    """``bad_input(argv, inputs=(), match=None)``: see :func:`run_bad_input`."""

    def check(argv, inputs=(), match=None):
        return run_bad_input(argv, inputs, capsys=capsys, match=match)

    return check
