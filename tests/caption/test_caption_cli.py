"""`prh caption`: caption an image file, score, build; bad input is one line and exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest

from prh.cli import main


def _png(path, seed=0, size=(48, 40)):
    from PIL import Image

    rng = np.random.default_rng(seed)
    Image.fromarray(rng.integers(0, 256, size=(*size, 3), dtype=np.uint8)).save(path)
    return path


def _cli(capsys, *argv):
    code = main(["caption", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_caption_an_image_file(capsys, tmp_path, caption_run):
    from prh.caption import load_captioner

    png = _png(tmp_path / "a.png")
    code, out, err = _cli(capsys, "--run", caption_run, "--image", png, "--nearest",
                          "--json", tmp_path / "r.json")  # fmt: skip
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 1 + 5 and lines[1].startswith("  ")
    got = json.loads((tmp_path / "r.json").read_text())
    from PIL import Image

    want = load_captioner(caption_run).caption(np.asarray(Image.open(png).convert("RGB")))
    assert got["caption"] == lines[0] == want.caption
    assert [n["caption"] for n in got["nearest"]] == [c for c, _ in want.nearest]
    code, out, _ = _cli(capsys, "--run", caption_run, "--image", png, png, "--beam", 2)
    assert code == 0 and len(out.splitlines()) == 2 and out.startswith(f"{png}: ")


def test_eval_prints_the_table_and_writes_json(capsys, tmp_path, caption_run):
    code, out, err = _cli(capsys, "--eval", "--run", caption_run, "--world", "cave", "--n", 4,
                          "--beam", 2, "--tokenizer", "simple", "--no-progress",
                          "--json", tmp_path / "e.json")  # fmt: skip
    assert code == 0, err
    assert "retrieval (nearest train caption)" in out and "CIDEr" in out
    res = json.loads((tmp_path / "e.json").read_text())
    assert res["n"] == 4 and "decoder, beam 2" in res["scores"]
    assert res["format"] == "prh-caption-eval/1"
    assert res["inputs"][0]["path"].endswith("caption.json")


def test_build_from_the_cli(capsys, tmp_path, text_run, tiny_vit):
    out_run = tmp_path / "built"
    code, out, err = _cli(capsys, "--build", "--text-run", text_run, "--out", out_run,
                          "--vision", f"hf:{tiny_vit}", "--n-pairs", 8, "--decoder-scenes", 8,
                          "--decoder-steps", 2, "--vision-dims", 4, "--image-size", 32,
                          "--map", "ridge", "--noise", "0", "--device", "cpu",
                          "--no-progress")  # fmt: skip
    assert code == 0, err
    info = json.loads((out_run / "caption" / "caption.json").read_text())
    assert info["map"]["kind"] == "ridge" and info["noise_std"] == 0.0 and info["n_pairs"] == 8
    assert "caption run" in out and info["pair_free"] is None
    code, out, err = _cli(capsys, "--build", "--text-run", text_run, "--out", tmp_path / "free",
                          "--vision", f"hf:{tiny_vit}", "--n-pairs", 40, "--decoder-scenes", 8,
                          "--decoder-steps", 2, "--vision-dims", 4, "--image-size", 32,
                          "--pair-free", "--no-progress")  # fmt: skip
    assert code == 0, err
    info = json.loads((tmp_path / "free" / "caption" / "caption.json").read_text())
    assert 0.0 <= info["pair_free"]["accuracy"] <= 1.0 and "pair-free match accuracy" in out


@pytest.mark.parametrize("device", ["tpu", "cuda"])
def test_build_refuses_a_device_this_machine_lacks(capsys, tmp_path, text_run, tiny_vit, device):
    import torch

    if device == "cuda" and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    out_run = tmp_path / "built"
    code, _, err = _cli(capsys, "--build", "--text-run", text_run, "--out", out_run, "--vision",
                        f"hf:{tiny_vit}", "--n-pairs", 8, "--decoder-scenes", 8,
                        "--decoder-steps", 2, "--device", device, "--no-progress")  # fmt: skip
    assert code == 2 and err.count("\n") == 1 and f"--device {device}:" in err
    assert not out_run.exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--image", "{png}"], "--run RUN is required"),
        (["--run", "{tmp}/nope", "--image", "{png}"], "no such folder"),
        (["--run", "{tmp}", "--image", "{png}"], "not a caption run"),
        (["--run", "{run}"], "give --image PNG"),
        (["--run", "{run}", "--image", "{tmp}/missing.png"], "no such file"),
        (["--run", "{run}", "--image", "{bad}"], "bad.png"),
        (["--run", "{run}", "--image", "{big}", "--max-image-mb", "1"], "larger than the limit"),
        (["--build", "--out", "{tmp}/x"], "--build needs --text-run"),
        (
            ["--run", "{run}", "--image", "{png}", "--json", "{tmp}/no/such/r.json"],
            "does not exist",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, caption_run, args, message):
    png = _png(tmp_path / "ok.png")
    (tmp_path / "bad.png").write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    (tmp_path / "big.png").write_bytes(b"\0" * (1024 * 1024 + 1))
    fill = {"png": png, "tmp": tmp_path, "run": caption_run, "bad": tmp_path / "bad.png",
            "big": tmp_path / "big.png"}  # fmt: skip
    code, _, err = _cli(capsys, *[a.format(**fill) for a in args])
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("prh caption: error: ") and message in err
