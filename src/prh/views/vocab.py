"""Deterministic subword vocabularies (WordPiece and BPE) learned by pair merges.

Hugging Face ``tokenizers``' trainers are fast but not reproducible across processes: ties between
equally frequent pairs are broken in hash-map order, which Rust seeds per process, so one corpus
gave three different vocabularies in three runs. A seed must give identical results, so we learn
the merges here (the classic BPE loop of Sennrich et al. 2016, with an incremental pair index and a
lazy max-heap) and break every tie by the pair's text. ``tokenizers`` still does the encoding.

WordPiece symbols: a word's first character as is, the others with a ``##`` prefix (BERT style);
a merge of ``a`` and ``##b`` is ``ab``. BPE symbols: characters, the last one with ``</w>``.
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter, defaultdict
from collections.abc import Iterable

Pair = tuple[str, str]


def word_symbols(word: str, kind: str) -> tuple[str, ...]:
    """A word split into initial symbols (see the module doc)."""
    if kind == "wordpiece":
        return (word[0], *("##" + c for c in word[1:]))
    return (*word[:-1], word[-1] + "</w>")


def join_pair(a: str, b: str, kind: str) -> str:
    """The symbol a merge of ``a`` and ``b`` makes."""
    return a + b[2:] if kind == "wordpiece" else a + b


def learn_merges(
    word_counts: dict[str, int], kind: str, max_merges: int, min_frequency: int = 1
) -> tuple[list[str], list[Pair]]:
    """Learn up to ``max_merges`` merges from word counts; deterministic.

    Parameters
    ----------
    word_counts : dict
        Pre-tokenised words and how often each occurs.
    kind : {"wordpiece", "bpe"}
        The symbol convention.
    max_merges : int
        Budget of merges (the vocabulary grows by one symbol per merge).
    min_frequency : int
        A pair must occur at least this often (and at least twice: a pair seen once saves nothing
        but is kept when ``min_frequency`` is 1, so that every word can become one token).

    Returns
    -------
    alphabet : list of str
        The initial symbols, sorted.
    merges : list of (str, str)
        Merges in the order learned: most frequent pair first, ties by the pair's text.
    """
    words = sorted(word_counts)  # a fixed order, whatever the input's
    syms = [list(word_symbols(w, kind)) for w in words]
    freq = [int(word_counts[w]) for w in words]
    alphabet = sorted({s for ws in syms for s in ws})
    counts: dict[Pair, int] = defaultdict(int)
    where: dict[Pair, set[int]] = defaultdict(set)
    for i, ws in enumerate(syms):
        for p in itertools.pairwise(ws):
            counts[p] += freq[i]
            where[p].add(i)
    # Lazy max-heap: entries are (-count, pair); stale ones are skipped when popped.
    heap = [(-c, p) for p, c in counts.items()]
    heapq.heapify(heap)
    merges: list[Pair] = []
    floor = max(1, min_frequency)
    while heap and len(merges) < max_merges:
        neg, pair = heapq.heappop(heap)
        if counts.get(pair, 0) != -neg or -neg <= 0:
            continue
        if -neg < floor:
            break
        merges.append(pair)
        new = join_pair(*pair, kind)
        touched: dict[Pair, int] = {}
        for i in sorted(where.pop(pair)):
            ws, f = syms[i], freq[i]
            for p in itertools.pairwise(ws):
                counts[p] -= f
                touched[p] = counts[p]
            merged = syms[i] = _merged(ws, pair, new)
            for p in itertools.pairwise(merged):
                counts[p] += f
                where[p].add(i)
                touched[p] = counts[p]
        counts.pop(pair, None)
        for p in touched:
            c = counts.get(p, 0)
            if c > 0:
                heapq.heappush(heap, (-c, p))
            else:
                counts.pop(p, None)
                where.pop(p, None)
    return alphabet, merges


def _merged(ws: list[str], pair: Pair, new: str) -> list[str]:
    """``ws`` with every occurrence of ``pair``, left to right, replaced by ``new``."""
    merged, j = [], 0
    while j < len(ws):
        if j + 1 < len(ws) and (ws[j], ws[j + 1]) == pair:
            merged.append(new)
            j += 2
        else:
            merged.append(ws[j])
            j += 1
    return merged


def build_vocab(
    words: Iterable[str], specials: Iterable[str], vocab_size: int, kind: str, min_frequency: int
) -> tuple[dict[str, int], list[Pair]]:
    """Specials, then the alphabet, then merged symbols in merge order, as ``token -> id``."""
    word_counts = Counter(w for w in words if w)
    specials = list(specials)
    alphabet, _ = learn_merges(word_counts, kind, 0)
    budget = max(0, vocab_size - len(specials) - len(alphabet))
    alphabet, merges = learn_merges(word_counts, kind, budget, min_frequency)
    vocab: dict[str, int] = {}
    for tok in [*specials, *alphabet, *(join_pair(a, b, kind) for a, b in merges)]:
        vocab.setdefault(tok, len(vocab))
    return vocab, merges
