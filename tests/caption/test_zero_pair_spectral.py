"""``prh caption --build --pair-free`` on the moving world (issue 22, item 5): with two prh runs
the match is the spectral method's (each run's own positive pairs, no image-caption pair) and the
manifest and the command say so; with a frozen encoder it is the shape-based one."""

from __future__ import annotations

import json

import pytest

from prh.errors import InputError


@pytest.fixture(scope="module")
def moving_runs(tmp_path_factory):
    """A few steps of a text and an image JEPA on the moving world."""
    from prh.training.api import _train
    from prh.training.config import train_config
    from prh.training.image import train_image
    from prh.training.image_config import ImageConfig

    root = tmp_path_factory.mktemp("moving-caption")
    cfg = train_config("tiny", world="moving", views="good", samples=256, batch_size=64,
                       checkpoint_every=0, log_every=0)  # fmt: skip
    text, _ = _train(cfg, root / "text", False, False, None, 1, None, None)
    icfg = train_config("tiny", world="moving", checkpoint_every=0, log_every=0, samples=128,
                        batch_size=64, train_scenes=96)  # fmt: skip
    image, _ = train_image(icfg, ImageConfig(modality="image", image_size=16, render_views=2),
                           root / "image", progress=False, threads=1)  # fmt: skip
    return text, image


def _build(text, out, vision, **kw):
    from prh.caption import build_caption_run

    build_caption_run(text, out, vision=str(vision), n_pairs=48, decoder_scenes=20,
                      decoder_steps=0, vision_dims=8, image_size=16, pair_free=True,
                      progress=False, threads=1, spectral_pairs=256, **kw)  # fmt: skip
    return json.loads((out / "caption" / "caption.json").read_text())


@pytest.mark.slow
def test_two_runs_match_by_their_own_spectra_and_say_so(tmp_path, moving_runs):
    text, image = moving_runs
    info = _build(text, tmp_path / "auto", image)
    pf = info["pair_free"]
    assert pf["method"] == "spectral" and pf["pairs"] == 256 and pf["chance"] == 1 / 48
    assert 0 <= pf["accuracy"] <= 1 and isinstance(pf["pinned"], bool)
    assert pf["pinned"] or pf["reason"].startswith("cannot pin")
    assert info["world"]["name"] == "moving"
    again = _build(text, tmp_path / "again", image)
    assert again["pair_free"]["accuracy"] == pf["accuracy"]  # deterministic
    shape = _build(text, tmp_path / "shape", image, pair_free_method="shape")
    assert shape["pair_free"]["method"] == "shape"


@pytest.mark.slow
def test_the_spectral_method_needs_a_run_and_bad_settings_are_refused(tmp_path, moving_runs):
    from prh.caption.build import CaptionBuildConfig

    text, _ = moving_runs
    with pytest.raises(InputError, match="needs a prh image run"):
        _build(text, tmp_path / "frozen", "random:efficientnet-lite0", pair_free_method="spectral")
    with pytest.raises(InputError, match="expected auto, spectral or shape"):
        CaptionBuildConfig(pair_free_method="eigen")
    with pytest.raises(InputError, match="spectral_pairs must be >= 16"):
        CaptionBuildConfig(spectral_pairs=3)


@pytest.mark.slow
def test_the_cli_refuses_a_method_without_pair_free(tmp_path, bad_input, moving_runs):
    text, image = moving_runs
    bad_input(["caption", "--build", "--text-run", str(text), "--vision", str(image), "--out",
               str(tmp_path / "o"), "--pair-free-method", "spectral"],
              match="--pair-free-method needs --pair-free")  # fmt: skip
