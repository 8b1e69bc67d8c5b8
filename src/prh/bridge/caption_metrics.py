"""Caption scores: BLEU-4, METEOR, ROUGE-L and CIDEr(-D) from ``pycocoevalcap`` [1]_, no SPICE.

:func:`score_captions` is what ``prh caption --eval`` reports. :func:`cider_d` is an independent
pure-Python CIDEr-D [2]_ that the tests check against a hand computation and against
``pycocoevalcap``'s scorer (which is CIDEr-D despite its name): tf-idf n-gram vectors (n = 1..4)
with document frequencies over the reference sets, ``idf = log(#images) - log(max(1, df))``,
hypothesis weights clipped at the reference's, a Gaussian length penalty
``exp(-(l_h - l_r)^2 / (2 sigma^2))`` with ``sigma = 6`` (lengths counted in bigrams, as the
reference code does), averaged over n and references, times 10.

References
----------
.. [1] X. Chen et al., "Microsoft COCO Captions: Data Collection and Evaluation Server", 2015.
.. [2] R. Vedantam, C. L. Zitnick, D. Parikh, "CIDEr: Consensus-based Image Description
   Evaluation", CVPR 2015.
"""

from __future__ import annotations

import math
import re
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence

from prh.errors import InputError, PrhError

__all__ = ["METRICS", "cider_d", "score_captions", "simple_tokenize"]

METRICS = ("BLEU-4", "METEOR", "ROUGE-L", "CIDEr")

_PUNCT = re.compile(r"[^\w\s]")


def simple_tokenize(text: str) -> str:
    """Lower-case, drop punctuation, collapse whitespace (a Java-free stand-in for PTB)."""
    return " ".join(_PUNCT.sub(" ", text.lower()).split())


def _ngrams(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    counts: Counter[tuple[str, ...]] = Counter()
    for k in range(1, n + 1):
        for i in range(len(tokens) - k + 1):
            counts[tuple(tokens[i : i + k])] += 1
    return counts


def _check(refs: Mapping[str, Sequence[str]], hyps: Mapping[str, str]) -> list[str]:
    if set(refs) != set(hyps):
        only_r = sorted(set(refs) - set(hyps))[:3]
        only_h = sorted(set(hyps) - set(refs))[:3]
        raise InputError(
            f"references and hypotheses must cover the same ids: only in references {only_r}, "
            f"only in hypotheses {only_h}"
        )
    for k, r in refs.items():
        if isinstance(r, str) or len(r) == 0:
            raise InputError(f"id {k!r}: expected a non-empty list of reference captions")
    return sorted(refs)


def cider_d(
    refs: Mapping[str, Sequence[str]], hyps: Mapping[str, str], n: int = 4, sigma: float = 6.0
) -> tuple[float, dict[str, float]]:
    """CIDEr-D of tokenised captions (tokens separated by spaces).

    Parameters
    ----------
    refs : mapping
        Image id -> list of reference captions.
    hyps : mapping
        Image id -> one hypothesis caption.
    n : int
        Largest n-gram order.
    sigma : float
        Width of the Gaussian length penalty.

    Returns
    -------
    mean : float
        Corpus CIDEr-D (mean over images).
    per_image : dict
        Image id -> CIDEr-D.
    """
    ids = _check(refs, hyps)
    cref = {i: [_ngrams(r.split(), n) for r in refs[i]] for i in ids}
    ctest = {i: _ngrams(hyps[i].split(), n) for i in ids}
    df: Counter[tuple[str, ...]] = Counter()
    for i in ids:
        df.update({g for c in cref[i] for g in c})
    log_images = math.log(float(len(ids)))

    def vec(counts: Counter[tuple[str, ...]]):
        v: list[dict[tuple[str, ...], float]] = [{} for _ in range(n)]
        for g, tf in counts.items():
            v[len(g) - 1][g] = tf * (log_images - math.log(max(1.0, df[g])))
        norms = [math.sqrt(sum(w * w for w in d.values())) for d in v]
        length = sum(
            tf for g, tf in counts.items() if len(g) == 2
        )  # bigram count, as in [2]'s code
        return v, norms, length

    per: dict[str, float] = {}
    for i in ids:
        vh, nh, lh = vec(ctest[i])
        total = 0.0
        for c in cref[i]:
            vr, nr, lr = vec(c)
            penalty = math.exp(-((lh - lr) ** 2) / (2 * sigma**2))
            for k in range(n):
                dot = sum(min(w, vr[k].get(g, 0.0)) * vr[k].get(g, 0.0) for g, w in vh[k].items())
                if nh[k] != 0 and nr[k] != 0:
                    total += dot / (nh[k] * nr[k]) * penalty / n
        per[i] = 10.0 * total / len(cref[i])
    return sum(per.values()) / len(per), per


def _ptb_tokenize(texts: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    return PTBTokenizer().tokenize({k: [{"caption": c} for c in v] for k, v in texts.items()})


def score_captions(
    refs: Mapping[str, Sequence[str]],
    hyps: Mapping[str, str],
    metrics: Sequence[str] = METRICS,
    tokenizer: str = "ptb",
) -> dict[str, float]:
    """Corpus scores of hypotheses against references with ``pycocoevalcap``.

    Parameters
    ----------
    refs : mapping
        Image id -> list of reference captions (raw text).
    hyps : mapping
        Image id -> one generated caption (raw text).
    metrics : sequence of str
        Any of ``BLEU-4``, ``METEOR``, ``ROUGE-L``, ``CIDEr``.
    tokenizer : {"ptb", "simple"}
        ``ptb``: the Stanford PTB tokenizer COCO uses (Java); ``simple``: :func:`simple_tokenize`.

    Returns
    -------
    dict
        Metric name -> corpus score (BLEU, METEOR, ROUGE-L in [0, 1]; CIDEr in [0, 10]).

    Raises
    ------
    PrhError
        When METEOR or the PTB tokenizer is asked for and ``java`` is not on the PATH.
    """
    ids = _check(refs, hyps)
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise InputError(f"unknown caption metric(s) {unknown}, expected some of {METRICS}")
    if shutil.which("java") is None:
        # name the flag that asked for Java: `prh caption --eval --meteor` / `--tokenizer ptb`
        if "METEOR" in metrics:
            raise PrhError(
                "METEOR needs Java (no java on the PATH): install a JRE, or drop --meteor"
            )
        if tokenizer == "ptb":
            raise PrhError(
                "the PTB tokenizer needs Java (no java on the PATH): install a JRE or use "
                "--tokenizer simple"
            )
    if tokenizer == "ptb":
        gts = _ptb_tokenize({i: list(refs[i]) for i in ids})
        res = _ptb_tokenize({i: [hyps[i]] for i in ids})
    elif tokenizer == "simple":
        gts = {i: [simple_tokenize(c) for c in refs[i]] for i in ids}
        res = {i: [simple_tokenize(hyps[i])] for i in ids}
    else:
        raise InputError(f"unknown tokenizer {tokenizer!r}, expected 'ptb' or 'simple'")
    out: dict[str, float] = {}
    if "BLEU-4" in metrics:
        from pycocoevalcap.bleu.bleu import Bleu

        out["BLEU-4"] = float(Bleu(4).compute_score(gts, res, verbose=0)[0][3])
    if "METEOR" in metrics:
        from pycocoevalcap.meteor.meteor import Meteor

        scorer = Meteor()  # starts a Java subprocess; its __del__ stops it
        out["METEOR"] = float(scorer.compute_score(gts, res)[0])
        del scorer
    if "ROUGE-L" in metrics:
        from pycocoevalcap.rouge.rouge import Rouge

        out["ROUGE-L"] = float(Rouge().compute_score(gts, res)[0])
    if "CIDEr" in metrics:
        from pycocoevalcap.cider.cider import Cider

        out["CIDEr"] = float(Cider().compute_score(gts, res)[0])
    return out
