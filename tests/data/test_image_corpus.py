"""A caption corpus with its photos as a world: COCO, Flickr and JSONL layouts built in tmp_path,
loaded end to end; every bad input is one line naming the file and the row."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from prh.data import load_corpus
from prh.data.image_corpus import load_image_corpus
from prh.errors import InputError
from prh.world import SpectralWorld, World, make_world, world_offers


@pytest.fixture
def layouts():
    """Builders of tiny COCO, Flickr and JSONL corpora with photos (tests/conftest.py)."""
    from corpus_layouts import CORPUS_LAYOUTS

    return CORPUS_LAYOUTS


def test_coco_folder_is_a_world_with_its_photos_and_splits(tmp_path, layouts):
    root = layouts.coco(tmp_path / "coco")
    world = make_world("corpus", spec=str(root))
    assert isinstance(world, World) and not isinstance(world, SpectralWorld)
    assert not world_offers("corpus", "narration") and not world_offers("corpus", "themes")
    train, test = world.split("train"), world.split("test")  # no test split: val is the test
    assert len(train) == 4 and len(test) == 2 and not set(train) & set(test)
    i = int(test[0])
    assert world.image_id(i) == "000000000004.png"
    want = np.asarray(Image.open(root / "val2017" / "000000000004.png").convert("RGB"))
    assert np.array_equal(world.render(i), want)
    assert world.captions(i, 5) == [f"photo 4 words {c}" for c in range(3)]
    assert world.captions(i, 2, seed=1) == ["photo 4 words 1", "photo 4 words 2"]
    with pytest.raises(InputError, match="no sketches"):
        world.sketch(i)
    corpus = load_corpus(root)  # a text run reads the same folder: its train split
    assert corpus.split("train").image_ids == [world.image_id(int(j)) for j in train]
    from prh.data.record import corpus_files

    annotations = sorted((root / "annotations").iterdir())
    assert corpus_files(root, "coco") == annotations  # a run's record hashes captions, not photos


def test_one_coco_json_finds_the_photos_beside_its_folder(tmp_path, layouts):
    root = layouts.coco(tmp_path / "coco")
    world = make_world("corpus", spec=str(root / "annotations" / "captions_val2017.json"))
    assert world.num_scenes == 2 and world.render(0).shape == (20, 30, 3)


def test_flickr_and_jsonl_layouts(tmp_path, layouts):
    world = make_world("corpus", spec=str(layouts.flickr(tmp_path / "f")))
    assert [world.image_id(int(i)) for i in world.split("test")] == ["im4.jpg", "im5.jpg"]
    assert world.captions(0) == ["flickr 0 caption 0", "flickr 0 caption 1"]
    assert world.render(5).shape == (20, 30, 3)
    world = make_world("corpus", spec=str(layouts.jsonl(tmp_path / "j")))
    assert list(world.split("test")) == [0] and world.image_id(0) == "img/0.png"
    assert world.corpus([1, 2], 1).texts() == ["a 1", "a 2"]


def test_a_corpus_without_splits_holds_out_a_seeded_tenth(tmp_path, layouts):
    p = layouts.jsonl(tmp_path / "j", n=20)
    p.write_text(p.read_text().replace(', "split": "test"', "").replace(', "split": "train"', ""))
    a, b = make_world("corpus", spec=str(p)), make_world("corpus", seed=1, spec=str(p))
    assert len(a.split("test")) == 2 and len(a.split("train")) == 18
    assert set(a.split("test")) != set(b.split("test"))  # another seed, another draw


def _edit_json(path, fn):
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    "edit, match",
    [
        (
            lambda d: d["images"].append(dict(d["images"][0])),
            r"captions_train2017.json image 4: "
            r"id 100 listed twice \(first at image 0\)",
        ),
        (
            lambda d: d["images"].append({"id": 999, "file_name": d["images"][0]["file_name"]}),
            r"captions_train2017.json image 4: image '000000000000.png' listed twice",
        ),
        (
            lambda d: d["annotations"].append({"image_id": 7, "caption": "x"}),
            r"captions_train2017.json annotation 12: image_id 7 has no entry in 'images'",
        ),
        (
            lambda d: d["annotations"][2].update(caption="  "),
            r"captions_train2017.json annotation 2: empty caption",
        ),
    ],
)
def test_bad_coco_rows_are_one_line_naming_file_and_row(tmp_path, edit, match, layouts):
    root = layouts.coco(tmp_path / "coco")
    _edit_json(root / "annotations" / "captions_train2017.json", edit)
    with pytest.raises(InputError, match=match):
        load_image_corpus(root)


def test_missing_photo_and_overlapping_splits(tmp_path, layouts):
    root = layouts.coco(tmp_path / "coco")
    (root / "train2017" / "000000000002.png").unlink()
    with pytest.raises(InputError, match=r"captions_train2017.json image 2: image file .*"
                       r"000000000002.png is missing"):  # fmt: skip
        load_image_corpus(root)
    root = layouts.coco(tmp_path / "coco2")
    val = root / "annotations" / "captions_val2017.json"
    _edit_json(val, lambda d: d["images"][0].update(file_name="000000000000.png"))
    with pytest.raises(InputError, match=r"listed twice|overlap"):
        load_image_corpus(root)
    token = layouts.flickr(tmp_path / "f")
    (token.parent / "Flickr_8k.testImages.txt").write_text("im0.jpg\n")
    with pytest.raises(InputError, match=r"image 'im0.jpg' is in split 'train' and in split "
                       "'test'"):  # fmt: skip
        load_image_corpus(token)


def test_bad_flickr_and_jsonl_rows(tmp_path, layouts):
    token = layouts.flickr(tmp_path / "f")
    token.write_text(token.read_text() + "im0.jpg#1\tagain\n")
    with pytest.raises(InputError, match=r"Flickr8k.token.txt line 13: 'im0.jpg#1' listed twice "
                       r"\(first on line 2\)"):  # fmt: skip
        load_image_corpus(token)
    p = layouts.jsonl(tmp_path / "j")
    p.write_text(p.read_text() + json.dumps({"image": "img/1.png", "captions": ["c"]}) + "\n")
    with pytest.raises(InputError, match=r"c.jsonl line 6: image 'img/1.png' listed twice"):
        load_image_corpus(p)
    p = layouts.jsonl(tmp_path / "j2")
    p.write_text(p.read_text() + json.dumps({"captions": ["no image"]}) + "\n")
    with pytest.raises(InputError, match=r"c.jsonl line 6: expected 'image'"):
        load_image_corpus(p)


def test_captions_only_corpus_is_refused(shared_dir, tmp_path):
    token = shared_dir / "data" / "flickr8k" / "Flickr8k.token.txt"
    if not token.is_file():
        pytest.skip("Flickr8k captions are not in ../shared")
    with pytest.raises(InputError, match=r"no folder beside it holds its images.*captions-only"):
        load_image_corpus(token)
    assert len(load_corpus(token).split("train")) == 6000  # text runs still read it


def test_a_coco_file_that_lists_its_images_first_is_detected(tmp_path):
    """COCO 2017's captions files hold info, licenses and 118k images before any annotation."""
    from prh.data import detect_format

    images = [{"id": j, "file_name": f"{j:012d}.jpg", "width": 640} for j in range(300)]
    anns = [{"id": j, "image_id": j, "caption": f"caption {j}"} for j in range(300)]
    p = tmp_path / "captions_val2017.json"
    p.write_text(json.dumps({"info": {"year": 2017}, "images": images, "annotations": anns}))
    assert '"annotations"' not in p.read_text()[:4096]
    assert detect_format(p) == "coco" and len(load_corpus(p, min_captions=1)) == 300


@pytest.mark.parametrize("per_split", [True, False])
def test_a_hugging_face_dataset_with_an_image_column_is_a_world(tmp_path, layouts, per_split):
    """save_to_disk folders, a DatasetDict or one Dataset with a split column: the photos are
    read from the table's stored bytes (the source files deleted), ids and splits are those a
    text run reads."""
    import shutil

    root = layouts.hf(tmp_path / "hf", per_split=per_split)
    src = tmp_path / "hf-src"
    want = np.asarray(Image.open(src / "3.png").convert("RGB"))
    shutil.rmtree(src)
    world = make_world("corpus", spec=str(root))
    assert [world.image_id(i) for i in range(world.num_scenes)] == [f"{j}.jpg" for j in range(5)]
    assert world.split("train").tolist() == [0, 1, 2] and world.split("test").tolist() == [3, 4]
    assert np.array_equal(world.render(3), want)
    assert world.captions(3, 2, seed=1) == ["hf 3 caption 1", "hf 3 caption 2"]
    corpus = load_corpus(root)
    assert corpus.split("train").image_ids == ["0.jpg", "1.jpg", "2.jpg"]


def test_a_hugging_face_dataset_without_photos_is_refused(tmp_path):
    import datasets

    root = tmp_path / "text-only"
    datasets.Dataset.from_dict({"filename": ["a.jpg"], "captions": [["x y"]]}).save_to_disk(
        str(root)
    )
    with pytest.raises(InputError, match=r"expected one Image column \(the photos\), got none"):
        load_image_corpus(root)
