"""The one progress reporter: plain lines off a terminal, tqdm on one, silence when disabled."""

from __future__ import annotations

import io

import pytest

from prh.progress import Progress, progress


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_mode_one_line_per_update_and_no_carriage_return():
    out = io.StringIO()
    bar = Progress(5, "embed text", unit="item", interval=0, stream=out)
    for _ in range(5):
        bar.update(1)
    bar.close()
    text = out.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert len(lines) == 5  # one per update; close adds nothing once the last one is written
    assert [ln.split(":")[1].split()[0] for ln in lines] == ["1/5", "2/5", "3/5", "4/5", "5/5"]
    assert lines[-1].startswith("embed text: 5/5 item (100%)")


def test_plain_mode_is_rate_limited_and_a_long_step_ends_with_the_final_count(monkeypatch):
    now = [0.0]
    monkeypatch.setattr("prh.progress.time.perf_counter", lambda: now[0])
    out = io.StringIO()
    with Progress(1000, "null", interval=10, stream=out) as bar:
        for i in range(1000):
            now[0] = 0.025 * (i + 1)  # 25 s in all: lines at 10 s and 20 s, then the last one
            bar.update(1)
    lines = out.getvalue().splitlines()
    assert [ln.split()[1] for ln in lines] == ["400/1000", "800/1000", "1000/1000"]


def test_plain_mode_a_step_shorter_than_the_interval_writes_nothing():
    out = io.StringIO()
    with Progress(1000, "null", interval=3600, stream=out) as bar:
        for _ in range(1000):
            bar.update(1)
    assert out.getvalue() == ""


def test_plain_mode_close_writes_the_last_position_of_an_unfinished_count(monkeypatch):
    now = [0.0]
    monkeypatch.setattr("prh.progress.time.perf_counter", lambda: now[0])
    out = io.StringIO()
    with Progress(None, "sweep", interval=10, stream=out) as bar:
        now[0] = 11.0
        bar.update(3, loss="0.5")  # the interval has passed: a line
        now[0] = 12.0
        bar.update(2)  # within the interval: no line until close
    lines = out.getvalue().splitlines()
    assert [ln.split()[1] for ln in lines] == ["3", "5"]
    assert lines[-1].startswith("sweep: 5 it") and lines[-1].endswith("| loss 0.5")


@pytest.mark.parametrize("stream", [io.StringIO(), FakeTTY()])
def test_disabled_prints_nothing(stream):
    bar = Progress(3, "train", enabled=False, interval=0, stream=stream)
    bar.update(1, loss="1.0")
    bar(2, 3)
    bar.write("a message")
    bar.close()
    assert list(progress(range(4), "x", enabled=False, interval=0, stream=stream)) == [0, 1, 2, 3]
    assert stream.getvalue() == ""


def test_tty_mode_draws_a_tqdm_bar():
    from tqdm import tqdm

    out = FakeTTY()
    bar = Progress(4, "train", unit="step", stream=out)
    assert isinstance(bar._bar, tqdm)
    bar.update(4, loss="0.25")
    bar.close()
    text = out.getvalue()
    assert "\r" in text and "train" in text and "4/4" in text and "loss 0.25" in text


def test_iterable_form_yields_every_item_and_counts_them():
    out = io.StringIO()
    items = list(progress(iter("abc"), "letters", total=3, interval=0, stream=out))
    assert items == ["a", "b", "c"]
    assert out.getvalue().splitlines()[-1].startswith("letters: 3/3")


def test_callback_form_takes_done_and_total():
    out = io.StringIO()
    bar = Progress(None, "embed", interval=0, stream=out)
    bar(2, 4)
    bar(4, 4)
    bar.close()
    assert [ln.split(":")[1].split()[0] for ln in out.getvalue().splitlines()] == ["2/4", "4/4"]


def test_rate_counts_only_work_done_after_a_resume(monkeypatch):
    clock = iter([100.0, 102.0])
    monkeypatch.setattr("prh.progress.time.perf_counter", lambda: next(clock))
    bar = Progress(100, "train", initial=90, enabled=False)  # t0 = 100 s
    bar.update(10)
    assert bar.rate == pytest.approx(5.0)  # 10 steps in 2 s, not 100


def test_log_callback_receives_the_plain_lines():
    got: list[str] = []
    with Progress(2, "  renders", unit="image", interval=0, log=got.append, tty=True) as bar:
        bar(1, 2)
        bar(2, 2)
    assert len(got) == 2 and got[-1].startswith("  renders: 2/2 image (100%)")


def test_null_and_bootstrap_report_each_draw_without_changing_the_draws():
    import numpy as np

    from prh.metrics import calibrate

    stat = lambda idx: float(np.sum(idx[:3]))  # noqa: E731
    seen: list[tuple[int, int]] = []
    a = calibrate.permutation_null(stat, 10, 5, np.random.default_rng(0))
    b = calibrate.permutation_null(
        stat, 10, 5, np.random.default_rng(0), progress=lambda *d: seen.append(d)
    )
    assert np.array_equal(a, b) and seen == [(i, 5) for i in range(1, 6)]
    seen.clear()
    c = calibrate.bootstrap(stat, 10, 4, np.random.default_rng(1))
    d = calibrate.bootstrap(
        stat, 10, 4, np.random.default_rng(1), progress=lambda *d: seen.append(d)
    )
    assert np.array_equal(c, d) and seen == [(i, 4) for i in range(1, 5)]


def test_measure_cli_progress_lines_and_no_progress(tmp_path, capsys, monkeypatch):
    import numpy as np

    import prh.progress as progress_mod
    from prh.cli import main

    monkeypatch.setattr(progress_mod, "PLAIN_INTERVAL_S", 0.0)
    rng = np.random.default_rng(0)
    np.save(tmp_path / "a.npy", rng.standard_normal((30, 6)).astype(np.float32))
    np.save(tmp_path / "b.npy", rng.standard_normal((30, 6)).astype(np.float32))
    argv = ["measure", str(tmp_path / "a.npy"), str(tmp_path / "b.npy"), "--k", "3", "--null", "4",
            "--bootstrap", "3"]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "\r" not in err
    assert [ln.split()[2] for ln in err.splitlines()] == [
        "1/4",
        "2/4",
        "3/4",
        "4/4",
        "1/3",
        "2/3",
        "3/3",
    ]
    assert err.splitlines()[0].startswith("mutual_knn null: 1/4 draw")
    assert main([*argv, "--no-progress"]) == 0
    assert capsys.readouterr().err == ""


def test_match_at_sample_level_reports_its_stages(tmp_path, capsys, monkeypatch):
    import json

    import prh.progress as progress_mod
    from prh.bridge.synthetic import planted_clouds
    from prh.cli import main
    from prh.features import save_features

    monkeypatch.setattr(progress_mod, "PLAIN_INTERVAL_S", 0.0)
    x, y, _ = planted_clouds(400, noise=0.02, seed=1)
    save_features(tmp_path / "x.safetensors", x)
    save_features(tmp_path / "y.safetensors", y)
    argv = ["match", "--x", str(tmp_path / "x.safetensors"), "--y", str(tmp_path / "y.safetensors"),
            "--class-max", "10", "--json", str(tmp_path / "m.json")]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    counts = [ln.split()[1] for ln in err.splitlines() if ln.startswith("match: ")]
    done = [int(c.split("/")[0]) for c in counts]
    total = int(counts[-1].split("/")[1])
    assert "\r" not in err and done == sorted(done) and done[-1] == total and len(done) >= 3
    m = json.loads((tmp_path / "m.json").read_text())
    assert m["level"] == "rows-sample" and m["format"] == "prh-match/1"
    assert main([*argv, "--no-progress"]) == 0
    assert "match: " not in capsys.readouterr().err


def test_embed_progress_in_a_log_is_plain_lines_and_quiet_silences_it(
    tmp_path, capsys, monkeypatch, text_run
):
    import prh.progress as progress_mod
    from prh.cli import main

    monkeypatch.setattr(progress_mod, "PLAIN_INTERVAL_S", 0.0)
    out = str(tmp_path / "t.safetensors")
    argv = ["embed", str(text_run), "--world", "cave", "--n", "6", "--batch-size", "2",
            "--modality", "text", "--threads", "1", "--out", out]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("embed text: ")]
    assert "\r" not in err and lines and lines[-1].startswith("embed text: 6/6 item (100%)")
    argv[-1] = str(tmp_path / "q.safetensors")
    assert main([*argv, "--no-progress"]) == 0
    assert "embed text" not in capsys.readouterr().err


def test_quiet_third_party_turns_off_transformers_bars_and_leaves_the_environment():
    import os

    from transformers.utils import logging as hf_logging

    from prh.progress import quiet_third_party

    env = dict(os.environ)
    hf_logging.enable_progress_bar()
    try:
        quiet_third_party()
        assert not hf_logging.is_progress_bar_enabled()
        assert hf_logging.get_verbosity() == hf_logging.ERROR
        assert dict(os.environ) == env
    finally:
        hf_logging.enable_progress_bar()
        hf_logging.set_verbosity_warning()
