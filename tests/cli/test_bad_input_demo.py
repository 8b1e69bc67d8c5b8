"""``prh demo`` bad input: one line, exit 2, inputs intact, and no step run, no folder made."""

from __future__ import annotations

import pytest


@pytest.fixture
def no_steps(monkeypatch):
    """Fail the test if the demo gets as far as running a step."""
    import prh.demo

    def refuse(*args, **kwargs):
        raise AssertionError("a demo step ran before the arguments were checked")

    monkeypatch.setattr(prh.demo, "run_demo", refuse)


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--seed", "-1"], r"argument --seed: expected a seed in \[0, "),
        (["--seed", "4294967296"], r"argument --seed: expected a seed"),
        (["--seed", "1.5"], r"argument --seed: expected an integer seed"),
        (["--samples", "0"], r"argument --samples"),
        (["--samples", "1000"], r"samples \(1000\) must be a multiple of eval_every"),
        (["--samples", "4096"], r"law sample count 8192 must be .* at most samples \(4096\)"),
        (["--image-samples", "0"], r"argument --image-samples"),
        (["--image-samples", "1000"], r"image_samples \(1000\) must be a positive multiple"),
        (["--image-embed-dim", "0"], r"argument --image-embed-dim"),
        (["--image-embed-dim", "4"], r"image_embed_dim 4 is below the encoders' width 8"),
        (["--workers", "0"], r"argument --workers"),
        (["--workers", "two"], r"argument --workers"),
        (["--full"], r"argument --full: not allowed with argument --quick"),
    ],
)
def test_bad_options_are_refused_before_any_step(bad_input, no_steps, tmp_path, extra, match):
    out = tmp_path / "demo"
    line = bad_input(["demo", "--quick", "--out", out, *extra], match=match)
    assert line.startswith("prh demo: error: ")
    assert not out.exists()  # nothing made either


def test_image_samples_sets_every_image_run_budget(monkeypatch, tmp_path):
    """``--image-samples`` reaches the config the demo runs (default: the preset's)."""
    import prh.demo
    from prh.cli import main
    from prh.demo.config import FULL

    seen = []

    def capture(cfg, out, skip_prove=False):
        seen.append(cfg)
        return {"claims": []}

    monkeypatch.setattr(prh.demo, "run_demo", capture)
    assert main(["demo", "--full", "--image-samples", "12800", "--out", str(tmp_path / "a")]) == 0
    assert main(["demo", "--full", "--out", str(tmp_path / "b")]) == 0
    assert seen[0].image.samples == 12800 and seen[1] == FULL
    assert seen[0] == FULL.with_settings(image_samples=12800)
    assert main(["demo", "--image-embed-dim", "16", "--out", str(tmp_path / "c")]) == 0
    assert seen[2].image.embed_dim == 16 and seen[1].image.embed_dim == 0


def test_wide_image_runs_on_a_still_world_are_refused(bad_input, no_steps, tmp_path):
    """A read-out needs lag pairs: refused before any folder exists (the default preset trains an
    image run; the quick one has none to widen)."""
    out = tmp_path / "demo"
    args = ["demo", "--world", "cave", "--control", "none", "--image-embed-dim", "64"]
    line = bad_input([*args, "--out", out], match=r"image_embed_dim 64 needs a moving world")
    assert line.startswith("prh demo: error: demo: ") and not out.exists()


def test_a_regular_file_as_out_is_refused_and_kept(bad_input, no_steps, tmp_path):
    f = tmp_path / "file"
    f.write_text("keep me")
    line = bad_input(["demo", "--quick", "--out", f], inputs=[f])
    assert line == f"prh demo: error: --out {f}: is a file, expected a folder"


def test_an_out_under_a_regular_file_is_refused(bad_input, no_steps, tmp_path):
    f = tmp_path / "file"
    f.write_text("keep me")
    line = bad_input(["demo", "--quick", "--out", f / "sub" / "demo"], inputs=[f])
    assert line == (
        f"prh demo: error: --out {f / 'sub' / 'demo'}: {f} is a file, so the folder cannot be "
        "created"
    )


def test_an_out_that_is_a_train_run_is_refused_at_once(bad_input, no_steps, text_run):
    """Issue 36: `prh demo --out RUN` on a `prh train` run started the demo inside it."""
    before = sorted(p.relative_to(text_run) for p in text_run.rglob("*"))
    bad_input(["demo", "--quick", "--out", text_run],
              inputs=[p for p in text_run.rglob("*") if p.is_file()],
              match=r"--out .*: not a demo folder \(a prh train run\): it holds ")  # fmt: skip
    assert sorted(p.relative_to(text_run) for p in text_run.rglob("*")) == before


def test_an_out_holding_other_files_is_refused_and_a_demo_folder_is_not(
    bad_input, tmp_path, monkeypatch
):
    import prh.demo

    other = tmp_path / "notes"
    other.mkdir()
    (other / "todo.txt").write_text("mine\n")
    bad_input(["demo", "--quick", "--out", other], inputs=[other / "todo.txt"],
              match=r"not a demo folder: it holds 'todo\.txt' and no demo\.json")  # fmt: skip
    assert sorted(p.name for p in other.iterdir()) == ["todo.txt"]
    ran = []
    monkeypatch.setattr(prh.demo, "run_demo", lambda cfg, out, **kw: ran.append(out) or
                        {"claims": []})  # fmt: skip
    for folder, marker in ((tmp_path / "again", "demo.json"), (tmp_path / "empty", None)):
        folder.mkdir()
        if marker:
            (folder / marker).write_text("{}")
        from prh.cli import main

        assert main(["demo", "--quick", "--out", str(folder)]) == 0
    assert len(ran) == 2
