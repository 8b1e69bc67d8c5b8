"""prh embed of a run: --pool last, and a themed styled-document run embedded on its own world."""

from __future__ import annotations

import numpy as np
import pytest

import prh.cli
from prh.features import load_features


@pytest.fixture(scope="module")
def themed_lm(tmp_path_factory):
    """A real two-step next-token run on a themed world with 2-caption styled documents."""
    from prh import training

    cfg = training.train_config(
        "tiny",
        views="next-token",
        samples=64,
        batch_size=32,
        max_len=96,
        train_scenes=100,
        world_themes=3,
        doc_captions=2,
        doc_style=True,
        vocab_size=200,
        checkpoint_every=0,
        log_every=0,
    )
    return training.train(cfg, tmp_path_factory.mktemp("runs") / "lm", progress=False, threads=1)


def _embed(tmp_path, *argv):
    out = tmp_path / "f.safetensors"
    code = prh.cli.main(
        ["embed", *map(str, argv), "--no-progress", "--threads", "1", "--out", str(out)]
    )
    assert code == 0
    return load_features(out)


def test_embed_reads_the_runs_themes_and_pools_by_last_token(tmp_path, themed_lm):
    from prh.training import load_run
    from prh.world import CaveWorld, WorldConfig

    run = load_run(themed_lm)
    assert run.config.world_themes == 3 and run.config.doc_style
    fs = _embed(tmp_path, themed_lm, "--world", "cave", "--n", 4, "--modality", "text")
    world = CaveWorld(WorldConfig(seed=0, themes=3))
    scenes = world.split("test")[:4]
    assert fs.ids == [f"scene_{s}" for s in scenes]
    assert "themes=3" in fs.metadata["source"]
    texts = [world.captions(int(s), 1, 0)[0] for s in scenes]
    np.testing.assert_allclose(fs.features, run.encode_texts(texts), rtol=1e-4, atol=1e-5)
    last = _embed(
        tmp_path, themed_lm, "--world", "cave", "--n", 4, "--modality", "text", "--pool", "last"
    )
    np.testing.assert_allclose(last.features, run.encode_texts(texts, pool="last"), atol=1e-5)
    assert not np.allclose(last.features, fs.features)
    plain = _embed(
        tmp_path, themed_lm, "--world", "cave", "--n", 4, "--modality", "text", "--world-themes", 0
    )  # the plain world: same ids, other scenes
    assert "themes" not in plain.metadata["source"]
    assert not np.allclose(plain.features, fs.features)
