"""``prh world spectrum`` / ``trajectory`` (issue 21): outputs, refusals in one line, exit 2."""

from __future__ import annotations

import numpy as np
import pytest

from prh.cli import main
from prh.features import load_features
from prh.world import make_world


def test_spectrum_writes_the_theory_embedding_of_the_asked_states(tmp_path, capsys):
    out = tmp_path / "g.safetensors"
    assert main(["world", "spectrum", "--scenes", "0,5,17", "--out", str(out),
                 "--plot", str(tmp_path / "s.png")]) == 0  # fmt: skip
    text = capsys.readouterr().out
    assert "gap 0.0560" in text and "min separation 0.0219" in text
    fs = load_features(out)
    assert fs.ids == ["scene_0", "scene_5", "scene_17"]
    ref = make_world("moving", seed=0).theory_embedding([0, 5, 17], 8)
    assert np.allclose(fs.features[:, 0, :], ref, atol=1e-5)
    assert (tmp_path / "s.png").stat().st_size > 0


def test_still_world_bad_ids_and_bad_lag_are_one_line_exit_2(tmp_path, capsys):
    assert main(["world", "spectrum", "--lag", "0", "--out", str(tmp_path / "a.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert "no gap after eigenvalue 8" in err and "\n" not in err
    assert not (tmp_path / "a.npz").exists()
    assert main(["world", "spectrum", "--scenes", "2160", "--out", str(tmp_path / "b.npz")]) == 2
    assert "outside the world" in capsys.readouterr().err
    assert main(["world", "spectrum", "--lag", "100001"]) == 2
    assert "lag" in capsys.readouterr().err
    assert main(["world", "spectrum", "--out", str(tmp_path / "c.txt")]) == 2


def test_trajectory_figure(tmp_path):
    out = tmp_path / "t.png"
    assert main(["world", "trajectory", "--frames", "3", "--size", "32", "--out", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow  # three exact kernels on the full moving world (about a minute)
def test_spectrum_of_one_modality_and_its_theory_file(tmp_path, capsys):
    # Literal captions identify the state: text's own theory is g* (cc 1 with g* and images);
    # a sketch has no colour, so the colour eigenfunctions are out of its reach.
    out = tmp_path / "t.safetensors"
    argv = ["world", "spectrum", "--world", "moving-literal", "--modality", "text",
            "--scenes", "0,5,17", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "predicted cc with g*: mean 1.000" in text
    assert "predicted cc with image: mean 1.000" in text
    assert "predicted cc with sketch: mean 0.250" in text
    fs = load_features(out)
    assert fs.ids == ["scene_0", "scene_5", "scene_17"] and fs.metadata["modality"] == "text"
    from prh.world.observation import theory_of_captions

    w = make_world("moving-literal", seed=0)
    caps = [w.captions(i, 1, seed=1)[0] for i in (0, 5, 17)]  # the --eval-theory captions
    assert np.allclose(fs.features[:, 0, :], theory_of_captions(w, [0, 5, 17], caps), atol=1e-5)
    with pytest.raises(SystemExit) as e:  # argparse's own refusal: one line, exit 2
        main(["world", "spectrum", "--modality", "audio"])
    assert e.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_spectrum_refuses_empty_or_duplicate_scenes(tmp_path, bad_input):
    """Issue 36: such files were written and no reader accepted them."""
    for scenes, match in ((",", r"--scenes ',': names no state"),
                          ("0,5,0", r"--scenes '0,5,0': state 0 is listed twice")):  # fmt: skip
        bad_input(["world", "spectrum", "--scenes", scenes, "--out", tmp_path / "g.npz"],
                  match=match)  # fmt: skip
    assert sorted(tmp_path.iterdir()) == []


def test_eval_theory_of_another_world_is_refused_before_the_run(tmp_path, bad_input, capsys):
    """Issue 36: a moving world's g* on a still-world (cave) run."""
    g = tmp_path / "g.safetensors"
    assert main(["world", "spectrum", "--scenes", "train", "--out", str(g)]) == 0
    capsys.readouterr()
    bad_input(["train", "--world", "cave", "--out", tmp_path / "r", "--eval-theory", g,
               "--samples", "64", "--batch-size", "64"], inputs=[g],
              match=r"--eval-theory .*g\.safetensors: a theory embedding of world 'moving', but "
              r"the run trains on world 'cave'")  # fmt: skip
    assert not (tmp_path / "r").exists()


def test_eval_theory_on_a_world_without_a_theory_is_refused(tmp_path, bad_input):
    """Issue 31: the still cave has no gap, so no g* to measure a run against."""
    from prh.features import save_features

    g = tmp_path / "g.safetensors"  # no world recorded: the run's own world decides
    save_features(g, np.random.default_rng(0).normal(size=(40, 8)),
                  [f"scene_{i}" for i in range(40)])  # fmt: skip
    bad_input(["train", "--world", "cave", "--out", tmp_path / "r", "--eval-theory", g,
               "--samples", "64", "--batch-size", "64"], inputs=[g],
              match=r"world cave has no theory embedding")  # fmt: skip
    assert not (tmp_path / "r").exists()
