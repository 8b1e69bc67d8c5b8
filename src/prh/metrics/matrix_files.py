"""``prh measure`` as a library call: :func:`measure_files` reads the feature files a
:class:`MeasureRequest` names (files, folders or model lists), scores every (X, Y) cell with
:func:`prh.metrics.matrix.measure_matrix`, prints the tables and writes the JSON, ``.npy`` and
PNG outputs, all of them or none.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from prh.metrics.matrix import MatrixResult
from prh.metrics.matrix_report import heatmap_file, json_file, npy_files, print_result, print_tables
from prh.metrics.matrix_request import MeasureRequest


def _expand(paths: list[str], flag: str) -> list[Path]:
    """Files as given; a folder stands for its feature files, sorted by name."""
    from prh.errors import InputError
    from prh.features import SUFFIXES

    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(f for f in p.iterdir() if f.is_file() and f.suffix.lower() in SUFFIXES)
            if not found:
                raise InputError(
                    f"{flag} {p}: folder holds no feature file ({', '.join(SUFFIXES)})"
                )
            out.extend(found)
        else:
            out.append(p)
    return out


def _inputs(
    req: MeasureRequest, skipped: list[dict]
) -> tuple[list[Path], list[Path], list[str], list[str]]:
    """The matrix's X files and Y files (one each for the two-positional form), and their names.

    A side with a model list (``--x-models``) is the list's files in its one folder, in the list's
    order, named by model; any other file is named by its stem.
    """
    from prh.errors import InputError

    no_folder = (req.x_models is not None and req.x is None) or (
        req.y_models is not None and req.y is None
    )
    if no_folder:
        raise InputError("--x-models/--y-models pick files in the folder of --x/--y: give it")
    if req.x is not None or req.y is not None:
        if req.a is not None:
            raise InputError("give either A B or --x ... --y ..., not both")
        if req.x is None or req.y is None:
            raise InputError(
                f"{'--y' if req.y is None else '--x'} is missing: --x and --y go together"
            )
        if req.ids_a or req.ids_b:
            raise InputError("--ids-a/--ids-b apply to the A B form; with --x/--y files carry ids")
        xs, x_names = _side(req.x, req.x_models, "--x", req, skipped)
        ys, y_names = _side(req.y, req.y_models, "--y", req, skipped)
        return xs, ys, x_names, y_names
    if req.a is None or req.b is None:
        raise InputError("expected two feature files A B, or --x FILES --y FILES")
    return [Path(req.a)], [Path(req.b)], [Path(req.a).stem], [Path(req.b).stem]


def _side(
    paths: list[str], models: str | None, flag: str, req: MeasureRequest, skipped: list[dict]
) -> tuple[list[Path], list[str]]:
    """One side's files and names: expanded paths, or a model list's files in one folder, named
    as the reference names the models. With ``--keep-going`` a model without a usable file is
    left out and recorded in ``skipped``."""
    from prh.errors import InputError
    from prh.modelsets import find_feature_file, read_model_list, reference_name

    if models is None:
        files = _expand(paths, flag)
        return files, [p.stem for p in files]
    if len(paths) != 1 or not Path(paths[0]).is_dir():
        raise InputError(f"{flag}-models: {flag} must be one folder (the --out-dir of prh embed)")
    entries = read_model_list(models, f"{flag}-models")
    folder = Path(paths[0])
    pool = getattr(req, f"{flag[2:]}_pool") or req.pool
    files, names = [], []
    for e in entries:
        try:
            files.append(find_feature_file(folder, e, flag, pool))
        except InputError as err:
            if not req.keep_going:
                raise
            skipped.append({"side": flag[2:], "model": e.name, "reason": str(err)})
            continue
        names.append(reference_name(e.name))
    if not files:
        raise InputError(f"{flag}-models: no model of {models} has a usable file in {folder}")
    return files, names


def _check_rows(
    cache: _Files,
    files: list[Path],
    names: list[str],
    flag: str,
    req: MeasureRequest,
    skipped: list[dict],
) -> tuple[list[Path], list[str]]:
    """A model list's files hold one data set: refuse, before any score, an unreadable file or
    one of other rows (with ``--keep-going``: leave it out, recorded in ``skipped``)."""
    from prh.errors import InputError

    kept: list[Path] = []
    kept_names: list[str] = []
    for f, name in zip(files, names):
        try:
            n = cache.get(f, None)[1].shape[0]
            if kept and n != cache.get(kept[0], None)[1].shape[0]:
                raise InputError(
                    f"{flag}-models: {f.name} has {n} rows, {kept[0].name} has"
                    f" {cache.get(kept[0], None)[1].shape[0]}: the list's files must embed the"
                    " same rows"
                )
        except InputError as err:
            if not req.keep_going:
                raise
            skipped.append({"side": flag[2:], "model": name, "reason": str(err)})
            continue
        kept.append(f)
        kept_names.append(name)
    if not kept:
        raise InputError(f"{flag}-models: no model of the list has a usable file")
    return kept, kept_names


def _npy_paths(path: str | None, names: tuple[str, ...]) -> dict[str, Path]:
    if path is None:
        return {}
    p = Path(path)
    if len(names) == 1:
        return {names[0]: p}
    return {m: p.with_name(f"{p.stem}.{m}{p.suffix}") for m in names}


def _stat_paths(npy: dict[str, Path], req: MeasureRequest) -> dict[str, dict[str, Path]]:
    """Beside each raw ``.npy``: ``<stem>.calibrated.npy`` (with --null), ``<stem>.ci.npy``
    (with --bootstrap)."""
    kinds = [k for k, on in (("calibrated", req.null), ("ci", req.bootstrap)) if on]
    return {
        m: {kind: p.with_name(f"{p.stem}.{kind}{p.suffix}") for kind in kinds}
        for m, p in npy.items()
    }


def _check_outputs(req, xs, ys, npy: dict[str, Path], stats=None) -> None:
    from prh.errors import InputError
    from prh.io import guard_outputs

    if req.npy and Path(req.npy).suffix.lower() != ".npy":
        raise InputError(f"--npy {req.npy}: expected a .npy file name")
    if req.heatmap and Path(req.heatmap).suffix.lower() != ".png":
        raise InputError(f"--heatmap {req.heatmap}: expected a .png file name")
    if req.bpb_plot and Path(req.bpb_plot).suffix.lower() != ".png":
        raise InputError(f"--bpb-plot {req.bpb_plot}: expected a .png file name")
    outputs = {"--json": req.json, "--heatmap": req.heatmap, "--bpb-plot": req.bpb_plot}
    outputs.update({"--npy" if len(npy) == 1 else f"--npy ({m})": p for m, p in npy.items()})
    for m, kinds in (stats or {}).items():
        outputs.update({f"--npy ({m}, {kind})": p for kind, p in kinds.items()})
    named = [Path(p).resolve() for p in outputs.values() if p is not None]
    if len(set(named)) != len(named):
        raise InputError("two outputs (--json, --npy, --heatmap) name the same file")
    for folder in (Path(f) for f in [*(req.x or []), *(req.y or [])] if Path(f).is_dir()):
        for what, out in outputs.items():
            if out is not None and Path(out).resolve().is_relative_to(folder.resolve()):
                raise InputError(
                    f"{what} {out}: inside the input folder {folder}, whose files are all read; "
                    "choose another folder"
                )
    inputs = [*xs, *ys, req.ids_a, req.ids_b, *(req.x or []), *(req.y or [])]
    guard_outputs(outputs, inputs=inputs)


def _prepare(fs: Any, features: Any, req: MeasureRequest) -> Any:
    """A file's rows checked and preprocessed as :func:`prh.metrics.measure` would do it."""
    from prh.metrics.preprocess import as_layers, preprocess

    x = as_layers(features, fs.path)  # (N, L, D) float32, finite
    if req.no_preprocess:
        return x
    q = 1.0 if req.clamp == "none" else 0.95
    return preprocess(x, q, req.clamp == "exact", fs.path, fs.layer_dims, fs.per_layer)


class _Files:
    """Feature files and their preprocessed rows, each loaded and preprocessed once, and kept while
    they fit in ``budget`` bytes (the matrix reads every Y file once per X file)."""

    def __init__(self, req: MeasureRequest, budget: int = 2 * 2**30) -> None:
        self.req, self.budget, self.used = req, budget, 0
        self.kept: dict[tuple[str, str | None], tuple[Any, Any]] = {}

    def get(self, path: Path, ids_path: str | None) -> tuple[Any, Any]:
        from prh.features import load_features

        key = (str(path), ids_path)
        if key in self.kept:
            return self.kept[key]
        fs = load_features(path, ids_path)
        prepared = _prepare(fs, fs.features, self.req)
        size = fs.features.nbytes + prepared.nbytes
        if self.used + size <= self.budget:
            self.kept[key], self.used = (fs, prepared), self.used + size
        return fs, prepared


def _joined(fx: Any, fy: Any, py: Any, req: MeasureRequest) -> tuple[Any, str | None]:
    """``y``'s rows in ``x``'s order when the files are joined by id, and that order's digest.

    The clamp sees exactly the paired rows, so a join that is not the identity gives ``y`` new
    preprocessed rows (digest: how to key their states); an identity join, or none, keeps the
    file's own rows (digest None).
    """
    import hashlib

    import numpy as np

    from prh.features import join_rows

    if not (req.ids_a or req.ids_b or (fx.ids is not None and fy.ids is not None)):
        return py, None
    rows = join_rows(fx, fy)  # (N_x,) row of y for each row of x
    if len(rows) == len(fy.features) and np.array_equal(rows, np.arange(len(rows))):
        return py, None
    return _prepare(fy, fy.features[rows], req), hashlib.sha256(rows.tobytes()).hexdigest()


def _measure_all(req, xs, ys, x_names, y_names, names, options, files, lists):
    """Every (X, Y) cell and metric (:func:`prh.metrics.matrix.measure_matrix` on the files):
    the filled :class:`~prh.metrics.matrix.MatrixResult` and the per-cell results."""
    from prh.metrics.matrix import Cell, measure_matrix

    def rows(i: int, j: int) -> Cell:
        fx, px = files.get(xs[i], req.ids_a)  # x keeps its own row order, joined or not
        fy, py = files.get(ys[j], req.ids_b)
        py, order = _joined(fx, fy, py, req)
        key_y = str(ys[j]) if order is None else (str(ys[j]), order)
        return Cell(px, py, str(xs[i]), key_y, str(xs[i]), str(ys[j]))

    shown: list[Any] = []

    def show(i: int, j: int, r: Any) -> None:  # the two-file form prints each metric's result
        if shown:
            print()
        shown.append(r)
        print_result(r, *r.layer_scores.shape)  # (L_A, L_B)
        sys.stdout.flush()

    acc = measure_matrix(
        xs, ys, names, k=req.k, null=req.null, bootstrap=req.bootstrap, seed=req.seed,
        layers=req.layers, null_stop=req.null_stop, options=options, x_names=x_names,
        y_names=y_names, progress=not req.no_progress, rows=rows,
        on_cell=show if len(xs) * len(ys) == 1 else None, lists=lists,
    )  # fmt: skip
    results = [{"x": str(xs[e["row"]]), "y": str(ys[e["col"]]), **e} for e in acc.results]
    return acc, results


def measure_files(req: MeasureRequest) -> MatrixResult:
    """Load, measure every (X, Y) pair and metric, print, and write what was asked (all the
    outputs or none); the filled score matrices."""
    from prh.metrics import METRICS, MetricOptions

    skipped: list[dict] = []  # models --keep-going leaves out: {side, model, reason}
    xs, ys, x_names, y_names = _inputs(req, skipped)
    names = METRICS if "all" in req.metric else req.metric
    npy = _npy_paths(req.npy, names)
    stats = _stat_paths(npy, req) if len(xs) * len(ys) > 1 else {}
    _check_outputs(req, xs, ys, npy, stats)
    if req.backend == "torch" or str(req.device).strip().lower().startswith("cuda"):
        from prh.metrics.knn import torch_device

        torch_device(req.device)  # refuse an absent CUDA before any work, whatever the backend
    options = MetricOptions(
        k=req.k, kernel=req.kernel, sigma=req.rbf_sigma, cca_dim=req.cca_dim, eps=req.eps,
        block_size=req.block_size, backend=req.backend, device=req.device,
    )  # fmt: skip
    files = _Files(req)
    if req.x_models is not None:
        xs, x_names = _check_rows(files, xs, x_names, "--x", req, skipped)
    if req.y_models is not None:
        ys, y_names = _check_rows(files, ys, y_names, "--y", req, skipped)
    for skip in skipped:  # the summary of what --keep-going left out, before any score
        print(f"prh measure: left out {skip['model']} ({skip['side']}): {skip['reason']}",
              file=sys.stderr)  # fmt: skip
    bpb = _bpb_of(files, xs) if req.bpb_plot else []
    from prh.metrics.states import StateCache

    lists = StateCache()  # every kNN metric's neighbour lists, by (file, layer)
    if len(xs) * len(ys) > 1 and req.null and not req.no_progress:
        _print_cost(req, files, (xs, ys), names, options, lists)
    acc, results = _measure_all(req, xs, ys, x_names, y_names, names, options, files, lists)
    if len(xs) * len(ys) > 1:
        print_tables(req, acc, names, x_names, y_names)
    _write(req, acc, (results, names, bpb, skipped), (xs, ys, x_names, y_names), (npy, stats))
    return acc


def _write(req: MeasureRequest, acc: MatrixResult, made, sides, paths) -> None:
    """Every output asked for, as one result: all written, or none (a full disk names one)."""
    from prh.io import write_all

    (results, names, bpb, skipped), (npy, stats), x_names, y_names = made, paths, *sides[2:]
    out: dict[Any, bytes] = {}
    if req.json:
        out[req.json] = json_file(req, acc, results, names, sides, skipped)
    out.update(npy_files(acc, npy, stats, x_names, y_names))
    if req.heatmap:
        out[req.heatmap] = heatmap_file(req, acc, names, x_names, y_names)
    if req.bpb_plot:
        from prh.metrics.quality_plot import alignment_vs_bpb_png

        out[req.bpb_plot] = alignment_vs_bpb_png(bpb, acc.scores[names[0]], x_names, names[0])
    write_all(out)


def _print_cost(req, files: _Files, sides, names, options, lists: dict) -> None:
    """The matrix's work and estimated time, on stderr, before the first cell. A batched null is
    timed on the first cell's neighbour lists, which ``lists`` keeps for the matrix."""
    from prh.metrics.api import get_metric
    from prh.metrics.cost import describe, estimate_matrix, planned_work

    xs, ys = sides
    shapes = {p: files.get(p, None)[1].shape for p in [*xs, *ys]}  # (N, L, D) each
    n, width = shapes[xs[0]][0], max(s[2] for s in shapes.values())
    lx, ly = [shapes[x][1] for x in xs], [shapes[y][1] for y in ys]
    costs, first = [], {}  # first: the metric that prepares each kind of state
    for m in names:
        metric, sample = get_metric(m, options), None
        prior = first.setdefault(metric.state, m)
        if metric.null is not None:  # with CKNNA, the matrix searches both lists at once
            kept = {} if "cknna" in names else lists
            sample = tuple(_first_lists(files, f, options, kept) for f in (xs[0], ys[0]))
        costs.append(
            estimate_matrix(
                m, n, width, lx, ly, req.null, options, distinct_files=len(shapes), sample=sample,
                shared_with=None if prior == m else prior,
            )
        )  # fmt: skip
    metrics = [get_metric(m, options) for m in names]
    work = planned_work(metrics, sum(s[1] for s in shapes.values()))
    text = describe(costs, len(xs) * len(ys), req.null, req.null_stop == "adaptive", work)
    print(f"prh measure: {text}", file=sys.stderr, flush=True)


def _first_lists(files: _Files, path: Path, options, lists: dict) -> list:
    """Each layer's neighbour lists of one file, kept in ``lists`` as the matrix keys them."""
    from prh.metrics.api import get_metric

    prepare = get_metric("mutual_knn", options).prepare
    x = files.get(path, None)[1]  # (N, L, D) preprocessed
    for layer in range(x.shape[1]):
        if (str(path), layer) not in lists:
            lists[str(path), layer] = prepare(x[:, layer])
    return [lists[str(path), layer] for layer in range(x.shape[1])]


def _bpb_of(files: _Files, xs: list[Path]) -> list[float]:
    """Each X file's stored bits per byte; a file without one is refused before any score."""
    from prh.errors import InputError

    out = []
    for x in xs:
        value = files.get(x, None)[0].metadata.get("bpb")
        if value is None:
            raise InputError(
                f"--bpb-plot: {x} stores no bpb (embed a causal language model with prh embed,"
                " or use the reference's language feature files)"
            )
        out.append(_bpb_value(value, x))
    return out


MAX_BPB = 1000.0  # bits per byte: 8 is a uniform guess over bytes; far above any real model


def _bpb_value(value: object, x: Path) -> float:
    """A stored bpb as a number in ``(0, MAX_BPB]`` (NaN, infinity, <= 0 or a huge value drew
    an empty, a wrong or no plot: issue 36)."""
    import math

    from prh.errors import InputError

    try:
        bpb = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        bpb = math.nan
    if not (0 < bpb <= MAX_BPB):  # NaN fails too
        raise InputError(
            f"--bpb-plot: {x} stores bpb {value!r}; expected a finite number in (0, {MAX_BPB:g}]"
        )
    return bpb
