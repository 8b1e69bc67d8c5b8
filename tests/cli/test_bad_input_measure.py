"""`prh measure`: each bad input a user can type: one line, exit 2, inputs intact (issue 11)."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch


@pytest.fixture
def d(tmp_path):
    """Two paired feature files of 30 rows, one of 20 rows, a folder of them, a benchmark file."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((30, 2, 5)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", a + rng.standard_normal(a.shape).astype(np.float32))
    np.save(tmp_path / "short.npy", a[:20])
    (tmp_path / "models").mkdir()
    np.save(tmp_path / "models" / "m.npy", a)
    (tmp_path / "empty").mkdir()
    torch.save({"feats": [torch.zeros(30, 2), torch.ones(7, 3)]}, tmp_path / "ragged.pt")
    (tmp_path / "ids.bin").write_bytes(b"\x00\xff\xfe\x80")
    return tmp_path


class _Payload:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.mknod, (self.marker,))  # runs on unpickling


def test_json_that_is_an_input_is_refused(d, bad_input):
    bad_input(["measure", d / "a.npy", d / "b.npy", "--json", d / "a.npy"],
              inputs=[d / "a.npy", d / "b.npy"], match="--json .*would overwrite")  # fmt: skip


@pytest.mark.parametrize("flag", ["--npy", "--heatmap"])
def test_matrix_outputs_that_are_inputs_are_refused(d, bad_input, flag):
    out = d / ("a.npy" if flag == "--npy" else "models/m.png")
    line = bad_input(["measure", "--x", d / "a.npy", d / "models", "--y", d / "b.npy", flag, out],
                     inputs=[d / "a.npy", d / "models" / "m.npy"])  # fmt: skip
    assert flag in line and ("would overwrite" in line or "inside the input folder" in line)
    assert not (d / "models" / "m.png").exists()


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--seed", "-1"], r"--seed: expected a seed"),
        (["--seed", "4294967296"], r"--seed: expected a seed"),
        (["--rbf-sigma", "inf"], r"--rbf-sigma: expected a finite positive"),
        (["--rbf-sigma", "nan"], r"--rbf-sigma: expected a finite positive"),
        (["--eps", "-1e-6"], r"--eps: expected a finite number >= 0"),
        (["--layers", "5,0"], r"layer 5 of A is out of range: it has 2 layers"),
        (["--layers", "-1"], r"--layers: expected two layer indices"),
        (["--clamp", "median"], r"--clamp: invalid choice"),
        (["--k", "30"], r"k must satisfy 1 <= k < N = 30"),
        (["--npy", "out.txt"], r"--npy out.txt: expected a .npy file name"),
        (["--heatmap", "out.jpg"], r"--heatmap out.jpg: expected a .png file name"),
        (["--device", "tpu"], r"--device: expected auto, cpu, cuda or cuda:N"),
        (["--device", "cuda:x"], r"--device: expected auto, cpu, cuda or cuda:N"),
        (["--x", "a.npy"], r"either A B or --x"),
    ],
)
def test_bad_options(d, bad_input, extra, match):
    bad_input(["measure", d / "a.npy", d / "b.npy", *extra],
              inputs=[d / "a.npy", d / "b.npy"], match=match)  # fmt: skip


def test_cuda_refused_where_absent(d, bad_input):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    bad_input(["measure", d / "a.npy", d / "b.npy", "--backend", "torch", "--device", "cuda"],
              match="CUDA is not available")  # fmt: skip


@pytest.mark.parametrize("legacy", [False, True])
def test_evil_pt_is_refused_unrun(d, bad_input, legacy):
    evil, marker = d / "evil.pt", d / "payload-ran"
    torch.save({"feats": torch.zeros(30, 5), "x": _Payload(str(marker))}, evil,
               _use_new_zipfile_serialization=not legacy)  # fmt: skip
    bad_input(["measure", evil, d / "b.npy"], inputs=[evil, d / "b.npy"],
              match=r"evil.pt: holds pickled objects.*not loaded")  # fmt: skip
    assert not marker.exists()


def test_folder_where_a_file_is_expected(d, bad_input):
    bad_input(
        ["measure", d / "models", d / "b.npy"], match=r"models: is a folder, expected a feature"
    )
    bad_input(["measure", d / "a.npy", d / "b.npy", "--ids-a", d / "models"],
              match=r"models: is a folder, expected a text file")  # fmt: skip
    bad_input(["measure", d / "a.npy", d / "b.npy", "--json", d / "models"],
              match=r"--json .*models: is a directory")  # fmt: skip


def test_empty_folder_and_missing_side(d, bad_input):
    bad_input(["measure", "--x", d / "empty", "--y", d / "b.npy"], match=r"holds no feature file")
    bad_input(["measure", "--x", d / "a.npy"], match=r"--y is missing")
    bad_input(["measure", d / "a.npy"], match=r"expected two feature files")


def test_mismatched_rows(d, bad_input):
    bad_input(["measure", d / "a.npy", d / "short.npy"],
              match=r"row counts differ: .*a.npy has 30 rows, .*short.npy has 20")  # fmt: skip
    bad_input(["measure", d / "ragged.pt", d / "a.npy"],
              match=r"ragged.pt: layer 1 has shape \(7, 3\), expected \(30, D\)")  # fmt: skip


def test_binary_ids_file(d, bad_input):
    bad_input(["measure", d / "a.npy", d / "b.npy", "--ids-a", d / "ids.bin"],
              inputs=[d / "ids.bin"], match=r"ids.bin: not UTF-8 text")  # fmt: skip


def test_complex_tensor_refused(d, bad_input):
    torch.save({"feats": torch.randn(30, 2, 5, dtype=torch.complex64)}, d / "cx.pt")
    bad_input(["measure", d / "cx.pt", d / "a.npy"], match=r"cx.pt: feats holds complex numbers")
