"""The image encoder's pooling: the spatial mean forgets where a feature fired, the first moments
keep it; a ``--pool moments`` run stores its pooling, loads back and embeds as it trained."""

import json

import numpy as np
import pytest
import torch

from prh.errors import InputError
from prh.models import ModelConfig
from prh.models.image import ImageEncoder, pool_map, pooled_width
from prh.training import load_run, train_config
from prh.training.image import draw_scenes, train_image
from prh.training.image_config import ImageConfig


def _loops(x):
    """The moments by explicit loops over cells (the obvious reference)."""
    b, c, h, w = x.shape
    rows = [-1 + 2 * i / (h - 1) for i in range(h)]
    cols = [-1 + 2 * j / (w - 1) for j in range(w)]
    out = np.zeros((b, 3 * c))
    for n in range(b):
        for k in range(c):
            for i in range(h):
                for j in range(w):
                    v = float(x[n, k, i, j])
                    out[n, k] += v / (h * w)
                    out[n, c + k] += v * rows[i] / (h * w)
                    out[n, 2 * c + k] += v * cols[j] / (h * w)
    return out


def test_moments_equal_the_loop_reference_and_mean_is_the_spatial_mean():
    x = torch.randn(2, 3, 4, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert np.allclose(pool_map(x, "moments").numpy(), _loops(x.numpy()))
    assert torch.equal(pool_map(x, "mean"), x.mean((2, 3)))
    assert pooled_width(7, "moments") == 21 and pooled_width(7, "mean") == 7


def test_a_moved_blob_keeps_its_mean_and_changes_its_moments():
    a, b = torch.zeros(1, 1, 6, 6), torch.zeros(1, 1, 6, 6)
    a[0, 0, 1, 1], b[0, 0, 4, 3] = 1.0, 1.0  # the same blob, moved down and right
    assert torch.equal(pool_map(a, "mean"), pool_map(b, "mean"))
    ma, mb = pool_map(a, "moments")[0], pool_map(b, "moments")[0]
    assert mb[1] > ma[1] and mb[2] > ma[2]  # lower and further right


def test_a_one_cell_map_has_zero_moments():
    x = torch.randn(2, 4, 1, 1)
    assert torch.equal(pool_map(x, "moments")[:, 4:], torch.zeros(2, 8))


def test_unknown_pooling_is_refused_in_one_line():
    with pytest.raises(InputError, match="image_pool 'max'"):
        ModelConfig(image_pool="max")
    with pytest.raises(InputError, match="--pool 'max': expected one of mean, moments"):
        ImageConfig(pool="max")


def test_a_moments_encoder_heads_the_mean_and_both_moments_and_keeps_its_layers():
    cfg = ModelConfig(d_model=8, embed_dim=4, image_stages=2, n_heads=1, image_pool="moments")
    torch.manual_seed(0)
    enc = ImageEncoder(cfg)
    assert enc.head[0].in_features == 24
    img = torch.rand(2, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    out = enc(img)
    assert out.pooled.shape == (2, 4) and out.layers.shape == (2, 3, 8)  # stem, 2 stages: means
    x = enc.norm(enc.stages[1](enc.stages[0](enc.stem(img * 2.0 - 1.0))))
    assert torch.allclose(out.layers[:, -1], x.mean((2, 3)), atol=1e-6)
    assert torch.allclose(out.pooled, enc.head(pool_map(x, "moments")), atol=1e-6)


@pytest.mark.slow
def test_a_moments_run_stores_its_pooling_and_loads_back(tmp_path):
    overrides = {"d_model": 16, "image_stages": 2, "embed_dim": 8}
    cfg = train_config("tiny", samples=32, batch_size=16, train_scenes=24, checkpoint_every=0,
                       log_every=1, model_overrides=overrides, lr=3e-3)  # fmt: skip
    image = ImageConfig(image_size=16, render_views=3, cache_dir=str(tmp_path / "c"),
                        pool="moments")  # fmt: skip
    run = train_image(cfg, image, tmp_path / "r", progress=False, threads=1, workers=1)[0]
    stored = json.loads((run / "config.json").read_text())
    assert stored["image"]["pool"] == "moments" and stored["model"]["image_pool"] == "moments"
    loaded = load_run(run, device="cpu")
    assert loaded.model.head[0].in_features == 3 * 16
    imgs = draw_scenes(cfg, image, [0, 1, 2])
    again = load_run(run, device="cpu").embed_images(imgs)
    assert np.array_equal(loaded.embed_images(imgs), again)
