"""``image_embed_dim``: the demo's image runs trained wider than the encoders' width and read out
to it by their own pairs (:func:`prh.demo.modalities.read_out_runs`), at toy size."""

from __future__ import annotations

import numpy as np
import pytest

from prh.demo.config import demo_config
from prh.demo.protocol import image_backend, image_sweep_dir
from prh.errors import InputError

pytest.importorskip("torch")

TOY = dict(
    modalities=("image-good",), backbone="none", image_size=16, backbone_size=32,
    image_samples=128, image_train_scenes=24, batch_size=64, eval_every=64, samples=1024,
    law_samples=(64, 128, 256), heldout_samples=(192,), eval_scenes=24, bridge_scenes=56,
    train_scenes=80, workers=1, threads=1,
)  # fmt: skip


def test_settings_refused_and_ids_kept(tmp_path):
    from prh.demo.world import check_world_sizes

    wide = demo_config("default", image_embed_dim=16)
    assert wide.reads_out_images() and not demo_config("default").reads_out_images()
    # the encoders' own width is no read-out: the same runs, the same folder, as before the setting
    same = demo_config("default", image_embed_dim=8)
    assert not same.reads_out_images()
    assert image_sweep_dir(tmp_path, same) == image_sweep_dir(tmp_path, demo_config("default"))
    assert image_sweep_dir(tmp_path, wide) != image_sweep_dir(tmp_path, same)
    assert image_backend(wide, tmp_path).train.model_overrides == {"embed_dim": 16}
    # a setting added later: the folders' cost files keep their names
    assert wide.digest() == demo_config("default").digest()
    assert wide.control_config().image.embed_dim == 0  # a still world has no lag pairs
    for bad, says in (
        ({"image_embed_dim": 4}, "below the encoders' width 8"),
        ({"image_embed_dim": -1}, "image_embed_dim must be >= 0"),
    ):
        with pytest.raises(InputError, match=says):
            demo_config("default", **bad)
    still = demo_config("default", world="cave", control="", image_embed_dim=64)
    with pytest.raises(InputError, match="image_embed_dim 64 needs a moving world"):
        check_world_sizes(still)


def test_wide_runs_are_read_out_once_and_load_that_wide(tmp_path):
    from prh.demo.context import Context
    from prh.demo.modalities import embed_runs, read_out_runs, train_runs
    from prh.demo.world import demo_world, scene_ids
    from prh.features import last_layer, load_features
    from prh.training.image import draw_scenes, load_image_run
    from prh.training.readout import FILE, Readout, load_readout, save_readout
    from prh.world.ids import scene_id

    cfg = demo_config("quick", image_embed_dim=16, **TOY)
    logs: list[str] = []
    ctx = Context(cfg, tmp_path / "out", logs.append)
    runs = train_runs(ctx)
    d = runs["image-good"]
    spectra = read_out_runs(ctx, runs, pairs=512)
    r = load_readout(d, 16)
    assert (r.width, r.k, r.pairs) == (16, 8, 512)
    assert spectra["image-good"] == pytest.approx(list(r.eigenvalues))
    assert any("read out 16 -> 8" in m for m in logs)
    # every later step loads the run 8 wide: its last layer is the read-out of the raw embedding
    images = embed_runs(ctx, runs)
    feats = load_features(images["image-good"]["test"])
    ids = scene_ids(cfg, demo_world(cfg))[0]  # the held-out states, in the file's order
    assert list(feats.ids) == [scene_id(i) for i in ids]
    raw = load_image_run(d, "cpu", readout=False)
    want = r.apply(raw.encode_images(draw_scenes(raw.config, raw.image, ids))[:, -1, :16])
    got = last_layer(feats.features, feats.layer_dims)
    assert got.shape == (len(ids), 8)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    # a second pass keeps the stored read-out; a stale one (other weights, another draw) is
    # measured again
    before = (d / FILE).stat().st_mtime_ns
    logs.clear()
    read_out_runs(ctx, runs, pairs=512)
    assert (d / FILE).stat().st_mtime_ns == before and not any("read out" in m for m in logs)
    from prh.io import read_tensors, write_tensors

    arrays = {k: np.asarray(v) for k, v in read_tensors(d / FILE).items()}
    write_tensors(d / FILE, arrays, {"k": "8", "width": "16", "pairs": "512", "draw": "123",
                                     "weights_sha256": "0" * 64})  # fmt: skip
    read_out_runs(ctx, runs, pairs=512)
    assert any("read out 16 -> 8" in m for m in logs)
    again = load_readout(d, 16)  # tied to these weights again; the same draw, the same read-out
    np.testing.assert_allclose(again.projection, r.projection, rtol=1e-6, atol=1e-9)
    save_readout(d, Readout(r.mean, r.projection, r.eigenvalues, 512, 7))  # `prh readout --draw 7`
    logs.clear()
    read_out_runs(ctx, runs, pairs=512)
    assert any("read out 16 -> 8" in m for m in logs) and load_readout(d, 16).draw == 123
