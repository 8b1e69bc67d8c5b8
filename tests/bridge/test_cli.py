"""`prh bridge` and `prh match` end to end through `prh.cli.main`, error paths included."""

import json

import numpy as np
import pytest

import prh.cli as cli
from prh.bridge.synthetic import planted_clouds, random_rotation
from prh.features import load_features, save_features


@pytest.fixture
def main(monkeypatch):
    # only this part's commands: the test must not depend on other subcommands importing
    monkeypatch.setattr(cli, "COMMANDS", {k: cli.COMMANDS[k] for k in ("bridge", "match")})
    return cli.main


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((120, 2, 8))
    y = x[:, -1, :] @ random_rotation(8, rng).T
    ids = [f"s{i}" for i in range(120)]
    order = rng.permutation(120)  # y stored in another order: pairing must go by id
    save_features(tmp_path / "x.safetensors", x, ids=ids)
    save_features(tmp_path / "y.safetensors", y[order], ids=[ids[i] for i in order])
    save_features(tmp_path / "short.safetensors", y[:100])
    (tmp_path / "lx.txt").write_text("\n".join(f"c{i % 6}" for i in range(120)))
    (tmp_path / "l5.txt").write_text("\n".join(f"c{i % 5}" for i in range(120)))
    return tmp_path


def test_fit_apply_roundtrip(main, files, capsys):
    t = files
    rc = main(
        [
            "bridge",
            "fit",
            "--x",
            str(t / "x.safetensors"),
            "--y",
            str(t / "y.safetensors"),
            "--out",
            str(t / "m.safetensors"),
            "--kind",
            "orthogonal",
        ]
    )
    assert rc == 0
    assert "R@1 1.000" in capsys.readouterr().out
    rc = main(
        [
            "bridge",
            "apply",
            str(t / "m.safetensors"),
            "--x",
            str(t / "x.safetensors"),
            "--out",
            str(t / "yy.safetensors"),
        ]
    )
    assert rc == 0
    got = load_features(t / "yy.safetensors")
    want = load_features(t / "y.safetensors")
    where = {k: j for j, k in enumerate(want.ids)}
    rows = [where[k] for k in got.ids]
    np.testing.assert_allclose(got.features[:, 0], want.features[rows, 0], atol=1e-4)


def test_bridge_errors(main, files, capsys):
    t = files
    base = ["bridge", "fit", "--x", str(t / "x.safetensors"), "--out", str(t / "m.safetensors")]
    assert main([*base, "--y", str(t / "short.safetensors")]) == 2
    assert "paired rows required" in capsys.readouterr().err
    assert main([*base, "--y", str(t / "y.safetensors"), "--rank", "9"]) == 2
    assert "map rank 9 exceeds the dimensions: d_x = 8, d_y = 8" in capsys.readouterr().err
    assert main([*base, "--y", str(t / "y.safetensors"), "--layer-x", "5"]) == 2
    assert "has 2 layers" in capsys.readouterr().err


def test_match_rows_and_classes(main, files, tmp_path, capsys):
    x, y, truth = planted_clouds(50, noise=0.02, seed=1)
    inv = np.argsort(truth)
    save_features(tmp_path / "a.safetensors", x, ids=[f"r{i}" for i in range(50)])
    save_features(tmp_path / "b.safetensors", y, ids=[f"r{inv[j]}" for j in range(50)])
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "match",
                "--x",
                str(tmp_path / "a.safetensors"),
                "--y",
                str(tmp_path / "b.safetensors"),
                "--json",
                str(out),
            ]
        )
        == 0
    )
    res = json.loads(out.read_text())
    assert set(res) >= {"permutation", "accuracy", "objective", "seconds"}
    assert res["accuracy"] == 1.0 and res["permutation"] == truth.tolist()
    t = files
    cls = [
        "match",
        "--x",
        str(t / "x.safetensors"),
        "--y",
        str(t / "y.safetensors"),
        "--classes-x",
        str(t / "lx.txt"),
        "--json",
        str(out),
    ]
    # y is stored shuffled: its class list must follow its own rows
    yids = load_features(t / "y.safetensors").ids
    (t / "ly.txt").write_text("\n".join(f"c{int(k[1:]) % 6}" for k in yids))
    assert main([*cls, "--classes-y", str(t / "ly.txt")]) == 0
    assert json.loads(out.read_text())["accuracy"] == 1.0
    assert main([*cls, "--classes-y", str(t / "l5.txt")]) == 2
    assert "class lists do not match" in capsys.readouterr().err
    (t / "l3.txt").write_text("a\nb\nc\n")
    assert main([*cls, "--classes-y", str(t / "l3.txt")]) == 2
    assert "3 labels for 120 rows" in capsys.readouterr().err
    assert (
        main(
            [
                "match",
                "--x",
                str(t / "x.safetensors"),
                "--y",
                str(t / "short.safetensors"),
                "--json",
                str(out),
            ]
        )
        == 2
    )
    assert "equal row counts" in capsys.readouterr().err
