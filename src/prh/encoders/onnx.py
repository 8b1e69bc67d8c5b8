"""An ONNX model as a frozen encoder: ``onnx:PATH``, run with onnxruntime on CPU.

Input convention
----------------
- **Text model**: it has an input named ``input_ids`` (int64 or int32, ``(B, T)``) and optionally
  ``attention_mask`` and ``token_type_ids`` (same shape). The tokenizer lies beside the model: a
  Hugging Face tokenizer folder (``tokenizer_config.json`` + files) or a bare ``tokenizer.json``
  (from the ``tokenizers`` library) in the same folder as ``PATH``. Padding is on the right.
- **Image model**: one float input of shape ``(B, 3, H, W)``. Images are resized (shorter side,
  PIL bicubic, centre crop) to ``H x W`` when the model fixes them, else to ``image_size``
  (default 224), and scaled as ``(RGB / 255 - mean) / std`` with ``mean = std = 0.5``
  (so ``[-1, 1]``); pass other ``mean``/``std`` for models trained otherwise.

Output convention
-----------------
Every output, in the model's order, gives layers:
``(B, D)`` one layer; for a text model ``(B, T, D)`` with ``T`` the input length is token states,
mean-pooled over the mask; otherwise ``(B, L, D)`` is ``L`` layers; ``(B, C, H, W)`` is a feature
map, averaged over space. Layers are zero-padded to the widest.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from prh.encoders.base import IMAGE_MEAN, IMAGE_STD, Encoder, images_to_tensor_input, stack_layers
from prh.errors import InputError

TEXT_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
MAX_TEXT_TOKENS = 512


class OnnxEncoder(Encoder):
    """Frozen ONNX encoder (see the module docstring for the input and output convention).

    Parameters
    ----------
    path : str or Path
        The ``.onnx`` file.
    image_size : int
        Input side for image models whose input size is not fixed in the graph.
    mean, std : float
        Image normalisation ``(RGB / 255 - mean) / std``.
    max_length : int
        Truncation of text inputs, in tokens.
    threads : int, optional
        onnxruntime intra-op threads.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        image_size: int = 224,
        mean: float = IMAGE_MEAN,
        std: float = IMAGE_STD,
        max_length: int = MAX_TEXT_TOKENS,
        threads: int | None = None,
    ) -> None:
        super().__init__()
        p = Path(path).expanduser()
        self.spec = f"onnx:{path}"
        self.session = _open_session(p, self.spec, threads)
        self.inputs = {i.name: i for i in self.session.get_inputs()}
        self.mean, self.std, self.max_length = float(mean), float(std), int(max_length)
        if "input_ids" in self.inputs:
            self.modality = "text"
            self.tokenizer = _load_tokenizer(p.parent, self.spec)
            return
        self.modality = "image"
        self._image_input, self.image_size = _image_input(self.inputs, self.spec, image_size)

    def _run(self, feeds: dict) -> list[np.ndarray]:
        return self.session.run(None, feeds)

    def _encode_text_batch(self, texts: list[str]) -> np.ndarray:
        enc = self.tokenizer(
            texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="np"
        )
        mask = enc["attention_mask"].astype(np.int64)  # (B, T)
        feeds = {}
        for name in TEXT_INPUTS:
            if name not in self.inputs:
                continue
            arr = enc[name] if name in enc else np.zeros_like(mask)
            dtype = np.int32 if self.inputs[name].type == "tensor(int32)" else np.int64
            feeds[name] = arr.astype(dtype)
        outs = self._run(feeds)
        return self._to_layers(outs, mask)

    def _encode_image_batch(self, images: list[np.ndarray]) -> np.ndarray:
        x = images_to_tensor_input(images, self.image_size, self.mean, self.std)  # (B, 3, S, S)
        outs = self._run({self._image_input: x})
        return self._to_layers(outs, None)

    def _to_layers(self, outs: list[np.ndarray], mask: np.ndarray | None) -> np.ndarray:
        layers: list[np.ndarray] = []
        for k, out in enumerate(outs):
            o = np.asarray(out, dtype=np.float32)
            if o.ndim == 2:  # (B, D)
                layers.append(o)
            elif o.ndim == 3 and mask is not None and o.shape[1] == mask.shape[1]:  # (B, T, D)
                m = mask.astype(np.float32)[:, :, None]  # (B, T, 1)
                layers.append((o * m).sum(1) / np.maximum(m.sum(1), 1.0))
            elif o.ndim == 3:  # (B, L, D)
                layers.extend(o[:, i, :] for i in range(o.shape[1]))
            elif o.ndim == 4:  # (B, C, H, W)
                layers.append(o.mean(axis=(2, 3)))
            else:
                raise InputError(f"{self.spec}: output {k} has shape {o.shape}, not a feature")
        self.layer_dims = [int(x.shape[1]) for x in layers]
        self.layer_names = [f"layer{i}" for i in range(len(layers))]
        return stack_layers(layers)


def _load_tokenizer(folder: Path, spec: str):
    """The tokenizer beside an ONNX text model: an HF folder or a bare ``tokenizer.json``."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    if (folder / "tokenizer_config.json").is_file():
        tok = AutoTokenizer.from_pretrained(str(folder))
    elif (folder / "tokenizer.json").is_file():
        tok = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))
    else:
        raise InputError(
            f"{spec}: a text model needs its tokenizer beside it ({folder}/tokenizer.json)"
        )
    tok.padding_side = "right"
    if tok.pad_token is None:
        vocab = tok.get_vocab()
        for cand in ("[PAD]", "<pad>", tok.eos_token, tok.unk_token, "[UNK]", "<unk>"):
            if cand is not None and cand in vocab:
                tok.pad_token = cand
                break
        else:
            raise InputError(f"{spec}: tokenizer has no pad, eos or unk token to pad with")
    return tok


def _open_session(p: Path, spec: str, threads: int | None):
    """An onnxruntime CPU session on the file ``p``; a bad path or graph is one line."""
    if p.is_dir():
        raise InputError(f"{spec}: {p} is a folder, expected an .onnx file")
    if not p.is_file():
        raise InputError(f"{spec}: no such file {p}")
    try:
        import onnxruntime as ort
    except ImportError:
        raise InputError(f"{spec}: needs onnxruntime (pip install onnxruntime)") from None
    opts = ort.SessionOptions()
    if threads is not None:
        opts.intra_op_num_threads = max(1, int(threads))
    opts.log_severity_level = 3
    try:
        return ort.InferenceSession(str(p), sess_options=opts, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime raises its own Fail/InvalidGraph types
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(f"{spec}: not a loadable ONNX model ({first})") from None


def _image_input(inputs: dict, spec: str, image_size: int) -> tuple[str, int]:
    """The one ``(B, 3, H, W)`` input's name and side (fixed in the graph, or ``image_size``)."""
    image_inputs = [i for i in inputs.values() if len(i.shape) == 4]
    if len(inputs) != 1 or not image_inputs:
        got = {i.name: i.shape for i in inputs.values()}
        raise InputError(
            f"{spec}: expected an 'input_ids' text input or one (B, 3, H, W) image input, got {got}"
        )
    inp = image_inputs[0]
    h, w = inp.shape[2], inp.shape[3]
    fixed = isinstance(h, int) and isinstance(w, int)
    if fixed and h != w:
        raise InputError(f"{spec}: non-square image input {h}x{w} is not supported")
    return inp.name, int(h) if fixed else int(image_size)
