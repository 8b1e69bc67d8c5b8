"""Linear maps between two embedding spaces, fitted on paired rows: the "one rotation" of the PRH.

Three estimators share one interface (``fit(X, Y)`` returns ``self``, learned state ends in ``_``,
``transform(X)`` maps rows of ``X`` into ``Y``'s space):

- :class:`OrthogonalMap`: orthogonal Procrustes for ``d_x == d_y`` [1]_,
  ``W* = argmin_{W^T W = I} ||X_c W^T - Y_c||_F = V U^T`` where ``X_c^T Y_c = U S V^T``.
- :class:`SemiOrthogonalMap`: the same for ``d_x != d_y``: ``W`` of shape ``(d_y, d_x)`` is a
  partial isometry of rank ``r <= min(d_x, d_y)`` (all non-zero singular values equal 1); for
  ``r = d_y <= d_x`` its rows are orthonormal, ``W W^T = I``. This is the map the paper uses to
  link a frozen vision encoder to a text-only decoder.
- :class:`RidgeMap`: the unconstrained baseline, ``W = argmin ||X_c W^T - Y_c||^2 + alpha ||W||^2``.

All three centre both sides (``center=True``); the constrained maps can also whiten each side
first (``whiten=True``: ZCA with the training covariance, ``eps`` added to its eigenvalues) and
colour the output back with ``Y``'s covariance, so the prediction lives in ``Y``'s raw space.
``scale=True`` fits one global scale ``s`` (Procrustes with scaling [2]_).

Maps are saved as safetensors (tensors) plus a JSON sidecar (kind, parameters, dimensions,
layers) with :func:`save_map` and read back with :func:`load_map`.

References
----------
.. [1] P. H. Schönemann, "A generalized solution of the orthogonal Procrustes problem",
   Psychometrika 31, 1966.
.. [2] J. C. Gower and G. B. Dijksterhuis, "Procrustes Problems", Oxford University Press, 2004.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from prh.errors import InputError
from prh.io import canonical_safetensors, json_bytes, write_all
from prh.jsonio import loads, read_json
from prh.linalg import procrustes_rotation, zca_whitener

__all__ = [
    "OrthogonalMap",
    "RidgeMap",
    "SemiOrthogonalMap",
    "load_map",
    "map_files",
    "save_map",
]

KINDS = ("orthogonal", "semi-orthogonal", "ridge")


def _check_pair(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or y.ndim != 2:
        raise InputError(f"expected X (N, d_x) and Y (N, d_y), got shapes {x.shape} and {y.shape}")
    if x.shape[0] != y.shape[0]:
        raise InputError(f"paired rows required: X has {x.shape[0]} rows, Y has {y.shape[0]} rows")
    if x.shape[0] < 2:
        raise InputError(f"need at least 2 paired rows to fit a map, got {x.shape[0]}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise InputError("X or Y holds NaN or infinite values")
    return x, y


class _LinearMap:
    """Shared state and ``transform``: ``y_hat = s ((x - m_x) A_x) W^T A_y + m_y``."""

    kind = ""

    def _params(self) -> dict[str, Any]:
        raise NotImplementedError

    def _check_fitted(self) -> None:
        if not hasattr(self, "weight_"):
            raise InputError(f"this {type(self).__name__} is not fitted yet: call fit(X, Y) first")

    def _prepare(self, x: np.ndarray, y: np.ndarray, center: bool, whiten: bool, eps: float):
        self.mean_x_ = x.mean(0) if center else np.zeros(x.shape[1])
        self.mean_y_ = y.mean(0) if center else np.zeros(y.shape[1])
        xc, yc = x - self.mean_x_, y - self.mean_y_
        if whiten:
            self.whiten_x_, _ = zca_whitener(xc, eps)
            self.whiten_y_, self.colour_y_ = zca_whitener(yc, eps)
            xc, yc = xc @ self.whiten_x_, yc @ self.whiten_y_
        else:
            self.whiten_x_ = np.eye(x.shape[1])
            self.whiten_y_ = np.eye(y.shape[1])
            self.colour_y_ = np.eye(y.shape[1])
        self.n_features_in_ = x.shape[1]
        self.n_features_out_ = y.shape[1]
        return xc, yc

    def transform(self, x: np.ndarray) -> np.ndarray:
        """Map rows ``x (N, d_x)`` into ``Y``'s space, ``(N, d_y)`` float32."""
        self._check_fitted()
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.n_features_in_:
            raise InputError(
                f"expected X with {self.n_features_in_} columns (the map's d_x), "
                f"got shape {x.shape}"
            )
        z = (x - self.mean_x_) @ self.whiten_x_  # (N, d_x)
        z = self.scale_ * (z @ self.weight_.T)  # (N, d_y)
        return (z @ self.colour_y_ + self.mean_y_).astype(np.float32)

    def score(self, x: np.ndarray, y: np.ndarray) -> float:
        """``R^2`` of the prediction: ``1 - ||Y - Y_hat||^2 / ||Y - mean(Y)||^2``; NaN when ``Y``
        is constant (R^2 is undefined there)."""
        x, y = _check_pair(x, y)
        resid = ((y - self.transform(x)) ** 2).sum()
        total = ((y - y.mean(0)) ** 2).sum()
        if total <= 0:
            return float("nan")
        return float(1.0 - resid / total)

    def state_dict(self) -> dict[str, np.ndarray]:
        """The learned arrays (what :func:`save_map` writes)."""
        self._check_fitted()
        names = ("weight_", "mean_x_", "mean_y_", "whiten_x_", "whiten_y_", "colour_y_")
        out = {n.rstrip("_"): np.asarray(getattr(self, n), dtype=np.float64) for n in names}
        out["scale"] = np.array([self.scale_], dtype=np.float64)
        return out

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        for name in ("weight", "mean_x", "mean_y", "whiten_x", "whiten_y", "colour_y"):
            setattr(self, name + "_", np.asarray(state[name], dtype=np.float64))
        self.scale_ = float(np.asarray(state["scale"]).ravel()[0])
        self.n_features_out_, self.n_features_in_ = self.weight_.shape


class SemiOrthogonalMap(_LinearMap):
    """A partial isometry ``W (d_y, d_x)`` of rank ``r`` fitted by Procrustes on paired rows.

    Parameters
    ----------
    rank : int, optional
        Singular directions kept; default ``min(d_x, d_y)``. Must not exceed ``d_x`` or ``d_y``.
    center : bool
        Subtract each side's mean before fitting (and add ``Y``'s mean back).
    whiten : bool
        ZCA-whiten each side before fitting; the output is coloured back with ``Y``'s covariance.
    scale : bool
        Fit one global scale ``s = tr(S) / ||X_c||_F^2`` as well.
    eps : float
        Relative ridge added to covariance eigenvalues when whitening.

    Attributes
    ----------
    weight_ : np.ndarray
        ``(d_y, d_x)`` with ``W W^T = I_r`` on its row space; orthonormal rows when ``r = d_y``.
    rotation_ : np.ndarray
        Alias of ``weight_``.
    mean_x_, mean_y_ : np.ndarray
        ``(d_x,)``, ``(d_y,)`` training means (zeros when ``center=False``).
    scale_ : float
        The global scale (1 unless ``scale=True``).
    """

    kind = "semi-orthogonal"

    def __init__(
        self,
        rank: int | None = None,
        center: bool = True,
        whiten: bool = False,
        scale: bool = False,
        eps: float = 1e-6,
    ) -> None:
        self.rank = rank
        self.center = center
        self.whiten = whiten
        self.scale = scale
        self.eps = eps

    def _params(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "center": self.center,
            "whiten": self.whiten,
            "scale": self.scale,
            "eps": self.eps,
        }

    def _rank(self, d_x: int, d_y: int) -> int:
        r = min(d_x, d_y) if self.rank is None else int(self.rank)
        if r < 1:
            raise InputError(f"rank must be >= 1, got {r}")
        if d_x < r or d_y < r:
            raise InputError(f"map rank {r} exceeds the dimensions: d_x = {d_x}, d_y = {d_y}")
        return r

    def fit(self, x: np.ndarray, y: np.ndarray) -> SemiOrthogonalMap:
        """Fit on paired rows ``x (N, d_x)``, ``y (N, d_y)``; returns ``self``."""
        x, y = _check_pair(x, y)
        r = self._rank(x.shape[1], y.shape[1])
        xc, yc = self._prepare(x, y, self.center, self.whiten, self.eps)
        self.weight_ = procrustes_rotation(xc, yc, r)  # (d_y, d_x)
        if self.scale:
            s = np.linalg.svd(xc.T @ yc, compute_uv=False)[:r].sum()
            self.scale_ = float(s / max((xc**2).sum(), 1e-30))
        else:
            self.scale_ = 1.0
        self.rank_ = r
        return self

    @property
    def rotation_(self) -> np.ndarray:
        self._check_fitted()
        return self.weight_


class OrthogonalMap(SemiOrthogonalMap):
    """Orthogonal Procrustes: ``W (d, d)`` with ``W^T W = W W^T = I`` (requires ``d_x == d_y``).

    Same parameters and attributes as :class:`SemiOrthogonalMap` without ``rank``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((50, 4))
    >>> q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    >>> m = OrthogonalMap(center=False).fit(x, x @ q.T)
    >>> bool(np.allclose(m.rotation_, q))
    True
    """

    kind = "orthogonal"

    def __init__(
        self, center: bool = True, whiten: bool = False, scale: bool = False, eps: float = 1e-6
    ) -> None:
        super().__init__(rank=None, center=center, whiten=whiten, scale=scale, eps=eps)

    def _params(self) -> dict[str, Any]:
        p = super()._params()
        p.pop("rank")
        return p

    def fit(self, x: np.ndarray, y: np.ndarray) -> OrthogonalMap:
        x, y = _check_pair(x, y)
        if x.shape[1] != y.shape[1]:
            raise InputError(
                f"an orthogonal map needs d_x == d_y, got d_x = {x.shape[1]}, d_y = {y.shape[1]}"
                " (use kind semi-orthogonal)"
            )
        super().fit(x, y)
        return self


class RidgeMap(_LinearMap):
    """Unconstrained linear map (ridge regression), the baseline for the constrained maps.

    ``W = Y_c^T X_c (X_c^T X_c + alpha I)^{-1}`` of shape ``(d_y, d_x)``.

    Parameters
    ----------
    alpha : float
        Ridge penalty, relative to ``tr(X_c^T X_c) / d_x`` so one value suits any feature scale.
    center : bool
        Subtract each side's mean before fitting.
    """

    kind = "ridge"

    def __init__(self, alpha: float = 1e-3, center: bool = True) -> None:
        self.alpha = alpha
        self.center = center

    def _params(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "center": self.center}

    def fit(self, x: np.ndarray, y: np.ndarray) -> RidgeMap:
        """Fit on paired rows; returns ``self``."""
        x, y = _check_pair(x, y)
        if self.alpha < 0:
            raise InputError(f"alpha must be >= 0, got {self.alpha}")
        xc, yc = self._prepare(x, y, self.center, False, 0.0)
        gram = xc.T @ xc  # (d_x, d_x)
        if not np.trace(gram) > 0:
            raise InputError("X is the same on every row (no variance): a ridge map cannot be fit")
        lam = self.alpha * np.trace(gram) / gram.shape[0]
        try:
            w = np.linalg.solve(gram + lam * np.eye(len(gram)), xc.T @ yc)  # (d_x, d_y)
        except np.linalg.LinAlgError:
            rank = int(np.linalg.matrix_rank(gram))
            raise InputError(
                f"ridge with alpha = {self.alpha:g}: X^T X is singular (rank {rank} < d_x = "
                f"{len(gram)}); use alpha > 0"
            ) from None
        self.weight_ = w.T  # (d_y, d_x)
        self.scale_ = 1.0
        return self

    @property
    def coef_(self) -> np.ndarray:
        self._check_fitted()
        return self.weight_


_CLASSES = {"orthogonal": OrthogonalMap, "semi-orthogonal": SemiOrthogonalMap, "ridge": RidgeMap}


def fit_memory_bytes(kind: str, n: int, d_x: int, d_y: int, whiten: bool = False) -> int:
    """Estimated peak bytes of ``fit`` plus :func:`save_map` for ``n`` pairs of ``d_x``/``d_y``
    features (float64): the centred copies, the ``d x d`` whiteners (identities when not
    whitening), the ``d_x x d_y`` cross-covariance with its SVD factors (ridge: the Gram and
    its solve), and the tensors' copy on save. An upper estimate, within a factor of about 2."""
    rows = 2 * n * (d_x + d_y)
    side = (d_x * d_x + 2 * d_y * d_y) * (3 if whiten else 2)
    if kind == "ridge":
        core = 3 * d_x * d_x + 3 * d_x * d_y
    else:
        core = 3 * d_x * d_y + min(d_x, d_y) * (d_x + d_y)
    return 8 * (rows + side + core)


def make_map(kind: str, **params: Any) -> _LinearMap:
    """Build an unfitted map by kind (``orthogonal``, ``semi-orthogonal``, ``ridge``)."""
    if kind not in _CLASSES:
        raise InputError(f"unknown map kind {kind!r}, expected one of {KINDS}")
    return _CLASSES[kind](**params)


def _sidecar(path: Path) -> Path:
    return path.with_suffix(".json")


def save_map(
    path: str | os.PathLike[str], m: _LinearMap, extra: dict[str, Any] | None = None
) -> None:
    """Write a fitted map: tensors to ``path`` (``.safetensors``), config to ``path.json``.

    ``extra`` (JSON-able: layers, feature paths, ...) goes into the sidecar under ``"extra"``.
    """
    write_all(map_files(path, m, extra))  # the map and its sidecar, or neither


def map_files(
    path: str | os.PathLike[str], m: _LinearMap, extra: dict[str, Any] | None = None
) -> dict[Path, bytes]:
    """The bytes :func:`save_map` writes, by path (the map and its sidecar), for a caller that
    writes them together with other outputs (:func:`prh.io.write_all`)."""
    from safetensors.numpy import save

    from prh import __version__

    p = Path(path)
    if p.suffix != ".safetensors":
        raise InputError(f"{p}: a map file must end in .safetensors")
    config = {
        "kind": m.kind,
        "params": m._params(),
        "d_x": int(m.n_features_in_) if hasattr(m, "n_features_in_") else None,
        "d_y": int(m.n_features_out_) if hasattr(m, "n_features_out_") else None,
        "prh_version": __version__,
        "extra": extra or {},
    }
    tensors = {k: np.ascontiguousarray(v) for k, v in m.state_dict().items()}
    blob = canonical_safetensors(save(tensors, metadata={"prh_map": json.dumps(config)}))
    return {p: blob, _sidecar(p): json_bytes(config)}


def _check_state(m: _LinearMap) -> None:
    """Raise ValueError unless the loaded arrays have the shapes and finite values of one map."""
    d_y, d_x = m.weight_.shape
    shapes = {
        "mean_x": (m.mean_x_.shape, (d_x,)),
        "mean_y": (m.mean_y_.shape, (d_y,)),
        "whiten_x": (m.whiten_x_.shape, (d_x, d_x)),
        "colour_y": (m.colour_y_.shape, (d_y, d_y)),
    }
    for name, (got, want) in shapes.items():
        if got != want:
            raise ValueError(f"{name} has shape {got}, expected {want} for weight ({d_y}, {d_x})")
    arrays = (m.weight_, m.mean_x_, m.mean_y_, m.whiten_x_, m.colour_y_)
    if not all(np.isfinite(a).all() for a in arrays) or not np.isfinite(m.scale_):
        raise ValueError("it holds NaN or infinite values")


def load_map(path: str | os.PathLike[str]) -> tuple[_LinearMap, dict[str, Any]]:
    """Read a map written by :func:`save_map`; returns ``(fitted map, config)``.

    The config comes from the JSON sidecar when present, else from the safetensors metadata.
    """
    from safetensors import safe_open

    p = Path(path)
    if p.is_dir():
        raise InputError(f"{p}: is a folder, expected a map file (.safetensors)")
    if p.exists() and not p.is_file():
        raise InputError(f"{p}: not a regular file (a device or a pipe?), expected a map file")
    if not p.is_file():
        raise InputError(f"{p}: no such map file")
    try:
        with safe_open(str(p), framework="numpy") as f:
            meta = dict(f.metadata() or {})
            state = {k: f.get_tensor(k) for k in f.keys()}
    except Exception as e:  # safetensors raises its own error types on bad bytes
        raise InputError(f"{p}: not a readable safetensors map ({type(e).__name__}: {e})") from None
    side = _sidecar(p)
    if side.is_file():
        try:
            config = read_json(side)
        except json.JSONDecodeError as e:
            raise InputError(f"{side}: not valid JSON ({e})") from None
    elif "prh_map" in meta:
        try:
            config = loads(meta["prh_map"], p)
        except json.JSONDecodeError as e:
            raise InputError(f"{p}: map config in the metadata is not valid JSON ({e})") from None
    else:
        raise InputError(f"{p}: no map config (missing {side.name} and safetensors metadata)")
    objects = ("params", "extra")
    if not (isinstance(config, dict) and all(isinstance(config.get(k, {}), dict) for k in objects)):
        raise InputError(f"{p}: map config is not a JSON object with 'params' and 'extra' objects")
    kind = config.get("kind")
    if kind not in _CLASSES:
        raise InputError(f"{p}: unknown map kind {kind!r}, expected one of {KINDS}")
    missing = {"weight", "mean_x", "mean_y", "whiten_x", "whiten_y", "colour_y", "scale"} - set(
        state
    )
    if missing:
        raise InputError(f"{p}: map tensors missing {sorted(missing)}")
    try:
        m = make_map(kind, **config.get("params", {}))
        m.load_state_dict(state)
        _check_state(m)
    except (TypeError, ValueError, IndexError) as e:
        raise InputError(f"{p}: not a consistent {kind} map ({e})") from None
    if kind != "ridge":
        m.rank_ = int(np.linalg.matrix_rank(m.weight_))
    return m, config
