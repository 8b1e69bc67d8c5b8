"""Any ``transformers`` model as a frozen encoder: ``hf:PATH_OR_ID``.

Following the PRH protocol (Huh et al. 2024, ``minyoungg/platonic-rep``):

- **text models** (encoder-only like BERT, or causal like GPT-2/Llama, loaded with ``AutoModel``)
  give every hidden state, the embedding output included, mean-pooled over valid tokens:
  ``f_l = sum_t m_t h_{l,t} / sum_t m_t`` -> ``(N, L + 1, D)``. Padding is on the right, so causal
  models see exactly the unpadded sequence at every valid position.
- **vision models** (``main_input_name == "pixel_values"``, e.g. ViT, DINOv2) give the CLS token
  (token 0) of the output of every block -> ``(N, L, D)``; models whose hidden states are feature
  maps ``(B, C, H, W)`` (ConvNeXt, ResNet) give their spatial mean instead, zero-padded to the
  widest stage.

Pre-processing comes from the model's own ``AutoTokenizer`` / ``AutoImageProcessor``. A local folder
is loaded from disk; any other string is a hub id, which works for users who have the hub (or a
cache); offline it fails with one clear line.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import numpy as np

from prh.encoders.base import Encoder, stack_layers
from prh.errors import InputError

MAX_TEXT_TOKENS = 512


def load_hf_encoder(path_or_id: str, *, spec: str | None = None, threads: int | None = None):
    """Load ``hf:PATH_OR_ID``, choosing the text or vision wrapper from the model's main input.

    Raises
    ------
    InputError
        A path that does not exist, a folder that is not a model, or a hub id that cannot be
        reached.
    """
    spec = spec or f"hf:{path_or_id}"
    if not path_or_id:
        raise InputError("hf: spec needs a path or hub id, e.g. hf:facebook/dinov2-base")
    local = Path(path_or_id).expanduser()
    looks_like_path = path_or_id.startswith(("/", "./", "../", "~")) or os.sep in path_or_id[:1]
    if looks_like_path and not local.exists():
        raise InputError(f"{spec}: no such folder {local}")
    if local.exists() and not (local / "config.json").is_file():
        raise InputError(f"{spec}: {local} has no config.json, not a transformers model folder")
    source = str(local) if local.exists() else path_or_id

    import torch
    from transformers import AutoModel

    from prh.encoders._torch import set_threads

    set_threads(threads)
    try:
        model = AutoModel.from_pretrained(source)
    except (OSError, ValueError, KeyError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(f"{spec}: cannot load the model ({first})") from None
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    if getattr(model, "main_input_name", "input_ids") == "pixel_values":
        return HFVisionEncoder(model, source, spec, torch)
    return HFTextEncoder(model, source, spec, torch)


def _load_processor(kind: str, source: str, spec: str):
    import transformers

    cls = getattr(transformers, kind)
    try:
        return cls.from_pretrained(source)
    except (OSError, ValueError, KeyError, TypeError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(f"{spec}: cannot load its {kind} ({first})") from None


class HFTextEncoder(Encoder):
    """Every hidden state of a ``transformers`` text model, mean-pooled over valid tokens.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A base model (``AutoModel``) in eval mode.
    source : str
        Folder or hub id of the tokenizer.
    spec : str
        The spec, for messages and metadata.
    max_length : int, optional
        Truncation length in tokens (default: the model's position limit, at most 512).
    """

    modality = "text"

    def __init__(self, model, source: str, spec: str, torch_module, max_length: int | None = None):
        super().__init__()
        self.model, self.spec, self._torch = model, spec, torch_module
        self.tokenizer = _load_processor("AutoTokenizer", source, spec)
        self.tokenizer.padding_side = "right"
        if self.tokenizer.pad_token is None:
            # GPT-2-style tokenizers have no pad token; its id never matters under the mask.
            fallback = self.tokenizer.eos_token or self.tokenizer.unk_token
            if fallback is None:
                raise InputError(f"{spec}: tokenizer has no pad, eos or unk token to pad with")
            self.tokenizer.pad_token = fallback
        cfg = model.config
        limits = [
            getattr(cfg, k, None) for k in ("max_position_embeddings", "n_positions", "max_length")
        ]
        limits += [getattr(self.tokenizer, "model_max_length", None), MAX_TEXT_TOKENS]
        self.max_length = int(max_length or min(int(x) for x in limits if x and x > 0))
        params = inspect.signature(model.forward).parameters
        self._inputs = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in params]
        n_layers = int(getattr(cfg, "num_hidden_layers", 0) or getattr(cfg, "n_layer", 0))
        dim = int(getattr(cfg, "hidden_size", 0) or getattr(cfg, "n_embd", 0))
        self.layer_names = ["embeddings"] + [f"layer{i + 1}" for i in range(n_layers)]
        self.layer_dims = [dim] * (n_layers + 1)

    def tokenize(self, texts: list[str]) -> dict:
        """Right-padded, truncated token ids and mask ``(B, T)``, as torch tensors."""
        enc = self.tokenizer(
            texts,
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        )
        return {k: enc[k] for k in self._inputs if k in enc}

    def hidden_states(self, texts: list[str]):
        """``(L + 1, B, T, D)`` hidden states and the ``(B, T)`` mask of a batch."""
        torch = self._torch
        enc = self.tokenize(texts)
        with torch.inference_mode():
            out = self.model(**enc, output_hidden_states=True)
        return torch.stack(out.hidden_states), enc["attention_mask"]  # (L+1, B, T, D), (B, T)

    def _encode_text_batch(self, texts: list[str]) -> np.ndarray:
        from prh.encoders._torch import masked_mean

        hs, mask = self.hidden_states(texts)
        pooled = masked_mean(hs, mask)  # (L+1, B, D)
        return pooled.permute(1, 0, 2).contiguous().numpy()  # (B, L+1, D)


class HFVisionEncoder(Encoder):
    """The CLS token (or pooled map) of every block of a ``transformers`` vision model."""

    modality = "image"

    def __init__(self, model, source: str, spec: str, torch_module):
        super().__init__()
        self.model, self.spec, self._torch = model, spec, torch_module
        self.processor = _load_processor("AutoImageProcessor", source, spec)
        cfg = model.config
        n_layers = int(getattr(cfg, "num_hidden_layers", 0) or 0)
        self.layer_names = [f"block{i}" for i in range(n_layers)]
        dim = int(getattr(cfg, "hidden_size", 0) or 0)
        self.layer_dims = [dim] * n_layers if dim else []

    def _encode_image_batch(self, images: list[np.ndarray]) -> np.ndarray:
        from prh.encoders._torch import spatial_mean

        torch = self._torch
        pixels = self.processor(images=images, return_tensors="pt")["pixel_values"]
        with torch.inference_mode():
            out = self.model(pixel_values=pixels, output_hidden_states=True)
        states = out.hidden_states
        states = states[1:] if len(states) > 1 else states  # drop the patch-embedding output
        layers = []
        for h in states:
            if h.ndim == 4:  # (B, C, H, W) feature map
                layers.append(spatial_mean(h).numpy())
            else:  # (B, T, D): CLS token, as platonic-rep takes blocks.{i} output [:, 0]
                layers.append(h[:, 0].to(torch.float32).numpy())
        self.layer_names = [f"block{i}" for i in range(len(layers))]
        self.layer_dims = [int(x.shape[1]) for x in layers]
        return stack_layers(layers)  # (B, L, D)
