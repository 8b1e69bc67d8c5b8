"""What ``prh embed`` is asked to do, checked: :class:`EmbedRequest` (one field per flag, the
command line's defaults) and the source it names, opened once for every model
(:func:`open_source`: the world's scenes, a caption corpus or a data set's rows).

Every refusal is one :class:`~prh.errors.InputError` line naming the flag, raised before any model
is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prh.jsonio import read_json


@dataclass(frozen=True)
class EmbedRequest:
    """One embedding job: a ``model`` (or a ``models`` list into ``out_dir``) on one source
    (``world``, ``corpus`` or ``dataset``), as ``prh embed`` flags name them (``format`` is the
    corpus format, ``revision`` a data set's, ``model_revision`` a hub model's)."""

    modality: str
    model: str | None = None
    models: str | None = None
    world: str | None = None
    corpus: str | None = None
    dataset: str | None = None
    out: str | None = None
    out_dir: str | None = None
    force: bool = False
    out_format: str | None = None
    n: int | None = None
    seed: int | None = None
    world_themes: int | None = None
    theme_strength: float | None = None
    split: str | None = None
    revision: str | None = None
    image_column: str = "image"
    text_column: str = "text"
    caption_index: int = 0
    cache_dir: str | None = None
    format: str | None = None
    images: str | None = None
    batch_size: int = 32
    captions_per_scene: int = 1
    caption_seed: int = 0
    nuisance_seed: int = 0
    image_size: int = 224
    init_seed: int = 0
    efficientnet_layers: str = "stages"
    threads: int | None = None
    device: str | None = None
    dtype: str = "float32"
    model_revision: str | None = None
    device_map: str | None = None
    load_in_4bit: bool = False
    pool: str | None = None
    prompt: str = "{}"
    no_lm_loss: bool = False
    no_progress: bool = False


@dataclass(frozen=True)
class EmbedSource:
    """What is embedded, opened once for every model: the world, a corpus or a table's rows."""

    kind: str  # "world", "corpus" or "dataset"
    data: Any
    source: str
    scene_ids: Any = None


def open_source(req: EmbedRequest) -> EmbedSource:
    """The request's source, checked (flags of another source refused) and opened."""
    if req.world:
        world, scene_ids, source = _world_scenes(req)
        return EmbedSource("world", world, source, scene_ids)
    if req.corpus:
        corpus, source = _corpus(req)
        return EmbedSource("corpus", corpus, source)
    rows, source = _dataset(req)
    return EmbedSource("dataset", rows, source)


def _dataset(req: EmbedRequest):
    """Open the --dataset split and check its column (and caption index) before any model."""
    from prh.data.hf_dataset import DatasetRows, DatasetSpec, open_hf_dataset
    from prh.errors import InputError

    if req.modality == "sketch":
        raise InputError("--modality sketch exists only for --world cave")
    _refuse_theme_flags(req, "--dataset")
    if req.images or req.format:
        raise InputError("--images/--format apply to --corpus only")
    if req.captions_per_scene != 1:
        raise InputError(
            "--captions-per-scene applies to --world and --corpus; use --caption-index"
        )
    spec = DatasetSpec(
        source=req.dataset,
        revision=req.revision,
        split=req.split,
        image_column=req.image_column,
        text_column=req.text_column,
        caption_index=req.caption_index,
        cache_dir=req.cache_dir,
    )
    dataset, source = open_hf_dataset(spec)
    rows = DatasetRows(dataset, spec, n=req.n)
    modality = "text" if req.modality == "text" else "image"
    rows.check(modality)
    column = rows.column(modality)
    index = f" caption={req.caption_index}" if modality == "text" else ""
    return rows, f"{source} column={column}{index} n={len(rows)}"


def _world_scenes(req: EmbedRequest):
    from prh.errors import InputError
    from prh.world import make_world

    _refuse_dataset_flags(req, "--world")
    if req.images or req.format:
        raise InputError("--images/--format apply to --corpus only")
    model = req.model or ""  # a model list: the world of --seed (default 0)
    seed = req.seed if req.seed is not None else _run_world_seed(model)
    stored = _run_train_config(model)
    themes = req.world_themes
    themes = int(stored.get("world_themes", 0)) if themes is None else themes
    strength = req.theme_strength
    strength = float(stored.get("theme_strength", 2.0)) if strength is None else strength
    theme_options = {"themes": themes, "theme_strength": strength} if themes else {}
    world = make_world(req.world, seed=seed, image_size=req.image_size, **theme_options)
    split = req.split or "test"
    scene_ids = world.split(split)
    if req.n is not None:
        if req.n > len(scene_ids):
            raise InputError(f"--n {req.n}: split {split!r} has only {len(scene_ids)} scenes")
        scene_ids = scene_ids[: req.n]
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
    try:
        return int(_run_train_config(model).get("world_seed", 0))
    except (ValueError, TypeError):
        return 0  # load_run reports a broken run directory with a clear message


def _corpus(req: EmbedRequest):
    from prh.data import load_corpus
    from prh.errors import InputError

    if req.modality == "sketch":
        raise InputError("--modality sketch exists only for --world cave")
    _refuse_theme_flags(req, "--corpus")
    _refuse_dataset_flags(req, "--corpus", allowed=("--caption-index",))
    if req.caption_index and req.modality != "text":
        raise InputError("--caption-index picks a caption: it applies to --modality text only")
    if req.images is not None:
        images = Path(req.images).expanduser()
        if images.is_file():
            raise InputError(
                f"--images {images}: is a file, expected the folder of the image files"
            )
        if not images.is_dir():
            raise InputError(f"--images {images}: no such folder")
    corpus = load_corpus(req.corpus, format=req.format)
    if req.split:
        corpus = corpus.split(req.split)
    if req.n is not None:
        if req.n > len(corpus):
            raise InputError(f"--n {req.n}: corpus {req.corpus} has only {len(corpus)} images")
        corpus = corpus.subset(corpus.image_ids[: req.n])
    short = next((j for j, c in enumerate(corpus.captions) if len(c) <= req.caption_index), None)
    if short is not None:  # before any model loads
        raise InputError(
            f"--caption-index {req.caption_index}: image {corpus.image_ids[short]!r} has "
            f"{len(corpus.captions[short])} caption(s) (indices from 0)"
        )
    index = f" caption={req.caption_index}" if req.caption_index else ""
    return corpus, f"corpus:{req.corpus} split={req.split or 'all'} n={len(corpus)}{index}"


def _refuse_theme_flags(req: EmbedRequest, source: str) -> None:
    """--world-themes/--theme-strength describe the cave world: refuse them elsewhere."""
    from prh.errors import InputError

    if req.world_themes is not None or req.theme_strength is not None:
        raise InputError(
            f"--world-themes/--theme-strength apply to --world cave only, not {source}"
        )


def _refuse_dataset_flags(req: EmbedRequest, source: str, allowed: tuple[str, ...] = ()) -> None:
    """--revision, --caption-index, ... mean nothing without --dataset (``allowed``: those the
    source takes, --caption-index for --corpus): say so, do not ignore."""
    from prh.errors import InputError

    given = [
        flag
        for flag, value, default in (
            ("--revision", req.revision, None),
            ("--image-column", req.image_column, "image"),
            ("--text-column", req.text_column, "text"),
            ("--caption-index", req.caption_index, 0),
            ("--cache-dir", req.cache_dir, None),
        )
        if value != default and flag not in allowed
    ]
    if given:
        verb = "applies" if len(given) == 1 else "apply"
        raise InputError(f"{', '.join(given)} {verb} to --dataset only, not {source}")
