"""`prh embed` on bad input: one line, exit status 2, every input byte-identical (issue 11).

Every case fails before a model loads (or, for a missing device, before a weight is read), so
the table runs in seconds.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("datasets")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A saved data set, a feature file, a corpus with its images, a model folder, a text file."""
    import datasets
    from PIL import Image

    from prh.features import save_features

    root = tmp_path_factory.mktemp("bad-embed")
    rng = np.random.default_rng(0)
    images = [Image.fromarray(rng.integers(0, 256, (12, 12, 3), dtype=np.uint8)) for _ in range(3)]
    features = datasets.Features(
        {"image": datasets.Image(), "text": datasets.List(datasets.Value("string"))}
    )
    table = datasets.Dataset.from_dict(
        {"image": images, "text": [["a cube", "one cube"], ["a cone"], ["two cubes", "cubes"]]},
        features=features,
    )
    table.save_to_disk(str(root / "ds"))
    save_features(
        root / "f.safetensors",
        np.zeros((3, 2, 4), np.float32),
        ["row_0", "row_1", "row_2"],
        {"modality": "text"},
    )
    (root / "imgs").mkdir()
    for i, im in enumerate(images):
        im.save(root / "imgs" / f"{i}.png")
    rows = [{"image": f"{i}.png", "captions": ["a cube", "one cube"]} for i in range(3)]
    (root / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "model").mkdir()
    (root / "model" / "config.json").write_text('{"model_type": "bert"}')
    (root / "model" / "model.safetensors").write_bytes(b"weights that must survive")
    (root / "notes.txt").write_text("not a data set\n")
    (root / "empty").mkdir()
    (root / "dup.txt").write_text("minilm\nbigscience/bloomz-560m\nhf:bigscience/bloomz-560m\n")
    (root / "unknown.txt").write_text("minilm\nbloomz 560m\n")
    return root


def _inputs(root):
    return [
        root / "f.safetensors",
        root / "c.jsonl",
        root / "notes.txt",
        root / "model" / "model.safetensors",
        root / "model" / "config.json",
        *sorted((root / "ds").iterdir()),
        *sorted((root / "imgs").iterdir()),
    ]


DS = ["--dataset", "{ds}", "--modality", "text"]
OUT = ["--out", "{out}"]
CASES = {
    # an output that is an input, refused before any work
    "features file as its own output": (
        ["features:{f}", *DS, "--out", "{f}"],
        r"--out .*f\.safetensors: would overwrite the input",
    ),
    "model weights as the output": (
        ["hf:{model}", *DS, "--out", "{model}/model.safetensors"],
        "would overwrite the input",
    ),
    "data set file as the output": (
        ["minilm", *DS, "--out", "{ds}/state.json"],
        "would overwrite the input",
    ),
    "a new file inside the data set folder": (
        ["minilm", *DS, "--out", "{ds}/features.safetensors"],
        r"features\.safetensors: lies inside the input folder",
    ),
    # impossible output places
    "output in a missing folder": (
        ["minilm", *DS, "--out", "{root}/no/o.safetensors"],
        "does not exist",
    ),
    "output under a file": (["minilm", *DS, "--out", "{root}/notes.txt/o.safetensors"], "--out"),
    "output is a folder": (["minilm", *DS, "--out", "{root}/empty"], "is a directory"),
    "output not safetensors": (["minilm", *DS, "--out", "{root}/o.npy"], r"\.safetensors"),
    # devices, dtypes, pooling, prompt
    "device tpu": (
        ["minilm", *DS, *OUT, "--device", "tpu"],
        "argument --device: expected auto, cpu",
    ),
    "device cuda:x": (["minilm", *DS, *OUT, "--device", "cuda:x"], "argument --device"),
    "dtype float8": (["minilm", *DS, *OUT, "--dtype", "float8"], "argument --dtype"),
    "pool max": (["minilm", *DS, *OUT, "--pool", "max"], "argument --pool"),
    "prompt without slot": (["minilm", *DS, *OUT, "--prompt", "a photo"], "must contain"),
    "pool on efficientnet": (
        ["efficientnet-lite0", "--dataset", "{ds}", "--modality", "image", *OUT, "--pool", "cls"],
        "apply to hf: and minilm encoders only",
    ),
    # captions and columns
    "caption index negative": (["minilm", *DS, *OUT, "--caption-index", "-1"], "--caption-index"),
    "caption index too large": (
        ["minilm", *DS, *OUT, "--caption-index", "2"],
        r"--caption-index 2: .* row 0 has 2 caption",
    ),
    "caption index not a number": (
        ["minilm", *DS, *OUT, "--caption-index", "x"],
        "--caption-index",
    ),
    "missing text column": (
        ["minilm", *DS, *OUT, "--text-column", "caption"],
        r"--text-column 'caption': no such column .*available: image, text",
    ),
    "missing image column": (
        ["minilm", "--dataset", "{ds}", "--modality", "image", *OUT, "--image-column", "img"],
        r"--image-column 'img': no such column .*available: image, text",
    ),
    "image column that holds text": (
        ["minilm", "--dataset", "{ds}", "--modality", "image", *OUT, "--image-column", "text"],
        "expected the Image feature",
    ),
    "text column that holds images": (
        ["minilm", *DS, *OUT, "--text-column", "image"],
        "expected a string or a list of strings",
    ),
    # numbers and seeds
    "negative n": (["minilm", *DS, *OUT, "--n", "-3"], "argument --n"),
    "n above the rows": (["minilm", *DS, *OUT, "--n", "10"], "has only 3 rows"),
    "negative seed": (
        ["minilm", "--world", "cave", "--modality", "text", *OUT, "--seed", "-1"],
        "--seed",
    ),
    "huge init seed": (["minilm", *DS, *OUT, "--init-seed", str(2**40)], "--init-seed"),
    "negative caption seed": (["minilm", *DS, *OUT, "--caption-seed", "-2"], "--caption-seed"),
    "zero batch size": (["minilm", *DS, *OUT, "--batch-size", "0"], "--batch-size"),
    # folders and files swapped
    "data set given as a file": (
        ["minilm", "--dataset", "{root}/notes.txt", "--modality", "text", *OUT],
        "is a file; expected a folder written by save_to_disk",
    ),
    "data set folder that is not one": (
        ["minilm", "--dataset", "{root}/empty", "--modality", "text", *OUT],
        "not a saved Hugging Face dataset",
    ),
    "missing data set folder": (
        ["minilm", "--dataset", "{root}/nothing", "--modality", "text", *OUT],
        "no such folder",
    ),
    "features spec on a folder": (["features:{root}/empty", *DS, *OUT], "is a folder, expected"),
    "onnx spec on a folder": (["onnx:{root}/empty", *DS, *OUT], "is a folder, expected"),
    "hf spec on a file": (["hf:{root}/notes.txt", *DS, *OUT], "is a file; expected a transformers"),
    "hf spec on a folder without config": (["hf:{root}/empty", *DS, *OUT], "has no config.json"),
    "images given as a file": (
        [
            *("hf:{model}", "--corpus", "{root}/c.jsonl", "--images", "{root}/notes.txt"),
            *("--modality", "image", *OUT),
        ],
        "--images .*is a file, expected the folder",
    ),
    "cache dir that is a file": (
        [
            *("minilm", "--dataset", "minhuh/prh", "--modality", "text", *OUT),
            *("--cache-dir", "{root}/notes.txt"),
        ],
        "--cache-dir .*is a file",
    ),
    # flags that belong to another source, or none
    "revision with a folder": (
        ["minilm", *DS, *OUT, "--revision", "wit_1024"],
        "dataset name, not a folder",
    ),
    "revision with the world": (
        ["minilm", "--world", "cave", "--modality", "text", *OUT, "--revision", "x"],
        "--revision applies to --dataset only",
    ),
    "caption index a corpus image lacks": (
        [
            "minilm",
            "--corpus",
            "{root}/c.jsonl",
            "--modality",
            "text",
            *OUT,
            "--caption-index",
            "2",
        ],
        r"--caption-index 2: image '0.png' has 2 caption\(s\)",
    ),
    "caption index of a corpus's images": (
        [
            "minilm",
            "--corpus",
            "{root}/c.jsonl",
            "--modality",
            "image",
            "--images",
            "{root}/imgs",
            *OUT,
            "--caption-index",
            "1",
        ],
        "applies to --modality text only",
    ),
    "split a table does not have": (["minilm", *DS, *OUT, "--split", "test"], "not split 'test'"),
    "sketch of a data set": (
        ["minilm", "--dataset", "{ds}", "--modality", "sketch", *OUT],
        "sketch exists only",
    ),
    "captions per scene on a data set": (
        ["minilm", *DS, *OUT, "--captions-per-scene", "3"],
        "use --caption-index",
    ),
    "model folder with broken weights": (
        ["hf:{model}", *DS, *OUT],
        r"hf:.*model: cannot load the model \(",
    ),
    "empty data set name": (
        ["minilm", "--dataset", "", "--modality", "text", *OUT],
        "--dataset: empty",
    ),
    # model lists (issue 24): refused before any model is loaded
    "model listed twice": (
        ["--models", "{root}/dup.txt", *DS, "--out-dir", "{root}/lists"],
        r"dup\.txt line 3: 'hf:bigscience/bloomz-560m' is listed twice \(first on line 2",
    ),
    "unknown model in a list": (
        ["--models", "{root}/unknown.txt", *DS, "--out-dir", "{root}/lists"],
        r"line 2: unknown model 'bloomz 560m'",
    ),
    "unknown built-in set": (
        ["--models", "val-audio", *DS, "--out-dir", "{root}/lists"],
        "neither a built-in set",
    ),
    "a model and a list": (["minilm", "--models", "val-language", *DS, *OUT], "not both"),
    "a list without --out-dir": (["--models", "{root}/dup.txt", *DS, *OUT], "give --out-dir"),
    "a list's out-dir is a file": (
        ["--models", "val-language", *DS, "--out-dir", "{root}/notes.txt"],
        "--out-dir .*is a file",
    ),
    "no model at all": ([*DS, *OUT], "expected a MODEL or --models LIST"),
    "name absent from the cache offline": (
        [
            *("minilm", "--dataset", "nobody/no-such-set", "--modality", "text", *OUT),
            *("--cache-dir", "{root}/empty"),
        ],
        "--dataset nobody/no-such-set: cannot be loaded",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_embed_bad_input(bad_input, files, case):
    argv, match = CASES[case]
    names = {
        "root": files,
        "ds": files / "ds",
        "f": files / "f.safetensors",
        "model": files / "model",
        "out": files / "o.safetensors",
    }
    line = bad_input(["embed", *(a.format(**names) for a in argv)], _inputs(files), match)
    assert line.startswith("prh embed: error:")
    assert not (files / "o.safetensors").exists()
    assert not (files / "lists").exists()


def test_cuda_missing_is_one_line(bad_input, files):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    argv = ["embed", "minilm", "--dataset", files / "ds", "--modality", "text"]
    argv += ["--out", files / "o.safetensors", "--device", "cuda"]
    bad_input(argv, _inputs(files), "--device cuda: CUDA is not available")


def test_an_image_that_does_not_decode_names_its_row(bad_input, tmp_path, tiny_vit):
    """A corrupt image inside the table: one line naming the row, after the rows before it."""
    import datasets
    from PIL import Image

    good = tmp_path / "good.png"
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(good)
    cells = [{"bytes": good.read_bytes(), "path": None}, {"bytes": b"not a png", "path": None}]
    features = datasets.Features({"image": datasets.Image()})
    datasets.Dataset.from_dict({"image": cells}, features=features).save_to_disk(
        str(tmp_path / "d")
    )
    out = tmp_path / "o.safetensors"
    argv = ["embed", f"hf:{tiny_vit}", "--dataset", tmp_path / "d", "--modality", "image"]
    bad_input([*argv, "--out", out, "--no-progress"], [good], r"d row 1: not an image")
    assert not out.exists()


def _no_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is None


@pytest.mark.skipif(not _no_module("bitsandbytes"), reason="bitsandbytes is installed")
def test_4bit_without_its_extra_is_one_line(bad_input, files, monkeypatch):
    # CUDA mocked present: the refusal is about the missing package, before the (broken) model.
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    argv = ["embed", f"hf:{files / 'model'}", *(a.format(ds=files / "ds") for a in DS)]
    argv += ["--out", files / "o.safetensors", "--device", "cuda", "--load-in-4bit"]
    bad_input(
        argv, _inputs(files), r"--load-in-4bit needs bitsandbytes: pip install 'prh\[quantize"
    )


@pytest.mark.skipif(not _no_module("accelerate"), reason="accelerate is installed")
def test_device_map_without_accelerate_is_one_line(bad_input, files):
    argv = ["embed", f"hf:{files / 'model'}", *(a.format(ds=files / "ds") for a in DS)]
    argv += ["--out", files / "o.safetensors", "--device-map", "auto"]
    bad_input(argv, _inputs(files), "--device-map auto needs accelerate")


def test_bfloat16_on_a_gpu_without_it_is_one_line(bad_input, files, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    argv = ["embed", f"hf:{files / 'model'}", *(a.format(ds=files / "ds") for a in DS)]
    argv += ["--out", files / "o.safetensors", "--device", "cuda:1", "--dtype", "bfloat16"]
    bad_input(argv, _inputs(files), "--dtype bfloat16: the GPU of --device cuda:1 lacks it")


def test_load_options_on_a_model_that_is_not_hf_are_refused(bad_input, files):
    argv = ["embed", "minilm", *(a.format(ds=files / "ds") for a in DS)]
    argv += ["--out", files / "o.safetensors", "--model-revision", "v1"]
    bad_input(argv, _inputs(files), "apply to hf: models only")
