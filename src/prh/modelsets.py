"""Named lists of models, as the PRH benchmark loops over them, and its feature-file names.

A model list is either a built-in set (:data:`SETS`, mirroring ``minyoungg/platonic-rep``'s
``tasks.get_models``) or a text file, one model per line (``#`` starts a comment, blank lines are
skipped). A line is an encoder spec (``hf:PATH_OR_ID``, ``minilm``, a run folder, ...) or a bare
hub id (``bigscience/bloomz-560m``), read as ``hf:`` + the id.

Each model's feature file is named as the reference names it: ``<name>_pool-<pool>.pt``, where
``<name>`` is the hub id with ``/`` replaced by ``_`` (:func:`feature_filename`; a local folder is
named by its last part). The order of the
list is the order of the score matrix's rows and columns: nothing here sorts.

This module imports the standard library only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from prh.errors import InputError

# platonic-rep tasks.get_models("val"): language models (avg-pooled) and vision models.
VAL_LANGUAGE = (
    "bigscience/bloomz-560m",
    "bigscience/bloomz-1b1",
    "bigscience/bloomz-1b7",
    "bigscience/bloomz-3b",
    "bigscience/bloomz-7b1",
    "openlm-research/open_llama_3b",
    "openlm-research/open_llama_7b",
    "openlm-research/open_llama_13b",
    "huggyllama/llama-7b",
    "huggyllama/llama-13b",
    "huggyllama/llama-30b",
    "huggyllama/llama-65b",
)
# The reference loads these with timm; as hub ids (timm/NAME) transformers reads them through its
# timm wrapper (needs the timm package), and the file names drop the "timm/" as the reference does.
VAL_VISION = tuple(
    f"timm/{name}"
    for name in (
        "vit_tiny_patch16_224.augreg_in21k",
        "vit_small_patch16_224.augreg_in21k",
        "vit_base_patch16_224.augreg_in21k",
        "vit_large_patch16_224.augreg_in21k",
        "vit_base_patch16_224.mae",
        "vit_large_patch16_224.mae",
        "vit_huge_patch14_224.mae",
        "vit_small_patch14_dinov2.lvd142m",
        "vit_base_patch14_dinov2.lvd142m",
        "vit_large_patch14_dinov2.lvd142m",
        "vit_giant_patch14_dinov2.lvd142m",
        "vit_base_patch16_clip_224.laion2b",
        "vit_large_patch14_clip_224.laion2b",
        "vit_huge_patch14_clip_224.laion2b",
        "vit_base_patch16_clip_224.laion2b_ft_in12k",
        "vit_large_patch14_clip_224.laion2b_ft_in12k",
        "vit_huge_patch14_clip_224.laion2b_ft_in12k",
    )
)
# platonic-rep tasks.get_models("test"): the held-out language models.
TEST_LANGUAGE = (
    "allenai/OLMo-1B-hf",
    "allenai/OLMo-7B-hf",
    "google/gemma-2b",
    "google/gemma-7b",
    "mistralai/Mistral-7B-v0.1",
    "mistralai/Mixtral-8x7B-v0.1",
    "NousResearch/Meta-Llama-3-8B",
    "NousResearch/Meta-Llama-3-70B",
)
SETS: dict[str, tuple[str, ...]] = {
    "val-language": VAL_LANGUAGE,
    "val-vision": VAL_VISION,
    "test-language": TEST_LANGUAGE,
}
# Specs that are not paths or hub ids (prh.encoders.load_encoder's own names).
_NAMED_SPECS = ("efficientnet-lite0", "random:efficientnet-lite0", "minilm", "all-minilm-l6-v2")
_PREFIXES = ("hf:", "hf-text:", "hf-vision:", "random:hf", "onnx:", "features:")


@dataclass(frozen=True)
class ModelEntry:
    """One model of a list.

    Attributes
    ----------
    spec : str
        The encoder spec to load (``hf:`` + a bare hub id).
    name : str
        The model's name in tables and file names (the hub id or path, no spec prefix).
    """

    spec: str
    name: str


# A list is embedded model by model (minutes each): bounds far above any study's list
# (the largest built-in set lists 17), checked before a line is parsed.
MAX_MODELS = 1000
MAX_LIST_BYTES = 2**20


def read_model_list(source: str, flag: str = "--models") -> list[ModelEntry]:
    """The models of a built-in set name or a text file, in their order, checked.

    Parameters
    ----------
    source : str
        A key of :data:`SETS` or the path of a text file, one model per line.
    flag : str
        How to name the list in messages.

    Returns
    -------
    list of ModelEntry

    Raises
    ------
    InputError
        An unknown set, a missing or empty file, a line that is no spec (an unknown model), or
        a model listed twice; one line naming it.
    """
    if source in SETS:
        lines = [(i + 1, m) for i, m in enumerate(SETS[source])]
    else:
        path = Path(source).expanduser()
        if not path.is_file():
            raise InputError(
                f"{flag} {source}: neither a built-in set ({', '.join(SETS)}) nor a file"
            )
        lines = _list_lines(path, f"{flag} {source}")
    if not lines:
        raise InputError(f"{flag} {source}: lists no model")
    if len(lines) > MAX_MODELS:  # each model is loaded and run in turn: hours per hundred
        raise InputError(
            f"{flag} {source}: lists {len(lines):,} models; at most {MAX_MODELS:,} per list "
            "(split it into several lists)"
        )
    out: list[ModelEntry] = []
    seen: dict[str, int] = {}
    for n, line in lines:
        entry = parse_entry(line, f"{flag} {source} line {n}")
        if entry.spec in seen:
            raise InputError(
                f"{flag} {source} line {n}: {line!r} is listed twice (first on line"
                f" {seen[entry.spec]})"
            )
        seen[entry.spec] = n
        out.append(entry)
    return out


def _list_lines(path: Path, where: str) -> list[tuple[int, str]]:
    """``(line number, model)`` of a list file, comments and blank lines dropped; the file's
    size checked before it is read."""
    try:
        size = path.stat().st_size
        if size > MAX_LIST_BYTES:
            raise InputError(f"{where}: {size:,} bytes; a model list is at most {MAX_LIST_BYTES:,}")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{where}: cannot read it as text ({e})") from None
    lines = [(n, line.split("#", 1)[0].strip()) for n, line in enumerate(text.splitlines(), 1)]
    return [(n, m) for n, m in lines if m]


def parse_entry(line: str, where: str) -> ModelEntry:
    """One line of a model list as a :class:`ModelEntry` (an unknown model: :class:`InputError`)."""
    if line in _NAMED_SPECS:
        return ModelEntry(line, line)
    if line.startswith(_PREFIXES):
        rest = line[len("random:") :] if line.startswith("random:") else line
        rest = rest.split(":", 1)[1]
        if not rest:
            raise InputError(f"{where}: {line!r} names no model after its prefix")
        return ModelEntry(line, _name_of(rest, line, where))
    local = Path(line).expanduser()
    if local.is_dir():  # a prh run folder (load_encoder checks the rest)
        return ModelEntry(line, _name_of(line, line, where))
    if line.startswith(("/", ".", "~")):
        raise InputError(f"{where}: {line!r}: no such model folder")
    parts = line.split("/")
    if len(parts) == 2 and all(p and " " not in p for p in parts):
        return ModelEntry(f"hf:{line}", line)  # a bare hub id
    raise InputError(
        f"{where}: unknown model {line!r}; expected a hub id (org/name), an encoder spec"
        f" (hf:..., minilm, ...) or a run folder"
    )


def _name_of(path: str, line: str, where: str) -> str:
    """A hub id as it is; a local path (checked) by its last part (``models/bloomz-560m``)."""
    looks_like_path = path.startswith(("/", "./", "../", "~")) or Path(path).expanduser().is_dir()
    if not looks_like_path:
        return path
    local = Path(path).expanduser()
    if not local.exists():
        raise InputError(f"{where}: {line!r}: no such path {path}")
    return local.resolve().name


def pool_label(pool: str, modality: str) -> str:
    """The reference's word for a pooling in its file names.

    Its language models write ``avg`` (mean over tokens) or ``none`` (the last token); its vision
    models write ``none`` for the class token of every block. Other poolings keep prh's word.
    """
    if (modality == "text" and pool == "last") or (modality == "image" and pool == "cls"):
        return "none"
    return pool


def file_stem(name: str) -> str:
    """``<name>`` of a feature file: ``/`` -> ``_``, a ``timm/`` hub prefix dropped (reference)."""
    name = name[len("timm/") :] if name.startswith("timm/") else name
    name = name.rstrip("/")
    return name.replace(os.sep, "_").replace("/", "_")


def feature_filename(name: str, pool: str, modality: str, suffix: str = ".pt") -> str:
    """``<name>_pool-<pool><suffix>``, as ``platonic-rep``'s ``utils.to_feature_filename``."""
    return f"{file_stem(name)}_pool-{pool_label(pool, modality)}{suffix}"


def default_pool(entry: ModelEntry, modality: str, pool: str | None) -> str:
    """The pooling a model will use when ``--pool`` is not given (prh's defaults).

    Text: ``avg``. Images: ``cls``, which a vision model without a class token (SigLIP) turns
    into ``avg`` at load time; the file name is fixed before loading, so such a model in an
    image list needs ``--pool avg``.
    """
    if pool is not None:
        return pool
    return "avg" if modality == "text" else "cls"


POOLS = ("auto", "avg", "none")  # --pool: a file's pooling as the reference names it


def find_feature_file(folder: Path, entry: ModelEntry, flag: str, pool: str = "auto") -> Path:
    """The feature file of ``entry`` in ``folder`` (``<stem>_pool-<pool>.pt|.safetensors``).

    ``pool`` picks one pooling (``avg``: mean over tokens; ``none``: the reference's last token or
    class token); ``auto`` takes the model's one file, and refuses a choice between several (the
    reference writes ``*_pool-avg.pt`` and ``*_pool-none.pt`` side by side).

    Raises
    ------
    InputError
        No such file, no file of that pooling, or several with ``auto``: one line naming them.
    """
    stem = file_stem(entry.name)
    found = sorted(
        p
        for p in folder.iterdir()
        if p.is_file()
        and p.name.startswith(f"{stem}_pool-")
        and p.suffix.lower() in (".pt", ".safetensors")
        and "_pool-" not in p.name[len(stem) + 6 :]
    )
    if not found:
        raise InputError(f"{flag} {folder}: no feature file {stem}_pool-*.pt for {entry.name}")
    if pool != "auto":
        chosen = [p for p in found if p.name[len(stem) + 6 :].split(".")[0] == pool]
        if not chosen:
            have = ", ".join(p.name for p in found)
            raise InputError(
                f"{flag} {folder}: no {pool}-pooled file for {entry.name} (it has {have})"
            )
        found = chosen
    if len(found) > 1:
        names = ", ".join(p.name for p in found)
        raise InputError(
            f"{flag} {folder}: {entry.name} has several feature files ({names}); choose one"
            " with --pool avg or --pool none"
        )
    return found[0]


def reference_name(name: str) -> str:
    """A model's name as the reference's tables spell it: its hub id, a ``timm/`` prefix dropped
    (the reference loads vision models by their timm name)."""
    return name[len("timm/") :] if name.startswith("timm/") else name
