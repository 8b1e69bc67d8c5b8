"""`prh world`: every bad input is one line, exit status 2, nothing written (issue 11)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("action", ["info", "sample", "figure"])
@pytest.mark.parametrize(
    "flags, match",
    [
        (["--num-scenes", "100000000"], "--num-scenes 100,000,000: expected 2 to 1,000,000"),
        (["--num-scenes", "1"], "--num-scenes"),
        (["--seed", "-1"], "--seed: expected a seed"),
        (["--seed", "nan"], "--seed"),
    ],
)
def test_world_arguments(bad_input, tmp_path, action, flags, match):
    out = {"info": [], "sample": ["--out", tmp_path / "s"], "figure": ["--out", tmp_path / "f.png"]}
    bad_input(["world", action, *out[action], *flags], match=match)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("action", ["sample", "figure"])
@pytest.mark.parametrize(
    "flags, match",
    [
        (["--size", "8"], "--size: expected 16 to 1,024 pixels"),
        (["--size", "5000"], "--size"),
        (["--captions", "5000"], "--captions: expected 1 to 1,000"),
        (["--scenes", "0"], "--scenes"),
        (["--scenes", "50", "--num-scenes", "100"], "--scenes 50: the test split has only 10"),
    ],
)
def test_sample_and_figure_arguments(bad_input, tmp_path, action, flags, match):
    out = tmp_path / ("s" if action == "sample" else "f.png")
    bad_input(["world", action, "--out", out, *flags], match=match)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "flags, match",
    [
        (["--scenes", "100000"], "--scenes: expected 1 to 64"),
        (["--views", "1000"], "--views"),
        (["--scenes", "64", "--views", "16", "--size", "1024"], "more than one figure holds"),
    ],
)
def test_figure_size_is_bounded(bad_input, tmp_path, flags, match):
    bad_input(["world", "figure", "--out", tmp_path / "f.png", *flags], match=match)


def test_sample_output_folder(bad_input, tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("keep me")
    bad_input(["world", "sample", "--out", f], inputs=[f], match="is a file, expected a folder")
    bad_input(["world", "sample", "--out", f / "x"], inputs=[f], match="notes.txt is a file")


@pytest.mark.parametrize(
    "name, match",
    [
        ("grid.jpgx", r"cannot tell the image format from '\.jpgx'"),
        ("grid", "cannot tell the image format from no extension"),
        ("grid.npy", r"one of \.png, \.jpg"),
    ],
)
def test_figure_name_must_name_a_format(bad_input, tmp_path, name, match):
    bad_input(["world", "figure", "--out", tmp_path / name], match=match)
    assert list(tmp_path.iterdir()) == []


def test_figure_output_path(bad_input, tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("keep me")
    bad_input(["world", "figure", "--out", tmp_path], match="is a folder, expected an image")
    bad_input(["world", "figure", "--out", f / "g.png"], inputs=[f], match="notes.txt is a file")
    bad_input(["world", "figure", "--out", f / "a" / "g.png"], inputs=[f], match="is a file")


@pytest.mark.parametrize(
    "name, magic",
    [("g.png", b"\x89PNG"), ("g.jpg", b"\xff\xd8\xff"), ("g.pdf", b"%PDF"), ("g.svg", b"<?xml")],
)
def test_figure_bytes_match_the_extension(tmp_path, name, magic):
    from prh.cli import main

    out = tmp_path / "sub" / name
    args = ["--scenes", "1", "--views", "1", "--size", "16", "--num-scenes", "100"]
    assert main(["world", "figure", "--out", str(out), *args]) == 0
    assert out.read_bytes().startswith(magic)
