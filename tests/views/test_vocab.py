"""The deterministic merge learner behind TextTokenizer.train."""

import itertools
import subprocess
import sys
from collections import Counter

import pytest

from prh.views import TextTokenizer
from prh.views.vocab import build_vocab, join_pair, learn_merges, word_symbols


def _slow_merges(counts: dict[str, int], kind: str, n: int) -> list[tuple[str, str]]:
    """Obvious reference: recount every pair from scratch after each merge."""
    words = {w: list(word_symbols(w, kind)) for w in counts}
    merges = []
    for _ in range(n):
        pairs: Counter = Counter()
        for w, s in words.items():
            for p in itertools.pairwise(s):
                pairs[p] += counts[w]
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        for w, s in words.items():
            out, j = [], 0
            while j < len(s):
                if j + 1 < len(s) and (s[j], s[j + 1]) == best:
                    out.append(join_pair(*best, kind))
                    j += 2
                else:
                    out.append(s[j])
                    j += 1
            words[w] = out
    return merges


@pytest.mark.parametrize("kind", ["wordpiece", "bpe"])
def test_incremental_merges_equal_the_slow_reference(kind: str) -> None:
    counts = {"lower": 5, "low": 7, "newest": 6, "widest": 3, "aaaa": 4, "banana": 2, "x": 9}
    _, fast = learn_merges(counts, kind, 30)
    assert fast == _slow_merges(counts, kind, 30)


def test_vocab_holds_specials_first_and_whole_words() -> None:
    vocab, _ = build_vocab(["red", "cube", "red", "cone"], ["[PAD]", "[UNK]"], 100, "wordpiece", 1)
    assert vocab["[PAD]"] == 0 and vocab["[UNK]"] == 1
    assert {"red", "cube", "cone", "##e"} <= set(vocab)
    small, _ = build_vocab(["red", "cube", "cone"], ["[PAD]"], 12, "wordpiece", 1)
    assert len(small) == 12  # 1 special + 8 symbols + the 3 most frequent merges


_TRAIN = """
import hashlib, sys
from prh.views import TextTokenizer
texts = [f"a {c} {s} is {p} of the {c2} {s}" for c in ("red", "blue", "green")
         for s in ("cube", "cone", "sphere") for p in ("left", "right") for c2 in ("tan", "pink")]
tok = TextTokenizer.train(texts, vocab_size=60, kind=sys.argv[1])
tok.save(sys.argv[2])
"""


@pytest.mark.parametrize("kind", ["wordpiece", "bpe"])
def test_same_texts_give_the_same_tokenizer_in_every_process(tmp_path, kind: str) -> None:
    # The tokenizers trainers gave a different vocabulary in every process (hash-seeded ties).
    paths = [tmp_path / f"t{i}.json" for i in range(3)]
    for p in paths:
        subprocess.run([sys.executable, "-c", _TRAIN, kind, str(p)], check=True)
    blobs = {p.read_bytes() for p in paths}
    assert len(blobs) == 1
    tok = TextTokenizer.load(paths[0])
    assert tok.vocab_size <= 60
    ids, _ = tok.encode_batch(["a red cube is left of the tan cube"], 16)
    assert tok.decode(ids[0].tolist()) == "a red cube is left of the tan cube"
