"""``prh caption`` as a library call: :func:`caption_command` checks a :class:`CaptionRequest`
and builds a caption run (:func:`~prh.caption.build.build_caption_run`), scores one
(:func:`~prh.caption.evaluate.evaluate_captioner`) or captions image files through one.
"""

from __future__ import annotations

import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from prh.jsonio import read_json

MAX_REFS = 100  # references per scene in --eval (COCO has 5; the grammar runs short far above)
IMAGE_SIZES = (16, 1024)  # render side the cave world accepts, in pixels
MAX_BEAM = 64  # beams beyond this only cost memory (10**10 asked the allocator for 80 GB)


@dataclass(frozen=True)
class CaptionRequest:
    """One ``prh caption``, a field per flag: caption ``image`` files with ``run`` (default),
    score it (``eval``), or ``build`` a caption run from ``text_run`` into ``out`` (on the text
    run's world, or on ``corpus``, a caption corpus with its photos)."""

    eval: bool = False
    build: bool = False
    run: Path | None = None
    image: tuple[Path, ...] | None = None
    beam: int | None = None
    nearest: bool = False
    vision: str | None = None
    max_image_mb: int = 10
    image_features: Path | None = None
    json: Path | None = None
    threads: int | None = None
    no_progress: bool = False
    world: str = "cave"
    n: int = 500
    refs: int = 5
    meteor: bool = False
    paired_run: Path | None = None
    tokenizer: str | None = None
    text_run: Path | None = None
    out: Path | None = None
    n_pairs: int = 1000
    decoder_scenes: int = 2000
    decoder_steps: int = 1500
    map: str = "semi-orthogonal"
    vision_dims: int = 64
    noise: str | float = "gap"
    image_size: int = 224
    pair_free: bool = False
    pair_free_method: str = "auto"
    pair_free_classes: bool = False
    seed: int = 0
    corpus: Path | None = None
    device: str | None = None


def caption_command(req: CaptionRequest) -> None:
    """Check every setting (before a model loads or a folder is made), then build a caption run,
    score one, or caption ``req.image``: what ``prh caption`` does, printing and writing the
    same."""
    from prh.errors import InputError
    from prh.io import guard_outputs

    # Everything a user typed is checked here, before a model loads or a folder is made.
    cpus = os.cpu_count() or 1
    if req.threads is not None and req.threads > cpus:
        raise InputError(f"--threads {req.threads}: this machine has {cpus} CPUs")
    if req.beam is not None and req.beam > MAX_BEAM:
        raise InputError(f"--beam must be 1 to {MAX_BEAM}, got {req.beam}")
    inputs = _check_build(req) if req.build else _check_run(req)
    if req.image_features is not None:
        _need_file(req.image_features, "--image-features", "a feature file")
        inputs.append(req.image_features)
    guard_outputs({"--json": req.json}, inputs=inputs)
    from prh.progress import quiet_third_party

    quiet_third_party()  # a vision model's "Loading weights" bar; prh reports its own progress
    if req.build:
        _build(req)
    elif req.eval:
        _eval(req)
    else:
        _caption(req)


def _check_build(req: CaptionRequest) -> list[Path]:
    """Refuse bad --build flags; return the inputs (the text run)."""
    from prh.errors import InputError
    from prh.io import check_output_dir, refuse_input_overwrite

    if req.text_run is None or req.out is None:
        raise InputError("--build needs --text-run RUN (a prh train run) and --out RUN")
    if req.n_pairs < 4 or req.decoder_scenes < 2:  # a 4:1 split of pairs fits and probes
        raise InputError(
            f"--n-pairs must be >= 4 and --decoder-scenes >= 2, got {req.n_pairs} and "
            f"{req.decoder_scenes}"
        )
    if req.pair_free_classes and not req.pair_free:
        raise InputError("--pair-free-classes needs --pair-free (it anchors the pair-free map)")
    if req.pair_free_method != "auto" and not req.pair_free:
        raise InputError("--pair-free-method needs --pair-free")
    lo, hi = IMAGE_SIZES
    if not lo <= req.image_size <= hi:
        raise InputError(f"--image-size must be {lo} to {hi} pixels, got {req.image_size}")
    _need_folder(req.text_run, "--text-run", "a prh train run folder")
    inputs = [req.text_run]
    if req.corpus is not None:
        if not req.corpus.exists():
            raise InputError(f"--corpus {req.corpus}: no such file or folder")
        inputs.append(req.corpus)
    if req.vision and Path(req.vision).is_dir():  # a prh image run or a model folder
        inputs.append(Path(req.vision))
    # --out resolved (symlinks, ``..``) against every input folder before it is made or locked
    refuse_input_overwrite({"--out": req.out}, inputs)
    check_output_dir(req.out, "--out")
    return inputs


def _check_run(req: CaptionRequest) -> list[Path]:
    """Refuse bad caption / --eval flags; return the inputs (run files, text run, images)."""
    from prh.errors import InputError

    if req.run is None:
        raise InputError("--run RUN is required (a run folder holding caption/)")
    if not req.eval and not req.image:
        raise InputError("give --image PNG to caption, --eval to score, or --build to build")
    if req.eval and req.beam is not None and req.beam < 2:
        raise InputError(f"--beam for the --eval beam row must be >= 2, got {req.beam}")
    if req.eval and req.refs > MAX_REFS:
        raise InputError(f"--refs must be 1 to {MAX_REFS} references per scene, got {req.refs}")
    if req.paired_run is not None and not req.eval:
        raise InputError("--paired-run goes with --eval")
    inputs = _run_inputs(req.run, with_text_run=True)
    if req.paired_run is not None:
        if req.paired_run.resolve() == req.run.resolve():
            raise InputError(f"--paired-run {req.paired_run}: the same run as --run")
        inputs += _run_inputs(req.paired_run, with_text_run=True)
    for path in req.image or ():
        _need_file(path, "--image", "an image file")
    return inputs + list(req.image or ())


def _need_file(path: Path, flag: str, what: str) -> None:
    from prh.errors import InputError

    if path.is_dir():
        raise InputError(f"{flag} {path}: is a folder, expected {what}")
    if path.exists() and not path.is_file():
        raise InputError(
            f"{flag} {path}: not a regular file (a device or a pipe?), expected {what}"
        )
    if not path.is_file():
        raise InputError(f"{flag} {path}: no such file")


def _need_folder(path: Path, flag: str, what: str) -> None:
    from prh.errors import InputError

    if path.exists() and not path.is_dir():
        raise InputError(f"{flag} {path}: is a file, expected {what}")
    if not path.is_dir():
        raise InputError(f"{flag} {path}: no such folder")


def _run_inputs(run: Path, with_text_run: bool) -> list[Path]:
    """What a caption run's reader opens: the run folder (its manifest and tensors) and, for
    --eval, the text run its manifest names. Any --json among them would destroy the run."""
    from prh.caption.pipeline import caption_folder, read_manifest

    folder = caption_folder(run)  # one line for a file, a missing folder, or no caption model
    inputs = [run, folder]
    if with_text_run:
        text_run = read_manifest(folder).get("text_run")
        if isinstance(text_run, str) and text_run:
            p = Path(text_run)
            inputs.append(p if p.is_absolute() else folder / p)
    return inputs


def load_request_captioner(req: CaptionRequest, beam: int = 1, run: Path | None = None):
    """The captioner of ``run`` (default ``req.run``), with ``req.vision`` as its encoder when
    given."""
    from prh.caption import load_captioner

    vision = None
    if req.vision:
        from prh.encoders import load_encoder

        vision = load_encoder(req.vision, efficientnet_layers="head", threads=req.threads)
    return load_captioner(run or req.run, beam=beam, threads=req.threads, vision=vision)


def read_image(path: Path, max_mb: int):
    """Decode an image file with the one guarded decoder (:mod:`prh.imageio`), as serve does."""
    from prh.errors import InputError
    from prh.imageio import ImageLimits
    from prh.imageio import read_image as decode_file

    _need_file(path, "--image", "an image file")
    try:
        return decode_file(path, ImageLimits(max_bytes=max_mb * 1024 * 1024))
    except InputError as e:
        raise InputError(f"--image {e}") from None


def _caption(req: CaptionRequest) -> None:
    images = [read_image(p, req.max_image_mb) for p in req.image]  # fail before loading models
    captioner = load_request_captioner(req, beam=req.beam or 1)
    kind = getattr(captioner, "kind", "decoder")
    if kind != "decoder":
        print(f"captioner: {captioner.label}")
    out = []
    for path, image in zip(req.image, images):
        r = captioner.caption(image)
        prefix = f"{path}: " if len(images) > 1 else ""
        print(prefix + r.caption)
        if req.nearest:
            for text, score in r.nearest:
                print(f"  {score:+.3f}  {text}")
        out.append(
            {
                "image": str(path),
                "captioner": kind,
                "caption": r.caption,
                "nearest": [{"caption": c, "score": s} for c, s in r.nearest],
                "seconds": r.seconds,
            }
        )
    if req.json is not None:
        from prh.io import write_json

        write_json(req.json, out[0] if len(out) == 1 else out)


def _eval(req: CaptionRequest) -> None:
    from prh.caption import compare_captioners, evaluate_captioner
    from prh.provenance import stamped

    kw = dict(
        n=req.n,
        beam=req.beam or 3,
        refs=req.refs,
        meteor=req.meteor,
        tokenizer=req.tokenizer,
        image_features=req.image_features,
        progress=not req.no_progress,
    )
    res = evaluate_captioner(load_request_captioner(req), **kw)
    print(res.table())
    for note in res.config.get("notes", []):
        print(f"note: {note}", file=sys.stderr)
    out = res.to_dict()
    if req.paired_run is not None:
        paired = evaluate_captioner(load_request_captioner(req, run=req.paired_run), **kw)
        print(f"\npaired captioner ({req.paired_run}):\n{paired.table()}")
        cmp = compare_captioners(res, paired)
        print(
            f"\nCIDEr x100: {req.run} {100 * cmp['zero_pair']:.1f} ({cmp['rows']['zero_pair']}), "
            f"paired {100 * cmp['paired']:.1f} ({cmp['rows']['paired']}), nearest caption "
            f"{100 * cmp['nearest_caption']:.1f}; ratio {cmp['ratio']:.3f}"
        )
        out |= {"paired": paired.to_dict(), "comparison": cmp}
    if req.json is not None:
        from prh.io import json_safe, write_json

        inputs = [Path(req.run) / "caption" / "caption.json", req.image_features]
        if req.paired_run is not None:
            inputs.append(Path(req.paired_run) / "caption" / "caption.json")
        write_json(
            req.json, json_safe(stamped("caption-eval", out, inputs=inputs, options=asdict(req)))
        )


def _build(req: CaptionRequest) -> None:
    from prh.caption import build_caption_run

    out = build_caption_run(
        req.text_run,
        req.out,
        vision=req.vision or "efficientnet-lite0",
        n_pairs=req.n_pairs,
        decoder_scenes=req.decoder_scenes,
        map_kind=req.map,
        vision_dims=req.vision_dims,
        decoder_steps=req.decoder_steps,
        noise=req.noise,
        image_size=req.image_size,
        seed=req.seed,
        threads=req.threads,
        image_features=req.image_features,
        pair_free=req.pair_free,
        pair_free_classes=req.pair_free_classes,
        pair_free_method=req.pair_free_method,
        corpus=None if req.corpus is None else str(req.corpus),
        device=req.device,
        progress=not req.no_progress,
    )
    info = read_json(out / "caption" / "caption.json")
    print(
        f"{out}: caption run ({info['vision']} -> {info['map']['kind']} map -> decoder), "
        f"map R^2 {info['map']['r2_train']:.3f}, gap {info['gap']:.4f}, "
        f"decoder loss {info['decoder_loss_final']:.3f}, {info['seconds']['total_s']:.0f} s"
    )
    if info.get("pair_free"):
        pf = info["pair_free"]
        how = (
            f"spectral, from each run's own {pf['pairs']} positive pairs; "
            + ("pinned" if pf["pinned"] else f"NOT pinned: {pf['reason']}")
            if pf.get("method") == "spectral"
            else f"shape, start {pf['start']}"
        )
        print(
            f"pair-free match accuracy {pf['accuracy']:.3f} (chance {pf['chance']:.4f}; {how}; "
            "no image-caption pair used)"
        )
    if req.json is not None:
        from prh.io import write_json

        write_json(req.json, info)
