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

from prh.cli._args import (
    as_request,
    device_name,
    nonnegative_float,
    nonnegative_int,
    old_spelling,
    positive_int,
    seed,
)
from prh.world.registry import world_names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    what = parser.add_argument_group("what to embed")
    what.add_argument("model", metavar="MODEL", nargs="?",
                      help="encoder spec or prh train run directory")  # fmt: skip
    what.add_argument("--models", metavar="LIST", default=None,
                      help="embed every model of a list, in order: a built-in set (val-language, "
                      "val-vision, test-language: the PRH benchmark's) or a text file, one model "
                      "per line; writes --out-dir/<model>_pool-<pool>.pt, skipping files that "
                      "exist (--force remakes them)")  # fmt: skip
    src = what.add_mutually_exclusive_group(required=True)
    src.add_argument("--world", choices=world_names(), help="embed scenes of a world (cave)")
    src.add_argument("--corpus", metavar="PATH", help="embed the images of a caption corpus")
    src.add_argument("--dataset", metavar="NAME_OR_PATH",
                     help="embed a Hugging Face data set: a save_to_disk folder or a name in the "
                     "local cache (minhuh/prh)")  # fmt: skip
    what.add_argument("--modality", choices=["text", "image", "sketch"], required=True,
                      help="captions, rendered images, or line sketches "
                      "(cave world only)")  # fmt: skip
    # help groups by part, none over 12 flags (issue 34)
    _output_flags(parser.add_argument_group("output"))
    _scene_flags(parser.add_argument_group("world scenes (--world)"))
    _dataset_flags(parser.add_argument_group("data sets (--dataset, --corpus)"))
    _draw_flags(parser.add_argument_group("which rows and texts"))
    _model_flags(parser.add_argument_group("model and device"))
    _pool_flags(parser.add_argument_group("layers and pooling"))


def _output_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", metavar="FILE", help="output .safetensors (or .pt) file")
    parser.add_argument("--out-dir", metavar="DIR", default=None,
                        help="--models: folder of the feature files "
                        "(created if missing)")  # fmt: skip
    parser.add_argument("--force", action="store_true",
                        help="--models: remake feature files that already exist")  # fmt: skip
    parser.add_argument("--out-format", choices=["prh", "platonic-rep"], default=None,
                        help="prh safetensors, or platonic-rep's .pt ({'feats': ...}, torch.save) "
                        "(default: from the --out suffix, .pt is platonic-rep)")  # fmt: skip


def _scene_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n", metavar="N", type=positive_int, default=None,
                        help="number of scenes/images (default: all)")  # fmt: skip
    parser.add_argument("--seed", metavar="S", type=seed, default=None,
                        help="world seed: which scenes exist (default: a run's world_seed, else "
                        "0)")  # fmt: skip
    parser.add_argument("--world-themes", metavar="T", type=nonnegative_int, default=None,
                        help="--world cave: scene themes (0 = none; default: a run's "
                        "world_themes, else 0)")  # fmt: skip
    parser.add_argument("--theme-strength", metavar="X", type=nonnegative_float, default=None,
                        help="--world cave: how narrow a theme is (default: a run's "
                        "theme_strength, else 2.0)")  # fmt: skip
    parser.add_argument("--split", metavar="NAME", default=None,
                        help="scene split: train, test or all for the world (default test); a "
                        "corpus split name; a data set's split (default train)")  # fmt: skip


def _dataset_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--revision", metavar="R", default=None,
                        help="hub revision of a named --dataset (wit_1024)")  # fmt: skip
    parser.add_argument("--image-column", metavar="NAME", default="image",
                        help="--dataset image column (image)")  # fmt: skip
    parser.add_argument("--text-column", metavar="NAME", default="text",
                        help="--dataset caption column, a string or a list of captions per row "
                        "(text)")  # fmt: skip
    parser.add_argument("--caption-index", metavar="I", type=nonnegative_int, default=0,
                        help="which caption of a --dataset row's list (default 0, as "
                        "platonic-rep's caption_idx); --corpus: of each image's captions, the "
                        "first embedded (1 beside a run's 0: another caption of "
                        "the same photo)")  # fmt: skip
    parser.add_argument("--cache-dir", metavar="DIR", default=None,
                        help="datasets cache of a named --dataset (default: "
                        "HF_DATASETS_CACHE)")  # fmt: skip
    parser.add_argument("--format", metavar="F", default=None,
                        help="corpus format (default: detected)")  # fmt: skip
    parser.add_argument("--images", metavar="DIR", default=None,
                        help="folder of a corpus's image files")  # fmt: skip


def _draw_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch-size", metavar="N", type=positive_int, default=32,
                        help="items per forward pass (default 32)")  # fmt: skip
    parser.add_argument("--captions-per-scene", metavar="K", type=positive_int, default=1,
                        help="captions averaged per scene (default 1: one "
                        "seeded caption)")  # fmt: skip
    parser.add_argument("--caption-seed", metavar="S", type=seed, default=0,
                        help="caption wording seed (default 0)")  # fmt: skip
    parser.add_argument("--nuisance-seed", metavar="S", type=seed, default=0,
                        help="render nuisance seed (default 0)")  # fmt: skip
    parser.add_argument("--image-size", metavar="PX", type=positive_int, default=224,
                        help="render side in pixels (default 224)")  # fmt: skip
    parser.add_argument("--init-seed", metavar="S", type=seed, default=0,
                        help="seed of random: specs (default 0)")  # fmt: skip
    parser.add_argument("--efficientnet-layers", choices=["stages", "blocks", "head"],
                        default="stages",
                        help="EfficientNet outputs kept as layers (default stages: 7 stages + "
                        "head)")  # fmt: skip


def _model_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threads", metavar="N", type=positive_int, default=None,
                        help="CPU threads for the encoder (default: the CPUs this process may "
                        "use)")  # fmt: skip
    parser.add_argument("--device", metavar="D", type=device_name, default=None,
                        help="hf:/minilm: auto (CUDA when present, else the CPU), cpu, cuda or "
                        "cuda:N (default auto)")  # fmt: skip
    parser.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], default="float32",
                        help="hf:/minilm weights and activations (features are written as "
                        "float32); float16 is for GPUs, bfloat16 for GPUs that support it or the "
                        "CPU")  # fmt: skip
    parser.add_argument("--model-revision", metavar="R", default=None,
                        help="hf: hub models: the branch, tag or commit to load (pins the "
                        "weights)")  # fmt: skip
    parser.add_argument("--device-map", choices=["auto"], default=None,
                        help="hf: spread a model too large for one GPU over every GPU (and the "
                        "CPU): transformers' device_map='auto' (needs accelerate)")  # fmt: skip
    parser.add_argument("--load-in-4bit", action="store_true",
                        help="hf: 4-bit weights (bitsandbytes NF4, compute in --dtype; needs CUDA "
                        "and pip install 'prh[quantize]'); the reference's --qlora: scores are "
                        "slightly off")  # fmt: skip


def _pool_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pool", choices=["avg", "last", "cls"], default=None,
                        help="hf:/minilm token pooling of every layer: mean over real tokens, "
                        "last real token, or first token (default: avg for text, cls for vision "
                        "transformers); a prh run: avg (default) or last")  # fmt: skip
    parser.add_argument("--prompt", metavar="TEMPLATE", default="{}",
                        help="hf:/minilm text template, {} is the text "
                        '(default "{}")')  # fmt: skip
    parser.add_argument("--no-lm-loss", action="store_true",
                        help="--modality text: skip a causal language model's loss and bits per "
                        "byte on the texts (stored as loss/bpb in its feature file, as the "
                        "reference does; default: measured)")  # fmt: skip
    parser.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    old_spelling(parser, "--quiet", "--no-progress", "no_progress", flag=True)


def run(args: argparse.Namespace) -> int:
    """The flags as an :class:`EmbedRequest`, embedded by :func:`embed_to_files`."""
    from prh.encoders.embed_files import embed_to_files
    from prh.encoders.embed_request import EmbedRequest

    embed_to_files(as_request(EmbedRequest, args))
    return 0
