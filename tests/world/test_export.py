"""`prh world export --format coco`: the world's renders, captions and splits in COCO layout,
read back through the COCO loader and the corpus world pixel for pixel."""

from __future__ import annotations

import json

import numpy as np

from prh.cli import main
from prh.data import load_corpus
from prh.world import make_world


def test_export_reads_back_through_the_coco_loader(tmp_path, capsys):
    out = tmp_path / "coco"
    code = main(["world", "export", "--format", "coco", "--out", str(out), "--seed", "3",
                 "--num-scenes", "200", "--train-scenes", "6", "--test-scenes", "3",
                 "--captions", "4", "--size", "48"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    cave = make_world("cave", seed=3, num_scenes=200)
    data = json.loads((out / "annotations" / "captions_test.json").read_text())
    assert [im["id"] for im in data["images"]] == [int(i) for i in cave.split("test")[:3]]

    corpus = load_corpus(out)
    assert corpus.split("train").image_ids == [f"scene_{i}.png" for i in cave.split("train")[:6]]
    world = make_world("corpus", spec=str(out))
    for split, n in (("train", 6), ("test", 3)):
        for j, i in zip(world.split(split), cave.split(split)[:n]):
            assert world.image_id(int(j)) == f"scene_{i}.png"
            assert world.captions(int(j), 9) == cave.captions(int(i), 4, seed=3)
            assert np.array_equal(world.render(int(j)), cave.render(int(i), 0, 48))


def test_bad_export_is_one_line_and_writes_nothing(tmp_path, bad_input):
    out = tmp_path / "coco"
    bad_input(["world", "export", "--out", out, "--num-scenes", "50", "--train-scenes", "60"],
              match=r"--train-scenes 60: the train split has only 45 scenes")  # fmt: skip
    assert not out.exists() and list(tmp_path.iterdir()) == []
    out.mkdir()
    (out / "x").write_text("keep")
    bad_input(["world", "export", "--out", out, "--num-scenes", "50", "--train-scenes", "2",
               "--test-scenes", "1"], inputs=[out / "x"], match="not an empty folder")  # fmt: skip
    bad_input(["world", "export", "--format", "csv", "--out", tmp_path / "c"],
              match="invalid choice")  # fmt: skip
