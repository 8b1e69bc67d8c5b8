"""TextTokenizer: trained WordPiece/BPE, save/load, HF folders, padding and truncation."""

import pytest
import torch

from prh.errors import InputError
from prh.views import TextTokenizer

TEXTS = [
    "A small red cube on the left",
    "a big blue sphere in the middle",
    "Two cats sleep on a sofa",
    "the green cone is next to the yellow ring",
] * 20


@pytest.mark.parametrize("kind", ["wordpiece", "bpe"])
def test_train_save_load(tmp_path, kind):
    tok = TextTokenizer.train(TEXTS, vocab_size=300, kind=kind)
    assert (tok.pad_id, tok.unk_id, tok.bos_id, tok.eos_id, tok.mask_id) == (0, 1, 2, 3, 4)
    assert tok.vocab_size <= 300
    ids, mask = tok.encode_batch(["a small red cube", "two cats"], max_len=16)
    assert ids.dtype == torch.int64 and mask.dtype == torch.bool and ids.shape == mask.shape
    assert ids[0, 0] == tok.bos_id and (ids[~mask] == tok.pad_id).all()
    last = mask.sum(1) - 1
    assert (ids[torch.arange(2), last] == tok.eos_id).all()
    assert tok.decode(ids[0]) == "a small red cube"
    tok.save(tmp_path / "tokenizer.json")
    again = TextTokenizer.load(tmp_path / "tokenizer.json")
    assert again == tok
    assert torch.equal(again.encode_batch(TEXTS[:4])[0], tok.encode_batch(TEXTS[:4])[0])


def test_truncation_keeps_eos():
    tok = TextTokenizer.train(TEXTS, vocab_size=200)
    ids, mask = tok.encode_batch([" ".join(TEXTS[:4])], max_len=8)
    assert ids.shape == (1, 8) and mask.all()
    assert ids[0, 0] == tok.bos_id and ids[0, -1] == tok.eos_id


def test_from_pretrained_folder(tmp_path):
    tok = TextTokenizer.train(TEXTS, vocab_size=200)
    want = tok.encode_batch(["a small red cube"], max_len=16)[0]
    (tmp_path / "hf").mkdir()
    tok._tok.enable_padding(length=24)  # hub files often pad and truncate (MiniLM: 128)
    tok._tok.enable_truncation(max_length=30)
    (tmp_path / "hf" / "tokenizer.json").write_text(tok._tok.to_str())
    hub = TextTokenizer.from_pretrained(tmp_path / "hf")
    assert torch.equal(hub.encode_batch(["a small red cube"], max_len=16)[0], want)
    # A BERT-style folder with only vocab.txt: [PAD]=0 ... ids as listed.
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "red", "cube", "##s"]
    (tmp_path / "bert").mkdir()
    (tmp_path / "bert" / "vocab.txt").write_text("\n".join(words) + "\n")
    bert = TextTokenizer.from_pretrained(tmp_path / "bert")
    ids, _ = bert.encode_batch(["A red cubes"], max_len=10)
    assert ids[0].tolist() == [2, 5, 6, 7, 8, 3]
    with pytest.raises(InputError, match=r"no tokenizer\.json or vocab\.txt"):
        TextTokenizer.from_pretrained(tmp_path)


def test_errors(tmp_path):
    with pytest.raises(InputError, match="kind must be"):
        TextTokenizer.train(TEXTS, kind="unigram")
    with pytest.raises(InputError, match="empty list"):
        TextTokenizer.train([])
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(InputError, match="not a tokenizers JSON"):
        TextTokenizer.load(tmp_path / "bad.json")
    with pytest.raises(InputError, match="file not found"):
        TextTokenizer.load(tmp_path / "none.json")
