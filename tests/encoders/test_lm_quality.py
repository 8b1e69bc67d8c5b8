"""Loss and bits per byte of a language model, stored in its feature file (issue 24, item 5)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import prh.cli
from prh.features import load_features

pytest.importorskip("datasets")


def _by_hand(folder, texts: list[str]) -> tuple[float, float]:
    """Each text alone, unpadded: mean CE over its predicted tokens; summed bits / UTF-8 bytes."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    lm = AutoModelForCausalLM.from_pretrained(folder).eval()
    losses, bpbs = [], []
    for text in texts:
        ids = tok(text, return_tensors="pt")["input_ids"]  # (1, T)
        with torch.no_grad():
            logits = lm(input_ids=ids).logits[0]  # (T, V)
        logp = torch.log_softmax(logits.double(), dim=-1)
        nats = -sum(float(logp[t, ids[0, t + 1]]) for t in range(ids.shape[1] - 1))
        losses.append(nats / (ids.shape[1] - 1))
        bpbs.append(nats / math.log(2) / len(text.encode("utf-8")))
    return float(np.mean(losses)), float(np.mean(bpbs))


@pytest.mark.parametrize("suffix", [".pt", ".safetensors"])
def test_loss_and_bpb_equal_a_hand_computation(
    tmp_path, tiny_dataset, tiny_gpt2, table_captions, suffix, monkeypatch
):
    monkeypatch.setattr(prh.cli, "COMMANDS", {"embed": prh.cli.COMMANDS["embed"]})
    folder, _ = tiny_dataset
    out = tmp_path / f"gpt2{suffix}"
    argv = ["embed", f"hf:{tiny_gpt2}", "--dataset", str(folder), "--modality", "text"]
    argv += ["--batch-size", "2", "--threads", "1", "--no-progress", "--out", str(out)]
    assert prh.cli.main(argv) == 0  # batches of 2, left-padded: padding must not count
    loss, bpb = _by_hand(tiny_gpt2, [c[0] for c in table_captions])
    fs = load_features(out)
    assert float(fs.metadata["loss"]) == pytest.approx(loss, rel=1e-5)
    assert float(fs.metadata["bpb"]) == pytest.approx(bpb, rel=1e-5)
    if suffix == ".pt":  # the reference's keys, as it stores them
        blob = torch.load(out, weights_only=True)
        assert float(blob["loss"]) == pytest.approx(loss, rel=1e-5)
        assert float(blob["bpb"]) == pytest.approx(bpb, rel=1e-5)
    # Features are those of the model without its head (the loss changes nothing else).
    from prh.encoders import load_encoder

    plain = load_encoder(f"hf:{tiny_gpt2}").encode_texts([c[0] for c in table_captions])
    np.testing.assert_allclose(fs.features, plain, rtol=1e-4, atol=1e-5)


def test_no_loss_for_an_encoder_or_when_asked(
    tmp_path, tiny_dataset, tiny_bert, tiny_gpt2, monkeypatch
):
    monkeypatch.setattr(prh.cli, "COMMANDS", {"embed": prh.cli.COMMANDS["embed"]})
    folder, _ = tiny_dataset
    base = ["--dataset", str(folder), "--modality", "text", "--threads", "1", "--no-progress"]
    a, b = tmp_path / "bert.pt", tmp_path / "gpt2.pt"
    assert prh.cli.main(["embed", f"hf:{tiny_bert}", *base, "--out", str(a)]) == 0
    assert prh.cli.main(["embed", f"hf:{tiny_gpt2}", *base, "--no-lm-loss", "--out", str(b)]) == 0
    for f in (a, b):
        assert "bpb" not in load_features(f).metadata
