"""`prh embed` end to end: the cave world and a corpus, tiny hf models, errors with exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest

import prh.cli
from prh.encoders import load_encoder
from prh.features import load_features


@pytest.fixture()
def cli(monkeypatch):
    """``prh.cli.main`` with only ``embed`` registered (other commands may be mid-development)."""
    monkeypatch.setattr(prh.cli, "COMMANDS", {"embed": prh.cli.COMMANDS["embed"]})

    def run(*argv: str) -> int:
        return prh.cli.main(["embed", *map(str, argv), "--no-progress", "--threads", "1"])

    return run


def test_world_text_and_image_rows_pair(cli, tmp_path, tiny_bert, tiny_vit):
    from prh.world import CaveWorld, WorldConfig

    txt, img = tmp_path / "t.safetensors", tmp_path / "i.safetensors"
    world_args = ["--world", "cave", "--n", 6, "--seed", 3, "--batch-size", 4]
    assert cli(f"hf:{tiny_bert}", *world_args, "--modality", "text", "--out", txt) == 0
    assert (
        cli(f"hf:{tiny_vit}", *world_args, "--modality", "image", "--image-size", 48, "--out", img)
        == 0
    )
    t, i = load_features(txt), load_features(img)
    assert t.features.shape == (6, 3, 16) and i.features.shape == (6, 3, 16)
    world = CaveWorld(WorldConfig(seed=3))
    scenes = world.split("test")[:6]
    assert t.ids == i.ids == [f"scene_{s}" for s in scenes]
    assert t.metadata["modality"] == "text" and i.metadata["modality"] == "image"
    assert json.loads(t.metadata["layer_dims"]) == [16, 16, 16]
    assert "seed=3 split=test n=6" in t.metadata["source"]
    # Reference: the encoder applied directly to caption 0 (seed 0) and the nuisance-0 render.
    enc = load_encoder(f"hf:{tiny_bert}")
    ref = enc.encode_texts([world.captions(int(s), 1, 0)[0] for s in scenes])
    np.testing.assert_allclose(t.features, ref, rtol=1e-4, atol=1e-5)
    venc = load_encoder(f"hf:{tiny_vit}")
    ref_img = venc.encode_images([world.render(int(s), 0, 48) for s in scenes])
    np.testing.assert_allclose(i.features, ref_img, rtol=1e-4, atol=1e-5)
    # Determinism: the same command writes the same features.
    again = tmp_path / "t2.safetensors"
    assert cli(f"hf:{tiny_bert}", *world_args, "--modality", "text", "--out", again) == 0
    np.testing.assert_array_equal(load_features(again).features, t.features)


def test_captions_per_scene_averages(cli, tmp_path, tiny_bert):
    from prh.world import CaveWorld, WorldConfig

    out = tmp_path / "t.safetensors"
    args = ["--world", "cave", "--n", 3, "--split", "train", "--captions-per-scene", 3]
    assert (
        cli(f"hf:{tiny_bert}", *args, "--caption-seed", 7, "--modality", "text", "--out", out) == 0
    )
    world = CaveWorld(WorldConfig(seed=0))
    scenes = world.split("train")[:3]
    enc = load_encoder(f"hf:{tiny_bert}")
    ref = np.stack([enc.encode_texts(world.captions(int(s), 3, 7)).mean(0) for s in scenes])
    np.testing.assert_allclose(load_features(out).features, ref, rtol=1e-4, atol=1e-5)


def test_corpus_text_and_image_files(cli, tmp_path, tiny_bert, tiny_vit):
    from PIL import Image

    corpus = tmp_path / "c.jsonl"
    rows = [
        {"image": "a.png", "captions": ["a red cube", "a cube that is red"]},
        {"image": "b.png", "captions": ["two blue spheres", "blue spheres"]},
    ]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    folder = tmp_path / "imgs"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for name in ("a.png", "b.png"):
        Image.fromarray(rng.integers(0, 256, (20, 30, 3), dtype=np.uint8)).save(folder / name)
    txt, img = tmp_path / "t.safetensors", tmp_path / "i.safetensors"
    assert cli(f"hf:{tiny_bert}", "--corpus", corpus, "--modality", "text", "--out", txt) == 0
    assert (
        cli(
            f"hf:{tiny_vit}",
            "--corpus",
            corpus,
            "--images",
            folder,
            "--modality",
            "image",
            "--out",
            img,
        )
        == 0
    )
    t, i = load_features(txt), load_features(img)
    assert t.ids == i.ids == ["a.png", "b.png"]
    ref = load_encoder(f"hf:{tiny_bert}").encode_texts(["a red cube", "two blue spheres"])
    np.testing.assert_allclose(t.features, ref, rtol=1e-4, atol=1e-5)
    (folder / "b.png").write_bytes(b"not an image")
    bad = tmp_path / "bad.safetensors"
    code = cli(
        f"hf:{tiny_vit}",
        "--corpus",
        corpus,
        "--images",
        folder,
        "--modality",
        "image",
        "--out",
        bad,
    )
    assert code == 2 and not bad.exists()


def test_features_spec_reorders_by_id(cli, tmp_path, tiny_bert):
    first = tmp_path / "t.safetensors"
    assert (
        cli(f"hf:{tiny_bert}", "--world", "cave", "--n", 4, "--modality", "text", "--out", first)
        == 0
    )
    # The stored rows come back in the world's scene order, looked up by id.
    fs = load_features(first)
    from prh.features import save_features

    shuffled = tmp_path / "s.safetensors"
    save_features(shuffled, fs.features[::-1], fs.ids[::-1], {"modality": "text"})
    again = tmp_path / "again.safetensors"
    assert (
        cli(
            f"features:{shuffled}",
            "--world",
            "cave",
            "--n",
            4,
            "--modality",
            "text",
            "--out",
            again,
        )
        == 0
    )
    np.testing.assert_array_equal(load_features(again).features, fs.features)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["resnet-9000", "--world", "cave", "--modality", "text"], "unknown encoder spec"),
        (["hf:/no/such/model", "--world", "cave", "--modality", "text"], "no such folder"),
        (["minilm", "--world", "cave", "--n", 99999, "--modality", "text"], "has only"),
        (["minilm", "--world", "cave", "--split", "val", "--modality", "text"], "unknown split"),
        (["minilm", "--corpus", "/no/such.jsonl", "--modality", "sketch"], "world cave"),
    ],
)
def test_errors_one_line_exit_2(cli, tmp_path, capsys, argv, message):
    out = tmp_path / "o.safetensors"
    assert cli(*argv, "--out", out) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("prh embed: error:") and message in err
    assert len(err.splitlines()) == 1
    assert not out.exists()


def test_modality_mismatch_and_bad_out(cli, tmp_path, capsys, tiny_vit):
    out = tmp_path / "o.safetensors"
    assert (
        cli(f"hf:{tiny_vit}", "--world", "cave", "--n", 2, "--modality", "text", "--out", out) == 2
    )
    assert "takes images, not texts" in capsys.readouterr().err
    assert cli("minilm", "--world", "cave", "--modality", "text", "--out", tmp_path / "x.npy") == 2
    assert "expected a .safetensors file name" in capsys.readouterr().err
    assert (
        cli(
            "minilm",
            "--world",
            "cave",
            "--modality",
            "text",
            "--out",
            tmp_path / "no" / "x.safetensors",
        )
        == 2
    )
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.slow
def test_efficientnet_on_world_renders(cli, tmp_path):
    pytest.importorskip("efficientnet_lite_pytorch")
    out = tmp_path / "e.safetensors"
    assert (
        cli("efficientnet-lite0", "--world", "cave", "--n", 2, "--modality", "image", "--out", out)
        == 0
    )
    fs = load_features(out)
    assert fs.features.shape == (2, 8, 1280) and np.isfinite(fs.features).all()
    assert fs.metadata["encoder"] == "efficientnet-lite0"


@pytest.mark.slow
def test_run_directory_on_its_world(cli, tmp_path, tiny_run):
    from prh.training import load_run
    from prh.world import CaveWorld, WorldConfig

    out = tmp_path / "run.safetensors"
    assert cli(tiny_run, "--world", "cave", "--n", 3, "--modality", "text", "--out", out) == 0
    fs = load_features(out)
    seed = load_run(tiny_run).config.world_seed  # --seed defaults to the run's world seed
    assert seed == 5
    world = CaveWorld(WorldConfig(seed=seed))
    scenes = world.split("test")[:3]
    assert fs.ids == [f"scene_{s}" for s in scenes]
    assert f"seed={seed} split=test" in fs.metadata["source"]
    ref = load_run(tiny_run).encode_texts([world.captions(int(s), 1, 0)[0] for s in scenes])
    np.testing.assert_allclose(fs.features, ref, rtol=1e-4, atol=1e-5)
