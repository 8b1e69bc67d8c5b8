"""``prh embed`` as a library call: :func:`embed_to_files` loads each encoder of an
:class:`~prh.encoders.embed_request.EmbedRequest`, embeds its source and writes one feature file
per model (safetensors, or the PRH benchmark's ``.pt``), with metadata that says how it was made.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from pathlib import Path

from prh.encoders.embed_request import EmbedRequest, EmbedSource, open_source


def embed_to_files(req: EmbedRequest) -> list[Path]:
    """Embed one model (``model`` into ``out``) or every model of a list (``models`` into
    ``out_dir``, a file that exists skipped unless ``force``); the feature files written.

    Every input is checked before any model loads; each file is written whole or not at all.
    """
    entries = _entries(req)
    _check_runtime(req, entries)
    single = req.models is None
    if single:
        _check_single_output(req)
        outs = [Path(req.out)]
    else:
        outs = _list_outputs(req, entries)
    if _uses_transformers(req, entries):
        from prh.progress import quiet_third_party

        quiet_third_party()
    # Check the source before loading a model: a bad corpus, split or column fails in a second.
    src = open_source(req)
    if not single:
        Path(req.out_dir).mkdir(parents=True, exist_ok=True)
        check_reused(req, entries, outs, src)
    written = []
    for entry, out in zip(entries, outs):
        if not single and out.exists() and not req.force:
            print(f"skip {entry.name}: {out} exists (--force remakes it)")
            continue
        _embed_one(req, entry, out, src)
        written.append(out)
    return written


def _entries(req: EmbedRequest):
    """The models to embed, checked before any is loaded (a list's duplicates, unknown names)."""
    from prh.errors import InputError
    from prh.modelsets import ModelEntry, read_model_list

    if (req.model is None) == (req.models is None):
        raise InputError("give one MODEL or --models LIST, not both" if req.model else
                         "expected a MODEL or --models LIST")  # fmt: skip
    if req.model is not None:
        if req.out is None:
            raise InputError("--out FILE is required with one MODEL")
        if req.out_dir is not None or req.force:
            raise InputError("--out-dir/--force apply to --models LIST; with one MODEL use --out")
        return [ModelEntry(req.model, req.model)]
    if req.out is not None:
        raise InputError("--out names one file; with --models LIST give --out-dir DIR")
    if req.out_dir is None:
        raise InputError("--models LIST needs --out-dir DIR (one feature file per model)")
    return read_model_list(req.models)


def encoder_options(req: EmbedRequest, torch_models: bool = True):
    """The flags as :class:`EncoderOptions`; --device defaults to auto for torch-backed models
    (other encoders keep the CPU and refuse an explicit --device)."""
    from prh.encoders import EncoderOptions

    return EncoderOptions(
        device=req.device or ("auto" if torch_models else "cpu"),
        dtype=req.dtype,
        pool=req.pool,
        prompt=req.prompt,
        revision=req.model_revision,
        device_map=req.device_map,
        load_in_4bit=req.load_in_4bit,
        lm_loss=torch_models and req.modality == "text" and not req.no_lm_loss,
    )


def _check_runtime(req: EmbedRequest, entries) -> None:
    """Device, dtype, device map and 4-bit loading checked before any model or data is read."""
    from prh.errors import InputError

    torch_models = _uses_torch_options(req, entries)
    options = encoder_options(req, torch_models)  # --pool/--prompt checked here
    if not torch_models:
        return
    from prh.encoders.hf import check_load_options

    if (options.revision or options.device_map or options.load_in_4bit) and not all(
        e.spec.startswith(("hf:", "hf-")) for e in entries
    ):
        raise InputError("--model-revision/--device-map/--load-in-4bit apply to hf: models only")
    check_load_options(options)


def _uses_torch_options(req: EmbedRequest, entries) -> bool:
    """Whether the device flags mean anything: some model is a torch-backed transformers one."""
    return any(
        e.spec in ("minilm", "all-minilm-l6-v2") or e.spec.startswith(("hf:", "hf-", "random:hf"))
        for e in entries
    )


def _out_format(req: EmbedRequest, out: Path | None) -> str:
    if req.out_format:
        return req.out_format
    if out is None:  # a model list: the benchmark's .pt files unless asked otherwise
        return "platonic-rep"
    return "platonic-rep" if out.suffix.lower() == ".pt" else "prh"


def _check_single_output(req: EmbedRequest) -> None:
    from prh.errors import InputError
    from prh.io import guard_outputs

    guard_outputs({"--out": req.out}, inputs=_input_paths(req, req.model))
    out = Path(req.out)
    out_format = _out_format(req, out)
    want = ".pt" if out_format == "platonic-rep" else ".safetensors"
    if out.suffix.lower() != want:
        raise InputError(f"--out {out}: expected a {want} file name for --out-format {out_format}")


def _list_outputs(req: EmbedRequest, entries) -> list[Path]:
    """``--out-dir/<model>_pool-<pool>.pt`` per model (the reference's names), guarded."""
    from prh.errors import InputError
    from prh.io import check_output_dir, guard_outputs, refuse_input_overwrite
    from prh.modelsets import default_pool, feature_filename

    folder = check_output_dir(req.out_dir, "--out-dir")
    suffix = ".pt" if _out_format(req, None) == "platonic-rep" else ".safetensors"
    modality = "text" if req.modality == "text" else "image"
    outs = [
        folder / feature_filename(e.name, default_pool(e, modality, req.pool), modality, suffix)
        for e in entries
    ]
    seen: dict[Path, str] = {}
    for e, out in zip(entries, outs):
        if out in seen:
            raise InputError(f"--models: {seen[out]} and {e.name} would both write {out.name}")
        seen[out] = e.name
    inputs = [p for e in entries for p in _input_paths(req, e.spec)]
    named = {f"--out-dir ({e.name})": o for e, o in zip(entries, outs)}
    if folder.is_dir():
        guard_outputs(named, inputs=inputs)
    else:  # made once the source has opened: a refused source leaves no empty folder behind
        refuse_input_overwrite(named, inputs)
    return outs


def _uses_transformers(req: EmbedRequest, entries) -> bool:
    specs = [e.spec for e in entries]
    return bool(req.dataset) or any(
        m in ("minilm", "all-minilm-l6-v2") or m.startswith(("hf:", "hf-", "random:hf", "onnx:"))
        for m in specs
    )


def _embed_config(req: EmbedRequest, src: EmbedSource):
    from prh.encoders.embed import EmbedConfig

    return EmbedConfig(
        modality=req.modality,
        captions_per_scene=req.captions_per_scene,
        caption_seed=req.caption_seed,
        nuisance_seed=req.nuisance_seed,
        image_size=req.image_size,
        batch_size=req.batch_size,
        caption_index=req.caption_index if src.kind == "corpus" else 0,
    )


# What a reused file's metadata must share with this command's (the model is its file name).
REUSE_KEYS = ("input", "source", "config")


def check_reused(req: EmbedRequest, entries, outs, src: EmbedSource) -> None:
    """Before any model is embedded: each file ``--models`` would skip (it exists, no
    ``--force``) must have been made from this source, input and embedding config, as its
    metadata records; else one line naming the file, what made it and what this run asks."""
    from prh.errors import InputError
    from prh.features import load_features

    if req.force:
        return
    config = json.dumps(_config_record(_embed_config(req, src)))
    want = {"input": req.modality, "source": src.source, "config": _reuse_config(config)}
    for entry, out in zip(entries, outs):
        if not out.exists():
            continue
        have = dict(load_features(out).metadata)
        have["config"] = _reuse_config(have.get("config"))
        diff = [k for k in REUSE_KEYS if have.get(k) != want[k]]
        if diff:
            k = diff[0]
            raise InputError(
                f"--out-dir: {out} ({entry.name}) was made with {k} {have.get(k)!r}, this run "
                f"asks for {want[k]!r}; --force remakes it, or choose another --out-dir"
            )


def _reuse_config(text: str | None) -> str | None:
    """A file's recorded embedding config without its batch size (rows are embedded one by
    one; the batch changes no feature)."""
    try:
        record = json.loads(text) if text else None
    except ValueError:
        return text
    if not isinstance(record, dict):
        return text
    record.pop("batch_size", None)
    return json.dumps(record, sort_keys=True)


def _embed_one(req: EmbedRequest, entry, out: Path, src: EmbedSource) -> None:
    """Load one encoder, embed the source, write ``out`` and print one line."""
    from prh.encoders import load_encoder
    from prh.encoders.embed import embed_corpus, embed_dataset, embed_world
    from prh.progress import Progress

    threads = req.threads or len(os.sched_getaffinity(0))
    cfg = _embed_config(req, src)
    options = encoder_options(req, _uses_torch_options(req, [entry]))
    modality = "text" if req.modality == "text" else "image"
    t0 = time.perf_counter()
    encoder = load_encoder(
        entry.spec,
        seed=req.init_seed,
        threads=threads,
        efficientnet_layers=req.efficientnet_layers,
        modality=modality,
        options=options,
    )
    encoder.check_modality(modality)
    t_load = time.perf_counter() - t0
    what = f"embed {req.modality}" + ("" if req.models is None else f" {entry.name}")
    progress = Progress(None, what, enabled=not req.no_progress, unit="item")
    t1 = time.perf_counter()
    if src.kind == "world":
        features, ids = embed_world(encoder, src.data, src.scene_ids, cfg, progress)
    elif src.kind == "corpus":
        features, ids = embed_corpus(encoder, src.data, cfg, req.images, progress)
    else:
        features, ids = embed_dataset(encoder, src.data, modality, req.batch_size, progress)
    seconds = time.perf_counter() - t1
    progress.close()
    metadata = _metadata(req, encoder, modality, src, cfg, options)
    quality = _quality(encoder)
    metadata.update({k: repr(v) for k, v in quality.items()})
    _write(req, out, encoder, features, ids, metadata, quality)
    n, layers, dim = features.shape
    if quality:
        print(f"{entry.name}: loss {quality['loss']:.4f} nats/token, bpb {quality['bpb']:.4f}")
    print(
        f"wrote {out}: features ({n}, {layers}, {dim}) from {encoder.spec} [{req.modality}]"
        f" in {seconds:.1f} s ({n / max(seconds, 1e-9):.1f} items/s, {threads} threads;"
        f" model load {t_load:.1f} s)"
    )
    sys.stdout.flush()
    del encoder
    gc.collect()


def _metadata(req, encoder, modality: str, src: EmbedSource, cfg, options) -> dict[str, str]:
    """What the feature file says about its making (safetensors metadata: strings)."""
    from dataclasses import asdict

    return {
        "encoder": encoder.spec,
        "modality": modality,
        "input": req.modality,
        "source": src.source,
        "layer_dims": json.dumps([int(d) for d in encoder.layer_dims]),
        "layer_names": json.dumps(list(encoder.layer_names)),
        "config": json.dumps(_config_record(cfg)),
        "encoder_options": json.dumps(
            {
                **asdict(options),
                "device": _device_used(encoder, options.device),
                "pool": getattr(encoder, "pool", None),
            }
        ),
    }


def _device_used(encoder, asked: str) -> str:
    """The device the encoder's weights are on (``auto`` resolved: ``cpu``, ``cuda:0``), or
    ``asked`` for an encoder without torch weights."""
    params = getattr(getattr(encoder, "model", None), "parameters", None)
    if params is None:
        return asked
    try:
        return str(next(iter(params())).device)
    except (StopIteration, TypeError):
        return asked


def _config_record(cfg) -> dict:
    """The EmbedConfig in a file's metadata; ``caption_index`` only when set, so that files of
    caption 0 stay byte-identical to those written before the field existed."""
    record = dict(cfg.__dict__)
    if not record.get("caption_index"):
        record.pop("caption_index", None)
    return record


def _quality(encoder) -> dict[str, float]:
    """``{"loss", "bpb"}``: means over texts of a causal LM's per-text numbers (the reference's
    ``torch.stack(losses).mean()``), or ``{}`` for a model that measured none."""
    import numpy as np

    stats = np.asarray(getattr(encoder, "lm_stats", []), dtype=np.float64).reshape(-1, 2)
    if not len(stats):
        return {}
    loss, bpb = np.nanmean(stats, axis=0)
    return {"loss": float(loss), "bpb": float(bpb)}


def _write(req, out: Path, encoder, features, ids, metadata: dict[str, str], quality) -> None:
    from prh.features import save_features, save_platonic_rep

    if _out_format(req, None if req.models else out) == "platonic-rep":
        module = getattr(encoder, "model", None)  # a torch-backed encoder: its num_params
        has_params = hasattr(module, "parameters")
        n_params = sum(p.numel() for p in module.parameters()) if has_params else None
        save_platonic_rep(out, features, ids, metadata, encoder.layer_dims, n_params, quality)
    else:
        save_features(out, features, ids, metadata)


def _input_paths(req, model: str) -> list[str]:
    """Every local path the command reads, for the output guard (a model folder included)."""
    paths = [req.corpus, req.images, req.dataset, req.cache_dir, req.models]
    for prefix in ("random:", "features:", "onnx:", "hf:", "hf-text:", "hf-vision:"):
        if model.startswith(prefix):
            model = model[len(prefix) :]
    paths.append(model)
    return [p for p in paths if p and Path(p).expanduser().exists()]
