"""Where training data comes from: the cave world or a caption corpus, tokenised, as views.

This is the only place in :mod:`prh.training` that knows about :mod:`prh.world`, :mod:`prh.data`
and :mod:`prh.views`; tests may inject their own ``data_factory`` with the same signature.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prh.errors import InputError
from prh.training.config import TrainConfig
from prh.world.ids import scene_ids_of
from prh.world.registry import SpectralWorld, gap_k, is_default_world

TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_NARRATIONS = 256  # narrations added to a narration run's tokenizer text


def build_world(cfg: TrainConfig) -> Any:
    """The world of a ``--world NAME`` config (themes included), from the registry."""
    from prh.world import make_world

    if cfg.world_themes:
        return make_world(
            cfg.world, seed=cfg.world_seed, themes=cfg.world_themes,
            theme_strength=cfg.theme_strength,
        )  # fmt: skip
    return make_world(cfg.world, seed=cfg.world_seed)


def build_corpus(cfg: TrainConfig) -> Any:
    """The training :class:`prh.data.CaptionCorpus` of a config (fixed by the world seed)."""
    if cfg.world is not None:
        world = build_world(cfg)
        ids = world.train_scenes(cfg.train_scenes)
        return world.corpus(ids, captions_per_scene=cfg.captions_per_scene, seed=cfg.world_seed)
    return corpus_split(cfg)[0]


def corpus_split(cfg: TrainConfig) -> tuple[Any, str | None]:
    """``(corpus, split)`` a corpus run trains on: its ``train`` split when it names one (the
    held-out ``val``/``test`` images stay unseen), else every image (split None)."""
    from prh.data import load_corpus

    corpus = load_corpus(cfg.corpus)
    if "train" in getattr(corpus, "splits", {}):
        return corpus.split("train"), "train"
    return corpus, None


def corpus_record(cfg: TrainConfig) -> dict[str, Any] | None:
    """What a corpus run stores under ``config.json``'s ``"corpus"``
    (:func:`prh.data.record.corpus_record`: path, format, split, counts, sha256); None for a
    world run."""
    if cfg.corpus is None:
        return None
    from prh.data.record import corpus_record as record

    corpus, split = corpus_split(cfg)
    return record(cfg.corpus, None, split, corpus)


def check_corpus_unchanged(cfg: TrainConfig, stored: dict[str, Any]) -> None:
    """Refuse to resume a corpus run whose corpus files changed since it started (a stored
    ``config.json`` without a record, from before records, is not checked)."""
    before = stored.get("corpus")
    if cfg.corpus is None or not isinstance(before, dict) or "sha256" not in before:
        return
    from prh.data.record import corpus_digest

    now, _ = corpus_digest(cfg.corpus, before.get("format", ""))
    if now != before["sha256"]:
        raise InputError(
            f"--corpus {cfg.corpus}: its files changed since the run started (sha256 "
            f"{before['sha256'][:12]}..., now {now[:12]}...); a resumed run must read the same "
            "corpus (restore it, or start a new run with --out)"
        )


def world_model_defaults(cfg: TrainConfig) -> dict[str, Any]:
    """Model fields a world sets unless the run overrides them: a world with a gap at ``k``
    (``gap_k``, the moving cave's 8) makes the JEPA's output width ``k``, the theorem's
    condition (docs/theory.md sec. 3 and 8). The cave world sets none."""
    if is_default_world(cfg.world):
        return {}
    k = gap_k(build_world(cfg))
    return {} if k is None else {"embed_dim": int(k)}


def lag_source(cfg: TrainConfig) -> Any:
    """The caption source of a world that moves (a :class:`~prh.world.SpectralWorld`): good
    rows are two frames at the world's lag (:mod:`prh.views.lag`), over its training states,
    from the corpus's pool of ``captions_per_scene`` wordings per state; ``None`` for a still
    world."""
    world = build_world(cfg)
    if not isinstance(world, SpectralWorld):
        return None
    from prh.views.lag import LagPairs, MovingCaptionSource

    pairs = LagPairs(world, world.train_scenes(cfg.train_scenes))
    return MovingCaptionSource(world, pairs, cfg.captions_per_scene, cfg.world_seed)


def narration_source(cfg: TrainConfig) -> Any:
    """The narrations of a moving world's next-token run (``narration_len`` frames,
    ``narration_stride`` steps apart) over its training states (:mod:`prh.views.narration`)."""
    from prh.views.narration import NarrationSource

    world = build_world(cfg)
    ids = world.train_scenes(cfg.train_scenes)
    return NarrationSource(world, ids, cfg.narration_len, cfg.narration_stride)


def check_corpus_size(corpus: Any, cfg: TrainConfig, where: str) -> None:
    if len(corpus) < cfg.batch_size:
        raise InputError(
            f"{where}: {len(corpus)} images in the corpus, fewer than the batch size "
            f"{cfg.batch_size}; give a larger corpus or a smaller --batch-size"
        )


def default_data_factory(
    cfg: TrainConfig, run_dir: Path, rank: int, world_size: int, is_main: bool, barrier: Any
) -> tuple[Any, Any]:
    """``(tokenizer, ViewDataset)`` for this rank.

    Rank 0 trains the tokenizer on the corpus (or reloads it on resume) and writes
    ``tokenizer.json``; the other ranks wait at ``barrier`` and load it.
    """
    from prh.views import TextTokenizer, make_view_dataset

    corpus = build_corpus(cfg)
    check_corpus_size(corpus, cfg, cfg.corpus or f"world {cfg.world}")
    narrations = narration_source(cfg) if cfg.narration_len else None
    path = run_dir / TOKENIZER_FILE
    if is_main and not path.exists():
        # A narration run's vocabulary also holds the narrator's words (verbs, connectors).
        extra = narrations.texts(TOKENIZER_NARRATIONS) if narrations is not None else []
        tok = TextTokenizer.train(corpus.texts() + extra, vocab_size=cfg.vocab_size)
        tok.save(path)
    barrier()
    tok = TextTokenizer.load(path)
    kind = "mixture" if cfg.views == "mixture" else cfg.views
    source, config = corpus, None
    if narrations is not None:
        from prh.views import ViewConfig

        source, config = narrations, ViewConfig(doc_captions=cfg.narration_len)
    elif not is_default_world(cfg.world):
        source = lag_source(cfg) or corpus
    if cfg.doc_captions > 1 or cfg.doc_style:
        from prh.views import ViewConfig

        config = ViewConfig(doc_captions=cfg.doc_captions)
        if cfg.doc_style:
            from prh.views.documents import StyledDocumentSource

            world = build_world(cfg)
            ids = world.train_scenes(cfg.train_scenes)
            source = StyledDocumentSource(world, ids, wordings=cfg.captions_per_scene)
        elif cfg.doc_captions > cfg.captions_per_scene:
            raise InputError(
                f"doc_captions {cfg.doc_captions} > captions_per_scene {cfg.captions_per_scene}"
            )
    ds = make_view_dataset(
        source,
        kind,
        tok,
        rho=cfg.rho,
        batch_size=cfg.batch_size,
        max_len=cfg.max_len,
        seed=cfg.seed,
        rank=rank,
        world_size=world_size,
        config=config,
    )
    return tok, ds


def eval_texts(cfg: TrainConfig, ids: list[str]) -> list[str]:
    """One caption per id (``scene_{i}``; a corpus's image ids) to embed for evaluation against
    a feature file: the wording of seed ``world_seed + 1``, on a corpus its caption number
    ``(world_seed + 1) mod n`` (:meth:`prh.world.corpus.CorpusWorld.captions`' rule), so that a
    run's curve and a measurement of its held-out images (``prh demo --corpus``) read one
    caption."""
    if cfg.world is not None:
        world = build_world(cfg)
        scenes = scene_ids_of(ids, "--eval-features")
        return [world.captions(int(i), 1, seed=cfg.world_seed + 1)[0] for i in scenes]
    from prh.data import load_corpus

    corpus = load_corpus(cfg.corpus)
    by_id = dict(zip(corpus.image_ids, corpus.captions))
    missing = [s for s in ids if s not in by_id]
    if missing:
        raise InputError(
            f"--eval-features: {len(missing)} ids not in the corpus, e.g. {missing[0]}"
        )
    pick = cfg.world_seed + 1
    return [by_id[s][pick % len(by_id[s])] for s in ids]


def run_tokens_per_row(run_dir: Path, batches: int = 4) -> float:
    """Mean real tokens a row of a finished text run reads (both sides of a JEPA pair, the whole
    document of a next-token row; :func:`prh.views.documents.mean_tokens_per_row`), over its
    first ``batches`` batches, with its own tokenizer (read, never rewritten)."""
    from prh.training.config import TrainConfig
    from prh.training.lifecycle import read_stored
    from prh.views.documents import mean_tokens_per_row

    cfg = TrainConfig.from_dict(read_stored(Path(run_dir))["train"])
    _, ds = default_data_factory(cfg, Path(run_dir), 0, 1, False, lambda: None)
    return mean_tokens_per_row([ds.batch(i) for i in range(batches)])
