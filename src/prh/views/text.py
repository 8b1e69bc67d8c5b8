"""Text view samplers: good, bad, next-token and mixture(rho) pairs, tokenised.

Each row of a batch is a positive pair ``(a, b)`` drawn from one item (an image or a scene):

- ``good``: two *different* captions of the item: same state, independent nuisance (wording).
- ``bad``: one caption, two random distortions of it (token masking with ``[MASK]``, a span crop,
  or token drops): same state, *shared* nuisance.
- ``next-token``: the prefix and the continuation of one caption (or of a document made of
  ``doc_captions`` captions of the item) cut at a random token; the whole sequence is also given
  as ``tokens`` for a causal LM. A bad view on the document's wording.
- ``mixture``: each row is good with probability ``rho``, else bad.

``batch(i)`` is a pure function of ``(seed, i)``: the row plan is drawn from
``np.random.default_rng([seed, i])`` for the whole *global* batch and rank ``r`` of ``world_size``
keeps rows ``r::world_size``, so resuming and data parallelism are exact.

Layer: thin stateful wrapper over pure per-row functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from prh.errors import InputError
from prh.views.loader import BatchStream
from prh.views.sources import CaptionSource, as_source
from prh.views.tokenizer import TextTokenizer

KINDS = ("good", "bad", "next-token", "mixture")
BAD_OPS = ("mask", "crop", "drop")


@dataclass(frozen=True)
class ViewConfig:
    """Options of the text view samplers.

    Attributes
    ----------
    bad_ops : tuple of str
        Distortions a bad view draws from (each side independently): ``"mask"`` (each token
        replaced by ``[MASK]`` with probability ``mask_prob``), ``"crop"`` (a contiguous span of
        at least ``crop_min`` of the tokens), ``"drop"`` (each token dropped with ``drop_prob``).
    doc_captions : int
        Next-token: captions of the item concatenated into one document (1: a single caption).
    """

    bad_ops: tuple[str, ...] = BAD_OPS
    mask_prob: float = 0.25
    drop_prob: float = 0.25
    crop_min: float = 0.5
    doc_captions: int = 1


def distort(
    ids: Sequence[int], op: str, rng: np.random.Generator, cfg: ViewConfig, mask_id: int
) -> list[int]:
    """One bad-view distortion of a token list (no specials); never returns an empty list."""
    ids = list(ids)
    n = len(ids)
    if n <= 1:
        return ids
    if op == "mask":
        hit = rng.random(n) < cfg.mask_prob
        if hit.all():
            hit[rng.integers(n)] = False
        return [mask_id if h else t for t, h in zip(ids, hit)]
    if op == "crop":
        length = int(rng.integers(max(1, int(np.ceil(cfg.crop_min * n))), n + 1))
        start = int(rng.integers(0, n - length + 1))
        return ids[start : start + length]
    if op == "drop":
        keep = rng.random(n) >= cfg.drop_prob
        if not keep.any():
            keep[rng.integers(n)] = True
        return [t for t, k in zip(ids, keep) if k]
    raise InputError(f"views: unknown bad-view op {op!r}; expected one of {', '.join(BAD_OPS)}")


class ViewDataset(BatchStream):
    """Batches of tokenised positive pairs; see the module docstring.

    Use :func:`make_view_dataset` to build one. ``iter(ds)`` yields ``batch(ds.start)``,
    ``batch(ds.start + 1)``, ... forever.
    """

    def __init__(
        self,
        source: CaptionSource,
        kind: str,
        tokenizer: TextTokenizer,
        *,
        rho: float,
        batch_size: int,
        max_len: int,
        seed: int,
        rank: int,
        world_size: int,
        config: ViewConfig,
    ) -> None:
        self.source = source
        self.kind = kind
        self.tokenizer = tokenizer
        self.rho = rho
        self.batch_size = batch_size
        self.max_len = max_len
        self.seed = seed
        self.rank = rank
        self.world_size = world_size
        self.config = config
        self.start = 0

    def rows(self) -> range:
        """Rows of the global batch this rank keeps."""
        return range(self.rank, self.batch_size, self.world_size)

    def plan(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Global row plan of batch ``i``: item indices (B,), good flags (B,), row seeds (B,)."""
        if i < 0:
            raise InputError(f"views: batch index must be >= 0, got {i}")
        rng = np.random.default_rng([self.seed, int(i)])
        B = self.batch_size
        items = rng.integers(0, self.source.num_items, size=B)
        u = rng.random(B)
        if self.kind == "good":
            good = np.ones(B, dtype=bool)
        elif self.kind == "mixture":
            good = u < self.rho
        else:
            good = np.zeros(B, dtype=bool)
        row_seeds = rng.integers(0, 2**62, size=B)
        return items, good, row_seeds

    def batch(self, i: int) -> dict:
        """Batch ``i`` for this rank: a pure function of ``(seed, i, rank, world_size)``.

        Returns
        -------
        dict
            ``a``, ``b``: LongTensor ``(B, T)``; ``a_mask``, ``b_mask``: BoolTensor ``(B, T)``;
            ``good``: BoolTensor ``(B,)``; ``state``: LongTensor ``(B,)`` the state of both sides
            (image index in a corpus, scene index in the world);
            ``nuisance_a``, ``nuisance_b``: LongTensor ``(B,)`` nuisance ids; ``index``: the
            global row numbers; for next-token also ``tokens``, ``tokens_mask`` ``(B, T)``.
        """
        import torch

        items, good, row_seeds = self.plan(i)
        rows = list(self.rows())
        rngs = [np.random.default_rng(int(row_seeds[r])) for r in rows]
        drawn = [self._texts(int(items[r]), bool(good[r]), rr) for r, rr in zip(rows, rngs)]
        ids = self.tokenizer.tokenize([t for caps, _ in drawn for t in caps])
        pairs, at = [], 0
        for rr, (caps, nuis) in zip(rngs, drawn):
            toks = ids[at : at + len(caps)]
            at += len(caps)
            kind = "good" if len(caps) == 2 else self.kind if self.kind == "next-token" else "bad"
            pairs.append(
                (*PAIRS[kind](self, toks, rr), nuis[0], nuis[-1] if kind == "good" else nuis[0])
            )
        out = {}
        tok = self.tokenizer
        out["a"], out["a_mask"] = tok.pad([p[0] for p in pairs], self.max_len)
        out["b"], out["b_mask"] = tok.pad([p[1] for p in pairs], self.max_len)
        if self.kind == "next-token":
            out["tokens"], out["tokens_mask"] = tok.pad([p[2] for p in pairs], self.max_len)
        out["good"] = torch.from_numpy(good[rows].copy())
        out["state"] = torch.from_numpy(self.source.state_of(items[rows]))
        out["nuisance_a"] = torch.tensor([p[3] for p in pairs], dtype=torch.int64)
        out["nuisance_b"] = torch.tensor([p[4] for p in pairs], dtype=torch.int64)
        out["index"] = torch.tensor(rows, dtype=torch.int64)
        return out

    def _texts(self, item: int, good: bool, rr: np.random.Generator) -> tuple[list[str], list]:
        """The captions one row needs, with their nuisance ids: two for a good row, else one
        (for next-token with ``doc_captions > 1``: one document of several, joined)."""
        if good:
            return self.source.draw(item, 2, rr)
        if self.kind == "next-token" and self.config.doc_captions > 1:
            # A document: several captions of the item in a random order, one text.
            n_doc = min(self.config.doc_captions, self.source.min_captions())
            caps, nuis = self.source.draw(item, n_doc, rr)
            return [" ".join(caps)], nuis[:1]
        return self.source.draw(item, 1, rr)

    def stats(self, n_batches: int = 8) -> dict:
        """Pair statistics over global batches ``0 .. n_batches - 1``.

        Returns
        -------
        dict
            ``kind``, ``rho``, ``pairs``, ``good_fraction``, ``share_state`` (fraction of pairs
            whose sides come from one item), ``share_nuisance`` (fraction whose sides come from one
            caption / wording), ``identical`` (fraction with identical token sequences).
        """
        full = ViewDataset(
            self.source,
            self.kind,
            self.tokenizer,
            rho=self.rho,
            batch_size=self.batch_size,
            max_len=self.max_len,
            seed=self.seed,
            rank=0,
            world_size=1,
            config=self.config,
        )
        return pair_statistics(
            [full.batch(i) for i in range(n_batches)], kind=self.kind, rho=self.rho
        )


def pair_statistics(batches: Sequence[dict], kind: str = "", rho: float | None = None) -> dict:
    """Pair statistics of text or image view batches (see :meth:`ViewDataset.stats`)."""
    import torch

    good = torch.cat([b["good"] for b in batches]).float()
    state = torch.cat([b["state"] for b in batches])
    state_b = torch.cat([b.get("state_b", b["state"]) for b in batches])
    na = torch.cat([b["nuisance_a"] for b in batches])
    nb = torch.cat([b["nuisance_b"] for b in batches])
    identical = []
    for b in batches:
        x, y = b["a"], b["b"]
        if x.shape == y.shape:
            same = (x == y).reshape(len(x), -1).all(dim=1)
            if "a_mask" in b:
                same &= (b["a_mask"] == b["b_mask"]).all(dim=1)
        else:
            same = torch.zeros(len(x), dtype=torch.bool)
        identical.append(same)
    n = len(good)
    return {
        "kind": kind,
        "rho": rho,
        "pairs": n,
        "good_fraction": float(good.mean()) if n else 0.0,
        "share_state": float((state == state_b).float().mean()) if n else 0.0,
        "share_nuisance": float((na == nb).float().mean()) if n else 0.0,
        "identical": float(torch.cat(identical).float().mean()) if n else 0.0,
    }


def _good_pair(ds: ViewDataset, toks: list, rr: np.random.Generator) -> tuple:
    """Good: two captions of the item, as they are."""
    return ds.tokenizer.wrap(toks[0], ds.max_len), ds.tokenizer.wrap(toks[1], ds.max_len), None


def _bad_pair(ds: ViewDataset, toks: list, rr: np.random.Generator) -> tuple:
    """Bad: two independent distortions of one caption (shared wording)."""
    body, ops, tok = toks[0][: ds.max_len - 2], ds.config.bad_ops, ds.tokenizer
    a = distort(body, ops[rr.integers(len(ops))], rr, ds.config, tok.mask_id)
    b = distort(body, ops[rr.integers(len(ops))], rr, ds.config, tok.mask_id)
    return tok.wrap(a, ds.max_len), tok.wrap(b, ds.max_len), None


def _next_token_pair(ds: ViewDataset, toks: list, rr: np.random.Generator) -> tuple:
    """Next-token: a caption's (or document's) prefix and continuation, cut at a random token,
    and the whole sequence for the causal LM."""
    body, tok = toks[0][: ds.max_len - 2], ds.tokenizer
    cut = int(rr.integers(1, len(body))) if len(body) >= 2 else len(body)
    whole = tok.wrap(body, ds.max_len)
    return tok.wrap(body[:cut], ds.max_len), tok.wrap(body[cut:], ds.max_len), whole


# How a row of each kind becomes a pair (a mixture's rows are good or bad): one place per kind.
PAIRS = {"good": _good_pair, "bad": _bad_pair, "next-token": _next_token_pair}


def make_view_dataset(
    corpus,
    kind: str,
    tokenizer: TextTokenizer,
    *,
    rho: float = 1.0,
    batch_size: int = 64,
    max_len: int = 48,
    seed: int = 0,
    rank: int = 0,
    world_size: int = 1,
    config: ViewConfig | None = None,
) -> ViewDataset:
    """Build a text :class:`ViewDataset`.

    Parameters
    ----------
    corpus : CaptionCorpus, CaveWorld or CaptionSource
        Where captions come from. A world gives fresh wordings of its train scenes
        (:class:`~prh.views.sources.WorldCaptionSource`).
    kind : {"good", "bad", "next-token", "mixture"}
        The view policy; ``rho`` is the fraction of good rows for ``"mixture"``.
    tokenizer : TextTokenizer
        Turns text into ids.
    batch_size : int
        The *global* batch size; rank ``r`` keeps rows ``r::world_size``.
    max_len : int
        Tokens per sequence, ``[BOS]`` and ``[EOS]`` included.
    seed : int
        ``batch(i)`` is a pure function of ``(seed, i)``.
    """
    if kind not in KINDS:
        raise InputError(f"views: unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    if not 0.0 <= float(rho) <= 1.0:
        raise InputError(f"views: rho must be in [0, 1], got {rho}")
    if batch_size < 1:
        raise InputError(f"views: batch_size must be >= 1, got {batch_size}")
    if max_len < 3:
        raise InputError(f"views: max_len must be >= 3, got {max_len}")
    if world_size < 1 or not 0 <= rank < world_size:
        raise InputError(
            f"views: need 0 <= rank < world_size, got rank={rank}, world_size={world_size}"
        )
    cfg = config or ViewConfig()
    bad_ops = tuple(o for o in cfg.bad_ops if o not in BAD_OPS)
    if bad_ops or not cfg.bad_ops:
        raise InputError(
            f"views: bad_ops must be a non-empty subset of {BAD_OPS}, got {cfg.bad_ops}"
        )
    source = as_source(corpus)
    rho = {"good": 1.0, "bad": 0.0, "next-token": 0.0}.get(kind, float(rho))
    if rho > 0 and source.min_captions() < 2:
        counts = getattr(source, "_counts", None)
        few = int((counts < 2).sum()) if counts is not None else source.num_items
        raise InputError(
            f"views: {kind} views need two captions per image, but {few} of {source.num_items} "
            f"images have fewer (drop them with min_captions=2, on_few='drop')"
        )
    return ViewDataset(
        source,
        kind,
        tokenizer,
        rho=rho,
        batch_size=batch_size,
        max_len=max_len,
        seed=seed,
        rank=rank,
        world_size=world_size,
        config=cfg,
    )
