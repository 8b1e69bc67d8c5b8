"""Layers of different widths, zero-padded to one D (as ``prh embed`` writes EfficientNet's)."""

import json

import numpy as np
import pytest

from prh.cli import main
from prh.errors import InputError
from prh.features import load_features, save_features
from prh.metrics import measure
from prh.metrics.preprocess import outlier_threshold, preprocess


def _ragged(rng: np.random.Generator, n: int, dims: list[int]) -> tuple[list, np.ndarray]:
    layers = [rng.standard_normal((n, d)).astype(np.float32) * (1 + i) for i, d in enumerate(dims)]
    padded = np.zeros((n, len(dims), max(dims)), np.float32)  # (N, L, D)
    for i, x in enumerate(layers):
        padded[:, i, : x.shape[1]] = x
    return layers, padded


@pytest.mark.parametrize("exact", [False, True])
def test_threshold_ignores_padding(exact: bool) -> None:
    rng = np.random.default_rng(0)
    dims = [4, 16, 64]
    layers, padded = _ragged(rng, 50, dims)
    real = np.concatenate(layers, axis=1)[:, None, :]  # (N, 1, sum(dims)): the same entries
    assert outlier_threshold(padded, exact=exact, layer_dims=dims) == pytest.approx(
        outlier_threshold(real, exact=exact), rel=1e-6
    )
    # Padding without the widths lowers the threshold: the failure this guards against.
    assert outlier_threshold(padded, exact=exact) < outlier_threshold(real, exact=exact)


def test_preprocess_of_padded_layers_matches_each_real_layer() -> None:
    rng = np.random.default_rng(1)
    dims = [3, 8, 32]
    layers, padded = _ragged(rng, 40, dims)
    t = outlier_threshold(np.concatenate(layers, axis=1)[:, None, :])
    out = preprocess(padded, layer_dims=dims)
    for i, x in enumerate(layers):
        ref = np.clip(x, -t, t)
        ref /= np.linalg.norm(ref, axis=1, keepdims=True)
        np.testing.assert_allclose(out[:, i, : dims[i]], ref, rtol=1e-5, atol=1e-6)
        assert not out[:, i, dims[i] :].any()  # padding stays zero


def test_measure_cli_reads_layer_dims(tmp_path, capsys) -> None:
    rng = np.random.default_rng(2)
    dims = [2, 24]
    _, padded = _ragged(rng, 60, dims)
    other = padded[:, 1, :] @ np.linalg.qr(rng.standard_normal((24, 24)))[0]  # (N, 24) rotated
    a, b = tmp_path / "a.safetensors", tmp_path / "b.npy"
    save_features(a, padded, metadata={"layer_dims": json.dumps(dims)})
    np.save(b, other)
    assert load_features(a).layer_dims == dims
    out = tmp_path / "m.json"
    assert main(["measure", str(a), str(b), "--layers", "1,0", "--json", str(out)]) == 0
    got = json.loads(out.read_text())["results"][0]["score"]
    # Layers of different widths are clamped one by one, as platonic-rep clamps a list of layers.
    want = measure(padded, other, layers=(1, 0), layer_dims_a=dims, per_layer_a=True).score
    assert got == pytest.approx(want)
    # One threshold for the whole padded file gives another score.
    assert got != pytest.approx(measure(padded, other, layers=(1, 0)).score)


def test_bad_layer_dims_metadata(tmp_path) -> None:
    path = tmp_path / "bad.safetensors"
    save_features(path, np.ones((3, 2, 4)), metadata={"layer_dims": "[4, 9]"})
    with pytest.raises(InputError, match="does not fit shape"):
        load_features(path).layer_dims  # noqa: B018
