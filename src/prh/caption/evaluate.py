"""Scoring captions of held-out world scenes: decoder (greedy, beam), retrieval, oracle.

For ``n`` scenes of the world's test split (never seen by the text run, the map or the decoder),
with the world's ``refs`` reference captions each (wording seed = the run's world seed):

- **decoder greedy / beam K**: render -> vision encoder -> map -> decoder;
- **retrieval** (baseline): the gallery caption (train scenes) nearest to the mapped image
  embedding, as in text-only captioning papers' "nearest caption" baseline;
- **oracle** (upper bound of the decoder): the decoder fed the text JEPA's embedding of one more
  caption of the scene, with another wording seed and not among the references, so the map is
  bypassed and no reference is copied;
- two floors that see the map (issue 31: a zero-pair map at 1.2% assignment accuracy still
  scored 98% of the paired one): the **unconditional decoder** (every scene conditioned on the
  mean mapped embedding: what the decoder says of the world without looking) and the **shuffled
  map** (each scene conditioned on another held-out scene's mapped embedding, a fixed
  derangement: right captions of the wrong scenes). A map earns its CIDEr only above both.

Scores: BLEU-4, METEOR (optional: it starts a JVM), ROUGE-L, CIDEr(-D) via ``pycocoevalcap``
(:func:`prh.bridge.caption_metrics.score_captions`). Also the map's image -> caption retrieval
recall over the ``n`` scenes (R@1/5/10 against the oracle captions' embeddings).
"""

from __future__ import annotations

import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from prh.errors import InputError

__all__ = ["CaptionEvalResult", "compare_captioners", "evaluate_captioner"]

NEAREST_ROW = "retrieval (nearest train caption)"
GREEDY_ROW = "decoder, greedy"
UNCONDITIONAL_ROW = "floor: unconditional decoder (mean embedding)"
SHUFFLED_ROW = "floor: shuffled map (another scene's embedding)"


@dataclass(frozen=True)
class CaptionEvalResult:
    """Scores of each captioning method on held-out scenes.

    Attributes
    ----------
    n : int
        Scenes scored.
    metrics : tuple of str
        Metric names, in table order.
    scores : dict
        Method name -> metric -> corpus score (BLEU/METEOR/ROUGE-L in [0, 1], CIDEr in [0, 10]).
    recall : dict
        Image -> caption retrieval recall of the map over the ``n`` scenes (``R@1`` ...).
    examples : list of dict
        The first scenes: references and each method's caption.
    config : dict
        World seed, beam, tokenizer, references per scene, run info.
    seconds : dict
        Wall time of each phase.
    """

    n: int
    metrics: tuple[str, ...]
    scores: dict[str, dict[str, float]]
    recall: dict[str, float] = field(default_factory=dict)
    examples: list[dict[str, Any]] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["metrics"] = list(self.metrics)
        return d

    def table(self) -> str:
        """The scores as an aligned text table (CIDEr x 100 as usually reported, others x 100)."""
        names = list(self.scores)
        w = max(len(n) for n in names) + 2
        head = f"{'method':<{w}}" + "".join(f"{m:>10}" for m in self.metrics)
        lines = [head, "-" * len(head)]
        for name in names:
            row = self.scores[name]
            lines.append(f"{name:<{w}}" + "".join(f"{100 * row[m]:>10.1f}" for m in self.metrics))
        lines.append(
            f"(x100; n = {self.n} held-out scenes, {self.config.get('refs')} references each; "
            f"map retrieval R@1 {100 * self.recall.get('R@1', float('nan')):.1f} / "
            f"R@5 {100 * self.recall.get('R@5', float('nan')):.1f} among {self.n})"
        )
        return "\n".join(lines)


def _oracle_caption(world: Any, scene: int, refs: list[str], seed: int) -> str | None:
    """A caption of ``scene`` that is not among ``refs`` (None: a corpus image has no more)."""
    for c in world.captions(scene, len(refs) + 1, seed):
        if c not in refs:
            return c
    return None


def _test_scenes(test: Any, n: int, scenes: Any) -> list[int]:
    """The scored scenes: the first ``n`` of ``test``, or ``scenes`` (each one a test scene)."""
    if scenes is None:
        return [int(i) for i in test[:n]]
    scenes = [int(i) for i in scenes]
    outside = sorted(set(scenes) - {int(i) for i in test})
    if outside or not scenes:
        raise InputError(f"scenes: expected test scenes of the world, got {outside[:3] or 'none'}")
    return scenes


def manifest_world(info: dict[str, Any]) -> tuple[Any, int]:
    """The world a caption manifest names (a corpus world with its ``options``) and its seed."""
    from prh.world import make_world

    w = info.get("world", {})
    seed = int(w.get("seed", 0))
    return make_world(w.get("name", "cave"), seed=seed, **(w.get("options") or {})), seed


def scene_features(
    captioner: Any, world: Any, scenes: list[int], image_features: Any, progress: bool
) -> Any:
    """Image features ``(n, D_v)`` of ``scenes``: from a feature file, or their renders
    encoded by the captioner's vision encoder."""
    from prh.caption.build import render_features, stored_features

    info, w = captioner.info, captioner.info.get("world", {})
    if image_features is not None:
        return stored_features(image_features, world, scenes, str(info.get("vision")))
    _say(progress, f"encoding {len(scenes)} held-out renders with {info.get('vision')}")
    return render_features(
        captioner.vision, world, scenes, nuisance_seed=int(w.get("nuisance_seed", 0)),
        image_size=int(w.get("image_size", 224)), progress=progress,
    )  # fmt: skip


def _say(progress: bool, msg: str) -> None:
    if progress:
        print(f"prh caption: {msg}", file=sys.stderr, flush=True)


def caption_rows(
    captioner: Any, cond: Any, beam: int, seed: int, secs: dict[str, float]
) -> dict[str, list[str]]:
    """Each method's captions of conditions ``cond (n, E)``: greedy and beam decoder and the
    floors (with a decoder), and the nearest caption."""
    hyps: dict[str, list[str]] = {}
    if getattr(captioner, "kind", "decoder") == "decoder":  # else nearest caption only
        t0 = time.perf_counter()
        hyps[GREEDY_ROW] = captioner.generate(cond, beam=1)
        secs["greedy_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        hyps[f"decoder, beam {beam}"] = captioner.generate(cond, beam=beam)
        secs["beam_s"] = time.perf_counter() - t0
        hyps.update(_floors(captioner, cond, seed))
    hyps[NEAREST_ROW] = [r[0][0] for r in captioner.nearest(cond, k=1)]
    return hyps


def evaluate_captioner(
    captioner: Any,
    *,
    n: int = 500,
    beam: int = 3,
    refs: int = 5,
    meteor: bool = False,
    tokenizer: str | None = None,
    text_run: Any = None,
    n_examples: int = 5,
    image_features: Any = None,
    progress: bool = False,
    scenes: Any = None,
) -> CaptionEvalResult:
    """Score a :class:`prh.caption.Captioner` on ``n`` held-out scenes of its world.

    Parameters
    ----------
    captioner : Captioner
        From :func:`prh.caption.load_captioner`; its manifest names the world (a corpus world
        with its path) and the text run.
    n : int
        Test scenes (the first ``n`` of the world's test split; a corpus's test images).
    beam : int
        Beam width of the beam row (>= 2; the greedy row is always there).
    refs : int
        Reference captions per scene (a corpus image gives the first ``refs`` of its own).
    meteor : bool
        Also compute METEOR (starts a Java process; slow).
    tokenizer : {"ptb", "simple"}, optional
        Caption tokenisation before scoring; default ``ptb`` (COCO's) when ``java`` is on the
        PATH, else ``simple``.
    text_run : LoadedRun or path, optional
        The text JEPA for the oracle row; default the run recorded in the manifest (the oracle
        row is skipped, with a note, when it cannot be found, or when an image has no caption
        beyond its references).
    n_examples : int
        Scenes kept as examples.
    image_features : path-like, optional
        A ``prh embed`` image feature file of the test scenes (same vision encoder), used
        instead of encoding the renders again.
    scenes : sequence of int, optional
        The test scenes scored (each in the world's test split), instead of the first ``n``.

    Raises
    ------
    InputError
        For ``n`` or ``beam`` out of range.
    """
    world, seed = manifest_world(captioner.info)
    test = world.split("test")
    if scenes is None and not 1 <= n <= len(test):
        raise InputError(f"--n must be in 1..{len(test)} (the world's test scenes), got {n}")
    if beam < 2:
        raise InputError(f"--beam for the beam row must be >= 2, got {beam}")
    scenes = _test_scenes(test, n, scenes)
    ids = [world.image_id(i) for i in scenes]
    references = {k: world.captions(i, refs, seed) for k, i in zip(ids, scenes)}
    t0 = time.perf_counter()
    cond = captioner.conditions(scene_features(captioner, world, scenes, image_features, progress))
    secs = {"encode_s": time.perf_counter() - t0}
    hyps = caption_rows(captioner, cond, beam, seed, secs)
    recall, notes = _oracle_row(captioner, text_run, world, (ids, scenes), references, seed, cond,
                                hyps, secs)  # fmt: skip
    tokenizer = tokenizer or ("ptb" if shutil.which("java") else "simple")
    metrics = ("BLEU-4", "METEOR", "ROUGE-L", "CIDEr") if meteor else ("BLEU-4", "ROUGE-L", "CIDEr")
    t0 = time.perf_counter()
    _say(progress, f"scoring {len(hyps)} methods ({', '.join(metrics)}, {tokenizer} tokenizer)")
    scores = score_rows(references, ids, hyps, metrics, tokenizer)
    secs["score_s"] = time.perf_counter() - t0
    examples = [{"scene": scenes[j], "references": references[ids[j]]}
                | {name: h[j] for name, h in hyps.items()}
                for j in range(min(n_examples, len(scenes)))]  # fmt: skip
    info = captioner.info
    config = {"world_seed": seed, "beam": beam, "alpha": captioner.alpha, "refs": refs,
              "tokenizer": tokenizer, "vision": info.get("vision"), "map": info.get("map"),
              "text_run": info.get("text_run"), "notes": notes}  # fmt: skip
    return CaptionEvalResult(len(scenes), metrics, scores, recall, examples, config, secs)


def score_rows(
    references: dict[str, list[str]], ids: list[str], hyps: dict[str, list[str]],
    metrics: tuple[str, ...], tokenizer: str,
) -> dict[str, dict[str, float]]:  # fmt: skip
    """Method -> metric -> corpus score of each method's captions against ``references``."""
    from prh.bridge.caption_metrics import score_captions

    return {name: score_captions(references, dict(zip(ids, h)), metrics=metrics,
                                 tokenizer=tokenizer) for name, h in hyps.items()}  # fmt: skip


def _floors(captioner: Any, cond: Any, seed: int) -> dict[str, list[str]]:
    """The unconditional and shuffled-map rows (module docstring), greedy."""
    import numpy as np

    cond = np.asarray(cond)
    n = len(cond)
    mean = cond.mean(0, keepdims=True).astype(cond.dtype)  # (1, E): one caption serves all
    unconditional = captioner.generate(mean, beam=1) * n
    rng = np.random.default_rng([seed, 0x5F1])
    shift = int(rng.integers(1, n)) if n > 1 else 0
    perm = (np.arange(n) + shift) % n  # a derangement for n > 1: no scene keeps its own
    return {UNCONDITIONAL_ROW: unconditional,
            SHUFFLED_ROW: captioner.generate(cond[perm], beam=1)}  # fmt: skip


def _oracle_row(captioner, text_run, world, rows, references, seed, cond, hyps, secs):
    """The oracle row: the decoder (or nearest caption) on the text JEPA's embedding of a held
    -out caption, added to ``hyps``; returns ``(recall of the oracle embedding from the image
    conditions, notes)``. Skipped, with a note, when the text run cannot be found."""
    from prh.bridge import retrieval
    from prh.caption.pipeline import resolve_text_run

    ids, scenes = rows
    info = captioner.info
    has_decoder = getattr(captioner, "kind", "decoder") == "decoder"
    recall: dict[str, float] = {}
    notes: list[str] = []
    run = text_run
    if run is None or not hasattr(run, "embed_texts"):
        from prh.training import load_run

        try:
            if run is None and captioner.folder is None:
                raise InputError("the captioner has no folder to find its text run from")
            path = run or resolve_text_run(captioner.folder, info)
            run = load_run(path, device="cpu")
        except Exception as e:  # the oracle is optional: a moved text run only drops it
            run = None
            notes.append(f"oracle skipped: text run not found ({type(e).__name__}: {e})")
    oracle_caps = [_oracle_caption(world, i, references[k], seed + 1) for k, i in zip(ids, scenes)]
    if run is not None and None in oracle_caps:
        run = None
        notes.append("oracle skipped: an image has no caption beyond its references")
    if run is not None:
        t0 = time.perf_counter()
        oc = captioner.normalizer.transform(run.embed_texts(oracle_caps))  # (n, E)
        oracle = "decoder" if has_decoder else "nearest caption"
        hyps[f"oracle ({oracle} on the text embedding)"] = captioner.generate(oc, beam=1)
        r = retrieval(cond, oc, ks=(1, 5, 10))
        recall = {f"R@{k}": float(v) for k, v in r.x_to_y.items()}
        secs["oracle_s"] = time.perf_counter() - t0
    return recall, notes


def compare_captioners(
    zero_pair: CaptionEvalResult, paired: CaptionEvalResult, metric: str = "CIDEr"
) -> dict[str, Any]:
    """A zero-pair captioner against the paired one and the nearest-caption baseline.

    Both results must score the same scenes against the same references (same ``n``, world
    seed, references per scene and tokenizer). Each captioner's row is its greedy decoder, or its
    nearest-caption row when it has no decoder; the baseline is the paired run's nearest caption.

    Returns
    -------
    dict
        ``metric``; ``paired``, ``zero_pair``, ``nearest_caption`` (scores, x 1 as computed);
        ``ratio`` = zero-pair / paired; ``paired_beats_nearest``; ``rows`` (which row each is);
        ``n``, ``refs``; and, where the paired run has a decoder, the floors that see the map
        (``unconditional``, ``shuffled``: the paired run's rows), ``oracle`` (its oracle row)
        and ``paired_beats_floors`` / ``zero_pair_beats_floors``.
    """
    keys = ("world_seed", "refs", "tokenizer")
    a = {k: zero_pair.config.get(k) for k in keys} | {"n": zero_pair.n}
    b = {k: paired.config.get(k) for k in keys} | {"n": paired.n}
    if a != b:
        raise InputError(f"the two evaluations scored different references: {a} vs {b}")
    if metric not in paired.metrics or metric not in zero_pair.metrics:
        raise InputError(f"metric {metric!r} was not computed in both evaluations")

    def row(r: CaptionEvalResult) -> str:
        return GREEDY_ROW if GREEDY_ROW in r.scores else NEAREST_ROW

    z, p = zero_pair.scores[row(zero_pair)][metric], paired.scores[row(paired)][metric]
    near = paired.scores[NEAREST_ROW][metric]
    floors = {}
    if UNCONDITIONAL_ROW in paired.scores:
        u, sh = paired.scores[UNCONDITIONAL_ROW][metric], paired.scores[SHUFFLED_ROW][metric]
        oracle = next((v[metric] for k, v in paired.scores.items() if k.startswith("oracle")),
                      None)  # fmt: skip
        floors = {"unconditional": u, "shuffled": sh, "oracle": oracle,
                  "paired_beats_floors": bool(p > max(u, sh)),
                  "zero_pair_beats_floors": bool(z > max(u, sh))}  # fmt: skip
    return floors | {
        "metric": metric,
        "paired": p,
        "zero_pair": z,
        "nearest_caption": near,
        "ratio": z / p if p > 0 else float("nan"),
        "paired_beats_nearest": bool(p > near),
        "rows": {"paired": row(paired), "zero_pair": row(zero_pair), "nearest": NEAREST_ROW},
        "n": paired.n,
        "refs": paired.config.get("refs"),
    }
