"""Any ``transformers`` model as a frozen encoder: ``hf:PATH_OR_ID`` and its variants.

Following the PRH protocol (Huh et al. 2024, ``minyoungg/platonic-rep``), every layer is pooled
to one vector per input:

- **text models** (encoder-only like BERT, causal like GPT-2/Llama, the encoder stack of an
  encoder-decoder model like T5, or a two-tower model's text tower) give every hidden state,
  the embedding output included -> ``(N, L + 1, D)``, pooled by ``avg`` (mean over real tokens,
  ``f_l = sum_t m_t h_{l,t} / sum_t m_t``, the reference's choice for language models), ``last``
  (the last real token) or ``cls`` (the first token). Causal language models are padded on the
  left, with position ids counted from the first real token, so every row sees exactly its
  unpadded sequence and ``last`` is its real last token; other models are padded on the right.
- **vision models** (``main_input_name == "pixel_values"``: ViT, DINOv2, a CLIP/SigLIP vision
  tower) give the output of every block -> ``(N, L, D)``, pooled by ``cls`` (token 0, the
  reference's choice for ViTs, the default when the model has a class token), ``avg`` (all
  tokens: the default without one, as in SigLIP) or ``last``; models whose hidden states are
  feature maps ``(B, C, H, W)`` (ConvNeXt, ResNet) give their spatial mean.

Spec prefixes: ``hf:`` picks the tower of a two-tower model (CLIP, SigLIP) by the modality asked
for; ``hf-text:`` / ``hf-vision:`` name it; ``random:`` before any of them builds the same
architecture from its config with seeded random weights (the no-pretraining control).

Pre-processing comes from the model's own ``AutoTokenizer`` / ``AutoImageProcessor``. A local folder
is loaded from disk; any other string is a hub id, which works for users who have the hub (or a
cache); offline it fails with one clear line.
"""

from __future__ import annotations

import inspect
import math
import os
from pathlib import Path

import numpy as np

from prh.encoders.base import DEFAULT_OPTIONS, Encoder, EncoderOptions, stack_layers
from prh.errors import InputError

MAX_TEXT_TOKENS = 512
TOWERS = {"hf:": None, "hf-text:": "text", "hf-vision:": "image"}


def split_hf_spec(spec: str) -> tuple[str, str | None, bool]:
    """``[random:]hf[-text|-vision]:PATH`` -> ``(PATH, tower or None, random_init)``."""
    rest = spec[len("random:") :] if spec.startswith("random:") else spec
    for prefix, tower in TOWERS.items():
        if rest.startswith(prefix):
            return rest[len(prefix) :], tower, rest is not spec
    raise InputError(f"{spec!r}: expected hf:, hf-text: or hf-vision: (optionally after random:)")


def is_hf_spec(spec: str) -> bool:
    """True for ``hf:``, ``hf-text:``, ``hf-vision:`` specs, with or without ``random:``."""
    rest = spec[len("random:") :] if spec.startswith("random:") else spec
    return rest.startswith(tuple(TOWERS))


def load_hf_encoder(
    spec: str,
    *,
    modality: str | None = None,
    seed: int = 0,
    threads: int | None = None,
    options: EncoderOptions = DEFAULT_OPTIONS,
) -> Encoder:
    """Load an ``hf:`` spec on ``options.device`` in ``options.dtype``.

    Parameters
    ----------
    spec : str
        ``[random:]hf[-text|-vision]:PATH_OR_ID``.
    modality : {"text", "image"}, optional
        The inputs to be encoded: picks the tower of a two-tower model under plain ``hf:``.
    seed : int
        Initialisation seed of ``random:`` specs (torch's global generator is left untouched).
    threads : int, optional
        Intra-op CPU threads.
    options : EncoderOptions

    Raises
    ------
    InputError
        A path that does not exist or is not a model folder, a hub id that cannot be reached,
        a missing device, a tower the model does not have.
    """
    path_or_id, tower, random_init = split_hf_spec(spec)
    source = _model_source(path_or_id, spec)

    import torch
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

    from prh.encoders._torch import set_threads

    device, dtype = check_load_options(options)
    if random_init and (options.load_in_4bit or options.device_map or options.revision):
        raise InputError(f"{spec}: --load-in-4bit/--device-map/--model-revision load weights;"
                         " a random: model has none")  # fmt: skip
    set_threads(threads)
    try:
        config = AutoConfig.from_pretrained(source, revision=options.revision)
        # A causal LM measuring its loss keeps its head: one forward gives states and logits.
        auto = AutoModelForCausalLM if options.lm_loss and is_causal_lm(config) else AutoModel
        if random_init:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(int(seed))
                model = auto.from_config(config)
            model = model.to(dtype)
        else:
            model = auto.from_pretrained(source, **load_kwargs(options, device, dtype))
    except Exception as e:  # a missing file, bad JSON, broken safetensors: many unrelated types
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise InputError(f"{spec}: cannot load the model ({type(e).__name__}: {first})") from None
    model = _pick_tower(model, tower or modality, explicit=tower is not None, spec=spec)
    if getattr(model.config, "is_encoder_decoder", False) and hasattr(model, "get_encoder"):
        model = model.get_encoder()  # T5, BART: the encoder stack is the text representation
    placed = options.device_map is not None or options.load_in_4bit  # transformers placed it
    model = (model if placed else model.to(device)).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    if getattr(model, "main_input_name", "input_ids") == "pixel_values":
        return HFVisionEncoder(model, source, spec, options=options)
    return HFTextEncoder(model, source, spec, options=options)


def check_load_options(options: EncoderOptions):
    """The device and dtype of ``options``, checked with its loading options, before any load.

    Returns
    -------
    device : torch.device
    dtype : torch.dtype

    Raises
    ------
    InputError
        An absent device; bfloat16 on a GPU without it; --device-map without
        accelerate; 4-bit loading without bitsandbytes or without CUDA. One line each.
    """
    import importlib.util

    import torch

    from prh.device import resolve_device
    from prh.encoders._torch import resolve_dtype

    device, dtype = resolve_device(options.device), resolve_dtype(options.dtype)
    if device.type == "cuda" and dtype == torch.bfloat16 and not torch.cuda.is_bf16_supported():
        raise InputError(f"--dtype bfloat16: the GPU of --device {options.device} lacks it;"
                         " use float16 or float32")  # fmt: skip
    if options.device_map is not None and importlib.util.find_spec("accelerate") is None:
        raise InputError(
            "--device-map auto needs accelerate: pip install 'prh[quantize]' (or accelerate)"
        )
    if options.load_in_4bit:
        if importlib.util.find_spec("bitsandbytes") is None:
            raise InputError("--load-in-4bit needs bitsandbytes: pip install 'prh[quantize]'")
        if device.type != "cuda":
            raise InputError(f"--load-in-4bit runs on CUDA only, not --device {options.device}")
    return device, dtype


def load_kwargs(options: EncoderOptions, device, dtype) -> dict:
    """``from_pretrained`` keywords of ``options``: dtype, revision, device map, 4-bit config."""
    kwargs: dict = {"dtype": dtype}
    if options.revision is not None:
        kwargs["revision"] = options.revision
    if options.device_map is not None:
        kwargs["device_map"] = options.device_map
    if options.load_in_4bit:
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=dtype
        )
        kwargs.setdefault("device_map", {"": device.index or 0})
    return kwargs


def _model_source(path_or_id: str, spec: str) -> str:
    """A local model folder (checked) or a hub id, as ``from_pretrained`` takes it."""
    if not path_or_id:
        raise InputError(f"{spec}: needs a path or hub id, e.g. hf:facebook/dinov2-base")
    local = Path(path_or_id).expanduser()
    looks_like_path = path_or_id.startswith(("/", "./", "../", "~")) or os.sep in path_or_id[:1]
    if looks_like_path and not local.exists():
        raise InputError(f"{spec}: no such folder {local}")
    if local.is_file():
        raise InputError(f"{spec}: {local} is a file; expected a transformers model folder")
    if local.exists() and not (local / "config.json").is_file():
        raise InputError(f"{spec}: {local} has no config.json, not a transformers model folder")
    return str(local) if local.exists() else path_or_id


def _pick_tower(model, want: str | None, *, explicit: bool, spec: str):
    """The text or vision tower of a two-tower model; a one-tower model checked against ``want``."""
    towers = {
        "text": getattr(model, "text_model", None),
        "image": getattr(model, "vision_model", None),
    }
    if towers["text"] is not None and towers["image"] is not None:
        if want is None:
            raise InputError(
                f"{spec}: a two-tower model ({type(model).__name__}); name the tower with"
                " hf-text: or hf-vision:"
            )
        return towers[want]
    has = "image" if getattr(model, "main_input_name", "input_ids") == "pixel_values" else "text"
    if explicit and want != has:
        raise InputError(f"{spec}: {type(model).__name__} is a {has} model with no {want} tower")
    return model


def _load_processor(kind: str, source: str, spec: str):
    import transformers

    cls = getattr(transformers, kind)
    try:
        return cls.from_pretrained(source)
    except (OSError, ValueError, KeyError, TypeError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(f"{spec}: cannot load its {kind} ({first})") from None


def is_causal_lm(config) -> bool:
    """A decoder-only language model (GPT-2, Llama, ...): padded on the left.

    Read from transformers' own tables: a model type with a causal-LM head and no masked-LM head
    (BERT and RoBERTa have both and attend both ways).
    """
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    kind = getattr(config, "model_type", "")
    if getattr(config, "is_decoder", False):
        return True
    return (
        kind in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and kind not in MODEL_FOR_MASKED_LM_MAPPING_NAMES
    )


def has_class_token(model) -> bool:
    """True when a vision model prepends a class token (ViT, DINOv2, CLIP: token 0 is CLS)."""
    return any(
        name.split(".")[-1] in ("cls_token", "class_embedding")
        for name, _ in model.named_parameters()
    )


def next_token_stats(logits, input_ids, mask, texts: list[str]) -> list[tuple[float, float]]:
    """Each text's mean next-token cross-entropy (nats) and its bits per UTF-8 byte.

    The reference's convention (``platonic-rep`` ``utils.cross_entropy_loss`` and
    ``cross_entropy_to_bits_per_unit``): token ``t`` predicts token ``t + 1``; the loss of a text is
    the mean over its predicted tokens, its bits per byte the summed loss in bits over the text's
    UTF-8 bytes. Only real tokens count, as predictor and as target, so either padding side gives
    each text the numbers of the text alone.

    Parameters
    ----------
    logits : torch.Tensor
        ``(B, T, V)``.
    input_ids, mask : torch.Tensor
        ``(B, T)``; ``mask`` is 1 on real tokens.
    texts : list of str
        The ``B`` texts as the model saw them (prompt applied).

    Returns
    -------
    list of (float, float)
        ``(loss, bpb)`` per text; ``nan`` for a text of one token (nothing to predict).
    """
    import torch

    ce = torch.nn.functional.cross_entropy(
        logits[:, :-1].float().transpose(1, 2), input_ids[:, 1:], reduction="none"
    )  # (B, T - 1) nats
    valid = (mask[:, :-1] * mask[:, 1:]).to(ce.dtype)
    total = (ce * valid).sum(-1)  # (B,) nats per text
    count = valid.sum(-1)
    loss = torch.where(count > 0, total / count.clamp(min=1), torch.nan)
    n_bytes = torch.tensor([max(len(t.encode("utf-8")), 1) for t in texts], dtype=torch.float32)
    bits = total.cpu() / math.log(2.0)
    bpb = torch.where(count.cpu() > 0, bits / n_bytes, torch.nan)
    return [(float(a), float(b)) for a, b in zip(loss.cpu(), bpb)]


class HFTextEncoder(Encoder):
    """Every hidden state of a ``transformers`` text model, pooled per layer.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A base model (``AutoModel``, or a tower), in eval mode, on its device and dtype.
    source : str
        Folder or hub id of the tokenizer.
    spec : str
        The spec, for messages and metadata.
    max_length : int, optional
        Truncation length in tokens (default: the model's position limit, at most 512).
    options : EncoderOptions
        Pooling (default ``avg``) and prompt; device and dtype are read from the model.
    """

    modality = "text"

    def __init__(
        self,
        model,
        source: str,
        spec: str,
        *,
        max_length: int | None = None,
        options: EncoderOptions = DEFAULT_OPTIONS,
    ):
        super().__init__()
        self.model, self.spec, self.options = model, spec, options
        self.pool = options.pool or "avg"
        self.tokenizer = _load_processor("AutoTokenizer", source, spec)
        cfg = model.config
        self.left_padding = is_causal_lm(cfg)
        self.tokenizer.padding_side = "left" if self.left_padding else "right"
        if self.tokenizer.pad_token is None:
            # GPT-2-style tokenizers have no pad token; its id never matters under the mask.
            fallback = self.tokenizer.eos_token or self.tokenizer.unk_token
            if fallback is None:
                raise InputError(f"{spec}: tokenizer has no pad, eos or unk token to pad with")
            self.tokenizer.pad_token = fallback
        limits = [
            getattr(cfg, k, None) for k in ("max_position_embeddings", "n_positions", "max_length")
        ]
        limits += [getattr(self.tokenizer, "model_max_length", None), MAX_TEXT_TOKENS]
        self.max_length = int(max_length or min(int(x) for x in limits if x and x > 0))
        # (per-text mean next-token loss in nats, per-text bits per UTF-8 byte), when measured
        self.lm_stats: list[tuple[float, float]] = []
        self.measures_loss = options.lm_loss and model.get_output_embeddings() is not None
        params = inspect.signature(model.forward).parameters
        self._inputs = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in params]
        self._positions = self.left_padding and "position_ids" in params
        n_layers = int(getattr(cfg, "num_hidden_layers", 0) or getattr(cfg, "n_layer", 0))
        dim = int(getattr(cfg, "hidden_size", 0) or getattr(cfg, "n_embd", 0))
        self.layer_names = ["embeddings"] + [f"layer{i + 1}" for i in range(n_layers)]
        self.layer_dims = [dim] * (n_layers + 1)

    def tokenize(self, texts: list[str]) -> dict:
        """Padded, truncated model inputs ``(B, T)`` (prompt applied), as torch tensors.

        Under left padding, ``position_ids`` count from each row's first real token (0 on the
        padding), so a left-padded row is computed exactly as the row alone.
        """
        enc = self.tokenizer(
            [self.options.apply_prompt(t) for t in texts],
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        )
        out = {k: enc[k] for k in self._inputs if k in enc}
        if self._positions:
            out["position_ids"] = (enc["attention_mask"].cumsum(-1) - 1).clamp(min=0)
        return out

    def hidden_states(self, texts: list[str]):
        """``(L + 1, B, T, D)`` hidden states (model dtype, device) and the ``(B, T)`` mask.

        A model that measures its loss appends each text's loss and bits per byte to
        :attr:`lm_stats` from the same forward pass.
        """
        import torch

        device = next(self.model.parameters()).device
        enc = {k: v.to(device) for k, v in self.tokenize(texts).items()}
        with torch.inference_mode():
            out = self.model(**enc, output_hidden_states=True)
        if self.measures_loss:
            prompted = [self.options.apply_prompt(t) for t in texts]
            self.lm_stats += next_token_stats(out.logits, enc["input_ids"], enc["attention_mask"],
                                              prompted)  # fmt: skip
        return torch.stack(out.hidden_states), enc["attention_mask"]  # (L+1, B, T, D), (B, T)

    def _encode_text_batch(self, texts: list[str]) -> np.ndarray:
        from prh.encoders._torch import pool_tokens

        hs, mask = self.hidden_states(texts)
        pooled = pool_tokens(hs, mask, self.pool)  # (L+1, B, D) float32
        return pooled.permute(1, 0, 2).contiguous().cpu().numpy()  # (B, L+1, D)


class HFVisionEncoder(Encoder):
    """Every block of a ``transformers`` vision model, pooled (default: the CLS token)."""

    modality = "image"

    def __init__(self, model, source: str, spec: str, *, options: EncoderOptions = DEFAULT_OPTIONS):
        super().__init__()
        self.model, self.spec, self.options = model, spec, options
        # CLS of every block (the reference's choice for ViTs) when there is a class token; a
        # model without one (SigLIP's vision tower pools by attention instead) averages tokens.
        has_cls = has_class_token(model)
        self.pool = options.pool or ("cls" if has_cls else "avg")
        if self.pool == "cls" and not has_cls:
            raise InputError(f"--pool cls: {spec} has no class token; use --pool avg")
        self.processor = _load_processor("AutoImageProcessor", source, spec)
        cfg = model.config
        n_layers = int(getattr(cfg, "num_hidden_layers", 0) or 0)
        self.layer_names = [f"block{i}" for i in range(n_layers)]
        dim = int(getattr(cfg, "hidden_size", 0) or 0)
        self.layer_dims = [dim] * n_layers if dim else []

    def _encode_image_batch(self, images: list[np.ndarray]) -> np.ndarray:
        import torch

        from prh.encoders._torch import pool_tokens, spatial_mean

        param = next(self.model.parameters())
        pixels = self.processor(images=images, return_tensors="pt")["pixel_values"]
        pixels = pixels.to(device=param.device, dtype=param.dtype)
        with torch.inference_mode():
            out = self.model(pixel_values=pixels, output_hidden_states=True)
        states = out.hidden_states
        states = states[1:] if len(states) > 1 else states  # drop the patch-embedding output
        layers = []
        for h in states:
            if h.ndim == 4:  # (B, C, H, W) feature map
                if self.pool != "avg":
                    raise InputError(f"--pool {self.pool}: {self.spec} gives feature maps; use avg")
                layers.append(spatial_mean(h).cpu().numpy())
            else:  # (B, T, D): as platonic-rep takes blocks.{i} output [:, 0] under cls
                mask = torch.ones(h.shape[:2], dtype=torch.int64, device=h.device)
                layers.append(pool_tokens(h, mask, self.pool).cpu().numpy())
        self.layer_names = [f"block{i}" for i in range(len(layers))]
        self.layer_dims = [int(x.shape[1]) for x in layers]
        return stack_layers(layers)  # (B, L, D)
