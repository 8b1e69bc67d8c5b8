"""platonic-rep feature files: read, write, and the reference's numbers under both clamp rules."""

from __future__ import annotations

import json
import os

import _metric_reference as ref
import numpy as np
import pytest
import torch

import prh.cli as cli
from prh.errors import InputError
from prh.features import load_features, save_features, save_platonic_rep
from prh.metrics import MetricOptions, measure


def heavy(rng: np.random.Generator, *shape: int) -> torch.Tensor:
    """Heavy-tailed features, so the clamp changes the neighbours."""
    return torch.from_numpy(rng.standard_t(2, size=shape).astype(np.float32))


@pytest.fixture
def pair(tmp_path):
    """Two benchmark files: an (N, L, D) tensor (a ViT) and a list of layers (a convnet)."""
    rng = np.random.default_rng(0)
    vit = heavy(rng, 60, 3, 12)
    conv = [
        vit[:, 0, :4] + 0.3 * heavy(rng, 60, 4),  # (N, 4) partly aligned with the ViT
        heavy(rng, 60, 10),
        vit[:, 2] @ heavy(rng, 12, 16),  # (N, 16)
    ]
    pa, pb = tmp_path / "vit.pt", tmp_path / "conv.pt"
    torch.save({"feats": vit, "num_params": 1234, "loss": torch.tensor(2.5)}, pa)
    torch.save({"feats": conv, "num_params": 99, "mask": torch.ones(60, 7)}, pb)
    return pa, pb, vit, conv


def run_cli(*argv) -> int:
    return cli.main(["measure", *map(str, argv)])


def test_reads_tensor_and_list_files(pair):
    pa, pb, vit, conv = pair
    fa, fb = load_features(pa), load_features(pb)
    np.testing.assert_array_equal(fa.features, vit.numpy())
    assert fa.metadata["num_params"] == "1234" and not fa.per_layer and fa.layer_dims is None
    assert fb.features.shape == (60, 3, 16) and fb.layer_dims == [4, 10, 16] and fb.per_layer
    for i, layer in enumerate(conv):
        np.testing.assert_array_equal(fb.features[:, i, : layer.shape[1]], layer.numpy())
        assert not fb.features[:, i, layer.shape[1] :].any()  # zero padding


@pytest.mark.parametrize("clamp", ["mean", "exact"])
@pytest.mark.parametrize("metric", ["mutual_knn", "unbiased_cka"])
def test_cli_equals_reference_formulas(pair, tmp_path, clamp, metric):
    """`prh measure` on benchmark files = platonic-rep's prepare_features + compute_score."""
    pa, pb, vit, conv = pair
    exact = clamp == "exact"
    if metric == "mutual_knn":
        score = lambda a, b: ref.mutual_knn(a, b, 5)  # noqa: E731
        extra = ["--k", 5]
    else:
        score = ref.unbiased_cka_eps  # the reference's 1e-6 in the denominator
        extra = ["--eps", "1e-6"]
    want, where = ref.best_layer_pair(
        ref.prepare_features(vit, exact=exact), ref.prepare_features(conv, exact=exact), score
    )
    out = tmp_path / "r.json"
    assert run_cli(pa, pb, "--metric", metric, "--clamp", clamp, *extra, "--json", out) == 0
    (got,) = json.loads(out.read_text())["results"]
    assert got["score"] == pytest.approx(want, abs=1e-6)
    assert tuple(got["layers"]) == where


def test_clamp_rules_and_eps_change_the_numbers(pair):
    """Each option matters on these inputs, so the test above cannot pass by accident."""
    pa, pb, _, _ = pair
    fa, fb = load_features(pa), load_features(pb)

    def score(clamp="mean", per_layer=True, eps=0.0, metric="unbiased_cka"):
        return measure(
            fa.features, fb.features, metric, k=5, clamp=clamp, layer_dims_b=fb.layer_dims,
            per_layer_b=per_layer, options=MetricOptions(eps=eps),
        ).score  # fmt: skip

    base = score()
    assert abs(base - score(clamp="exact")) > 1e-4
    assert abs(base - score(clamp="none")) > 1e-4
    assert abs(base - score(per_layer=False)) > 1e-4
    assert 1e-9 < abs(base - score(eps=1e-6)) < 1e-2


def test_per_layer_clamp_of_padded_layers_matches_the_list_rule():
    from prh.metrics.preprocess import preprocess

    rng = np.random.default_rng(4)
    layers = [heavy(rng, 30, d) for d in (3, 9, 5)]
    padded, dims = np.zeros((30, 3, 9), np.float32), [3, 9, 5]
    for i, x in enumerate(layers):
        padded[:, i, : dims[i]] = x.numpy()
    for exact in (False, True):
        got = preprocess(padded, exact=exact, layer_dims=dims, per_layer=True)
        for i, x in enumerate(ref.prepare_features(layers, exact=exact)):
            np.testing.assert_allclose(got[:, i, : dims[i]], ref.unit(x.numpy()), atol=1e-6)


@pytest.mark.parametrize("dims", [[8, 8, 8], [3, 8, 5]])
def test_writer_round_trip(tmp_path, dims):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((7, 3, 8)).astype(np.float32)
    for i, w in enumerate(dims):
        x[:, i, w:] = 0
    path = tmp_path / "f.pt"
    ids = [f"s{i}" for i in range(7)]
    save_platonic_rep(path, x, ids, {"encoder": "e"}, layer_dims=dims, num_params=5)
    raw = torch.load(path, weights_only=True)  # what platonic-rep's torch.load sees
    if len(set(dims)) == 1:
        assert raw["feats"].shape == (7, 3, 8)
    else:
        assert [tuple(t.shape) for t in raw["feats"]] == [(7, w) for w in dims]
    assert raw["num_params"] == 5
    fs = load_features(path)
    np.testing.assert_array_equal(fs.features, x)
    assert fs.ids == ids and fs.metadata["encoder"] == "e"
    assert fs.per_layer == (len(set(dims)) > 1)


def test_embed_writes_platonic_rep(tmp_path, monkeypatch):
    """`prh embed ... --out X.pt` writes the benchmark's layout (stored features as the encoder)."""
    from prh.world import CaveWorld, WorldConfig

    ids = CaveWorld(WorldConfig(seed=0)).split("test")[:5]
    names = [f"scene_{i}" for i in ids]
    x = np.random.default_rng(2).standard_normal((5, 2, 6)).astype(np.float32)
    x[:, 0, 4:] = 0
    src = tmp_path / "src.safetensors"
    meta = {"modality": "image", "layer_dims": json.dumps([4, 6])}
    save_features(src, x, names, meta)
    out = tmp_path / "out.pt"
    monkeypatch.setattr(cli, "COMMANDS", {"embed": cli.COMMANDS["embed"]})
    argv = ["embed", f"features:{src}", "--world", "cave", "--n", "5", "--modality", "image"]
    assert cli.main([*argv, "--out", str(out), "--no-progress"]) == 0
    raw = torch.load(out, weights_only=True)
    assert [tuple(t.shape) for t in raw["feats"]] == [(5, 4), (5, 6)]
    np.testing.assert_array_equal(load_features(out).features, x)


class _Payload:
    """Unpickling this runs code: it creates the file named in ``marker``."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.mknod, (self.marker,))


@pytest.mark.parametrize("legacy", [False, True])
def test_pickled_objects_are_refused_unread(tmp_path, legacy):
    marker = tmp_path / "ran"
    evil = tmp_path / "evil.pt"
    blob = {"feats": torch.zeros(4, 2), "x": _Payload(str(marker))}
    torch.save(blob, evil, _use_new_zipfile_serialization=not legacy)
    with pytest.raises(InputError, match=r"evil.pt: holds pickled objects.*not loaded"):
        load_features(evil)
    assert not marker.exists()


def test_embed_hf_model_records_num_params(tmp_path, monkeypatch, tiny_vit):
    """The benchmark plots alignment against ``num_params``; prh embed writes it for hf models."""
    from transformers import ViTModel

    out = tmp_path / "vit.pt"
    monkeypatch.setattr(cli, "COMMANDS", {"embed": cli.COMMANDS["embed"]})
    argv = ["embed", f"hf:{tiny_vit}", "--world", "cave", "--n", "3", "--modality", "image"]
    assert cli.main([*argv, "--out", str(out), "--no-progress", "--threads", "1"]) == 0
    raw = torch.load(out, weights_only=True)
    want = sum(p.numel() for p in ViTModel.from_pretrained(tiny_vit).parameters())
    assert raw["num_params"] == want and raw["feats"].shape[0] == 3
