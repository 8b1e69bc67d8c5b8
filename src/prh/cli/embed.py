"""Embed the cave world's scenes, a caption corpus or a Hugging Face data set with a frozen encoder.

MODEL is a spec: efficientnet-lite0, random:efficientnet-lite0, minilm, hf:PATH_OR_ID (hf-text:,
hf-vision: for a tower of CLIP/SigLIP; random:hf:... for a seeded random init), onnx:PATH,
features:PATH, or a `prh train` run directory. The output is a safetensors feature file with
`features` (N, L, D) float32 (every layer) and `ids` ("scene_{i}", a corpus's image ids, or
"row_{i}" of a data set), rows in the same order for text and images of the same items, so
`prh measure TEXT IMAGES` pairs them.

`prh embed --models LIST --out-dir DIR ...` embeds every model of a list (a built-in set,
val-language, val-vision, test-language, or a text file, one model per line) in order, into
DIR/<model>_pool-<pool>.pt as the benchmark names them, skipping files that exist (--force remakes
them). A causal language model's loss and bits per byte on the texts go in its file (--no-lm-loss).

The PRH benchmark's data set: `prh embed hf:MODEL --dataset minhuh/prh --revision wit_1024
--modality image --out img.safetensors` (from the local Hugging Face cache, or a save_to_disk
folder).

Text of a scene is ONE seeded caption by default (caption seed 0); --captions-per-scene K averages
K captions' features per layer. A corpus image's text is its caption --caption-index I (default 0)
and, with K, the K from there. Images are rendered at --image-size px and resized by the encoder
(224 px for EfficientNet-Lite0).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prh.cli._args import (
    device_name,
    nonnegative_float,
    nonnegative_int,
    old_spelling,
    positive_int,
    seed,
)
from prh.jsonio import read_json
from prh.world.registry import world_names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    what = parser.add_argument_group("what to embed")
    what.add_argument(
        "model", metavar="MODEL", nargs="?", help="encoder spec or prh train run directory"
    )
    what.add_argument(
        "--models",
        metavar="LIST",
        default=None,
        help="embed every model of a list, in order: a built-in set (val-language, val-vision,"
        " test-language: the PRH benchmark's) or a text file, one model per line; writes"
        " --out-dir/<model>_pool-<pool>.pt, skipping files that exist (--force remakes them)",
    )
    src = what.add_mutually_exclusive_group(required=True)
    src.add_argument("--world", choices=world_names(), help="embed scenes of a world (cave)")
    src.add_argument("--corpus", metavar="PATH", help="embed the images of a caption corpus")
    src.add_argument(
        "--dataset",
        metavar="NAME_OR_PATH",
        help="embed a Hugging Face data set: a save_to_disk folder or a name in the local cache"
        " (minhuh/prh)",
    )
    what.add_argument(
        "--modality",
        choices=["text", "image", "sketch"],
        required=True,
        help="captions, rendered images, or line sketches (cave world only)",
    )
    # help groups by part, none over 12 flags (issue 34)
    _output_flags(parser.add_argument_group("output"))
    _scene_flags(parser.add_argument_group("world scenes (--world)"))
    _dataset_flags(parser.add_argument_group("data sets (--dataset, --corpus)"))
    _draw_flags(parser.add_argument_group("which rows and texts"))
    _model_flags(parser.add_argument_group("model and device"))
    _pool_flags(parser.add_argument_group("layers and pooling"))


def _output_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", metavar="FILE", help="output .safetensors (or .pt) file")
    parser.add_argument(
        "--out-dir",
        metavar="DIR",
        default=None,
        help="--models: folder of the feature files (created if missing)",
    )
    parser.add_argument(
        "--force", action="store_true", help="--models: remake feature files that already exist"
    )
    parser.add_argument(
        "--out-format",
        choices=["prh", "platonic-rep"],
        default=None,
        help="prh safetensors, or platonic-rep's .pt ({'feats': ...}, torch.save) (default: "
        "from the --out suffix, .pt is platonic-rep)",
    )


def _scene_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--n",
        metavar="N",
        type=positive_int,
        default=None,
        help="number of scenes/images (default: all)",
    )
    parser.add_argument(
        "--seed",
        metavar="S",
        type=seed,
        default=None,
        help="world seed: which scenes exist (default: a run's world_seed, else 0)",
    )
    parser.add_argument(
        "--world-themes",
        metavar="T",
        type=nonnegative_int,
        default=None,
        help="--world cave: scene themes (0 = none; default: a run's world_themes, else 0)",
    )
    parser.add_argument(
        "--theme-strength",
        metavar="X",
        type=nonnegative_float,
        default=None,
        help="--world cave: how narrow a theme is (default: a run's theme_strength, else 2.0)",
    )
    parser.add_argument(
        "--split",
        metavar="NAME",
        default=None,
        help="scene split: train, test or all for the world (default test); a corpus split name;"
        " a data set's split (default train)",
    )


def _dataset_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--revision", metavar="R", default=None, help="hub revision of a named --dataset (wit_1024)"
    )
    parser.add_argument(
        "--image-column", metavar="NAME", default="image", help="--dataset image column (image)"
    )
    parser.add_argument(
        "--text-column",
        metavar="NAME",
        default="text",
        help="--dataset caption column, a string or a list of captions per row (text)",
    )
    parser.add_argument(
        "--caption-index",
        metavar="I",
        type=nonnegative_int,
        default=0,
        help="which caption of a --dataset row's list (default 0, as platonic-rep's caption_idx);"
        " --corpus: of each image's captions, the first embedded (1 beside a run's 0: another"
        " caption of the same photo)",
    )
    parser.add_argument(
        "--cache-dir",
        metavar="DIR",
        default=None,
        help="datasets cache of a named --dataset (default: HF_DATASETS_CACHE)",
    )
    parser.add_argument(
        "--format", metavar="F", default=None, help="corpus format (default: detected)"
    )
    parser.add_argument(
        "--images", metavar="DIR", default=None, help="folder of a corpus's image files"
    )


def _draw_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--batch-size",
        metavar="N",
        type=positive_int,
        default=32,
        help="items per forward pass (default 32)",
    )
    parser.add_argument(
        "--captions-per-scene",
        metavar="K",
        type=positive_int,
        default=1,
        help="captions averaged per scene (default 1: one seeded caption)",
    )
    parser.add_argument(
        "--caption-seed",
        metavar="S",
        type=seed,
        default=0,
        help="caption wording seed (default 0)",
    )
    parser.add_argument(
        "--nuisance-seed",
        metavar="S",
        type=seed,
        default=0,
        help="render nuisance seed (default 0)",
    )
    parser.add_argument(
        "--image-size",
        metavar="PX",
        type=positive_int,
        default=224,
        help="render side in pixels (default 224)",
    )
    parser.add_argument(
        "--init-seed",
        metavar="S",
        type=seed,
        default=0,
        help="seed of random: specs (default 0)",
    )
    parser.add_argument(
        "--efficientnet-layers",
        choices=["stages", "blocks", "head"],
        default="stages",
        help="EfficientNet outputs kept as layers (default stages: 7 stages + head)",
    )


def _model_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--threads",
        metavar="N",
        type=positive_int,
        default=None,
        help="CPU threads for the encoder (default: the CPUs this process may use)",
    )
    parser.add_argument(
        "--device",
        metavar="D",
        type=device_name,
        default=None,
        help="hf:/minilm: auto (CUDA when present, else the CPU), cpu, cuda or cuda:N"
        " (default auto)",
    )
    parser.add_argument(
        "--dtype",
        choices=["float32", "bfloat16", "float16"],
        default="float32",
        help="hf:/minilm weights and activations (features are written as float32); float16 is"
        " for GPUs, bfloat16 for GPUs that support it or the CPU",
    )
    parser.add_argument(
        "--model-revision",
        metavar="R",
        default=None,
        help="hf: hub models: the branch, tag or commit to load (pins the weights)",
    )
    parser.add_argument(
        "--device-map",
        choices=["auto"],
        default=None,
        help="hf: spread a model too large for one GPU over every GPU (and the CPU): transformers'"
        " device_map='auto' (needs accelerate)",
    )
    parser.add_argument(
        "--load-in-4bit",
        action="store_true",
        help="hf: 4-bit weights (bitsandbytes NF4, compute in --dtype; needs CUDA and"
        " pip install 'prh[quantize]'); the reference's --qlora: scores are slightly off",
    )


def _pool_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pool",
        choices=["avg", "last", "cls"],
        default=None,
        help="hf:/minilm token pooling of every layer: mean over real tokens, last real token, or"
        " first token (default: avg for text, cls for vision transformers); a prh run: avg"
        " (default) or last",
    )
    parser.add_argument(
        "--prompt",
        metavar="TEMPLATE",
        default="{}",
        help='hf:/minilm text template, {} is the text (default "{}")',
    )
    parser.add_argument(
        "--no-lm-loss",
        action="store_true",
        help="--modality text: skip a causal language model's loss and bits per byte on the texts"
        " (stored as loss/bpb in its feature file, as the reference does; default: measured)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    old_spelling(parser, "--quiet", "--no-progress", "no_progress", flag=True)


@dataclass(frozen=True)
class _Source:
    """What is embedded, opened once for every model: the world, a corpus or a table's rows."""

    kind: str  # "world", "corpus" or "dataset"
    data: Any
    source: str
    scene_ids: Any = None


def run(args: argparse.Namespace) -> int:
    """Embed one model (MODEL --out FILE) or every model of a list (--models LIST --out-dir)."""
    entries = _entries(args)
    _check_runtime(args, entries)
    single = args.models is None
    if single:
        _check_single_output(args)
        outs = [Path(args.out)]
    else:
        outs = _list_outputs(args, entries)
    if _uses_transformers(args, entries):
        from prh.progress import quiet_third_party

        quiet_third_party()
    # Check the source before loading a model: a bad corpus, split or column fails in a second.
    src = _open_source(args)
    if not single:
        Path(args.out_dir).mkdir(parents=True, exist_ok=True)
        check_reused(args, entries, outs, src)
    for entry, out in zip(entries, outs):
        if not single and out.exists() and not args.force:
            print(f"skip {entry.name}: {out} exists (--force remakes it)")
            continue
        _embed_one(args, entry, out, src)
    return 0


def _entries(args: argparse.Namespace):
    """The models to embed, checked before any is loaded (a list's duplicates, unknown names)."""
    from prh.errors import InputError
    from prh.modelsets import ModelEntry, read_model_list

    if (args.model is None) == (args.models is None):
        raise InputError("give one MODEL or --models LIST, not both" if args.model else
                         "expected a MODEL or --models LIST")  # fmt: skip
    if args.model is not None:
        if args.out is None:
            raise InputError("--out FILE is required with one MODEL")
        if args.out_dir is not None or args.force:
            raise InputError("--out-dir/--force apply to --models LIST; with one MODEL use --out")
        return [ModelEntry(args.model, args.model)]
    if args.out is not None:
        raise InputError("--out names one file; with --models LIST give --out-dir DIR")
    if args.out_dir is None:
        raise InputError("--models LIST needs --out-dir DIR (one feature file per model)")
    return read_model_list(args.models)


def _encoder_options(args: argparse.Namespace, torch_models: bool = True):
    """The flags as :class:`EncoderOptions`; --device defaults to auto for torch-backed models
    (other encoders keep the CPU and refuse an explicit --device)."""
    from prh.encoders import EncoderOptions

    return EncoderOptions(
        device=args.device or ("auto" if torch_models else "cpu"),
        dtype=args.dtype,
        pool=args.pool,
        prompt=args.prompt,
        revision=args.model_revision,
        device_map=args.device_map,
        load_in_4bit=args.load_in_4bit,
        lm_loss=torch_models and args.modality == "text" and not args.no_lm_loss,
    )


def _check_runtime(args: argparse.Namespace, entries) -> None:
    """Device, dtype, device map and 4-bit loading checked before any model or data is read."""
    from prh.errors import InputError

    torch_models = _uses_torch_options(args, entries)
    options = _encoder_options(args, torch_models)  # --pool/--prompt checked here
    if not torch_models:
        return
    from prh.encoders.hf import check_load_options

    if (options.revision or options.device_map or options.load_in_4bit) and not all(
        e.spec.startswith(("hf:", "hf-")) for e in entries
    ):
        raise InputError("--model-revision/--device-map/--load-in-4bit apply to hf: models only")
    check_load_options(options)


def _uses_torch_options(args: argparse.Namespace, entries) -> bool:
    """Whether the device flags mean anything: some model is a torch-backed transformers one."""
    return any(
        e.spec in ("minilm", "all-minilm-l6-v2") or e.spec.startswith(("hf:", "hf-", "random:hf"))
        for e in entries
    )


def _out_format(args: argparse.Namespace, out: Path | None) -> str:
    if args.out_format:
        return args.out_format
    if out is None:  # a model list: the benchmark's .pt files unless asked otherwise
        return "platonic-rep"
    return "platonic-rep" if out.suffix.lower() == ".pt" else "prh"


def _check_single_output(args: argparse.Namespace) -> None:
    from prh.errors import InputError
    from prh.io import guard_outputs

    guard_outputs({"--out": args.out}, inputs=_input_paths(args, args.model))
    out = Path(args.out)
    out_format = _out_format(args, out)
    want = ".pt" if out_format == "platonic-rep" else ".safetensors"
    if out.suffix.lower() != want:
        raise InputError(f"--out {out}: expected a {want} file name for --out-format {out_format}")


def _list_outputs(args: argparse.Namespace, entries) -> list[Path]:
    """``--out-dir/<model>_pool-<pool>.pt`` per model (the reference's names), guarded."""
    from prh.errors import InputError
    from prh.io import check_output_dir, guard_outputs, refuse_input_overwrite
    from prh.modelsets import default_pool, feature_filename

    folder = check_output_dir(args.out_dir, "--out-dir")
    suffix = ".pt" if _out_format(args, None) == "platonic-rep" else ".safetensors"
    modality = "text" if args.modality == "text" else "image"
    outs = [
        folder / feature_filename(e.name, default_pool(e, modality, args.pool), modality, suffix)
        for e in entries
    ]
    seen: dict[Path, str] = {}
    for e, out in zip(entries, outs):
        if out in seen:
            raise InputError(f"--models: {seen[out]} and {e.name} would both write {out.name}")
        seen[out] = e.name
    inputs = [p for e in entries for p in _input_paths(args, e.spec)]
    named = {f"--out-dir ({e.name})": o for e, o in zip(entries, outs)}
    if folder.is_dir():
        guard_outputs(named, inputs=inputs)
    else:  # made once the source has opened: a refused source leaves no empty folder behind
        refuse_input_overwrite(named, inputs)
    return outs


def _uses_transformers(args: argparse.Namespace, entries) -> bool:
    specs = [e.spec for e in entries]
    return bool(args.dataset) or any(
        m in ("minilm", "all-minilm-l6-v2") or m.startswith(("hf:", "hf-", "random:hf", "onnx:"))
        for m in specs
    )


def _open_source(args: argparse.Namespace) -> _Source:
    if args.world:
        world, scene_ids, source = _world_scenes(args)
        return _Source("world", world, source, scene_ids)
    if args.corpus:
        corpus, source = _corpus(args)
        return _Source("corpus", corpus, source)
    rows, source = _dataset(args)
    return _Source("dataset", rows, source)


def _embed_config(args: argparse.Namespace, src: _Source):
    from prh.encoders.embed import EmbedConfig

    return EmbedConfig(
        modality=args.modality,
        captions_per_scene=args.captions_per_scene,
        caption_seed=args.caption_seed,
        nuisance_seed=args.nuisance_seed,
        image_size=args.image_size,
        batch_size=args.batch_size,
        caption_index=args.caption_index if src.kind == "corpus" else 0,
    )


# What a reused file's metadata must share with this command's (the model is its file name).
REUSE_KEYS = ("input", "source", "config")


def check_reused(args: argparse.Namespace, entries, outs, src: _Source) -> None:
    """Before any model is embedded: each file ``--models`` would skip (it exists, no
    ``--force``) must have been made from this source, input and embedding config, as its
    metadata records; else one line naming the file, what made it and what this run asks."""
    from prh.errors import InputError
    from prh.features import load_features

    if args.force:
        return
    config = json.dumps(_config_record(_embed_config(args, src)))
    want = {"input": args.modality, "source": src.source, "config": _reuse_config(config)}
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


def _embed_one(args: argparse.Namespace, entry, out: Path, src: _Source) -> None:
    """Load one encoder, embed the source, write ``out`` and print one line."""
    from prh.encoders import load_encoder
    from prh.encoders.embed import embed_corpus, embed_dataset, embed_world
    from prh.progress import Progress

    threads = args.threads or len(os.sched_getaffinity(0))
    cfg = _embed_config(args, src)
    options = _encoder_options(args, _uses_torch_options(args, [entry]))
    modality = "text" if args.modality == "text" else "image"
    t0 = time.perf_counter()
    encoder = load_encoder(
        entry.spec,
        seed=args.init_seed,
        threads=threads,
        efficientnet_layers=args.efficientnet_layers,
        modality=modality,
        options=options,
    )
    encoder.check_modality(modality)
    t_load = time.perf_counter() - t0
    what = f"embed {args.modality}" + ("" if args.models is None else f" {entry.name}")
    progress = Progress(None, what, enabled=not args.no_progress, unit="item")
    t1 = time.perf_counter()
    if src.kind == "world":
        features, ids = embed_world(encoder, src.data, src.scene_ids, cfg, progress)
    elif src.kind == "corpus":
        features, ids = embed_corpus(encoder, src.data, cfg, args.images, progress)
    else:
        features, ids = embed_dataset(encoder, src.data, modality, args.batch_size, progress)
    seconds = time.perf_counter() - t1
    progress.close()
    metadata = _metadata(args, encoder, modality, src, cfg, options)
    quality = _quality(encoder)
    metadata.update({k: repr(v) for k, v in quality.items()})
    _write(args, out, encoder, features, ids, metadata, quality)
    n, layers, dim = features.shape
    if quality:
        print(f"{entry.name}: loss {quality['loss']:.4f} nats/token, bpb {quality['bpb']:.4f}")
    print(
        f"wrote {out}: features ({n}, {layers}, {dim}) from {encoder.spec} [{args.modality}]"
        f" in {seconds:.1f} s ({n / max(seconds, 1e-9):.1f} items/s, {threads} threads;"
        f" model load {t_load:.1f} s)"
    )
    sys.stdout.flush()
    del encoder
    gc.collect()


def _metadata(args, encoder, modality: str, src: _Source, cfg, options) -> dict[str, str]:
    """What the feature file says about its making (safetensors metadata: strings)."""
    from dataclasses import asdict

    return {
        "encoder": encoder.spec,
        "modality": modality,
        "input": args.modality,
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


def _write(args, out: Path, encoder, features, ids, metadata: dict[str, str], quality) -> None:
    from prh.features import save_features, save_platonic_rep

    if _out_format(args, None if args.models else out) == "platonic-rep":
        module = getattr(encoder, "model", None)  # a torch-backed encoder: its num_params
        has_params = hasattr(module, "parameters")
        n_params = sum(p.numel() for p in module.parameters()) if has_params else None
        save_platonic_rep(out, features, ids, metadata, encoder.layer_dims, n_params, quality)
    else:
        save_features(out, features, ids, metadata)


def _input_paths(args, model: str) -> list[str]:
    """Every local path the command reads, for the output guard (a model folder included)."""
    paths = [args.corpus, args.images, args.dataset, args.cache_dir, args.models]
    for prefix in ("random:", "features:", "onnx:", "hf:", "hf-text:", "hf-vision:"):
        if model.startswith(prefix):
            model = model[len(prefix) :]
    paths.append(model)
    return [p for p in paths if p and Path(p).expanduser().exists()]


def _dataset(args):
    """Open the --dataset split and check its column (and caption index) before any model."""
    from prh.data.hf_dataset import DatasetRows, DatasetSpec, open_hf_dataset
    from prh.errors import InputError

    if args.modality == "sketch":
        raise InputError("--modality sketch exists only for --world cave")
    _refuse_theme_flags(args, "--dataset")
    if args.images or args.format:
        raise InputError("--images/--format apply to --corpus only")
    if args.captions_per_scene != 1:
        raise InputError(
            "--captions-per-scene applies to --world and --corpus; use --caption-index"
        )
    spec = DatasetSpec(
        source=args.dataset,
        revision=args.revision,
        split=args.split,
        image_column=args.image_column,
        text_column=args.text_column,
        caption_index=args.caption_index,
        cache_dir=args.cache_dir,
    )
    dataset, source = open_hf_dataset(spec)
    rows = DatasetRows(dataset, spec, n=args.n)
    modality = "text" if args.modality == "text" else "image"
    rows.check(modality)
    column = rows.column(modality)
    index = f" caption={args.caption_index}" if modality == "text" else ""
    return rows, f"{source} column={column}{index} n={len(rows)}"


def _world_scenes(args):
    from prh.errors import InputError
    from prh.world import make_world

    _refuse_dataset_flags(args, "--world")
    if args.images or args.format:
        raise InputError("--images/--format apply to --corpus only")
    model = args.model or ""  # a model list: the world of --seed (default 0)
    seed = args.seed if args.seed is not None else _run_world_seed(model)
    stored = _run_train_config(model)
    themes = args.world_themes
    themes = int(stored.get("world_themes", 0)) if themes is None else themes
    strength = args.theme_strength
    strength = float(stored.get("theme_strength", 2.0)) if strength is None else strength
    theme_options = {"themes": themes, "theme_strength": strength} if themes else {}
    world = make_world(args.world, seed=seed, image_size=args.image_size, **theme_options)
    split = args.split or "test"
    scene_ids = world.split(split)
    if args.n is not None:
        if args.n > len(scene_ids):
            raise InputError(f"--n {args.n}: split {split!r} has only {len(scene_ids)} scenes")
        scene_ids = scene_ids[: args.n]
    themed = f" themes={themes} theme_strength={strength}" if themes else ""
    return world, scene_ids, f"world:cave seed={seed}{themed} split={split} n={len(scene_ids)}"


def _run_train_config(model: str) -> dict:
    """The stored train config of a ``prh train`` run directory ({} for any other MODEL)."""
    from prh.encoders.stored import is_run_dir

    path = Path(model).expanduser()
    if not is_run_dir(path):
        return {}
    try:
        stored = read_json(path / "config.json")
        out = stored.get("train", stored)
        return out if isinstance(out, dict) else {}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def _run_world_seed(model: str) -> int:
    """The ``world_seed`` a ``prh train`` run was trained on (0 for any other MODEL)."""
    from pathlib import Path

    from prh.encoders.stored import is_run_dir

    path = Path(model).expanduser()
    if not is_run_dir(path):
        return 0
    try:
        stored = read_json(path / "config.json")
        return int(stored.get("train", stored).get("world_seed", 0))
    except (OSError, ValueError, TypeError, AttributeError):
        return 0  # load_run reports a broken run directory with a clear message


def _corpus(args):
    from prh.data import load_corpus
    from prh.errors import InputError

    if args.modality == "sketch":
        raise InputError("--modality sketch exists only for --world cave")
    _refuse_theme_flags(args, "--corpus")
    _refuse_dataset_flags(args, "--corpus", allowed=("--caption-index",))
    if args.caption_index and args.modality != "text":
        raise InputError("--caption-index picks a caption: it applies to --modality text only")
    if args.images is not None:
        images = Path(args.images).expanduser()
        if images.is_file():
            raise InputError(
                f"--images {images}: is a file, expected the folder of the image files"
            )
        if not images.is_dir():
            raise InputError(f"--images {images}: no such folder")
    corpus = load_corpus(args.corpus, format=args.format)
    if args.split:
        corpus = corpus.split(args.split)
    if args.n is not None:
        if args.n > len(corpus):
            raise InputError(f"--n {args.n}: corpus {args.corpus} has only {len(corpus)} images")
        corpus = corpus.subset(corpus.image_ids[: args.n])
    short = next((j for j, c in enumerate(corpus.captions) if len(c) <= args.caption_index), None)
    if short is not None:  # before any model loads
        raise InputError(
            f"--caption-index {args.caption_index}: image {corpus.image_ids[short]!r} has "
            f"{len(corpus.captions[short])} caption(s) (indices from 0)"
        )
    index = f" caption={args.caption_index}" if args.caption_index else ""
    return corpus, f"corpus:{args.corpus} split={args.split or 'all'} n={len(corpus)}{index}"


def _refuse_theme_flags(args, source: str) -> None:
    """--world-themes/--theme-strength describe the cave world: refuse them elsewhere."""
    from prh.errors import InputError

    if args.world_themes is not None or args.theme_strength is not None:
        raise InputError(
            f"--world-themes/--theme-strength apply to --world cave only, not {source}"
        )


def _refuse_dataset_flags(args, source: str, allowed: tuple[str, ...] = ()) -> None:
    """--revision, --caption-index, ... mean nothing without --dataset (``allowed``: those the
    source takes, --caption-index for --corpus): say so, do not ignore."""
    from prh.errors import InputError

    given = [
        flag
        for flag, value, default in (
            ("--revision", args.revision, None),
            ("--image-column", args.image_column, "image"),
            ("--text-column", args.text_column, "text"),
            ("--caption-index", args.caption_index, 0),
            ("--cache-dir", args.cache_dir, None),
        )
        if value != default and flag not in allowed
    ]
    if given:
        verb = "applies" if len(given) == 1 else "apply"
        raise InputError(f"{', '.join(given)} {verb} to --dataset only, not {source}")
