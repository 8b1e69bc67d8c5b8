"""Tiny caption corpora with photos, in each layout prh reads (COCO folder, Flickr token file and
image folder, JSONL of image paths, Hugging Face dataset folder): a few images and captions built
in a test's tmp_path."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
from PIL import Image


def png(path, seed):
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    Image.fromarray(rng.integers(0, 256, (20, 30, 3), dtype=np.uint8)).save(path)
    return path


def coco(root, splits=(("train2017", 4), ("val2017", 2)), caps=3):
    """COCO 2017 layout: annotations/captions_<split>.json and <split>/<file>.jpg-like PNGs."""
    (root / "annotations").mkdir(parents=True)
    n = 0
    for name, count in splits:
        images, anns = [], []
        for _ in range(count):
            images.append({"id": 100 + n, "file_name": f"{n:012d}.png"})
            png(root / name / f"{n:012d}.png", n)
            anns += [{"id": len(anns), "image_id": 100 + n, "caption": f"photo {n} words {c}"}
                     for c in range(caps)]  # fmt: skip
            n += 1
        data = {"images": images, "annotations": anns}
        (root / "annotations" / f"captions_{name}.json").write_text(json.dumps(data))
    return root


def flickr(root, n=6, caps=2):
    """Flickr layout: a token file, split lists and the image folder beside them."""
    root.mkdir(parents=True)
    lines = [f"im{j}.jpg#{c}\tflickr {j} caption {c}" for j in range(n) for c in range(caps)]
    (root / "Flickr8k.token.txt").write_text("\n".join(lines) + "\n")
    (root / "Flickr_8k.trainImages.txt").write_text("".join(f"im{j}.jpg\n" for j in range(n - 2)))
    (root / "Flickr_8k.testImages.txt").write_text(f"im{n - 2}.jpg\nim{n - 1}.jpg\n")
    for j in range(n):
        png(root / "Flicker8k_Dataset" / f"im{j}.jpg", j)  # PNG bytes: the decoder sniffs them
    return root / "Flickr8k.token.txt"


def jsonl(root, n=5):
    root.mkdir(parents=True)
    rows = [{"image": f"img/{j}.png", "captions": [f"a {j}", f"b {j}"],
             "split": "test" if j == 0 else "train"} for j in range(n)]  # fmt: skip
    for j in range(n):
        png(root / "img" / f"{j}.png", j)
    (root / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root / "c.jsonl"


def hf(root, n=5, per_split=True):
    """A Hugging Face image-caption dataset saved with save_to_disk (the Flickr30k layout on the
    hub: an Image column, a list of captions, a file name): a DatasetDict of train (n - 2 rows)
    and test (2 rows), or (``per_split=False``) one Dataset with a ``split`` column."""
    import datasets

    pngs = [png(root.parent / f"{root.name}-src" / f"{j}.png", 50 + j) for j in range(n)]
    rows = {"image": [str(f) for f in pngs], "filename": [f"{j}.jpg" for j in range(n)],
            "captions": [[f"hf {j} caption {c}" for c in range(3)] for j in range(n)],
            "split": ["train"] * (n - 2) + ["test"] * 2}  # fmt: skip
    ds = datasets.Dataset.from_dict(rows).cast_column("image", datasets.Image())
    ds = ds.map(lambda r: r)  # embed the image bytes in the table (not paths to the sources)
    if per_split:
        ds = datasets.DatasetDict(
            {
                "train": ds.select(range(n - 2)).remove_columns("split"),
                "test": ds.select(range(n - 2, n)).remove_columns("split"),
            }
        )
    ds.save_to_disk(str(root))
    return root


CORPUS_LAYOUTS = SimpleNamespace(coco=coco, flickr=flickr, jsonl=jsonl, hf=hf)
