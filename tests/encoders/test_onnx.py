"""onnx:PATH on tiny torch models exported to ONNX inside the test."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from prh.encoders import load_encoder
from prh.encoders.base import images_to_tensor_input
from prh.errors import InputError

pytest.importorskip("onnx", reason="torch.onnx.export needs the onnx package")
pytest.importorskip("onnxruntime")


class TinyCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(4, 6, 3, stride=2, padding=1)

    def forward(self, x):
        h1 = torch.relu(self.conv1(x))  # (B, 4, H, W)
        h2 = torch.relu(self.conv2(h1))  # (B, 6, H/2, W/2)
        return h1, h2.mean(dim=(2, 3))  # a feature map and a (B, D) vector


class TinyText(torch.nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, 8)
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, input_ids, attention_mask):
        h = torch.tanh(self.lin(self.emb(input_ids)))  # (B, T, 8) token states
        return h


def _export(model, args, path, names, dynamic):
    model.eval()
    torch.onnx.export(model, args, str(path), input_names=names, dynamic_axes=dynamic, dynamo=False)


@pytest.fixture(scope="module")
def image_onnx(tmp_path_factory):
    torch.manual_seed(0)
    model = TinyCNN()
    path = tmp_path_factory.mktemp("onnx-img") / "cnn.onnx"
    _export(model, (torch.zeros(1, 3, 24, 24),), path, ["pixels"], {"pixels": {0: "B"}})
    return model, path


def test_onnx_image_matches_torch(image_onnx, images):
    model, path = image_onnx
    enc = load_encoder(f"onnx:{path}")
    assert enc.modality == "image" and enc.image_size == 24  # fixed by the graph
    feats = enc.encode_images(images, batch_size=2)
    assert feats.shape == (3, 2, 6)
    assert enc.layer_dims == [4, 6]
    x = torch.from_numpy(images_to_tensor_input(images, 24))
    with torch.no_grad():
        h1, v = model(x)
    np.testing.assert_allclose(feats[:, 0, :4], h1.mean(dim=(2, 3)).numpy(), atol=1e-5)
    np.testing.assert_allclose(feats[:, 0, 4:], 0.0)
    np.testing.assert_allclose(feats[:, 1], v.numpy(), atol=1e-5)
    with pytest.raises(InputError, match="takes images, not texts"):
        enc.encode_texts(["a"])


def test_onnx_text_mean_pools_valid_tokens(tmp_path, tiny_bert):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert)
    tok.save_pretrained(tmp_path)  # the tokenizer lies beside the model
    torch.manual_seed(0)
    model = TinyText(len(tok))
    ids = torch.ones(2, 5, dtype=torch.long)
    dyn = {"input_ids": {0: "B", 1: "T"}, "attention_mask": {0: "B", 1: "T"}}
    _export(model, (ids, ids), tmp_path / "text.onnx", ["input_ids", "attention_mask"], dyn)
    enc = load_encoder(f"onnx:{tmp_path / 'text.onnx'}")
    assert enc.modality == "text"
    texts = ["a red cube", "there is a small blue sphere left of a large green cone"]
    feats = enc.encode_texts(texts, batch_size=2)
    assert feats.shape == (2, 1, 8)
    for i, t in enumerate(texts):  # unpadded reference, one sentence at a time
        e = tok(t, return_tensors="pt")
        with torch.no_grad():
            ref = model(e["input_ids"], e["attention_mask"])[0].mean(0).numpy()
        np.testing.assert_allclose(feats[i, 0], ref, atol=1e-5)


def test_onnx_errors(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(InputError, match="not a loadable ONNX model"):
        load_encoder(f"onnx:{bad}")
    torch.manual_seed(0)
    model = TinyText(10)
    ids = torch.ones(1, 3, dtype=torch.long)
    _export(model, (ids, ids), tmp_path / "t.onnx", ["input_ids", "attention_mask"], None)
    with pytest.raises(InputError, match="needs its tokenizer beside it"):
        load_encoder(f"onnx:{tmp_path / 't.onnx'}")
