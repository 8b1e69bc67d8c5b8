"""Input checks and the reference protocol's feature preprocessing.

Huh et al. (``minyoungg/platonic-rep``, ``measure_alignment.prepare_features`` and
``metrics.remove_outliers``) clamp every feature file to ``[-t, t]`` with ``t`` the 0.95 quantile
of ``|x|``, then L2-normalise each layer's rows. By default (its ``--precise`` flag off) ``t``
is the mean over samples of each sample's quantile of ``|x_i|`` over all its layers and dimensions
(linear interpolation, ``torch.quantile``); ``exact=True`` is its ``--precise`` variant, the
``floor(q * size)``-th smallest ``|x|`` of the whole array.

The reference applies that rule to whatever ``torch.load(...)["feats"]`` holds: one ``(N, L, D)``
tensor gets one threshold for all layers (``per_layer=False``), a list of ``(N, D_l)`` layers (its
convnet example, layers of different widths) one threshold per layer (``per_layer=True``). prh
stores such layers zero-padded to one ``D`` with their true widths (``layer_dims``); the quantile is
then taken over each layer's real entries only, so padding never lowers a threshold.

``CLAMPS`` names the rules as ``prh measure --clamp`` does: ``mean`` (the reference's CLI default,
``measure_alignment.py`` without ``--precise``), ``exact`` (its ``--precise`` and
``platonic.Alignment.score``) and ``none`` (L2 only, its ``q = 1``).
"""

from __future__ import annotations

import numpy as np

from prh.errors import InputError
from prh.linalg import l2_normalize

CLAMPS = ("mean", "exact", "none")


def as_layers(x: object, name: str = "features") -> np.ndarray:
    """Check features and return them as ``(N, L, D)`` float32.

    Parameters
    ----------
    x : array-like
        ``(N, D)`` or ``(N, L, D)`` numbers; a torch tensor of any dtype (bfloat16 and float16
        included) on any device is read as float32, exactly (the metrics then compute in float32
        or float64, as each needs).
    name : str
        How to name ``x`` in error messages (a file path).

    Raises
    ------
    InputError
        Not a numeric array, wrong rank, fewer than 2 rows, or a NaN/inf (the first bad row named).
    """
    if type(x).__module__.split(".")[0] == "torch" and hasattr(x, "detach"):
        x = _tensor_array(x, name)
    if not isinstance(x, np.ndarray):
        try:
            x = np.asarray(x)
        except Exception as e:  # ragged lists and the like
            raise InputError(f"{name}: not an array ({type(e).__name__})") from None
    if x.dtype.kind not in "fiub":
        raise InputError(f"{name}: expected a numeric array, got dtype {x.dtype}")
    if x.ndim == 2:
        x = x[:, None, :]
    if x.ndim != 3:
        raise InputError(f"{name}: expected shape (N, D) or (N, L, D), got {x.shape}")
    if x.shape[0] < 2:
        raise InputError(f"{name}: need at least 2 rows (samples), got {x.shape[0]}")
    if 0 in x.shape[1:]:
        raise InputError(f"{name}: empty feature dimension, shape {x.shape}")
    x = np.asarray(x, dtype=np.float32)
    finite = np.isfinite(x).all(axis=(1, 2))  # (N,)
    if not finite.all():
        row = int(np.argmin(finite))
        bad = x[row][~np.isfinite(x[row])][0]
        raise InputError(f"{name}: row {row} contains {bad} (features must be finite)")
    return x


def _tensor_array(x, name: str) -> np.ndarray:
    """A torch tensor as a numpy array: floating dtypes (numpy has no bfloat16) as float32."""
    if x.is_complex():
        raise InputError(f"{name}: holds complex numbers ({x.dtype}), expected real ones")
    x = x.detach().cpu()
    return (x.float() if x.is_floating_point() else x).numpy()


def check_nonzero_rows(x: np.ndarray, name: str = "features") -> None:
    """Raise :class:`InputError` naming the first all-zero row (and layer) of ``(N, L, D)`` x."""
    zero = ~np.any(x != 0, axis=2)  # (N, L)
    if zero.any():
        row, layer = np.argwhere(zero)[0]
        where = f"row {row}" if x.shape[1] == 1 else f"row {row} (layer {layer})"
        raise InputError(f"{name}: {where} is all zeros and cannot be L2-normalised")


def check_pair(a: np.ndarray, b: np.ndarray, name_a: str = "A", name_b: str = "B") -> None:
    """Raise :class:`InputError` unless ``a`` and ``b`` have the same number of rows."""
    if a.shape[0] != b.shape[0]:
        raise InputError(
            f"row counts differ: {name_a} has {a.shape[0]} rows, {name_b} has {b.shape[0]} "
            "(rows must be paired; join by id with --ids-a/--ids-b)"
        )


def valid_entries(shape: tuple[int, int], layer_dims: list[int] | None) -> np.ndarray | None:
    """Boolean ``(L, D)`` mask of the real (unpadded) entries, or ``None`` when all are real."""
    n_layers, d = shape
    if layer_dims is None or all(w == d for w in layer_dims):
        return None
    if len(layer_dims) != n_layers:
        raise InputError(f"layer_dims has {len(layer_dims)} entries for {n_layers} layers")
    return np.arange(d)[None, :] < np.asarray(layer_dims)[:, None]  # (L, D)


def outlier_threshold(
    x: np.ndarray, q: float = 0.95, exact: bool = False, layer_dims: list[int] | None = None
) -> float:
    """The reference's clamp threshold ``t`` for ``(N, L, D)`` features (see the module doc)."""
    if not 0.0 < q <= 1.0:
        raise InputError(f"outlier quantile must be in (0, 1], got {q}")
    mask = valid_entries(x.shape[1:], layer_dims) if x.ndim == 3 else None
    mag = np.abs(x.reshape(x.shape[0], -1))  # (N, L*D)
    if mask is not None:
        mag = mag[:, mask.reshape(-1)]  # (N, sum(layer_dims))
    if exact:
        flat = np.sort(mag, axis=None)
        return float(flat[min(int(q * flat.size), flat.size - 1)])
    return float(np.quantile(mag, q, axis=1).mean())


def preprocess(
    x: np.ndarray,
    q: float = 0.95,
    exact: bool = False,
    name: str = "features",
    layer_dims: list[int] | None = None,
    per_layer: bool = False,
) -> np.ndarray:
    """Clamp at the ``q`` quantile of ``|x|``, then L2-normalise each layer's rows.

    Parameters
    ----------
    x : np.ndarray
        ``(N, L, D)`` finite features.
    q : float
        Quantile; ``q = 1`` skips the clamp (as the reference does).
    exact : bool
        The reference's ``--precise`` threshold (one quantile over the whole array).
    name : str
        How to name ``x`` in error messages.
    layer_dims : list of int, optional
        True widths of zero-padded layers; the quantile ignores the padding.
    per_layer : bool
        One threshold per layer (the reference's rule for a list of layers) instead of one for
        the whole array.

    Returns
    -------
    np.ndarray
        ``(N, L, D)`` float32, unit rows per layer.
    """
    check_nonzero_rows(x, name)
    if q < 1.0 and per_layer:
        x = clamp_per_layer(x, q, exact, name, layer_dims)
    elif q < 1.0:
        t = outlier_threshold(x, q, exact, layer_dims)
        if t <= 0:
            raise InputError(f"{name}: the {q} quantile of |x| is 0 (mostly zeros); cannot clamp")
        x = np.clip(x, -t, t)
    out = np.empty_like(x, dtype=np.float32)
    for layer in range(x.shape[1]):
        out[:, layer] = l2_normalize(x[:, layer], name)
    return out


def clamp_per_layer(
    x: np.ndarray,
    q: float = 0.95,
    exact: bool = False,
    name: str = "features",
    layer_dims: list[int] | None = None,
) -> np.ndarray:
    """Clamp each layer of ``(N, L, D)`` ``x`` at its own threshold over its real entries."""
    n_layers, d = x.shape[1:]
    dims = layer_dims if layer_dims is not None else [d] * n_layers
    if len(dims) != n_layers:
        raise InputError(f"layer_dims has {len(dims)} entries for {n_layers} layers")
    out = np.array(x, dtype=np.float32, copy=True)
    for layer, w in enumerate(dims):
        t = outlier_threshold(x[:, layer : layer + 1, :w], q, exact)  # (N, 1, D_l) real entries
        if t <= 0:
            raise InputError(
                f"{name}: layer {layer}: the {q} quantile of |x| is 0 (mostly zeros); cannot clamp"
            )
        out[:, layer, :w] = np.clip(x[:, layer, :w], -t, t)
    return out
