"""`prh data`: every bad input is one line, exit status 2, inputs untouched (issue 11)."""

from __future__ import annotations

import json
import os

import pytest


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
@pytest.mark.parametrize("fmt", ["jsonl", "csv", "flickr"])
def test_dev_zero_is_streamed_and_refused(bad_input, fmt):
    bad_input(["data", "inspect", "/dev/zero", "--format", fmt], match="line 1: longer than")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
@pytest.mark.parametrize("fmt", ["coco", "karpathy"])
def test_dev_zero_as_json(bad_input, fmt):
    bad_input(["data", "inspect", "/dev/zero", "--format", fmt], match="not JSON")


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "coco", "karpathy", "flickr"])
def test_folder_where_a_file_is_expected(bad_input, tmp_path, fmt):
    bad_input(["data", "inspect", tmp_path, "--format", fmt], match="is a folder, expected a")


def test_file_where_a_folder_is_expected(bad_input, tmp_path):
    pytest.importorskip("datasets")
    p = tmp_path / "c.jsonl"
    p.write_text('{"image": "a", "captions": ["x", "y"]}\n')
    bad_input(["data", "inspect", p, "--format", "hf"], inputs=[p], match="is a file, expected")


def test_drop_few_that_drops_everything(bad_input, tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text('{"image": "a", "caption": "x"}\n{"image": "b", "caption": "y"}\n')
    bad_input(["data", "inspect", p, "--drop-few"], inputs=[p], match="all 2 images have fewer")


def test_coco_annotation_without_image(bad_input, tmp_path):
    p = tmp_path / "captions.json"
    images = [{"id": 1, "file_name": "a.jpg"}]
    ann = [{"image_id": 1, "caption": "a"}, {"image_id": 7, "caption": "b"}]
    p.write_text(json.dumps({"images": images, "annotations": ann}))
    bad_input(["data", "inspect", p], inputs=[p], match="annotation 1: image_id 7 has no entry")


@pytest.mark.parametrize(
    "name, content, match",
    [
        ("c.jsonl", b"\xff\xfe\n", "line 1: invalid UTF-8"),
        ("c.jsonl", b'{"image": "a"}\n', "line 1: expected keys"),
        ("c.csv", b'image,caption\na,"x\0y"\n', r"line \d: malformed CSV|captions"),
        ("c.csv", b'image,caption\na,b\nc,"' + b"x" * 200_000 + b'"\n', "line 3: malformed CSV"),
        ("c.parquet", b"not parquet", "not a parquet file"),
        ("c.json", b"[1, 2]", "COCO JSON needs|cannot detect|neither"),
        ("c.txt", b"\x7fELF\x02\x01", "cannot detect the format"),
    ],
)
def test_malformed_files(bad_input, tmp_path, name, content, match):
    p = tmp_path / name
    p.write_bytes(content)
    bad_input(["data", "inspect", p], inputs=[p], match=match)


def test_missing_path_and_bad_min_captions(bad_input, tmp_path):
    bad_input(["data", "inspect", tmp_path / "nope.jsonl"], match="no such file")
    bad_input(["data", "inspect", tmp_path, "--min-captions", "0"], match="--min-captions")
