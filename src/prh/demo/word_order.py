"""Does the cave world reward context? The demo's word-order test, as pure functions.

The good-view JEPA aligns best at its token-embedding layer (a bag of words): issue 12 asks for a
transformer layer, or evidence why the world cannot reward context. The test compares, on the
held-out scenes:

- each layer of an encoder on the captions as written and with each caption's words shuffled
  (the same words, no order): alignment with the vision features, and how well the layer tells
  the largest object's shape and colour (leave-one-out kNN@10). Word order is what says *which*
  object is large ("a small red cube and a big blue cone"), so a layer that uses context loses
  the largest object's shape when the words are shuffled; a bag of words cannot lose it;
- a bag-of-words encoder (normalised word counts of the caption), which has no context at all.

If the vision features align with the bag of words as well as with any layer, and shuffling
does not lower a layer's alignment even where it lowers its largest-object probe, then the
context the encoder learned is invisible to the vision encoder: the world (as the frozen vision
model sees it) cannot reward it.

Layer: pure functions on strings and arrays; no I/O.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

import numpy as np

_WORD = re.compile(r"[a-z0-9-]+")


def words(text: str) -> list[str]:
    """Lower-case word tokens of ``text`` (letters, digits and hyphens; punctuation dropped)."""
    return _WORD.findall(text.lower())


def shuffle_words(texts: Sequence[str], seed: int = 0) -> list[str]:
    """Each text's words in a seeded random order, joined by spaces (punctuation dropped).

    >>> shuffle_words(["a red cube"], seed=0)[0].split().__len__()
    3
    """
    rng = random.Random(seed)
    out = []
    for t in texts:
        w = words(t)
        rng.shuffle(w)
        out.append(" ".join(w))
    return out


def bag_of_words(texts: Sequence[str]) -> np.ndarray:
    """``(N, V)`` float32 word counts of each text over the texts' vocabulary (sorted), rows
    L2-normalised (an empty text is a zero row).

    >>> bag_of_words(["a cube", "a a"]).astype(float).round(3).tolist()
    [[0.707, 0.707], [1.0, 0.0]]
    """
    toks = [words(t) for t in texts]
    vocab = {w: i for i, w in enumerate(sorted({w for ws in toks for w in ws}))}
    x = np.zeros((len(texts), max(1, len(vocab))), np.float32)
    for r, ws in enumerate(toks):
        for w in ws:
            x[r, vocab[w]] += 1.0
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norm > 0, norm, 1.0)


def layer_profile(
    feats: np.ndarray, vision: np.ndarray, labels: dict[str, np.ndarray], k: int = 10
) -> dict[str, list[float]]:
    """Per text layer: best mutual-kNN@k over the vision layers, and kNN@k accuracy of each label.

    Parameters
    ----------
    feats : np.ndarray
        ``(N, L, D)`` text features (or ``(N, D)``: one layer).
    vision : np.ndarray
        ``(N, L_v, D_v)`` vision features of the same scenes.
    labels : dict of str to np.ndarray
        Integer labels ``(N,)`` (negative: undefined, left out of the probe).

    Returns
    -------
    dict
        ``{"mutual_knn": [per layer], "<label>": [per layer], ...}``.
    """
    from prh.metrics import measure
    from prh.metrics.probe import knn_accuracy

    f = np.asarray(feats)
    if f.ndim == 2:
        f = f[:, None, :]
    out: dict[str, list[float]] = {"mutual_knn": []}
    for name in labels:
        out[name] = []
    for layer in range(f.shape[1]):
        x = f[:, layer]
        if not np.any(x.std(0) > 1e-8):  # a zero-padded layer: nothing to measure
            out["mutual_knn"].append(float("nan"))
            for name in labels:
                out[name].append(float("nan"))
            continue
        out["mutual_knn"].append(float(measure(x, vision, metric="mutual_knn", k=k).score))
        for name, y in labels.items():
            out[name].append(knn_accuracy(x, y, k))
    return out


def summarise(profiles: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, float]]:
    """Per profile: the best layer's alignment and that layer's index, the last layer's, and the
    best layer's probe accuracies (NaN layers skipped)."""
    out = {}
    for name, p in profiles.items():
        m = np.asarray(p["mutual_knn"], float)
        best = int(np.nanargmax(m))
        row = {
            "best_layer": best,
            "best_mutual_knn": float(m[best]),
            "last_mutual_knn": float(m[~np.isnan(m)][-1]),
        }
        for label, accs in p.items():
            if label != "mutual_knn":
                row[f"{label}_at_best"] = float(accs[best])
                row[f"{label}_max"] = float(np.nanmax(np.asarray(accs, float)))
        out[name] = row
    return out
