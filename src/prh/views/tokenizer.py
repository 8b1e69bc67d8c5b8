"""``TextTokenizer``: a small WordPiece or BPE vocabulary trained with Hugging Face ``tokenizers``.

Special tokens of a trained tokenizer: ``[PAD]`` = 0, ``[UNK]`` = 1, ``[CLS]`` = 2 (also BOS),
``[SEP]`` = 3 (also EOS), ``[MASK]`` = 4. Text is lower-cased and accents are stripped. One file,
``tokenizer.json``, holds everything; :meth:`TextTokenizer.from_pretrained` wraps the
``tokenizer.json`` of any Hugging Face tokenizer folder (BERT ids 0/100/101/102/103).

Layer: a thin wrapper; ``encode_batch`` returns tensors ready for a model.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from prh.errors import InputError

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


class TextTokenizer:
    """Wraps a ``tokenizers.Tokenizer`` and knows its special ids.

    Sequences are ``[BOS] tokens [EOS]`` (``[CLS] ... [SEP]`` for BERT-style vocabularies),
    truncated to ``max_len`` (the EOS is kept) and right-padded with ``pad_id``.
    """

    def __init__(self, tokenizer, *, source: str = "") -> None:  # tokenizers.Tokenizer
        # Hub tokenizer.json files often carry padding/truncation settings (MiniLM pads to 128);
        # this wrapper adds specials, truncates and pads itself.
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self._tok = tokenizer
        self.source = source
        vocab = tokenizer.get_vocab()

        def first(*names: str) -> int | None:
            for n in names:
                if n in vocab:
                    return int(vocab[n])
            return None

        pad = first("[PAD]", "<pad>")
        unk = first("[UNK]", "<unk>")
        bos = first("[CLS]", "<s>", "<bos>", "<|endoftext|>")
        eos = first("[SEP]", "</s>", "<eos>", "<|endoftext|>")
        mask = first("[MASK]", "<mask>")
        missing = [n for n, v in (("pad", pad), ("bos/cls", bos), ("eos/sep", eos)) if v is None]
        if missing:
            raise InputError(
                f"tokenizer {source or '<memory>'}: no {', '.join(missing)} token in the vocabulary"
            )
        self.pad_id: int = pad  # type: ignore[assignment]
        self.unk_id: int = unk if unk is not None else pad  # type: ignore[assignment]
        self.bos_id: int = bos  # type: ignore[assignment]
        self.eos_id: int = eos  # type: ignore[assignment]
        # Without a mask token, masking falls back to UNK (still a single, shared nuisance).
        self.mask_id: int = mask if mask is not None else self.unk_id
        self.special_ids = frozenset(v for v in (pad, unk, bos, eos, mask) if v is not None)

    # ----------------------------------------------------------------------------------------
    @classmethod
    def train(
        cls,
        texts: Iterable[str],
        vocab_size: int = 4096,
        kind: str = "wordpiece",
        min_frequency: int = 1,
    ) -> TextTokenizer:
        """Train a tokenizer on ``texts``.

        Parameters
        ----------
        texts : iterable of str
            The training text (for example ``corpus.texts()``).
        vocab_size : int
            Upper bound on the vocabulary, specials included (the corpus may give fewer).
        kind : {"wordpiece", "bpe"}
            The model: WordPiece (BERT-style ``##`` continuations) or BPE.
        min_frequency : int
            Merges must be seen this often.
        """
        from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

        from prh.views.vocab import build_vocab

        if vocab_size < len(SPECIALS) + 2:
            raise InputError(
                f"tokenizer: vocab_size must be >= {len(SPECIALS) + 2}, got {vocab_size}"
            )
        if kind not in ("wordpiece", "bpe"):
            raise InputError(f"tokenizer: kind must be 'wordpiece' or 'bpe', got {kind!r}")
        normalizer = normalizers.Sequence(
            [normalizers.NFD(), normalizers.Lowercase(), normalizers.StripAccents()]
        )
        pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        texts = list(texts)
        if not texts:
            raise InputError("tokenizer: cannot train on an empty list of texts")
        # Merges are learned in Python (prh.views.vocab): the tokenizers trainers break ties in a
        # per-process hash order, so the same texts gave a different vocabulary in every process.
        words = (
            w for t in texts for w, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(t))
        )
        vocab, merges = build_vocab(words, SPECIALS, vocab_size, kind, min_frequency)
        if kind == "wordpiece":
            tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]"))
            tok.decoder = decoders.WordPiece()
        else:
            tok = Tokenizer(
                models.BPE(vocab=vocab, merges=merges, unk_token="[UNK]", end_of_word_suffix="</w>")
            )
            tok.decoder = decoders.BPEDecoder(suffix="</w>")
        tok.normalizer = normalizer
        tok.pre_tokenizer = pre_tokenizer
        tok.add_special_tokens(list(SPECIALS))  # already ids 0..4; marks them special for decode
        return cls(tok, source=f"trained {kind}")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TextTokenizer:
        """Load a ``tokenizer.json`` file (or a folder holding one)."""
        from tokenizers import Tokenizer

        p = Path(path)
        if p.is_dir():
            p = p / "tokenizer.json"
        if not p.is_file():
            raise InputError(f"tokenizer {p}: file not found")
        try:
            tok = Tokenizer.from_file(str(p))
        except Exception as e:  # tokenizers raises plain Exception subclasses
            raise InputError(f"tokenizer {p}: not a tokenizers JSON file ({e})") from None
        return cls(tok, source=str(p))

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike[str]) -> TextTokenizer:
        """Wrap the tokenizer of a Hugging Face model folder (its ``tokenizer.json``).

        Folders with only a ``vocab.txt`` (BERT WordPiece) are converted with BERT's
        normalisation (lower-case, accents stripped).
        """
        p = Path(path)
        if (p / "tokenizer.json").is_file():
            return cls.load(p / "tokenizer.json")
        if (p / "vocab.txt").is_file():
            from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

            vocab = {
                w.rstrip("\n"): j for j, w in enumerate(open(p / "vocab.txt", encoding="utf-8"))
            }
            tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
            tok.normalizer = normalizers.BertNormalizer(lowercase=True)
            tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
            tok.decoder = decoders.WordPiece()
            return cls(tok, source=str(p))
        raise InputError(f"tokenizer {p}: no tokenizer.json or vocab.txt in this folder")

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write ``tokenizer.json`` atomically (``path`` is the file)."""
        from prh.io import atomic_write

        text = self._tok.to_str()
        with atomic_write(path, "w") as f:
            f.write(text)

    def to_str(self) -> str:
        """The tokenizer as a JSON string."""
        return self._tok.to_str()

    # ----------------------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return int(self._tok.get_vocab_size(with_added_tokens=True))

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text, without specials."""
        return [e.ids for e in self._tok.encode_batch(list(texts), add_special_tokens=False)]

    def wrap(self, ids: Sequence[int], max_len: int) -> list[int]:
        """``[BOS] ids [EOS]``, truncated to ``max_len`` with the EOS kept."""
        body = list(ids)[: max(0, max_len - 2)]
        return [self.bos_id, *body, self.eos_id][:max_len]

    def pad(self, seqs: Sequence[Sequence[int]], max_len: int | None = None):
        """Right-pad id lists into ``(ids LongTensor (B, T), mask BoolTensor (B, T))``.

        ``T`` is the longest sequence (at most ``max_len``, at least 1).
        """
        import torch

        T = max([len(s) for s in seqs] + [1])
        if max_len is not None:
            T = min(T, max_len)
        ids = np.full((len(seqs), T), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(seqs), T), dtype=bool)
        for j, s in enumerate(seqs):
            s = list(s)[:T]
            ids[j, : len(s)] = s
            mask[j, : len(s)] = True
        return torch.from_numpy(ids), torch.from_numpy(mask)

    def encode_batch(self, texts: Sequence[str], max_len: int = 48):
        """Encode ``texts`` as ``[BOS] tokens [EOS]``.

        Returns
        -------
        ids : torch.LongTensor
            ``(B, T)``, ``T <= max_len`` the longest sequence, padded with ``pad_id``.
        mask : torch.BoolTensor
            ``(B, T)``, True on real tokens.
        """
        if max_len < 2:
            raise InputError(f"tokenizer: max_len must be >= 2, got {max_len}")
        return self.pad([self.wrap(s, max_len) for s in self.tokenize(texts)], max_len)

    def decode(self, ids) -> str:
        """Text of ``ids`` (a list or a 1-D tensor), specials and padding skipped."""
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        return self._tok.decode([int(i) for i in ids], skip_special_tokens=True)

    def __repr__(self) -> str:
        return f"TextTokenizer(vocab_size={self.vocab_size}, source={self.source!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TextTokenizer) and json.loads(self.to_str()) == json.loads(
            other.to_str()
        )

    __hash__ = None  # type: ignore[assignment]
