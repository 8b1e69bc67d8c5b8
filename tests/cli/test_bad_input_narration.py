"""`prh train` narration flags: every bad one is one line, exit 2, before any work (issue 23)."""

from __future__ import annotations

import json

import pytest

from prh.training.config import TrainConfig, train_config

MOVING_NT = ["--world", "moving", "--views", "next-token"]
OK = ["--narration-len", "8", "--max-len", "264"]


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if training starts or a moving world's kernel is computed."""
    import prh.training.api
    from prh.world.moving import MovingWorld

    def refuse(*args, **kwargs):
        raise AssertionError("work started before the bad input was refused")

    monkeypatch.setattr(prh.training.api, "train", refuse)
    monkeypatch.setattr(MovingWorld, "pair_kernel", refuse)


@pytest.mark.parametrize(
    "flags, match",
    [
        ([*MOVING_NT, "--narration-len", "1", "--max-len", "264"], "narration_len must be 2 to 64"),
        ([*MOVING_NT, "--narration-len", "65", "--max-len", "4096"], "must be 2 to 64 frames"),
        ([*MOVING_NT, "--narration-len", "-3"], "narration_len must be 2 to 64"),
        ([*MOVING_NT, *OK, "--narration-stride", "0"], "narration_stride must be 1 to 10,000"),
        ([*MOVING_NT, *OK, "--narration-stride", "10001"], "narration_stride must be 1 to"),
        ([*MOVING_NT, "--narration-stride", "0"], "narration_stride must be 1 to 10,000"),
        ([*MOVING_NT, "--narration-len", "x"], "--narration-len: expected int"),
        # a document longer than the model's context
        ([*MOVING_NT, "--narration-len", "8"], "up to 264 tokens, longer than max_len 48"),
        ([*MOVING_NT, "--narration-len", "8", "--max-len", "263"], "give max_len >= 264"),
        # a still world
        (["--world", "cave", "--views", "next-token", *OK], "narrations need --world moving"),
        (["--views", "next-token", *OK], "--world cave does not move"),
        (["--world", "cave", "--narration-stride", "30"], "applies to narrations: give"),
        (["--world", "cave", "--narration-stride", "25"], "--narration-stride applies to narr"),
        ([*MOVING_NT, "--narration-stride", "25"], "give --narration-len too"),
        # other views, other documents, image runs
        (["--world", "moving", "--views", "good", *OK], "--views good takes none"),
        ([*MOVING_NT, *OK, "--doc-captions", "4"], "narration_len or doc_captions"),
        (["--modality", "image", "--narration-len", "8"], "--narration-len applies to text runs"),
        (["--modality", "image", "--narration-stride", "25"], "--narration-stride applies to"),
        # layered configs reach the same checks
        ([*MOVING_NT, "--set", "narration_len=8"], "longer than max_len 48"),
    ],
)
def test_bad_narration_flags(bad_input, no_work, tmp_path, flags, match):
    bad_input(["train", "--out", tmp_path / "r", *flags], match=match)
    assert not (tmp_path / "r").exists()


def test_a_corpus_run_has_no_narration(bad_input, no_work, tmp_path):
    corpus = tmp_path / "c.jsonl"
    rows = [json.dumps({"image": f"i{k}", "captions": ["a cube", "one cube"]}) for k in range(8)]
    corpus.write_text("\n".join(rows) + "\n")
    flags = ["--corpus", corpus, "--views", "next-token", *OK]
    bad_input(["train", "--out", tmp_path / "r", *flags], inputs=[corpus], match="a corpus has")
    assert not (tmp_path / "r").exists()


def test_resume_refuses_another_narration(bad_input, tmp_path):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    cfg = train_config("tiny", world="moving", views="next-token", narration_len=8, max_len=264)
    (run / "config.json").write_text(json.dumps({"train": cfg.to_dict(), "model": {}}))
    (run / "meta.json").write_text(json.dumps({"threads": 1}))
    (run / "checkpoints" / "step_00000002.json").write_text("{}")
    config = run / "config.json"
    bad_input(["train", "--resume", run, "--narration-len", "6"], inputs=[config],
              match="--narration-len 6: the run in .* was started with 8")  # fmt: skip
    bad_input(["train", "--resume", run, "--narration-stride", "5"], inputs=[config],
              match="--narration-stride 5: the run in .* was started with 25")  # fmt: skip


def test_narration_fields_are_stored_only_when_set():
    """A config without narrations serialises (and hashes) exactly as before the fields."""
    assert not {"narration_len", "narration_stride"} & set(TrainConfig().to_dict())
    cfg = train_config("tiny", world="moving", views="next-token", narration_len=8, max_len=264)
    d = cfg.to_dict()
    assert d["narration_len"] == 8 and "narration_stride" not in d
    assert TrainConfig.from_dict(d) == cfg
    other = train_config("tiny", world="moving", views="next-token", narration_len=4,
                         narration_stride=10, max_len=264)  # fmt: skip
    assert TrainConfig.from_dict(other.to_dict()).narration_stride == 10
