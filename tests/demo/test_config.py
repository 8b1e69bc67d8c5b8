"""The demo config composed of parts: every flat setting still routes, the presets are small
differences, and the sweeps, runners and cache names they give are those of the flat config
they replaced (values recorded on main at 095ecd4, before the refactor; issue 23 then gave the
moving world's runner its theory curve, ``theory_fit_scenes``: new main sweeps, the same control
sweeps)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import fields, replace
from pathlib import Path

import pytest

from prh.demo import protocol
from prh.demo.config import DEFAULT, FULL, PARTS, QUICK, SETTINGS, DemoConfig, demo_config
from prh.errors import InputError

# every setting of the flat DemoConfig, with a value other than the default's that is valid alone
OLD_SETTINGS = {
    "name": "other", "control": "", "seed": 7, "world_seed": 3, "preset": "small",
    "vision": "random:efficientnet-lite0", "text_baseline": "hf:x", "eval_scenes": 100,
    "bridge_scenes": 300, "samples": 65536, "next_token_factor": 2, "curve_seeds": 2,
    "doc_captions": 2, "doc_max_len": 96, "eval_every": 512, "law_rhos": (0.5,),
    "law_samples": (2048, 4096), "heldout_samples": (6144,), "heldout_runs": 3, "null": 20,
    "bootstrap": 30, "k": 5, "train_scenes": 1000, "batch_size": 256, "lr": 5e-4,
    "max_len": 32, "workers": 1, "threads": 2, "captioner": False, "decoder_steps": 0,
    "decoder_scenes": 500, "modalities": ("image-good", "sketch-good"), "image_samples": 12800,
    "image_lr": 1e-4, "image_size": 32, "image_train_scenes": 100, "backbone": "none",
    "freeze_until": 8, "backbone_size": 96, "scratch_branch": False, "pair_free_samples": False,
    "zero_pair_captioner": True, "spectral_pairs": 0, "world": "cave", "literal": "",
    "image_pool": "mean",
}  # fmt: skip


def test_every_flat_setting_routes_and_round_trips():
    # the flat view names every setting (``corpus``, added since, is valid only with world
    # ``corpus`` and the steps it turns off: tests/demo/test_corpus_demo.py; ``embed_dim``,
    # added since, is 0 unless the control sets it: test_the_control_s_encoders_have_the_main_width;
    # ``literal_samples``, added since: test_the_literal_step_s_budget_is_its_own;
    # ``image_embed_dim``, added since: tests/demo/test_image_readout.py)
    added = {"corpus", "embed_dim", "literal_samples", "image_embed_dim"}
    assert set(OLD_SETTINGS) | added == set(DEFAULT.to_dict())
    # a part's settings: its fields, those of a library config it holds (ImageRecipe.encoder)
    n_fields = sum(len(c.settings()) for c in PARTS.values()) + len(fields(DemoConfig)) - len(PARTS)
    assert len(SETTINGS) == n_fields  # one name per field: no two parts share a setting name
    base = DEFAULT.to_dict()
    for name, value in OLD_SETTINGS.items():
        # ``preset`` (the text model's) was never an override: demo_config's argument has that
        # name; it routes through with_settings like every other setting
        cfg = DEFAULT.with_settings(preset=value) if name == "preset" else None
        got = (cfg or demo_config("default", **{name: value})).to_dict()
        want = {**base, name: value}
        if name == "world":  # the preset's control world became the world: no control, and
            want["control"] = want["literal"] = ""  # no literal twin of the preset's world
        assert got == want, name
    # all at once, and the digest callers' names
    others = {k: v for k, v in OLD_SETTINGS.items() if k != "preset"}
    new = {"corpus": "", "embed_dim": 0, "literal_samples": 32768, "image_embed_dim": 0}
    assert demo_config("default", **others).to_dict() == {**OLD_SETTINGS, **new, "preset": "tiny"}
    cfg = DEFAULT.with_settings(**OLD_SETTINGS)
    assert cfg.to_dict() == {**OLD_SETTINGS, **new}
    assert (cfg.text.samples, cfg.image.lr, cfg.caption.build) == (65536, 1e-4, False)
    assert len(cfg.digest("k", "bootstrap", "seed", "pair_free_samples")) == 10
    with pytest.raises(InputError, match=r"^demo: unknown setting\(s\) \['colour'\]$"):
        demo_config(colour="red")


def _changed(cfg) -> set[str]:
    return {k for k, v in cfg.to_dict().items() if DEFAULT.to_dict()[k] != v}


def test_presets_differ_from_default_only_where_meant():
    assert _changed(FULL) == {"name", "next_token_factor", "curve_seeds", "heldout_runs",
                              "modalities", "zero_pair_captioner", "literal_samples"}  # fmt: skip
    assert _changed(QUICK) == {
        "name", "eval_scenes", "bridge_scenes", "samples", "law_rhos", "law_samples",
        "heldout_samples", "heldout_runs", "null", "bootstrap", "decoder_steps",
        "decoder_scenes", "modalities", "literal",
    }  # fmt: skip


BACKEND = {
    "vision": "efficientnet-lite0", "preset": "tiny", "eval_scenes": 216, "k": 10, "null": 0,
    "world": "moving", "world_seed": 0, "caption_seed": 1, "nuisance_seed": 0, "image_size": 224,
    "train_overrides": [["batch_size", 128], ["lr", 0.001], ["max_len", 48],
                        ["min_lr_frac", 1.0], ["train_scenes", 1944]],
    "curve_every": 1024, "warmup_max_batches": 8,
    "view_overrides": [["next-token", [["narration_len", 4], ["max_len", 192]]]],
    "theory_fit_scenes": 500,
}  # fmt: skip
GRID = {
    "name": "prh-demo-default", "rhos": (0.25, 0.5, 0.75), "samples": (16384,), "fit_seeds": 1,
    "heldout": 2, "repeats": True, "curve_views": (), "curve_samples": (), "curve_seeds": 0,
    "curve_seed_offset": 0, "heldout_rho_only": True,
    "curve_runs": (("good", 32768, 1), ("next-token", 32768, 1), ("bad", 32768, 1)),
    "n_fit": 3, "n_cells": 10,
}  # fmt: skip
IMAGE = {
    "preset": "tiny", "batch_size": 128, "lr": 0.003, "train_scenes": 1944, "world": "moving",
    "world_seed": 0, "image_size": 64, "render_views": 2, "backbone": "efficientnet-lite0",
    "freeze_until": 15, "backbone_size": 128, "scratch_branch": True, "pool": "moments",
    "checkpoint_every": 20,
}  # fmt: skip  # issue 31's image recipe (prh.demo.config.DEMO_IMAGE_ENCODER): new image cells
RECORDED = {  # preset: backend options, grid, image options, sweep, image sweep, digest()
    "default": (BACKEND, GRID, IMAGE, "sweep-2062dcaba2", "sweep-c27513089e", "096755e5ae"),
    "full": (
        BACKEND,
        {**GRID, "name": "prh-demo-full", "heldout": 4, "n_cells": 18,
         "curve_runs": (("good", 32768, 3), ("next-token", 131072, 3), ("bad", 32768, 1))},
        IMAGE, "sweep-a232ccfa9b", "sweep-c27513089e", "989457b2b9",
    ),
    "quick": (
        {**BACKEND, "eval_scenes": 200, "theory_fit_scenes": 200},
        {**GRID, "name": "prh-demo-quick", "rhos": (0.5,), "samples": (8192,), "heldout": 1,
         "n_fit": 1, "n_cells": 6,
         "curve_runs": (("good", 8192, 1), ("next-token", 8192, 1), ("bad", 8192, 1))},
        IMAGE, "sweep-e29f027085", "sweep-c27513089e", "63cbcc6333",
    ),
}  # fmt: skip
# preset: sha256 of repr(backend), repr(image backend), control's sweeps (the reprs moved when
# TrainConfig gained its log field: a field with its default, the sweep folders unchanged)
# issue 31: the control's encoders have the main runs' width (8, the moving cave's gap), not the
# still cave's default 32: new control sweeps (text and image), the main sweeps unchanged
# the image recipe (DEMO_IMAGE_ENCODER, lr 3e-3) moved the image runners and image sweeps only
RECORDED_RUNNERS = {  # the image runner's repr carries its ImageConfig (pool since 2026-12-03)
    "default": ("8348c0a91bb6b938", "f1eb47007a9df176", "sweep-910bf09819", "sweep-9282848cff"),
    "full": ("8348c0a91bb6b938", "e7ed47f13ab58dfe", "sweep-018590cdeb", "sweep-9282848cff"),
    "quick": ("e0deef0bcb00027e", "04f03c52195bd182", "sweep-eb39639509", "sweep-9282848cff"),
}
RECORDED_DIGESTS = {  # the cache names' digests, for the field names their callers pass
    "default": ("86877a53d1", "fd6c6ee01f", "128de28a9f"),
    "full": ("86877a53d1", "fd6c6ee01f", "128de28a9f"),
    "quick": ("86877a53d1", "48c77ff79d", "51b6847f8e"),
}


def _h(x) -> str:
    return hashlib.sha256(json.dumps(x, default=list).encode()).hexdigest()[:16]


@pytest.mark.parametrize("preset", ["default", "full", "quick"])
def test_composed_presets_build_the_sweeps_of_the_flat_config(preset):
    cfg, out = demo_config(preset), Path("OUT")
    options, described, image, sweep, image_sweep, digest = RECORDED[preset]
    assert json.loads(json.dumps(protocol.backend(cfg).options())) == options
    assert protocol.grid(cfg).describe() == described
    assert protocol.image_backend(cfg, out / "modalities" / "render_cache").options() == image
    # the cell ids are those of the runs already trained: same sweep folders
    assert protocol.sweep_dir(out, cfg).name == sweep
    assert protocol.image_sweep_dir(out, cfg).name == image_sweep
    runner, image_runner, control, control_image = RECORDED_RUNNERS[preset]
    assert _h(repr(protocol.backend(cfg))) == runner  # threads, workers and caches too
    cache = out / "modalities" / "render_cache"
    assert _h(repr(protocol.image_backend(cfg, cache))) == image_runner
    ctl = cfg.control_config()
    assert protocol.sweep_dir(out, ctl).name == control
    assert protocol.image_sweep_dir(out, ctl).name == control_image
    # the cached files' names
    assert cfg.digest() == digest
    assert (
        cfg.digest("spectral_pairs", "seed"),
        cfg.digest("eval_scenes", "bridge_scenes"),
        cfg.digest("k", "bootstrap", "seed", "pair_free_samples"),
    ) == RECORDED_DIGESTS[preset]


def test_the_control_s_encoders_have_the_main_width():
    """The control trains the same encoders as the main runs: the main world's width (its gap
    ``k``; the text preset's on a world without one), text and image alike; the main runs keep
    their world's own (no override, their cell ids as before)."""
    for cfg, width in ((DEFAULT, 8), (QUICK, 8), (DEFAULT.with_settings(embed_dim=16), 16)):
        ctl = cfg.control_config()
        assert ctl.world == "cave" and ctl.embed_dim == cfg.encoder_width() == width
        assert protocol.backend(ctl).train.model_overrides == {"embed_dim": width}
        cache = Path("OUT") / "render_cache"
        assert protocol.image_backend(ctl, cache).train.model_overrides == {"embed_dim": width}
    assert protocol.backend(DEFAULT).train.model_overrides == {}
    still = DEFAULT.with_settings(world="cave", control="moving", literal="")
    assert still.encoder_width() == 32  # tiny's width: the moving control is not left at its 8
    assert still.control_config().embed_dim == 32
    with pytest.raises(InputError, match=r"^demo: embed_dim must be >= 0, got -1$"):
        DEFAULT.with_settings(embed_dim=-1)


def test_a_spectral_pair_cap_below_the_method_s_minimum_is_one_line():
    with pytest.raises(InputError, match="spectral_pairs 10 is below the spectral method's"):
        demo_config("default", spectral_pairs=10)
    assert demo_config("default", spectral_pairs=0).measure.spectral_pairs == 0  # skipped


def test_the_literal_twin_is_the_text_recipe_on_literal_captions():
    lit = FULL.literal_config()
    assert lit.world == "moving-literal" and lit.control == "" and lit.literal == ""
    assert (lit.sweep, lit.measure) == (FULL.sweep, FULL.measure)
    # it trains no next-token run, and its text-good runs at their own budget
    assert lit.text == replace(FULL.text, doc_captions=1, samples=FULL.text.literal_samples)
    assert protocol.backend(lit).train == replace(protocol.backend(FULL).train,
                                                  world="moving-literal")  # fmt: skip
    # trained by the converged recipe: cosine decay, the 5% warm-up uncapped; the partial side
    # by the same on the world's own captions
    conv = protocol.converged_backend(lit)
    assert (conv.train.optim.min_lr_frac, conv.train.optim.warmup_frac) == (0.1, 0.05)
    assert conv.warmup_max_batches == 0 and conv.curve_every == 131072 // 8
    part = protocol.converged_backend(FULL.partial_config())
    assert part.train == replace(conv.train, world="moving")
    assert lit.sweep.curve_seeds == 3 and lit.image.modalities == ()
    assert not lit.caption.build and DEFAULT.control_config().literal == ""
    with pytest.raises(InputError, match=r"^demo: this config has no literal-caption world$"):
        QUICK.literal_config()
    with pytest.raises(InputError, match=r"^demo: literal 'moving': expected '' \(none\) or the"):
        DEFAULT.with_settings(literal="moving")
    with pytest.raises(InputError, match=r"^demo: literal 'nowhere'"):
        demo_config(literal="nowhere")
    assert demo_config(world="cave", literal="moving-literal").literal == "moving-literal"


def test_the_literal_step_s_budget_is_its_own():
    """``literal_samples`` sets the literal step's runs (both caption kinds, the twin's config
    and the partial side's), not the sweep's; off a multiple of eval_every it is refused."""
    assert (DEFAULT.text.literal_samples, FULL.text.literal_samples) == (32768, 131072)
    cfg = demo_config("default", literal_samples=65536)
    assert cfg.text.samples == 32768 and cfg.text.literal_samples == 65536
    for twin, world in ((cfg.literal_config(), "moving-literal"), (cfg.partial_config(), "moving")):
        assert (twin.text.samples, twin.world, twin.literal, twin.control) == (65536, world, "", "")
        assert twin.image.modalities == () and twin.caption.zero_pair is False
    assert DEFAULT.digest() == demo_config("default", literal_samples=65536).digest()  # ADDED
    with pytest.raises(
        InputError, match=r"literal_samples \(1000\) must be a multiple of eval_every"
    ):
        demo_config("default", literal_samples=1000)
    with pytest.raises(InputError, match="literal_samples must be >= 1, got 0"):
        demo_config("default", literal_samples=0)
