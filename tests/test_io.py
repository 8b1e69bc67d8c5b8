"""The output guards every writer uses: refuse an output that is an input, check folders early."""

from __future__ import annotations

import os

import pytest

from prh.errors import InputError
from prh.io import check_output_dir, guard_outputs, refuse_input_overwrite


def test_refuses_the_same_file_by_any_name(tmp_path):
    a = tmp_path / "a.npy"
    a.write_bytes(b"x")
    os.symlink(a, tmp_path / "link.npy")
    os.link(a, tmp_path / "hard.npy")
    for name in ["a.npy", "link.npy", "hard.npy", "./sub/../a.npy"]:
        (tmp_path / "sub").mkdir(exist_ok=True)
        with pytest.raises(InputError, match=r"--json .*would overwrite the input .*a\.npy"):
            refuse_input_overwrite({"--json": tmp_path / name}, [a])
    assert a.read_bytes() == b"x"


def test_refuses_any_output_inside_an_input_folder(tmp_path):
    run = tmp_path / "run"
    (run / "caption").mkdir(parents=True)
    (run / "caption" / "caption.json").write_text("{}")
    with pytest.raises(InputError, match="would overwrite the input"):
        refuse_input_overwrite({"--json": run / "caption" / "caption.json"}, [run])
    with pytest.raises(InputError, match=r"eval\.json: lies inside the input folder .*run;"):
        refuse_input_overwrite({"--json": run / "caption" / "eval.json"}, [run])
    refuse_input_overwrite({"--json": tmp_path / "eval.json"}, [run])  # beside it: fine


def test_distinct_and_missing_outputs_pass(tmp_path):
    a = tmp_path / "a.npy"
    a.write_bytes(b"x")
    refuse_input_overwrite({"--json": tmp_path / "out.json", "--plot": None}, [a, None])
    guard_outputs({"--json": tmp_path / "out.json"}, [a])


def test_guard_outputs_checks_writability(tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    with pytest.raises(InputError, match="file is a file, not a folder"):
        guard_outputs({"--json": f / "x.json"}, [])
    with pytest.raises(InputError, match="does not exist"):
        guard_outputs({"--json": tmp_path / "no" / "x.json"}, [])


def test_check_output_dir(tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    assert check_output_dir(tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"
    with pytest.raises(InputError, match="is a file, expected a folder"):
        check_output_dir(f)
    with pytest.raises(InputError, match="is a file, so the folder cannot be created"):
        check_output_dir(f / "sub")


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_atomic_write_gives_the_umasks_mode(tmp_path, mask):
    """A written file has the mode open() would give it (issue 24: every output was 0600)."""
    import stat

    from prh.io import atomic_write, write_json

    old = os.umask(mask)
    try:
        write_json(tmp_path / "a.json", {"x": 1})
        with atomic_write(tmp_path / "b.bin", "wb") as f:
            f.write(b"1")
        with open(tmp_path / "plain", "w") as f:  # the reference: a plain open
            f.write("1")
    finally:
        os.umask(old)
    want = stat.S_IMODE((tmp_path / "plain").stat().st_mode)
    assert want == 0o666 & ~mask
    for name in ("a.json", "b.bin"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == want


def test_many_outputs_against_many_inputs_is_checked_in_linear_time(tmp_path):
    """Issue 36: `embed --models` with a long list checked N outputs against N x k inputs
    pairwise (quadratic: minutes); the inputs are now resolved once."""
    import time

    from prh.errors import InputError
    from prh.io import refuse_input_overwrite

    n = 4000
    inputs = [tmp_path / f"in{i}" for i in range(n)]
    outputs = {f"--out ({i})": tmp_path / "o" / f"f{i}" for i in range(n)}
    t0 = time.perf_counter()
    refuse_input_overwrite(outputs, inputs)
    assert time.perf_counter() - t0 < 10  # pairwise: 16 million path resolutions
    (tmp_path / "in7").mkdir()
    with pytest.raises(InputError, match=r"--out \(9\) .*in7/x/f: lies inside the input folder"):
        refuse_input_overwrite({**outputs, "--out (9)": tmp_path / "in7" / "x" / "f"}, inputs)
