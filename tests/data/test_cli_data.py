"""``prh data inspect`` and ``prh world sample``: JSON out; bad input is one line and exit 2."""

import json

import pytest

import prh.cli as cli


@pytest.fixture
def run(monkeypatch):
    # Only this part's commands: the others may not be importable while they are being built.
    monkeypatch.setattr(
        cli, "COMMANDS", {k: v for k, v in cli.COMMANDS.items() if k in ("world", "data")}
    )
    return cli.main


def test_inspect(tmp_path, run, capsys):
    p = tmp_path / "c.jsonl"
    p.write_text(
        '{"image": "a", "captions": ["x", "y", "z"]}\n{"image": "b", "captions": ["u", "v"]}\n'
    )
    assert run(["data", "inspect", str(p)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["images"] == 2 and out["captions"] == 5
    assert out["min_per_image"] == 2 and out["max_per_image"] == 3 and out["format"] == "jsonl"


def test_inspect_errors(tmp_path, run, capsys):
    p = tmp_path / "c.jsonl"
    p.write_text('{"image": "a", "captions": ["x", "y"]}\n{"image": "b", "caption": "u"}\n')
    assert run(["data", "inspect", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "1 of 2 images have fewer than 2 captions" in err
    assert run(["data", "inspect", str(p), "--drop-few"]) == 0
    assert json.loads(capsys.readouterr().out)["dropped"] == 1
    p.write_text("{oops\n")
    assert run(["data", "inspect", str(p)]) == 2
    assert "line 1: malformed JSON" in capsys.readouterr().err


def test_world_sample(tmp_path, run):
    out = tmp_path / "s"
    assert (
        run(
            [
                "world",
                "sample",
                "--scenes",
                "3",
                "--views",
                "2",
                "--captions",
                "4",
                "--seed",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    lines = [json.loads(x) for x in (out / "captions.jsonl").read_text().splitlines()]
    assert len(lines) == 3 and all(
        len(x["captions"]) == 4 and "objects" in x["state"] for x in lines
    )
    for x in lines:
        for j in range(2):
            assert (out / f"scene_{x['scene']}_view_{j}.png").is_file()
    assert run(["data", "inspect", str(out / "captions.jsonl")]) == 0  # readable as a corpus


def test_world_errors(tmp_path, run, capsys):
    assert (
        run(["world", "sample", "--scenes", "5000", "--num-scenes", "1000", "--out", str(tmp_path)])
        == 2
    )
    assert "--scenes 5000" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run(["world", "sample", "--scenes", "0", "--out", str(tmp_path)])
