"""Corpus loaders: every format on small fixture files, the real Flickr8k file, the error paths."""

import json

import pytest

from prh.data import CaptionCorpus, detect_format, load_corpus
from prh.errors import InputError

# The planted corpus every fixture file encodes.
WANT = {
    "a.jpg": ["A dog runs .", "A brown dog is running"],
    "b.jpg": ["Two cats sleep", "cats on a sofa", "A pair of cats naps"],
}
SPLIT = {"a.jpg": "train", "b.jpg": "test"}


def as_dict(c: CaptionCorpus) -> dict:
    return dict(zip(c.image_ids, c.captions))


def write_flickr(tmp_path, dup_defect=False):
    lines = [f"{img}#{k}\t{c}" for img, caps in WANT.items() for k, c in enumerate(caps)]
    if dup_defect:  # Flickr8k ships one image named x.jpg.1
        lines[-1] = lines[-1].replace("b.jpg#2", "b.jpg.1#2")
    p = tmp_path / "Flickr8k.token.txt"
    p.write_text("\n".join(lines) + "\n")
    (tmp_path / "Flickr_8k.trainImages.txt").write_text("a.jpg\n")
    (tmp_path / "Flickr_8k.testImages.txt").write_text("b.jpg\n")
    return p


def write_coco(tmp_path):
    images = [{"id": 1, "file_name": "a.jpg"}, {"id": 2, "file_name": "b.jpg"}]
    ids = {"a.jpg": 1, "b.jpg": 2}
    ann = [
        {"image_id": ids[k], "id": j, "caption": c}
        for j, (k, c) in enumerate((k, c) for k, cs in WANT.items() for c in cs)
    ]
    p = tmp_path / "captions_val.json"
    p.write_text(json.dumps({"images": images, "annotations": ann}))
    return p


def write_karpathy(tmp_path):
    imgs = [
        {"filename": k, "split": SPLIT[k], "sentences": [{"raw": c, "tokens": []} for c in cs]}
        for k, cs in WANT.items()
    ]
    p = tmp_path / "dataset_flickr.json"
    p.write_text(json.dumps({"images": imgs, "dataset": "flickr8k"}))
    return p


def write_csv(tmp_path, style):
    if style == "comma":
        rows = ["image,caption"] + [f'{k},"{c}"' for k, cs in WANT.items() for c in cs]
    elif style == "pipe":  # Kaggle Flickr30k results.csv
        rows = ["image_name| comment_number| comment"] + [
            f"{k}| {j}| {c}" for k, cs in WANT.items() for j, c in enumerate(cs)
        ]
    else:  # Hugging Face Flickr30k CSV: a JSON list per image and a split column
        rows = ["raw,filename,split"] + [
            '"' + json.dumps(cs).replace('"', '""') + f'",{k},{SPLIT[k]}' for k, cs in WANT.items()
        ]
    p = tmp_path / f"{style}.csv"
    p.write_text("\n".join(rows) + "\n")
    return p


def write_jsonl(tmp_path, shape):
    if shape == "single":
        lines = [json.dumps({"image": k, "caption": c}) for k, cs in WANT.items() for c in cs]
    else:
        lines = [
            json.dumps({"image": k, "captions": cs, "split": SPLIT[k]}) for k, cs in WANT.items()
        ]
    p = tmp_path / f"{shape}.jsonl"
    p.write_text("\n".join(lines) + "\n\n")
    return p


def test_flickr(tmp_path):
    c = load_corpus(write_flickr(tmp_path, dup_defect=True))
    assert as_dict(c) == WANT
    assert c.splits == {"train": ["a.jpg"], "test": ["b.jpg"]}
    assert c.split("test").image_ids == ["b.jpg"]


@pytest.mark.parametrize("writer", [write_coco, write_karpathy])
def test_json_formats(tmp_path, writer):
    c = load_corpus(writer(tmp_path))
    assert as_dict(c) == WANT
    if writer is write_karpathy:
        assert c.splits == {"train": ["a.jpg"], "test": ["b.jpg"]}


@pytest.mark.parametrize("style", ["comma", "pipe", "hf"])
def test_csv(tmp_path, style):
    c = load_corpus(write_csv(tmp_path, style))
    assert as_dict(c) == WANT
    assert detect_format(write_csv(tmp_path, style)) == "csv"


@pytest.mark.parametrize("shape", ["single", "list"])
def test_jsonl(tmp_path, shape):
    c = load_corpus(write_jsonl(tmp_path, shape))
    assert as_dict(c) == WANT
    if shape == "list":
        assert c.splits == {"train": ["a.jpg"], "test": ["b.jpg"]}


def _records():
    return {
        "image_id": list(WANT),
        "captions": list(WANT.values()),
        "split": [SPLIT[k] for k in WANT],
    }


def test_hf_save_to_disk(tmp_path):
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_dict(_records()).save_to_disk(str(tmp_path / "ds"))
    c = load_corpus(tmp_path / "ds")
    assert as_dict(c) == WANT and c.splits["train"] == ["a.jpg"]
    # A DatasetDict: its keys become the splits; one caption per row is grouped by image.
    rows = [(k, cap) for k, cs in WANT.items() for cap in cs]
    dd = datasets.DatasetDict(
        {
            name: datasets.Dataset.from_dict(
                {
                    "image": [k for k, _ in rows if SPLIT[k] == name],
                    "caption": [x for k, x in rows if SPLIT[k] == name],
                }
            )
            for name in ("train", "test")
        }
    )
    dd.save_to_disk(str(tmp_path / "dd"))
    c = load_corpus(tmp_path / "dd")
    assert detect_format(tmp_path / "dd") == "hf"
    assert as_dict(c) == WANT and c.splits == {"train": ["a.jpg"], "test": ["b.jpg"]}


def test_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table(
        {"filename": list(WANT), "sentences": list(WANT.values()), "image": [{"bytes": b"x"}] * 2}
    )
    pq.write_table(table, tmp_path / "part-0.parquet")
    c = load_corpus(tmp_path / "part-0.parquet")  # the struct "image" column is not an id
    assert as_dict(c) == WANT
    folder = tmp_path / "pq"
    folder.mkdir()
    pq.write_table(table.slice(0, 1), folder / "a.parquet")
    pq.write_table(table.slice(1, 1), folder / "b.parquet")
    assert as_dict(load_corpus(folder)) == WANT


def test_flickr8k_real(shared_dir):
    path = shared_dir / "data" / "flickr8k" / "Flickr8k.token.txt"
    if not path.is_file():
        pytest.skip("Flickr8k captions not present")
    c = load_corpus(path)
    assert c.summary() == {
        "images": 8092,
        "captions": 40460,
        "min_per_image": 5,
        "max_per_image": 5,
    }
    assert {k: len(v) for k, v in c.splits.items()} == {"train": 6000, "val": 1000, "test": 1000}
    assert len(c.split("train")) == 6000 and len(c.split("test")) == 1000
    assert "2258277193_586949ec62.jpg" in set(c.image_ids)  # the x.jpg.1 defect is merged


# ---- error paths -------------------------------------------------------------------------------
def test_few_captions_policy(tmp_path):
    p = tmp_path / "few.jsonl"
    p.write_text(
        '{"image": "a", "captions": ["x", "y"]}\n'
        '{"image": "b", "caption": "z"}\n{"image": "c", "caption": "w"}\n'
    )
    with pytest.raises(InputError, match=r"2 of 3 images have fewer than 2 captions"):
        load_corpus(p)
    assert load_corpus(p, on_few="drop").image_ids == ["a"]
    assert len(load_corpus(p, min_captions=1)) == 3
    assert len(load_corpus(p, on_few="keep")) == 3


def test_empty_caption(tmp_path):
    p = tmp_path / "Flickr8k.token.txt"
    p.write_text("a.jpg#0\tA dog\na.jpg#1\t   \n")
    with pytest.raises(InputError, match=r"line 2: empty caption for image 'a.jpg'"):
        load_corpus(p)


def test_invalid_utf8(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_bytes(b'{"image": "a", "caption": "ok"}\n{"image": "a", "caption": "caf\xe9"}\n')
    with pytest.raises(InputError, match=r"line 2: invalid UTF-8"):
        load_corpus(p)


def test_malformed_json_line(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"image": "a", "caption": "x"}\n\n{"image": "a", "caption": \n')
    with pytest.raises(InputError, match=r"bad.jsonl line 3: malformed JSON"):
        load_corpus(p)
    p.write_text('{"img": "a", "caption": "x"}\n')
    with pytest.raises(InputError, match=r"line 1: expected keys 'image'"):
        load_corpus(p)


def test_malformed_json_file_and_flickr_line(tmp_path):
    p = tmp_path / "c.json"
    p.write_text('{"annotations": [\n{"image_id": 1, }]}')
    with pytest.raises(InputError, match=r"c.json line 2: malformed JSON"):
        load_corpus(p, "coco")
    q = tmp_path / "t.txt"
    q.write_text("a.jpg#0\tA dog\nno tab here\n")
    with pytest.raises(InputError, match=r"line 2: expected 'image.jpg#i<TAB>caption'"):
        load_corpus(q, "flickr")


def test_unknown_and_undetectable_format(tmp_path):
    p = tmp_path / "x.bin"
    p.write_text("hello world\n")
    with pytest.raises(InputError, match="cannot detect the format"):
        load_corpus(p)
    with pytest.raises(InputError, match="unknown format 'tsv'"):
        load_corpus(p, "tsv")
    with pytest.raises(InputError, match="no such file"):
        load_corpus(tmp_path / "missing.json")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="neither a saved Hugging Face dataset"):
        load_corpus(tmp_path / "empty")


def test_csv_missing_column(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("file,text2\na.jpg,hello\n")
    with pytest.raises(InputError, match="no caption column"):
        load_corpus(p)


def test_corpus_container():
    c = CaptionCorpus(["a", "b"], [["x", "y"], ["z", "w"]], {"train": ["a"]})
    assert c.texts() == ["x", "y", "z", "w"] and len(c) == 2 and c.num_captions == 4
    with pytest.raises(InputError, match="not unique"):
        CaptionCorpus(["a", "a"], [["x"], ["y"]])
    with pytest.raises(InputError, match="no split 'val'"):
        c.split("val")
    with pytest.raises(InputError, match="1 ids not found"):
        c.subset(["a", "q"])


# ---- issue 11: streamed lines, files vs folders, dangling ids, nothing left -------------------
@pytest.mark.parametrize("fmt", ["jsonl", "csv", "flickr"])
def test_line_formats_bound_the_line_length(tmp_path, fmt):
    from prh.data.loaders import MAX_LINE_BYTES

    p = tmp_path / "blob.txt"
    p.write_bytes(b'{"image": "a", "caption": "' + b"x" * MAX_LINE_BYTES + b'"}\n')
    with pytest.raises(InputError, match=r"blob.txt line 1: longer than the limit of 1,048,576"):
        load_corpus(p, fmt)


def test_line_formats_are_streamed_line_by_line(tmp_path, monkeypatch):
    import prh.data.loaders as loaders

    monkeypatch.setattr(loaders, "MAX_LINE_BYTES", 100)
    p = tmp_path / "c.jsonl"
    good = '{"image": "a", "captions": ["x", "y"]}\n'
    p.write_text(good * 3 + '{"image": "b", "caption": "' + "z" * 200 + '"}\n')
    with pytest.raises(InputError, match=r"c.jsonl line 4: longer than the limit of 100 bytes"):
        load_corpus(p, "jsonl")


def test_whole_file_json_refuses_what_is_not_json(tmp_path):
    p = tmp_path / "zeros.json"
    p.write_bytes(b"\x00" * 5000)
    with pytest.raises(InputError, match="not JSON"):
        load_corpus(p, "coco")


@pytest.mark.parametrize("fmt", ["coco", "karpathy", "flickr", "csv", "jsonl"])
def test_a_folder_where_a_file_is_expected(tmp_path, fmt):
    with pytest.raises(InputError, match=r"is a folder, expected a .* file"):
        load_corpus(tmp_path, fmt)


def test_a_file_where_a_dataset_folder_is_expected(tmp_path):
    pytest.importorskip("datasets")
    p = tmp_path / "x.jsonl"
    p.write_text("{}\n")
    with pytest.raises(InputError, match="is a file, expected a Hugging Face dataset folder"):
        load_corpus(p, "hf")


def test_coco_annotation_of_an_unknown_image(tmp_path):
    p = tmp_path / "c.json"
    ann = [{"image_id": 1, "caption": "a"}, {"image_id": 1, "caption": "b"}]
    ann.append({"image_id": 99, "caption": "c"})
    p.write_text(json.dumps({"images": [{"id": 1, "file_name": "a.jpg"}], "annotations": ann}))
    with pytest.raises(InputError, match=r"c.json annotation 2: image_id 99 has no entry"):
        load_corpus(p, "coco")
    p.write_text(json.dumps({"annotations": [{"image_id": [1], "caption": "a"}]}))
    with pytest.raises(InputError, match="image_id must be a number or a string, got list"):
        load_corpus(p, "coco")


def test_dropping_every_image_is_an_error(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text('{"image": "a", "caption": "x"}\n{"image": "b", "caption": "y"}\n')
    with pytest.raises(InputError, match="all 2 images have fewer than 2 captions"):
        load_corpus(p, on_few="drop")


def test_csv_errors_name_the_line(tmp_path):
    p = tmp_path / "c.csv"
    p.write_text('image,caption\na,x\na,y\nb,"' + "z" * 200_000 + '"\n')
    with pytest.raises(InputError, match=r"c.csv line 4: malformed CSV"):
        load_corpus(p)
