"""Theory against every encoder of the demo (issue 21): the world's spectrum, each encoder's
held-out canonical correlation with the theory embedding, and each pair's with each other.

- **spectrum**: the top eigenvalues of the world's pair kernel ``Pi = p Q^D``
  (:meth:`prh.world.moving.MovingWorld.spectrum`), its gap after ``k`` and the smallest
  separation among the top ``k`` (the theorem pins the embedding up to one rotation when they
  are distinct and followed by a gap). The still world has none: its kernel is ``diag(p)``,
  every eigenvalue 1.
- **theory_cc**: per encoder, the ``k`` held-out canonical correlations of its embedding (the
  last layer, trimmed to its width) with ``g*``, **width-fair**
  (:func:`prh.metrics.theory_cca.width_fair_cc`): each side first reduced to its top ``k``
  principal directions on the fitting states, canonical directions fitted on the bridge states
  (training split), scored on the held-out states; the interval resamples the held-out states.
  Beside it, ``raw``: the same with the top 64 directions per side (the read-out used before
  issue 31, which lets a wide map decode ``g*`` from mere identity).
- **own**: per encoder, the same width-fair held-out cc against its *own modality's* theory
  embedding (:mod:`prh.world.observation`: the kernel on what a caption, a render or a sketch
  shows; text rows of the caption each state was embedded from), beside the modality's
  ``ceiling`` against ``g*`` (what a perfect encoder of that modality reaches, population). A
  good-view JEPA is judged by ``own``: ``g*`` asks of partial captions and colourless sketches
  what they cannot show.
- **modes**: per encoder, which of ``g*``'s modes its ``k`` directions carry
  (:func:`prh.metrics.theory_cca.mode_profile`: the held-out R^2 of each ``g_j`` from its top
  ``k`` principal directions, carried at R^2 >= 0.5), the first :data:`BELOW_CUT` modes below
  the cut included: a missing direction is named with the mode that took its place.
- **cc**: the same held-out canonical correlation between two encoders' embeddings (the
  ``k`` strongest pairs, width-fair; ``cc_raw`` beside), for every pair: the modalities
  matrix's ``cc`` beside mutual-kNN, CKA and the rotation scores.

Layer: glue over :mod:`prh.metrics.theory_cca`; pure given the loaded features.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from prh.features import last_layer

BELOW_CUT = 4
"""Modes below the cut each encoder's profile also reads (``g_{k+1} .. g_{k+4}``)."""

STILL_REASON = (
    "the still world's pair kernel is diag(p): every eigenvalue is 1, no gap at any k, so the "
    "theorem fixes no embedding to compare with"
)
CORPUS_REASON = (
    "a caption corpus of photos has no latent states to draw views from (its good views are two "
    "captions of one photo: the pair kernel over photos is diag(p), every eigenvalue 1, no gap), "
    "so it has no spectrum or theory embedding: the theory figures are absent by contract"
)


def no_theory_reason(world_name: str) -> str:
    """Why world ``world_name`` has no theory embedding, when it has none: a world of generated
    scenes (one that offers ``factors``) is still (:data:`STILL_REASON`); any other is a corpus of
    photos (:data:`CORPUS_REASON`)."""
    from prh.world import world_offers

    return STILL_REASON if world_offers(world_name, "factors") else CORPUS_REASON


def world_spectrum(world: Any, m: int = 12, reason: str = STILL_REASON) -> dict[str, Any]:
    """``{"eigenvalues", "k", "gap", "min_separation", "lag", "reason"}`` of ``world``: the ``m``
    largest non-constant eigenvalues of its pair kernel; ``eigenvalues`` ``None`` and ``reason``
    for a world without one (the still cave, a corpus: :func:`no_theory_reason`)."""
    from prh.world import has_theory

    if not has_theory(world):
        return {"eigenvalues": None, "k": None, "gap": None, "min_separation": None,
                "lag": 0, "reason": reason}  # fmt: skip
    k = world.gap_k
    sp = world.spectrum(max(m, k + 1))
    ev = sp.nontrivial()
    top = ev[:k]
    return {
        "eigenvalues": [round(float(v), 6) for v in ev[:m]],
        "k": int(k),
        "gap": round(float(sp.gap(k)), 6),
        "min_separation": round(float(np.min(-np.diff(top))) if k > 1 else 0.0, 6),
        "lag": int(sp.lag),
        "reason": None,
    }


def theory_scores(
    world: Any,
    train: Mapping[str, np.ndarray],
    test: Mapping[str, np.ndarray],
    dims: Mapping[str, Sequence[int]],
    fit_ids: Sequence[int],
    test_ids: Sequence[int],
    *,
    n_boot: int = 200,
    seed: int = 0,
    reason: str = STILL_REASON,
) -> dict[str, Any]:
    """Name -> the held-out theory CCA of each feature set (module docstring), or
    ``{"skipped": reason}`` for a world without a gap."""
    from prh.metrics.theory_cca import mode_profile
    from prh.world import has_theory

    if not has_theory(world):
        return {"skipped": reason}
    k = world.gap_k
    wide = (world.theory_embedding(fit_ids, k + BELOW_CUT),
            world.theory_embedding(test_ids, k + BELOW_CUT))  # fmt: skip
    g_fit, g_test = wide[0][:, :k], wide[1][:, :k]
    out: dict[str, Any] = {}
    own: dict[str, tuple] = {}  # modality -> its theory of the fit and test states, and ceiling
    for name in train:
        a, b = last_layer(train[name], dims[name]), last_layer(test[name], dims[name])
        out[name] = two_readouts(a, g_fit, b, g_test, k, n_boot=n_boot, seed=seed)
        out[name]["modes"] = mode_profile(a, wide[0], b, wide[1], components=k).to_dict()
        m = modality_of(name)
        if m not in own:
            own[m] = own_targets(world, m, (fit_ids, test_ids), k)
        out[name].update(own_scores(m, own[m], (a, b), k, n_boot, seed))
    return out


def modality_of(name: str) -> str:
    """The modality of a demo encoder by its evidence name: text sets, sketches, else images."""
    from prh.demo.modalities import TEXT_SETS

    if name in TEXT_SETS or name.startswith("text"):
        return "text"
    return "sketch" if name.startswith("sketch") else "image"


def own_theory(
    world: Any,
    modality: str,
    ids: Sequence[int],
    k: int,
    captions: Sequence[Sequence[str]] | None = None,
) -> np.ndarray:
    """The modality's own theory embedding of ``ids`` ``(n, k)``; text: the mean over each
    state's ``captions`` (the captions its features were embedded from, averaged as they were)."""
    from prh.world.observation import theory_of_captions, theory_of_observations

    if modality != "text":
        return theory_of_observations(world, modality, ids, k)
    captions = list(captions or [])
    if len(captions) != len(ids):
        raise ValueError(f"{len(ids)} states but {len(captions)} caption lists")
    counts = [len(c) for c in captions]
    rows = theory_of_captions(world, np.repeat(np.asarray(ids), counts),
                              [t for c in captions for t in c], k)  # fmt: skip
    starts = np.cumsum([0, *counts[:-1]])
    return np.add.reduceat(rows, starts, axis=0) / np.asarray(counts)[:, None]


def own_targets(world: Any, modality: str, ids: tuple, k: int) -> tuple:
    """``(theory of the fit states, of the test states, ceiling correlations)`` of one modality
    (module docstring): the captions are the demo's, 5 per fitting state (wording seed = world
    seed) and 1 per held-out state (world seed + 1)."""
    from prh.world.observation import predicted_cc

    (fit_ids, test_ids), ws = ids, int(world.config.seed)
    caps = ([world.captions(int(i), 5, ws) for i in fit_ids],
            [world.captions(int(i), 1, ws + 1) for i in test_ids])  # fmt: skip
    return (own_theory(world, modality, fit_ids, k, caps[0]),
            own_theory(world, modality, test_ids, k, caps[1]),
            predicted_cc(world, modality, "g*", k)["observation"])  # fmt: skip


def own_scores(modality: str, targets: tuple, feats: tuple, k: int, n_boot: int,
               seed: int) -> dict[str, Any]:  # fmt: skip
    """``{"modality", "own", "ceiling", "ceiling_correlations"}`` of one encoder's features
    against its modality's :func:`own_targets`."""
    from prh.metrics.theory_cca import width_fair_cc

    o_fit, o_test, ceiling = targets
    r = width_fair_cc(feats[0], o_fit, feats[1], o_test, components=k, n_boot=n_boot, seed=seed)
    return {"modality": modality, "own": r.to_dict(), "ceiling": float(np.mean(ceiling)),
            "ceiling_correlations": ceiling}  # fmt: skip


def two_readouts(
    a_fit: np.ndarray,
    b_fit: np.ndarray,
    a_test: np.ndarray,
    b_test: np.ndarray,
    k: int,
    *,
    n_boot: int = 200,
    seed: int = 0,
) -> dict[str, Any]:
    """The width-fair held-out cc (the headline: ``mean``, ``ci``, ``correlations``, ...) with
    the raw one (:func:`prh.metrics.theory_cca.fair_and_raw_cc`) under ``raw``, ``k`` and
    ``a``'s width."""
    from prh.metrics.theory_cca import fair_and_raw_cc

    fair, raw = fair_and_raw_cc(a_fit, b_fit, a_test, b_test, components=k, n_boot=n_boot,
                                seed=seed)  # fmt: skip
    return {**fair.to_dict(), "readout": f"width-fair (top {k} directions)",
            "raw": raw.to_dict(), "k": int(k), "width": int(a_fit.shape[1])}  # fmt: skip


def pair_cc(
    train: Mapping[str, np.ndarray],
    test: Mapping[str, np.ndarray],
    dims: Mapping[str, Sequence[int]],
    names: Sequence[str],
    *,
    components: int = 8,
    n_boot: int = 200,
    seed: int = 0,
) -> dict[str, list[list[float | None]]]:
    """``{"cc", "cc_ci_low", "cc_ci_high", "cc_raw"}``: symmetric ``(n, n)`` matrices (``names``
    order) of the mean held-out canonical correlation of every pair's embeddings, width-fair
    (1 on the diagonal), and the raw read-out's mean beside it (:func:`two_readouts`)."""
    n = len(names)
    cc = [[1.0 if i == j else None for j in range(n)] for i in range(n)]
    lo, hi, raw = ([row[:] for row in cc] for _ in range(3))
    emb = {m: (last_layer(train[m], dims[m]), last_layer(test[m], dims[m])) for m in names}
    for i in range(n):
        for j in range(i + 1, n):
            (af, at), (bf, bt) = emb[names[i]], emb[names[j]]
            r = two_readouts(af, bf, at, bt, components, n_boot=n_boot, seed=seed)
            cc[i][j] = cc[j][i] = round(r["mean"], 6)
            lo[i][j] = lo[j][i] = round(r["ci"][0], 6)
            hi[i][j] = hi[j][i] = round(r["ci"][1], 6)
            raw[i][j] = raw[j][i] = round(r["raw"]["mean"], 6)
    return {"cc": cc, "cc_ci_low": lo, "cc_ci_high": hi, "cc_raw": raw}


def predicted_pairs(world: Any, names: Sequence[str], k: int) -> list[list[float | None]] | None:
    """``(n, n)``: the mean canonical correlation two perfect good-view encoders of each pair's
    modalities reach on one observation each per state (:func:`prh.world.observation.
    predicted_cc`); None for a world without a pair kernel."""
    from prh.world import has_theory
    from prh.world.observation import predicted_cc

    if not has_theory(world):
        return None
    mods = [modality_of(n) for n in names]
    memo: dict[tuple[str, str], float] = {}
    out: list[list[float | None]] = []
    for a in mods:
        row: list[float | None] = []
        for b in mods:
            if (a, b) not in memo:
                memo[(a, b)] = round(float(np.mean(predicted_cc(world, a, b, k)["observation"])), 6)
            row.append(memo[(a, b)])
        out.append(row)
    return out


def theory_section(
    ctx: Any, sets: Mapping[str, Mapping[str, Any]], names: Sequence[str] | None = None
) -> dict[str, Any]:
    """``{"spectrum", "theory_cc", "pairs"}`` of the feature ``sets`` of ``ctx``'s world
    (cached by their files): ``pairs`` the :func:`pair_cc` matrices over ``names`` (default:
    every set)."""
    import hashlib
    from pathlib import Path

    from prh.demo.modalities import load_sets
    from prh.demo.world import demo_world, scene_ids

    cfg = ctx.cfg
    files = "|".join(f"{n}:{Path(p['test']).name}:{Path(p['train']).name}" for n, p in sets.items())
    names = list(names or sets)
    key = f"{files}|{','.join(names)}|{cfg.digest('world', 'world_seed', 'seed')}"
    h = hashlib.sha256(key.encode()).hexdigest()[:10]

    def go() -> dict[str, Any]:
        world = demo_world(cfg)
        test_ids, fit_ids = scene_ids(cfg, world)
        train, test, dims = load_sets(sets)
        why = no_theory_reason(cfg.world)
        spectrum = world_spectrum(world, reason=why)
        k = spectrum["k"] or 8  # the still world's pairs compared in the moving world's k
        scores = theory_scores(world, train, test, dims, fit_ids, test_ids, seed=cfg.seed,
                               reason=why)  # fmt: skip
        pairs = pair_cc(train, test, dims, names, components=k, seed=cfg.seed)
        pairs["predicted"] = predicted_pairs(world, names, k)
        return {
            "spectrum": spectrum,
            "theory_cc": scores,
            "pairs": {"names": names, "components": k, **pairs},
        }

    value, _ = ctx.cached_json(f"theory-{h}", go)
    return value


def log_theory(ctx: Any, value: Mapping[str, Any]) -> None:
    """One line for the spectrum and one per encoder's theory correlation."""
    from prh.demo.figures import fig, interval

    sp = value["spectrum"]
    if sp["eigenvalues"] is None:
        ctx.log(f"  spectrum: none ({sp['reason']})")
    else:
        top = " ".join(f"{v:.4f}" for v in sp["eigenvalues"][: sp["k"]])
        ctx.log(
            f"  spectrum (lag {sp['lag']}): {top} | {sp['eigenvalues'][sp['k']]:.4f}; gap "
            f"{sp['gap']:.4f}, smallest separation {sp['min_separation']:.4f} (k = {sp['k']})"
        )
    tc = value["theory_cc"]
    if "skipped" in tc:
        return
    for name, r in tc.items():
        ctx.log(f"  {name:<18} theory cc {fig(r['mean'])} {interval(*r['ci'])}{modes_note(r)}")


def modes_note(r: Mapping[str, Any]) -> str:
    """``"; g* modes: <its mode profile in words>"`` for a log line, ``""`` for a score from
    before the profile."""
    return f"; g* modes: {r['modes']['describe']}" if "modes" in r else ""
