"""Locks that cannot write through a link (issue 36): a lock path that is a hard link, a symbolic
link, a folder or another file is refused in one line and the file it names is left byte-equal;
a full disk while taking a lock names the lock file and leaves none behind.
"""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

from prh.locks import hold_output, lock_path, release_all


@pytest.fixture
def pair(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((30, 6)).astype(np.float32)
    np.save(tmp_path / "a.npy", x)
    np.save(tmp_path / "b.npy", x[:, ::-1].copy())
    return tmp_path / "a.npy", tmp_path / "b.npy"


def _measure(a, b, out):
    return ["measure", str(a), str(b), "--metric", "cka", "--json", str(out)]


@pytest.mark.parametrize("kind", ["hard link", "symlink"])
def test_a_lock_linked_to_an_input_is_refused_and_the_input_kept(pair, bad_input, kind):
    a, b = pair
    out = a.parent / "out.json"
    link = lock_path(out)
    (os.link if kind == "hard link" else os.symlink)(a, link)
    bad_input(
        _measure(a, b, out),
        inputs=[a, b],
        match=r"--json .*out\.json: the lock path .*\.out\.json\.prh-lock exists and is not a "
        r"prh lock \(a link",
    )
    assert not out.exists() and link.exists()  # nothing written, the user's link left to them


def test_the_issues_case_a_lock_hard_linked_to_its_own_output_input(tmp_path):
    """`k/.a.npy.prh-lock` a hard link to `k/a.npy`: taking a.npy's lock never writes a PID
    into a.npy (the issue saw `3023\\n` replace the array)."""
    from prh.errors import InputError

    a = tmp_path / "a.npy"
    np.save(a, np.arange(5.0))
    before = a.read_bytes()
    os.link(a, lock_path(a))
    with pytest.raises(InputError, match="is not a prh lock"):
        hold_output(a)
    assert a.read_bytes() == before and lock_path(a).exists()


@pytest.mark.parametrize("kind", ["folder", "text file", "dangling symlink", "fifo"])
def test_a_lock_path_that_is_not_a_prh_lock_is_refused(pair, bad_input, kind):
    a, b = pair
    out = a.parent / "out.json"
    lp = lock_path(out)
    if kind == "folder":
        lp.mkdir()
    elif kind == "text file":
        lp.write_text("my notes\n")
    elif kind == "dangling symlink":
        os.symlink(a.parent / "nowhere", lp)
    else:
        os.mkfifo(lp)
    bad_input(_measure(a, b, out), inputs=[a, b], match="is not a prh lock")
    assert not out.exists() and not (a.parent / "nowhere").exists()
    if kind == "text file":
        assert lp.read_text() == "my notes\n"


def test_a_stale_prh_lock_is_still_taken_over(pair, capsys):
    from prh.cli import main

    a, b = pair
    out = a.parent / "out.json"
    lock_path(out).write_text("999999\n")  # a killed holder's file: no flock on it
    assert main(_measure(a, b, out)) == 0, capsys.readouterr().err
    assert out.is_file() and not lock_path(out).exists()


def test_a_full_disk_while_taking_a_lock_names_it_and_leaves_none(pair, monkeypatch, capsys):
    from prh.cli import main

    a, b = pair
    out = a.parent / "out.json"

    def pwrite(fd, data, offset):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", pwrite)
    assert main(_measure(a, b, out)) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "No space left on device" in err
    assert str(lock_path(out)) in err and "taking the lock of --json" in err
    assert sorted(p.name for p in a.parent.iterdir()) == ["a.npy", "b.npy"]


def test_a_lock_is_one_name_holding_this_pid_and_gone_after_release(tmp_path):
    out = tmp_path / "o.json"
    hold_output(out)
    try:
        st = os.stat(lock_path(out), follow_symlinks=False)
        assert st.st_nlink == 1 and lock_path(out).read_text() == f"{os.getpid()}\n"
    finally:
        release_all()
    assert not lock_path(out).exists()
