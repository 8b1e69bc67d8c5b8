"""prh measure over model lists, and the calibrated matrices in view (issue 24, items 1 and 3)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import prh.cli as cli
from prh.modelsets import feature_filename


@pytest.fixture(autouse=True)
def only_measure(monkeypatch):
    monkeypatch.setattr(cli, "COMMANDS", {"measure": cli.COMMANDS["measure"]})


def run(*argv) -> int:
    return cli.main(["measure", *map(str, argv)])


LANG = ["org/lm-560m", "org/lm-1b1", "org/lm-3b"]  # sorted by name: 1b1, 3b, 560m
VIS = ["vit-small", "vit-base"]


@pytest.fixture
def sets(tmp_path):
    """Feature files named as prh embed --models names them, and the two lists."""
    import torch

    rng = np.random.default_rng(0)
    base = rng.standard_normal((30, 5)).astype(np.float32)
    lang, vis = tmp_path / "lang", tmp_path / "vis"
    lang.mkdir(), vis.mkdir()
    for i, name in enumerate(LANG):
        x = base[:, None, :] + (i + 0.3) * rng.standard_normal((30, 2, 5)).astype(np.float32)
        torch.save({"feats": torch.from_numpy(x)}, lang / feature_filename(name, "avg", "text"))
    for j, name in enumerate(VIS):
        y = base[:, None, :] + (j + 0.6) * rng.standard_normal((30, 3, 5)).astype(np.float32)
        torch.save({"feats": torch.from_numpy(y)}, vis / feature_filename(name, "cls", "image"))
    (tmp_path / "lang.txt").write_text("\n".join(LANG) + "\n")
    (tmp_path / "vis.txt").write_text("\n".join(f"hf:{v}" for v in VIS) + "\n")
    return tmp_path


def test_lists_keep_their_order_and_name_rows(sets, tmp_path, capsys):
    js, npy = tmp_path / "m.json", tmp_path / "m.npy"
    argv = ["--x", sets / "lang", "--x-models", sets / "lang.txt", "--y", sets / "vis"]
    argv += ["--y-models", sets / "vis.txt", "--k", 4, "--json", js, "--npy", npy]
    assert run(*argv, "--no-progress") == 0
    doc = json.loads(js.read_text())
    assert doc["x_names"] == LANG and doc["y_names"] == VIS
    blob = np.load(npy, allow_pickle=True).item()
    assert blob["x_names"] == LANG and blob["y_names"] == VIS
    printed = capsys.readouterr().out
    assert printed.index("org/lm-560m") < printed.index("org/lm-1b1") < printed.index("org/lm-3b")
    # Each cell is the two-file score of the files the names point at.
    for i, x in enumerate(LANG):
        for j, y in enumerate(VIS):
            one = tmp_path / "one.json"
            fx = sets / "lang" / feature_filename(x, "avg", "text")
            fy = sets / "vis" / feature_filename(y, "cls", "image")
            assert run(fx, fy, "--k", 4, "--json", one, "--no-progress") == 0
            want = json.loads(one.read_text())["results"][0]["score"]
            assert blob["scores"][i, j] == pytest.approx(want, abs=1e-12)


def test_calibrated_and_interval_tables_saved_and_printed(sets, tmp_path, capsys, monkeypatch):
    import prh.progress

    monkeypatch.setattr(prh.progress, "PLAIN_INTERVAL_S", 0.0)
    js, npy, png = tmp_path / "m.json", tmp_path / "m.npy", tmp_path / "m.png"
    argv = ["--x", sets / "lang", "--x-models", sets / "lang.txt", "--y", sets / "vis"]
    argv += ["--y-models", sets / "vis.txt", "--k", 4, "--null", 9, "--bootstrap", 7]
    assert run(*argv, "--json", js, "--npy", npy, "--heatmap", png) == 0
    out, err = capsys.readouterr()
    assert "calibrated (score - null 95% quantile)" in out and "95% interval, low" in out
    assert "[2,1] org/lm-3b ~ vit-base mutual_knn null" in err  # progress names the cell
    doc = json.loads(js.read_text())
    cal = np.load(tmp_path / "m.calibrated.npy", allow_pickle=True).item()
    ci = np.load(tmp_path / "m.ci.npy", allow_pickle=True).item()
    for r in doc["results"]:
        i, j = r["row"], r["col"]
        assert cal["scores"][i, j] == pytest.approx(r["calibrated"])
        assert cal["p_values"][i, j] == pytest.approx(r["p_value"])
        assert cal["scores"][i, j] == pytest.approx(r["score"] - r["null_critical"])
        assert [ci["low"][i, j], ci["high"][i, j]] == pytest.approx(r["ci"])
    assert doc["matrices"]["mutual_knn"]["calibrated"] == cal["scores"].tolist()
    assert cal["x_names"] == LANG
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_a_list_whose_files_disagree_in_rows_is_refused(sets, bad_input):
    import torch

    name = feature_filename(LANG[1], "avg", "text")
    torch.save({"feats": torch.ones(29, 2, 5)}, sets / "lang" / name)
    argv = ["measure", "--x", sets / "lang", "--x-models", sets / "lang.txt"]
    argv += ["--y", sets / "vis", "--y-models", sets / "vis.txt"]
    bad_input(argv, [], r"--x-models: org_lm-1b1_pool-avg\.pt has 29 rows, .* has 30")


def test_a_model_without_a_file_is_refused(sets, bad_input):
    (sets / "lang.txt").write_text("org/lm-560m\norg/lm-7b\n")
    argv = ["measure", "--x", sets / "lang", "--x-models", sets / "lang.txt"]
    argv += ["--y", sets / "vis", "--y-models", sets / "vis.txt"]
    bad_input(argv, [], r"--x .*lang: no feature file org_lm-7b_pool-\*\.pt for org/lm-7b")


def test_alignment_against_bpb_plot(sets, tmp_path, bad_input):
    import torch

    for i, name in enumerate(LANG):  # the reference's keys: loss and bpb beside feats
        path = sets / "lang" / feature_filename(name, "avg", "text")
        blob = torch.load(path, weights_only=True)
        torch.save(
            {**blob, "loss": torch.tensor(3.0 - i), "bpb": torch.tensor(1.2 - 0.1 * i)}, path
        )
    png = tmp_path / "bpb.png"
    argv = ["--x", sets / "lang", "--x-models", sets / "lang.txt", "--y", sets / "vis"]
    argv += ["--y-models", sets / "vis.txt", "--k", 4, "--no-progress"]
    assert run(*argv, "--bpb-plot", png) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"
    # a row file without bpb (a vision model as X) is refused before any score
    flipped = ["--x", sets / "vis", "--x-models", sets / "vis.txt", "--y", sets / "lang"]
    flipped += ["--y-models", sets / "lang.txt", "--bpb-plot", tmp_path / "no.png"]
    bad_input(["measure", *flipped], [], "--bpb-plot: .*vit-small_pool-none.pt stores no bpb")
    assert not (tmp_path / "no.png").exists()


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -0.5, 0.0, 1e308],
                         ids=["nan", "inf", "negative", "zero", "1e308"])  # fmt: skip
def test_a_bpb_that_is_not_a_finite_positive_number_is_refused(sets, tmp_path, bad_input, bad):
    """Issue 36: NaN or infinity drew an empty plot (exit 0), a negative one was plotted, 1e308
    failed inside matplotlib."""
    import torch

    for i, name in enumerate(LANG):
        path = sets / "lang" / feature_filename(name, "avg", "text")
        blob = torch.load(path, weights_only=True)
        torch.save({**blob, "bpb": torch.tensor(bad if i == 1 else 1.0, dtype=torch.float64)},
                   path)  # fmt: skip
    argv = ["--x", sets / "lang", "--x-models", sets / "lang.txt", "--y", sets / "vis"]
    argv += ["--y-models", sets / "vis.txt", "--k", 4, "--bpb-plot", tmp_path / "p.png"]
    bad_input(["measure", *argv], [],
              r"--bpb-plot: .*lm-1b1_pool-avg\.pt stores bpb .*; expected a finite number in "
              r"\(0, 1000\]")  # fmt: skip
    assert not (tmp_path / "p.png").exists()


def test_pool_picks_one_of_the_references_side_by_side_files(sets, tmp_path, bad_input):
    """The reference writes <model>_pool-avg.pt and <model>_pool-none.pt into one folder."""
    import torch

    lang = sets / "lang"
    for name in LANG:  # a last-token file beside each avg file, of other values
        x = torch.from_numpy(np.random.default_rng(1).standard_normal((30, 2, 5)).astype("f4"))
        torch.save({"feats": x}, lang / feature_filename(name, "last", "text"))
    argv = ["measure", "--x", lang, "--x-models", sets / "lang.txt", "--y", sets / "vis"]
    argv += ["--y-models", sets / "vis.txt", "--k", 4, "--no-progress"]
    bad_input(argv, [], r"has several feature files .* choose one with --pool avg or --pool none")
    scores = {}
    for pool in ("avg", "none"):
        out = tmp_path / f"{pool}.json"
        assert run(*argv[1:], "--x-pool", pool, "--json", out) == 0
        scores[pool] = json.loads(out.read_text())["matrices"]["mutual_knn"]["scores"]
        fx = lang / feature_filename(LANG[0], "avg" if pool == "avg" else "last", "text")
        fy = sets / "vis" / feature_filename(VIS[0], "cls", "image")
        one = tmp_path / "one.json"
        assert run(fx, fy, "--k", 4, "--json", one, "--no-progress") == 0
        assert scores[pool][0][0] == json.loads(one.read_text())["results"][0]["score"]
    assert scores["avg"] != scores["none"]
    want = r"--y .*vis: no avg-pooled file for vit-small \(it has vit-small_pool-none.pt\)"
    bad_input([*argv, "--pool", "avg", "--y-pool", "avg"], [], want)


def test_keep_going_leaves_out_a_missing_or_bad_model_and_says_so(sets, tmp_path, capsys):
    import torch

    (sets / "lang" / feature_filename(LANG[0], "avg", "text")).unlink()  # missing
    torch.save({"feats": torch.ones(29, 2, 5)}, sets / "lang" / feature_filename(LANG[2], "avg",
               "text"))  # fmt: skip
    out = tmp_path / "m.json"
    argv = ["--x", sets / "lang", "--x-models", sets / "lang.txt", "--y", sets / "vis"]
    argv += ["--y-models", sets / "vis.txt", "--k", 4, "--no-progress", "--json", out]
    assert run(*argv) == 2  # without --keep-going the first failure stops the list
    assert not out.exists()
    capsys.readouterr()
    assert run(*argv, "--keep-going") == 0
    err = capsys.readouterr().err
    assert "left out org/lm-560m (x): --x " in err and "no feature file" in err
    assert "left out org/lm-3b (x): --x-models: org_lm-3b_pool-avg.pt has 29 rows" in err
    doc = json.loads(out.read_text())
    assert doc["x_names"] == ["org/lm-1b1"]
    assert [s["model"] for s in doc["skipped"]] == ["org/lm-560m", "org/lm-3b"]


def test_names_are_spelled_as_the_reference_and_short_ones_head_columns(tmp_path, capsys):
    import torch

    rng = np.random.default_rng(0)
    names = ["timm/vit_tiny_patch16_224.augreg_in21k", "org/short"]
    folder = tmp_path / "vis"
    folder.mkdir()
    for name in names:
        x = torch.from_numpy(rng.standard_normal((20, 1, 4)).astype(np.float32))
        torch.save({"feats": x}, folder / feature_filename(name, "cls", "image"))
    (tmp_path / "list.txt").write_text("\n".join(names) + "\n")
    out = tmp_path / "m.json"
    argv = ["--x", folder, "--x-models", tmp_path / "list.txt", "--y", folder]
    assert run(*argv, "--y-models", tmp_path / "list.txt", "--k", 3, "--json", out) == 0
    doc = json.loads(out.read_text())
    assert doc["y_names"] == ["vit_tiny_patch16_224.augreg_in21k", "org/short"]
    printed = capsys.readouterr().out
    header = printed.splitlines()[1].split()
    assert header == ["0", "org/short"]  # a long name is numbered, a short one heads its column
    assert "columns: 0 = vit_tiny_patch16_224.augreg_in21k" in printed
    assert "1 = org/short" not in printed


@pytest.mark.parametrize(
    "lines, match",
    [
        (["org/lm-560m", "org/lm-560m"], "is listed twice"),
        (["org/lm-560m", "../../elsewhere"], "no such model folder"),
        (["org/lm-560m", "/no/such/abs/model"], "no such model folder"),
    ],
)
def test_a_list_with_duplicate_or_unsafe_names_is_one_line(sets, bad_input, lines, match):
    (sets / "bad.txt").write_text("\n".join(lines) + "\n")
    argv = ["measure", "--x", sets / "lang", "--x-models", sets / "bad.txt"]
    argv += ["--y", sets / "vis", "--y-models", sets / "vis.txt", "--json", sets / "m.json"]
    bad_input(argv, [], match)
    assert not (sets / "m.json").exists()
