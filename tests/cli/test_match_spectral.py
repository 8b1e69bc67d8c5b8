"""`prh match --method spectral`: the rotation from each side's own positive pairs, end to end.

Tiny synthetic feature files from the planted product-chain world (prh.bridge.planted_spectral):
the map the command writes is checked against the planted one, the report against the library,
and an unidentifiable world (two identical factors: equal eigenvalues) must exit 1 without a
map. Bad input: one line, exit 2, before any work.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from prh.bridge.planted_spectral import planted_features, probe_world, twin_world
from prh.bridge.synthetic import random_rotation
from prh.cli import main
from prh.features import load_features, save_features


def _write(d, world, n, seed, unpaired=150):
    """Each side's own pairs (two files), an unpaired set with state ids (Y shuffled)."""
    rng = np.random.default_rng(seed)
    k = world.k
    rot = {"x": random_rotation(k, rng), "y": random_rotation(k, rng)}
    states = rng.choice(world.num_states, unpaired, replace=False)
    for side, r in rot.items():
        s, t = world.pairs(n, rng)
        save_features(d / f"{side}_a.safetensors", planted_features(world, s, r, 0.1, rng))
        save_features(d / f"{side}_b.safetensors", planted_features(world, t, r, 0.1, rng))
        order = states if side == "x" else rng.permutation(states)
        save_features(
            d / f"{side}.safetensors",
            planted_features(world, order, r, 0.1, rng),
            ids=[f"s{i}" for i in order],
        )
    return rot["y"].T @ rot["x"]  # the planted map on whitened coordinates


def _argv(d, *extra):
    return ["match", "--method", "spectral", "--x", str(d / "x.safetensors"),
            "--y", str(d / "y.safetensors"),
            "--pairs-x", str(d / "x_a.safetensors"), str(d / "x_b.safetensors"),
            "--pairs-y", str(d / "y_a.safetensors"), str(d / "y_b.safetensors"),
            "--json", str(d / "report.json"), *map(str, extra)]  # fmt: skip


@pytest.fixture(scope="module")
def pinned(tmp_path_factory):
    d = tmp_path_factory.mktemp("spectral")
    return d, _write(d, probe_world(), 32000, seed=4)


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    d = tmp_path_factory.mktemp("twins")
    _write(d, twin_world(), 8000, seed=1, unpaired=100)
    return d


def test_writes_the_map_and_the_report(pinned, capsys, tmp_path):
    from prh.bridge.procrustes import load_map
    from prh.bridge.spectral import spectral_align

    d, true = pinned
    out = tmp_path / "map.safetensors"
    assert main(_argv(d, "--out", out)) == 0
    printed = capsys.readouterr().out
    assert "spectral map, k = 8, pinned" in printed and "matched 150 rows (hungarian)" in printed
    rep = json.loads((d / "report.json").read_text())
    assert rep["format"] == "prh-match/1" and rep["method"] == "spectral"
    assert rep["pinned"] is True and rep["reason"] == "" and rep["map"] == str(out)
    assert len(rep["eigenvalues_x"]) == 8 and len(rep["relative_separation_y"]) == 8
    assert sorted(rep["permutation"]) == list(range(150))
    # the same answer as the library on the same arrays (the reference for the CLI plumbing)
    rows = {n: load_features(d / f"{n}.safetensors").features[:, -1] for n in
            ("x_a", "x_b", "y_a", "y_b", "x", "y")}  # fmt: skip
    lib = spectral_align((rows["x_a"], rows["x_b"]), (rows["y_a"], rows["y_b"]), rows["x"],
                         rows["y"])  # fmt: skip
    assert rep["permutation"] == lib.assignment.tolist()
    assert rep["eigenvalues_x"] == pytest.approx(lib.eigenvalues_x.tolist())
    # ids are shared, so the accuracy is known, and it is far above chance (1/150)
    ids_y = load_features(d / "y.safetensors").ids
    where = {key: j for j, key in enumerate(ids_y)}
    truth = np.array([where[key] for key in load_features(d / "x.safetensors").ids])
    assert rep["accuracy"] == pytest.approx(float((lib.assignment == truth).mean()))
    assert rep["accuracy"] > 0.3
    # the map against the planted one
    m, config = load_map(out)
    assert config["extra"]["method"] == "spectral" and config["extra"]["pinned"] is True
    assert np.linalg.norm(m.weight_ - true) / np.linalg.norm(true) < 0.2
    assert np.allclose(m.transform(rows["x"]), lib.to_y(rows["x"]), atol=1e-4)


def test_the_map_applies_with_prh_bridge_apply(pinned, tmp_path):
    d, _ = pinned
    out = tmp_path / "map.safetensors"
    assert main(_argv(d, "--out", out, "--json", tmp_path / "r.json")) == 0
    mapped = tmp_path / "mapped.safetensors"
    argv = ["bridge", "apply", str(out), "--x", str(d / "x.safetensors"), "--out", str(mapped)]
    assert main(argv) == 0
    assert load_features(mapped).features.shape[-1] == 8


def test_equal_eigenvalues_exit_1_without_a_map(twins, capsys, tmp_path):
    out = tmp_path / "map.safetensors"
    argv = _argv(twins, "--out", out, "--k", 3)
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("prh match: cannot pin the rotation: x components 1, 2")
    assert "(no map written; --allow-unpinned writes it)" in err[0]
    assert not out.exists() and not out.with_suffix(".json").exists()
    rep = json.loads((twins / "report.json").read_text())
    assert (
        rep["pinned"] is False
        and rep["map"] is None
        and rep["component_pinned"][:2]
        == [
            False,
            False,
        ]
    )
    assert main([*argv, "--allow-unpinned"]) == 0
    from prh.bridge.procrustes import load_map

    _, config = load_map(out)
    assert config["extra"]["pinned"] is False and "cannot pin" in config["extra"]["reason"]


def test_nearest_assignment_and_no_assignment(pinned, tmp_path):
    d, _ = pinned
    assert main(_argv(d, "--assign", "nearest", "--json", tmp_path / "n.json")) == 0
    rep = json.loads((tmp_path / "n.json").read_text())
    assert rep["assignment_method"] == "nearest" and rep["accuracy"] > 0.2
    assert main(_argv(d, "--assign", "none", "--json", tmp_path / "none.json")) == 0
    rep = json.loads((tmp_path / "none.json").read_text())
    assert rep["permutation"] is None and rep["accuracy"] is None


def test_the_shape_method_is_unchanged_and_refuses_spectral_flags(pinned, bad_input, tmp_path):
    d, _ = pinned
    out = tmp_path / "shape.json"
    argv = ["match", "--x", str(d / "x.safetensors"), "--y", str(d / "y.safetensors")]
    assert main([*argv, "--json", str(out)]) == 0
    rep = json.loads(out.read_text())
    assert rep["level"] == "rows-qap" and "method" not in rep
    bad_input([*argv, "--json", str(out), "--pairs-x", d / "x_a.safetensors",
               d / "x_b.safetensors"], match=r"--pairs-x needs --method spectral")  # fmt: skip
    bad_input([*argv, "--json", str(out), "--k", "3"], match=r"--k needs --method spectral")


@pytest.fixture(scope="module")
def bad(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    rng = np.random.default_rng(0)
    ok = rng.standard_normal((60, 4))
    for name in ("x", "y", "x_a", "x_b", "y_a", "y_b"):
        save_features(d / f"{name}.safetensors", ok + 0.1 * rng.standard_normal((60, 4)))
    save_features(d / "short.safetensors", ok[:50])
    save_features(d / "wide.safetensors", rng.standard_normal((60, 5)))
    save_features(d / "tiny.safetensors", ok[:3])
    nan = ok.copy()
    nan[9, 2] = np.nan
    save_features(d / "nan.safetensors", nan)
    (d / "labels.txt").write_text("a\n" * 60)
    return d


def _case(d, **swap):
    files = {"x": "x", "y": "y", "x_a": "x_a", "x_b": "x_b", "y_a": "y_a", "y_b": "y_b", **swap}
    p = {k: str(d / f"{v}.safetensors") for k, v in files.items()}
    return ["match", "--method", "spectral", "--x", p["x"], "--y", p["y"],
            "--pairs-x", p["x_a"], p["x_b"], "--pairs-y", p["y_a"], p["y_b"],
            "--json", str(d / "out.json")]  # fmt: skip


BAD = {
    "halves differ in shape": (
        {"x_b": "short"},
        r"--pairs-x .*x_a\.safetensors .*short\.safetensors: the two halves differ in shape, "
        r"\(60, 4\) and \(50, 4\)",
    ),
    "halves differ in width": ({"y_a": "wide"}, r"--pairs-y .*: the two halves differ in shape"),
    "unpaired set of another width": (
        {"y": "wide"},
        r"wide\.safetensors: 5 columns, but --pairs-y .*y_a\.safetensors .*y_b\.safetensors have 4",
    ),
    "fewer pairs than components": (
        {"x_a": "tiny", "x_b": "tiny"},
        r"--pairs-x .*: 3 pairs, fewer rows than components",
    ),
    "fewer unpaired rows than components": (
        {"x": "tiny"},
        r"tiny\.safetensors: 3 rows, fewer rows than components: needs more than k = 4",
    ),
    "NaN row in a pair file": (
        {"y_b": "nan"},
        r"nan\.safetensors: 1 NaN or infinite values in layer -1 \(first at row 9, column 2",
    ),
    "NaN row unpaired": ({"x": "nan"}, r"nan\.safetensors: 1 NaN or infinite"),
}


@pytest.mark.parametrize("swap, match", BAD.values(), ids=BAD.keys())
def test_bad_files_are_refused(bad, bad_input, swap, match):
    bad_input(_case(bad, **swap), inputs=list(bad.glob("*.safetensors")), match=match)
    assert not (bad / "out.json").exists()


FLAGS = {
    "no --pairs-y": (
        lambda a: a[: a.index("--pairs-y")] + a[a.index("--pairs-y") + 3 :],
        r"--method spectral needs --pairs-y A B",
    ),
    "class lists": (
        lambda a: [*a, "--classes-x", "{d}/labels.txt", "--classes-y", "{d}/labels.txt"],
        r"--classes-x works with --method shape only",
    ),
    "map suffix": (lambda a: [*a, "--out", "{d}/m.npy"], r"--out .*m\.npy: a map file must end"),
    "json is the sidecar": (
        lambda a: [*a, "--out", "{d}/out.safetensors"],
        r"--json .*out\.json: is --out's \.json sidecar",
    ),
    "map over an input": (
        lambda a: [*a, "--out", "{d}/x_a.safetensors"],
        r"--out .*x_a\.safetensors: would overwrite the input",
    ),
    "k zero": (lambda a: [*a, "--k", "0"], r"--k: expected a positive integer, got 0"),
    "k too large": (lambda a: [*a, "--k", "5"], r"k: expected 1 to min\(d_x, d_y\) = 4"),
    "one pair file": (
        lambda a: a[: a.index("--pairs-x") + 2] + a[a.index("--pairs-x") + 3 :],
        r"--pairs-x: expected 2 arguments",
    ),
    "hungarian with unequal rows": (
        lambda a: [*a, "--assign", "hungarian", "--y", "{d}/short.safetensors"],
        r"one-to-one \(hungarian\) assignment needs equal row counts, got 60 and 50",
    ),
}


@pytest.mark.parametrize("edit, match", FLAGS.values(), ids=FLAGS.keys())
def test_bad_flags_are_refused(bad, bad_input, edit, match):
    argv = [a.format(d=bad) for a in edit(_case(bad))]
    bad_input(argv, inputs=list(bad.glob("*.safetensors")), match=match)
    assert not (bad / "out.json").exists()
