"""features:PATH (stored rows by id) and prh train run directories as encoders."""

from __future__ import annotations

import json

import numpy as np
import pytest

from prh.encoders import Features, load_encoder
from prh.errors import InputError, PrhError
from prh.features import save_features


@pytest.fixture()
def feature_file(tmp_path):
    rng = np.random.default_rng(0)
    feats = rng.normal(size=(5, 2, 4)).astype(np.float32)
    ids = [f"scene_{i}" for i in (4, 8, 15, 16, 23)]
    path = tmp_path / "f.safetensors"
    save_features(path, feats, ids, {"modality": "image", "layer_dims": json.dumps([3, 4])})
    return path, feats, ids


def test_features_rows_by_id(feature_file):
    path, feats, ids = feature_file
    enc = load_encoder(f"features:{path}")
    assert isinstance(enc, Features)
    assert enc.modality == "image" and enc.layer_dims == [3, 4]
    order = [3, 0, 4]
    got = enc.encode([None] * 3, ids=[ids[i] for i in order])
    np.testing.assert_array_equal(got, feats[order])
    np.testing.assert_array_equal(enc.encode_images([np.zeros((2, 2, 3), np.uint8)] * 5), feats)
    with pytest.raises(InputError, match="1 of 2 ids are missing, first 'scene_99'"):
        enc.rows(["scene_4", "scene_99"])
    with pytest.raises(InputError, match="5 rows for 2 items"):
        enc.encode_images([np.zeros((2, 2, 3), np.uint8)] * 2)
    with pytest.raises(InputError, match="takes images, not texts"):
        enc.encode_texts(["a"])


def test_features_without_ids_or_modality(tmp_path):
    path = tmp_path / "plain.npy"
    np.save(path, np.ones((3, 4), np.float32))
    enc = load_encoder(f"features:{path}")
    assert enc.modality == "any"
    assert enc.encode_texts(["a", "b", "c"]).shape == (3, 1, 4)
    with pytest.raises(InputError, match="no ids to look rows up by"):
        enc.rows(["scene_1"])


@pytest.mark.slow
def test_run_directory_encoder(tiny_run):
    from prh.training import load_run

    enc = load_encoder(str(tiny_run))
    assert enc.modality == "text"
    texts = ["a red cube left of a blue sphere", "two green cones", "a small yellow cylinder"]
    feats = enc.encode_texts(texts, batch_size=2)
    ref = load_run(tiny_run).encode_texts(texts)
    assert feats.shape == ref.shape and feats.ndim == 3
    np.testing.assert_allclose(feats, ref, rtol=1e-4, atol=1e-5)
    assert enc.layer_dims == [feats.shape[2]] * feats.shape[1]
    with pytest.raises(InputError, match="takes texts, not images"):
        enc.encode_images([np.zeros((4, 4, 3), np.uint8)])


def test_broken_run_directory(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "meta.json").write_text("{}")
    with pytest.raises(PrhError, match="not a prh run directory"):
        load_encoder(str(tmp_path))
