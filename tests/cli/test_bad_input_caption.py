"""`prh caption` on bad input: exit 2, one line, no traceback, the run's files intact.

Every case is refused before a model is loaded; the toy caption run (tests/conftest.py) is the
run a user would point at.
"""

from __future__ import annotations

import numpy as np
import pytest


def _png(path):
    from PIL import Image

    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 256, size=(40, 48, 3), dtype=np.uint8)).save(path)
    return path


def _run_files(run):
    return [p for p in run.rglob("*") if p.is_file()]


@pytest.fixture
def fill(tmp_path, caption_run, text_run):
    (tmp_path / "file").write_text("a regular file\n")
    (tmp_path / "folder").mkdir()
    return {
        "run": caption_run,
        "manifest": caption_run / "caption" / "caption.json",
        "text": text_run,
        "png": _png(tmp_path / "a.png"),
        "tmp": tmp_path,
    }


CASES = {  # {run}: the caption run, {manifest}: its caption.json, {text}: its text run
    "json is the image": (["--run", "{run}", "--image", "{png}", "--json", "{png}"],
                          r"--json .*a\.png: would overwrite the input .*a\.png"),
    "json is the manifest (caption)": (
        ["--run", "{run}", "--image", "{png}", "--json", "{manifest}"],
        r"--json .*caption\.json: would overwrite the input",
    ),
    "json is the manifest (eval)": (["--eval", "--run", "{run}", "--json", "{manifest}"],
                                    r"--json .*caption/caption\.json: would overwrite the input"),
    "json is a tensor of the run": (
        ["--eval", "--run", "{run}", "--json", "{run}/caption/decoder.safetensors"],
        r"decoder\.safetensors: would overwrite the input",
    ),
    "json is in the text run (eval)": (
        ["--eval", "--run", "{run}", "--json", "{text}/config.json"],
        r"config\.json: would overwrite the input",
    ),
    "json is in the text run (image)": (
        ["--run", "{run}", "--image", "{png}", "--json", "{text}/config.json"],
        r"config\.json: would overwrite the input",
    ),
    "json is in the text run (build)": (
        ["--build", "--text-run", "{text}", "--out", "{tmp}/new", "--json", "{text}/config.json"],
        r"config\.json: would overwrite the input",
    ),
    "run is a file": (["--run", "{tmp}/file", "--image", "{png}"],
                      r"--run .*file: is a file, expected a run folder"),
    "image is a folder": (["--run", "{run}", "--image", "{tmp}/folder"],
                          r"--image .*folder: is a folder, expected an image file"),
    "image features is a folder": (
        ["--eval", "--run", "{run}", "--image-features", "{tmp}/folder"],
        r"--image-features .*folder: is a folder, expected a feature file",
    ),
    "eval beam 1": (["--eval", "--run", "{run}", "--beam", "1"],
                    r"--beam for the --eval beam row must be >= 2, got 1"),
    "build out is a file": (["--build", "--text-run", "{text}", "--out", "{tmp}/file"],
                            r"--out .*file: is a file, expected a folder"),
    "build out under a file": (
        ["--build", "--text-run", "{text}", "--out", "{tmp}/file/run"],
        r"--out .*file/run: .*file is a file, so the folder cannot be created",
    ),
    "build text run is a file": (["--build", "--text-run", "{tmp}/file", "--out", "{tmp}/new"],
                                 r"--text-run .*file: is a file, expected a prh train run folder"),
    "build text run missing": (["--build", "--text-run", "{tmp}/nope", "--out", "{tmp}/new"],
                               r"--text-run .*nope: no such folder"),
    "build seed negative": (["--build", "--text-run", "{text}", "--out", "{tmp}/new", "--seed",
                             "-1"], r"--seed: expected a seed in \[0, 4294967295\], got -1"),
    "build noise inf": (["--build", "--text-run", "{text}", "--out", "{tmp}/new", "--noise",
                         "inf"], r"--noise: expected 'gap' or a finite number >= 0, got 'inf'"),
    "build n-pairs 3": (["--build", "--text-run", "{text}", "--out", "{tmp}/new", "--n-pairs",
                         "3"], r"--n-pairs must be >= 4 and --decoder-scenes >= 2, got 3 and"),
    "threads beyond the CPUs": (["--run", "{run}", "--image", "{png}", "--threads", "100000"],
                                r"--threads 100000: this machine has \d+ CPUs"),
    "threads overflow": (["--eval", "--run", "{run}", "--threads", str(10**10)],
                         r"--threads 10000000000: this machine has"),
    "beam huge": (["--run", "{run}", "--image", "{png}", "--beam", str(10**10)],
                  r"--beam must be 1 to 64, got 10000000000"),
    "eval refs too many": (["--eval", "--run", "{run}", "--refs", "101"],
                           r"--refs must be 1 to 100 references per scene, got 101"),
    "build image size 8": (["--build", "--text-run", "{text}", "--out", "{tmp}/new",
                            "--image-size", "8"], r"--image-size must be 16 to 1024 pixels, got 8"),
    "build image size huge": (["--build", "--text-run", "{text}", "--out", "{tmp}/new",
                               "--image-size", "100000"], r"--image-size must be 16 to 1024"),
    "build noise nan": (["--build", "--text-run", "{text}", "--out", "{tmp}/new", "--noise",
                         "nan"], r"--noise: expected 'gap' or a finite number >= 0, got 'nan'"),
}  # fmt: skip


@pytest.mark.parametrize("args, match", CASES.values(), ids=CASES.keys())
def test_caption_refuses(bad_input, fill, args, match):
    inputs = [*_run_files(fill["run"]), *_run_files(fill["text"]), fill["png"]]
    argv = ["caption", *[a.format(**fill) for a in args], "--no-progress"]
    bad_input(argv, inputs=inputs, match=match)
    assert not (fill["tmp"] / "new").exists()  # --build refused before it made its folder


def test_no_output_inside_an_input_folder(fill, capsys):
    """A folder given as input is an input as a whole: a new file written inside it would change
    what the next reader of that folder sees, so it is refused like an overwrite."""
    from prh.cli import main

    out = fill["run"] / "eval.json"
    assert main(["caption", "--eval", "--run", str(fill["run"]), "--json", str(out),
                 "--no-progress"]) == 2  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "eval.json: lies inside the input folder" in err
    assert not out.exists()


def test_java_error_names_real_flags(monkeypatch):
    """Without Java, the error names the flag that asked for it, and that flag exists."""
    from prh.bridge import caption_metrics
    from prh.cli import build_parser
    from prh.errors import PrhError

    monkeypatch.setattr(caption_metrics.shutil, "which", lambda name: None)
    refs, hyps = {"a": ["a red cube"]}, {"a": "a red cube"}
    with pytest.raises(PrhError, match=r"drop --meteor$"):
        caption_metrics.score_captions(refs, hyps, metrics=("BLEU-4", "METEOR"), tokenizer="simple")
    with pytest.raises(PrhError, match=r"use --tokenizer simple$"):
        caption_metrics.score_captions(refs, hyps, metrics=("BLEU-4",), tokenizer="ptb")
    args = build_parser().parse_args(["caption", "--eval", "--meteor", "--tokenizer", "simple"])
    assert args.meteor and args.tokenizer == "simple"


# --- issue 36: --build's --out inside the text run it reads, however it is spelt ---------------


def _inside_the_text_run(tmp, text):
    (tmp / "textlink").symlink_to(text)  # a symlink to the run
    (tmp / "parentlink").symlink_to(text.parent)  # a symlinked folder above it
    return {
        "directly": (text, text / "cap"),
        "through ..": (text, text / "sub" / ".." / "cap"),
        "out through a symlink to the run": (text, tmp / "textlink" / "cap"),
        "text run given as a symlink": (tmp / "textlink", text / "cap"),
        "through a symlinked folder": (text, tmp / "parentlink" / text.name / "cap"),
        "out is the text run": (text, tmp / "textlink"),
    }


@pytest.mark.parametrize(
    "case",
    ["directly", "through ..", "out through a symlink to the run", "text run given as a symlink",
     "through a symlinked folder", "out is the text run"],
)  # fmt: skip
def test_build_refuses_an_out_inside_its_text_run(bad_input, fill, case):
    text, out = _inside_the_text_run(fill["tmp"], fill["text"])[case]
    before = sorted(p.relative_to(fill["text"]) for p in fill["text"].rglob("*"))
    bad_input(
        ["caption", "--build", "--text-run", str(text), "--out", str(out), "--no-progress"],
        inputs=_run_files(fill["text"]),
        match=r"--out .*: (lies inside the input folder|would overwrite the input)",
    )
    assert sorted(p.relative_to(fill["text"]) for p in fill["text"].rglob("*")) == before


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory):
    """A one-step text run trained on a caption corpus (not on the world)."""
    import json

    from prh.training import train, train_config

    d = tmp_path_factory.mktemp("corpus-run")
    rows = [json.dumps({"image": f"s{i}", "captions": [f"a red cube {i}", f"one cube {i}"]})
            for i in range(80)]  # fmt: skip
    (d / "c.jsonl").write_text("\n".join(rows) + "\n")
    cfg = train_config("tiny", corpus=str(d / "c.jsonl"), samples=64, batch_size=64,
                       max_len=16, vocab_size=120, checkpoint_every=0, log_every=0)  # fmt: skip
    return train(cfg, d / "run", progress=False, threads=1)


def test_build_refuses_a_text_run_trained_on_a_caption_corpus(bad_input, corpus_run, tmp_path):
    """Issue 34 item 6: its captions are not the world's, so pairing them with the world's
    renders would mix two sources."""
    argv = ["caption", "--build", "--text-run", corpus_run, "--out", tmp_path / "new"]
    bad_input(
        argv,
        inputs=_run_files(corpus_run),
        match=r"--text-run .*run: trained on the caption corpus .*c\.jsonl, not on a world",
    )
    assert sorted(tmp_path.iterdir()) == []


def test_build_refuses_a_vision_run_of_another_world(text_run, tmp_path):
    """caption --build --pair-free spectral with a vision run of another world mixes worlds."""
    import dataclasses
    import json

    from prh.caption.build import check_build_worlds
    from prh.errors import InputError
    from prh.training import load_run

    cfg = load_run(text_run, device="cpu").config
    vision = tmp_path / "vision"
    vision.mkdir()

    def stored(world, seed):  # a run's config.json: its training settings under "train"
        return json.dumps({"modality": "image", "train": {"world": world, "world_seed": seed}})

    (vision / "config.json").write_text(stored("moving", 0))
    with pytest.raises(InputError, match=r"--vision .*vision: a run of world 'moving' \(seed 0\)"):
        check_build_worlds(text_run, cfg, str(vision), cfg.world_seed)
    (vision / "config.json").write_text(stored("cave", 99))
    with pytest.raises(InputError, match=r"seed 99\), but --text-run"):
        check_build_worlds(text_run, cfg, str(vision), cfg.world_seed)
    (vision / "config.json").write_text(stored("cave", 3))
    assert check_build_worlds(text_run, cfg, str(vision), 3) == "cave"
    # a caption twin shows its world's scenes: an image run of the moving cave pairs with a text
    # run on its literal captions, and not with one on the still cave
    (vision / "config.json").write_text(stored("moving", 0))
    twin = dataclasses.replace(cfg, world="moving-literal")
    assert check_build_worlds(text_run, twin, str(vision), 0) == "moving-literal"
    (vision / "config.json").write_text(stored("moving-literal", 0))
    with pytest.raises(InputError, match="a run of world 'moving-literal'"):
        check_build_worlds(text_run, cfg, str(vision), 0)
