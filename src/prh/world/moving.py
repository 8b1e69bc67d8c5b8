"""The moving cave: one object whose shape, colour, size and cell change by a reversible chain.

A state is one object ``(shape, colour, size, row, col)`` (10 x 8 x 3 x 3 x 3 = 2,160 states by
default; scene ``i`` is state ``i``). :mod:`prh.world.dynamics` defines the chain ``Q``; a good
view at lag ``D`` is two frames ``D`` steps apart, with pair kernel ``Pi = p Q^D``
(docs/theory.md sec. 8). ``lag=0`` is the still cave world's kernel (two views of one state):
no gap at any ``k``. Frames render as images, sketches and captions with the cave world's usual
nuisance (:class:`~prh.world.cave.CaveWorld`'s methods, reused).

Layer: a stateful wrapper over :mod:`prh.world.dynamics` and :mod:`prh.theory.markov`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import cached_property

import numpy as np

from prh.errors import InputError
from prh.theory.markov import (
    PairSpectrum,
    ReversibleChain,
    check_lag,
    pair_spectrum,
    reversible_chain,
    spectral_pair_kernel,
    theory_embedding,
)
from prh.world import dynamics as dyn
from prh.world.captions import check_caption_style
from prh.world.cave import CaveWorld
from prh.world.scenes import GRID, Scene, SceneObject

MAX_STEPS = 1_000_000  # frames of one trajectory held at once
GAP_K = 8  # the k the default chain and lag were designed for: distinct l_1..l_8, then a gap


@dataclass(frozen=True)
class MovingWorldConfig:
    """Configuration of the moving cave world.

    Attributes
    ----------
    seed : int
        World seed: the split, every caption and render (not the chain).
    lag : int
        ``D``, steps between the two frames of a good view (0: the still world).
    chain_seed : int
        Seed of the chain's line laws and conductances (0: the designed chain, docs/world.md).
    colours, shapes, sizes : int
        How many values of each line are used (prefixes of the colour, shape and size lines).
    colour_rate, shape_rate, size_rate, move_rate : float
        Per-step move rates; ``move_rate`` is scaled by the shape's mobility (and by
        :data:`~prh.world.dynamics.CLIMB` for rows). Their total is at most 1/4.
    jitter : float
        How far the chain's laws and conductances are from uniform, ``[0, 0.9]``.
    image_size, test_fraction, omit_prob, caption_style : int, float, float, str
        As in :class:`~prh.world.cave.WorldConfig` (``caption_style="literal"``: every caption
        names the object's colour, shape, size and cell; world ``moving-literal``).
    """

    seed: int = 0
    lag: int = 175
    chain_seed: int = 0
    colours: int = 10
    shapes: int = 8
    sizes: int = 3
    colour_rate: float = 0.01
    shape_rate: float = 0.053
    size_rate: float = 0.021
    move_rate: float = 0.043
    jitter: float = 0.5
    image_size: int = 64
    test_fraction: float = 0.1
    omit_prob: float = 0.2
    caption_style: str = "partial"

    def rates(self) -> dict[str, float]:
        return {
            "shape_rate": self.shape_rate,
            "colour_rate": self.colour_rate,
            "size_rate": self.size_rate,
            "move_rate": self.move_rate,
        }

    def to_dict(self) -> dict:
        return asdict(self)


def _check_config(c: MovingWorldConfig) -> None:
    check_lag(c.lag)
    for name, n, hi in (("colours", c.colours, 10), ("shapes", c.shapes, 8), ("sizes", c.sizes, 3)):
        if not (isinstance(n, int) and 2 <= n <= hi):
            raise InputError(f"moving world: {name} must be 2 to {hi}, got {n!r}")
    dyn.check_rates(c.rates())
    if not 0.0 <= c.jitter <= 0.9:
        raise InputError(f"moving world: jitter must be in [0, 0.9], got {c.jitter}")
    if not 0.0 < c.test_fraction < 1.0:
        raise InputError(f"moving world: test_fraction must be in (0, 1), got {c.test_fraction}")
    check_caption_style(c.caption_style)


class MovingWorld(CaveWorld):
    """The moving cave world: states, their chain, trajectories and the theory's embedding.

    Examples
    --------
    >>> w = MovingWorld(MovingWorldConfig(colours=3, shapes=2, sizes=2))
    >>> w.num_scenes, w.trajectory(4, seed=0).shape
    (108, (5,))
    """

    def __init__(self, config: MovingWorldConfig | None = None) -> None:
        self.config = config or MovingWorldConfig()  # type: ignore[assignment]
        c = self.config
        _check_config(c)
        self.lines = dyn.factor_lines(c.colours, c.shapes, c.sizes, c.jitter, c.chain_seed)
        self.grid = dyn.state_grid(self.lines)  # (N, 5) positions on each line
        n = self.grid.shape[0]
        self._table = self._scene_table()
        self._theme = None
        perm = np.random.default_rng([c.seed, 0x5B17]).permutation(n)
        n_test = max(1, round(c.test_fraction * n))
        self._splits = {
            "test": np.sort(perm[:n_test]),
            "train": np.sort(perm[n_test:]),
            "all": np.arange(n),
        }
        self._scenes: dict[int, Scene] = {}
        self._kernels: dict[int, np.ndarray] = {}

    ordered_states = True  # state i is (shape, colour, size, row, col) in index order
    gap_k = GAP_K  # the JEPA output width a run on this world defaults to (the theorem's k)

    @property
    def num_scenes(self) -> int:
        return int(self.grid.shape[0])

    @property
    def lag(self) -> int:
        """``D``: chain steps between a good view's two frames (the config's ``lag``)."""
        return int(self.config.lag)

    def _scene_table(self) -> np.ndarray:
        """``(N, 1, 4)`` rows ``(shape, colour, size, cell)`` as :func:`scene_from_row` reads."""
        vals = [np.asarray(line.values)[self.grid[:, j]] for j, line in enumerate(self.lines)]
        shape, colour, size, row, col = vals
        return np.stack([shape, colour, size, row * GRID + col], axis=1)[:, None, :].astype(
            np.int16
        )

    def object(self, i: int) -> SceneObject:
        """The one object of state ``i``."""
        return self.scene(i).objects[0]

    @cached_property
    def chain(self) -> ReversibleChain:
        """The world's chain ``Q`` and stationary law ``p`` (checked reversible)."""
        Q, p = dyn.chain_matrix(self.lines, self.config.rates())
        return reversible_chain(Q, p)

    def spectrum(self, m: int = 12, lag: int | None = None) -> PairSpectrum:
        """The constant and ``m`` largest other eigenpairs of ``p Q^D`` (default ``D``: lag)."""
        return pair_spectrum(self.chain, self.config.lag if lag is None else lag, m)

    def pair_kernel(self, lag: int | None = None) -> np.ndarray:
        """``Pi = p Q^D`` dense ``(N, N)`` (default ``D``: lag), computed once per lag (~2 s)."""
        lag = check_lag(self.config.lag if lag is None else lag)
        if lag not in self._kernels:
            self._kernels[lag] = spectral_pair_kernel(self.chain, lag)
        return self._kernels[lag]

    def theory_embedding(self, scene_ids, k: int = 8) -> np.ndarray:
        """``g*`` of the given states, ``(len(ids), k)``: the whitened JEPA's embedding up to
        rotation. Refused (one line naming the eigenvalues) without a gap after ``k``."""
        ids = self.check_ids(scene_ids)
        return theory_embedding(self.spectrum(k + 1), k)[ids]

    def check_ids(self, scene_ids) -> np.ndarray:
        """``scene_ids`` as int64 state indices, each one in range (one line otherwise)."""
        ids = np.asarray(scene_ids).reshape(-1)
        if ids.size and not np.issubdtype(ids.dtype, np.integer):
            raise InputError(f"scene ids: expected integers, got {ids.dtype}")
        bad = ids[(ids < 0) | (ids >= self.num_scenes)]
        if bad.size:
            raise InputError(f"scene id {int(bad[0])} outside the world (0..{self.num_scenes - 1})")
        return ids.astype(np.int64)

    def trajectory(self, steps: int, seed: int = 0, start: int | None = None) -> np.ndarray:
        """States ``s_0..s_steps`` ``(steps + 1,)`` of one run of the chain, ``s_0 ~ p`` (or
        ``start``); a pure function of ``(config, steps, seed, start)``."""
        if not (isinstance(steps, int) and 0 <= steps <= MAX_STEPS):
            raise InputError(f"trajectory: steps must be 0 to {MAX_STEPS:,}, got {steps!r}")
        rng = np.random.default_rng([self.config.seed, 0x7AC7, int(seed)])
        p = self.chain.p
        s = rng.choice(p.size, p=p) if start is None else self.check_ids([start])[0]
        out = np.empty(steps + 1, np.int64)
        out[0] = s
        for t in range(steps):
            out[t + 1] = self._step(out[t : t + 1], rng)[0]
        return out

    def pairs(self, n: int, seed: int = 0, lag: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``n`` good-view state pairs: ``s ~ p`` and ``s' ~ Q^D(s, .)``, ``(n,)`` each."""
        lag = check_lag(self.config.lag if lag is None else lag)
        if not (isinstance(n, int) and 1 <= n <= MAX_STEPS):
            raise InputError(f"pairs: n must be 1 to {MAX_STEPS:,}, got {n!r}")
        rng = np.random.default_rng([self.config.seed, 0x9A12, int(seed)])
        p = self.chain.p
        s = rng.choice(p.size, size=n, p=p)
        t = s.copy()
        for _ in range(lag):
            t = self._step(t, rng)
        return s.astype(np.int64), t.astype(np.int64)

    def _step(self, states: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One chain step of every state in ``states`` (vectorised inverse-CDF over CSR rows)."""
        Q = self.chain.Q
        lo, hi = Q.indptr[states], Q.indptr[states + 1]
        width = int((hi - lo).max())
        idx = lo[:, None] + np.arange(width)[None, :]
        valid = idx < hi[:, None]
        probs = np.where(valid, Q.data[np.minimum(idx, Q.data.size - 1)], 0.0)
        cum = np.cumsum(probs, axis=1)
        u = rng.random(states.size)[:, None] * cum[:, -1:]
        pick = np.minimum((cum <= u).sum(axis=1), (hi - lo) - 1)
        return Q.indices[lo + pick]
