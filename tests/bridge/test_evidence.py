"""The modality evidence: two views one rotation apart give a rotation score near 1, exact
class-level matching and high sample-level matching; an unrelated view does not."""

from __future__ import annotations

import json

import numpy as np
import pytest

from prh.bridge.alignment import alignment_matrix
from prh.bridge.evidence import EvidenceConfig, modality_evidence
from prh.bridge.pair_free import pair_free, reduce_rows
from prh.bridge.synthetic import random_rotation
from prh.errors import InputError

N_TRAIN, N_TEST, D = 200, 120, 8
SHAPES, COLOURS = 4, 5


def _world(seed=0, noise=0.05):
    """Scenes with a shape and a colour class; ``image`` and ``text`` see the same latent one
    (anisotropic) rotation apart, ``other`` is independent of it."""
    rng = np.random.default_rng(seed)
    n = N_TRAIN + N_TEST
    shape = rng.integers(0, SHAPES, n)
    colour = rng.integers(0, COLOURS, n)
    cs = rng.standard_normal((SHAPES, D // 2)) * 2.0
    cc = rng.standard_normal((COLOURS, D // 2)) * 2.0
    z = np.hstack([cs[shape], cc[colour]]) + 0.6 * rng.standard_normal((n, D))  # (n, D)
    scale = np.exp(-np.arange(D) / 4)
    image = (z + noise * rng.standard_normal(z.shape)) * scale
    text = (z + noise * rng.standard_normal(z.shape)) @ random_rotation(D, rng)
    text = np.hstack([text, np.zeros((n, 3))])  # zero padding, as narrow layers have
    other = rng.standard_normal((n, D))
    sets = {"image": image, "text": text, "other": other}
    train = {k: v[:N_TRAIN] for k, v in sets.items()}
    test = {k: v[N_TRAIN:] for k, v in sets.items()}
    labels = {"shape": shape[N_TRAIN:], "colour": colour[N_TRAIN:]}
    return train, test, labels


CFG = EvidenceConfig(bootstrap=20, dims=16, match_dims=D)


@pytest.fixture(scope="module")
def ev():
    train, test, labels = _world()
    return modality_evidence(train, test, labels, config=CFG)


def test_a_rotation_pair_is_one_rotation_and_is_found_without_pairs(ev):
    p = ev.pair("image", "text")
    assert p["rotation_x_to_y"]["score"] == pytest.approx(1.0, abs=0.05)
    assert p["rotation_y_to_x"]["score"] == pytest.approx(1.0, abs=0.05)
    pf = p["pair_free"]
    assert pf["classes"]["shape"]["exact"] and pf["classes"]["colour"]["exact"]
    assert pf["classes"]["shape"]["chance"] == 1 / SHAPES
    s = pf["samples"]
    assert s["chance"] == 1 / N_TEST and s["accuracy"] >= 0.9 and s["times_chance"] >= 90
    lo, hi = p["mutual_knn_ci"]
    assert lo <= p["mutual_knn"] <= hi


def test_an_unrelated_pair_is_neither(ev):
    p = ev.pair("image", "other")
    assert p["rotation_x_to_y"]["score"] is None  # ridge at chance: undefined
    pf = p["pair_free"]
    assert not (pf["classes"]["shape"]["exact"] and pf["classes"]["colour"]["exact"])
    assert pf["samples"]["accuracy"] < 10 / N_TEST
    rot = ev.pair("image", "text")
    assert p["mutual_knn"] < rot["mutual_knn_ci"][0]  # intervals apart
    assert p["cka"] < rot["cka"]


def test_the_matrix_is_alignment_matrix_and_every_pair_is_matched(ev):
    train, test, _ = _world()
    ref = alignment_matrix(train, test, k=10, bootstrap=20, dims=16, best_layers=True)
    assert np.array_equal(ev.matrix.mutual_knn, ref.mutual_knn, equal_nan=True)
    assert np.array_equal(ev.matrix.rotation, ref.rotation, equal_nan=True)
    assert set(ev.pair_free) == {("image", "text"), ("image", "other"), ("text", "other")}
    assert ev.pair("text", "image")["pair_free"] == ev.pair("image", "text")["pair_free"]


def test_to_dict_is_json_ready_and_deterministic(ev):
    train, test, labels = _world()
    again = modality_evidence(train, test, labels, config=CFG)

    def timeless(e):
        d = e.to_dict()
        for p in d["pair_free"]:
            p["samples"].pop("seconds")
        return json.dumps(d, allow_nan=False)

    assert timeless(ev) == timeless(again)
    d = ev.to_dict()
    assert d["matrix"]["names"] == ["image", "text", "other"]
    assert (d["pair_free"][0]["x"], d["pair_free"][0]["y"]) == ("image", "text")
    assert ev.heatmap_png()[:8] == b"\x89PNG\r\n\x1a\n"


def test_selected_pairs_and_no_samples():
    train, test, labels = _world()
    cfg = EvidenceConfig(bootstrap=0, dims=16, match_dims=D, samples=False)
    ev = modality_evidence(train, test, labels, pair_free_pairs=[("text", "image")], config=cfg)
    assert list(ev.pair_free) == [("text", "image")]
    assert ev.pair_free["text", "image"].samples is None
    assert modality_evidence(train, test, pair_free_pairs=None, config=cfg).pair_free == {}


def test_undefined_labels_are_left_out():
    _, test, labels = _world()
    shape = labels["shape"].copy()
    shape[::3] = -1
    r = pair_free(test["image"], test["text"], {"shape": shape}, dims=D, samples=False)
    assert r.classes["shape"].rows == int((shape >= 0).sum()) and r.classes["shape"].exact


def test_reduce_rows_whitens_and_drops_constant_columns():
    _, test, _ = _world()
    z = reduce_rows(test["text"], 32)
    assert z.shape == (N_TEST, D)  # the 3 zero columns are gone
    assert np.allclose(z.std(0), 1.0) and np.allclose(z.mean(0), 0.0)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda t, l: pair_free(t["image"], t["text"][:-1]), "same scenes"),
        (lambda t, l: pair_free(t["image"], t["text"], {"shape": l["shape"][:-1]}), "labels"),
        (lambda t, l: pair_free(t["image"], t["text"], {"s": np.zeros(N_TEST, int)}), "2 classes"),
        (lambda t, l: pair_free(t["image"], np.full_like(t["text"], np.nan)), "NaN"),
        (lambda t, l: pair_free(t["image"], t["text"], dims=0), "dims"),
    ],
)
def test_pair_free_bad_input(call, match):
    _, test, labels = _world()
    with pytest.raises(InputError, match=match):
        call(test, labels)


def test_evidence_bad_input():
    train, test, labels = _world()
    with pytest.raises(InputError, match="no feature set named 'sketch'"):
        modality_evidence(train, test, labels, pair_free_pairs=[("image", "sketch")], config=CFG)
    with pytest.raises(InputError, match="one per held-out scene"):
        modality_evidence(train, test, {"shape": labels["shape"][:5]}, config=CFG)
    with pytest.raises(InputError, match="'all' or a list"):
        modality_evidence(train, test, labels, pair_free_pairs="some", config=CFG)
