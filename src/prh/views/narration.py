"""Narrations: next-token documents that tell one trajectory of a moving world.

A narration is the captions of ``L`` frames of one run of the moving cave's chain ``Q``
(:class:`~prh.world.moving.MovingWorld`), a frame every ``stride`` steps, told by ONE narrator:
one :class:`~prh.world.styles.CaptionStyle` (synonyms, frame, verbosity, full stop) for the whole
document, the moving world's nuisance. Every frame after the first opens with what changed since
the frame before, in verbs that follow the dynamics (:mod:`prh.world.dynamics`):

- a cell move is ``rolls`` (mobility >= 0.7: spheres, tori, cylinders), ``tumbles`` (>= 0.35:
  cones, diamonds) or ``slides`` (pyramids, stars, cubes), by the mobility of the shape that
  moved (the earlier frame's), with its direction (``left``/``right``/``up``/``down``);
- ``becomes a <shape>`` (the shape line), ``turns <colour>`` (the colour line), ``grows`` /
  ``shrinks`` (the size line); ``stays put`` when nothing changed.

So a shape word predicts its verb and the shapes next to it on the shape line, and a colour word
the colours next to it on the colour line: words that the still world's documents leave
interchangeable (docs/world.md, "Narrations"). A narration of 4 frames (default world, stride 25;
``NarrationSource(w, w.split("train"), 4).document(300_000, 1).text``)::

    this scene shows a medium-sized cyan ring on the right. then the cyan ring becomes a cylinder:
    this scene shows a medium-sized cyan cylinder on the right. then the cyan cylinder becomes a
    ring, turns green and rolls left and down: this scene shows a medium-sized green ring at the
    bottom. then the green ring turns cyan and rolls left: this scene shows a medium-sized cyan
    ring in the bottom left corner.

**Training states only.** The frames are a run of ``Q`` *conditioned on every narrated frame
being a training state* (the steps between two frames are not observed and may pass anywhere):
the law ``p(s_0) prod_i Q^stride(s_i, s_{i+1}) 1[s_0..s_{L-1} in train]``, renormalised. It is
sampled exactly (:class:`NarrationPaths`: backward messages ``h_j = Q^stride h_{j+1}`` restricted
to the training states): the law of free runs, every run that narrates a held-out state rejected.
For ``L = 2`` it is the lag pairs of :class:`~prh.views.lag.LagPairs` at lag ``stride``: the same
restriction the good-view JEPA's pairs get, so no held-out state is ever read in training.

Layer: pure functions of states and a style, and a thin source over a world's dense kernel.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from prh.errors import InputError
from prh.views.lag import SlotSource, search_cdf
from prh.world.captions import COLOUR_WORDS, FRAMES_ANY, POSITION_WORDS, SHAPE_WORDS, SIZE_WORDS
from prh.world.registry import SpectralWorld
from prh.world.scenes import COLOURS, SHAPES, SceneObject
from prh.world.styles import CaptionStyle, draw_style, styled_caption, styled_phrase

NARRATION_STRIDE = 25  # default: 8 frames span 7 x 25 = 175 steps, the moving world's lag
MAX_FRAMES = 64  # frames of one narration (nuisance ids keep 6 bits for the frame)
MAX_STRIDE = 10_000  # chain steps between two frames
SLOTS = 1 << 20  # items of a source: first frames laid out by their law
# Verbs of a cell move by the mover's mobility (prh.world.dynamics.MOBILITY), fastest first.
MOTION_VERBS: tuple[tuple[float, str], ...] = ((0.7, "rolls"), (0.35, "tumbles"), (0.0, "slides"))
CONNECTORS: tuple[str, ...] = ("then", "now", "next")  # by the style's synonym index
STAY_WORDS: tuple[str, ...] = ("stays put", "stays still", "rests")
_PIECES = re.compile(r"\w+|[^\w\s]")  # BERT pre-tokenisation: words and single punctuation marks


def check_narration(length: int, stride: int) -> None:
    """``length`` in 2..:data:`MAX_FRAMES` and ``stride`` in 1..:data:`MAX_STRIDE` (one line)."""
    if not (isinstance(length, int) and 2 <= length <= MAX_FRAMES):
        raise InputError(f"narration_len must be 2 to {MAX_FRAMES} frames, got {length!r}")
    check_stride(stride)


def check_stride(stride: int) -> None:
    """``stride`` in 1..:data:`MAX_STRIDE` chain steps (one line otherwise)."""
    if not (isinstance(stride, int) and 1 <= stride <= MAX_STRIDE):
        raise InputError(f"narration_stride must be 1 to {MAX_STRIDE:,} steps, got {stride!r}")


def motion_verb(shape: int) -> str:
    """The verb of a cell move of shape ``shape`` (an index into ``SHAPES``)."""
    from prh.world.dynamics import MOBILITY  # scipy: not on the CLI's import path (config.py)

    mobility = MOBILITY[SHAPES[shape]]
    return next(verb for floor, verb in MOTION_VERBS if mobility >= floor)


def _word(table: tuple[str, ...], style: CaptionStyle) -> str:
    return table[style.vocab % len(table)]


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def change_clauses(a: SceneObject, b: SceneObject, style: CaptionStyle) -> list[str]:
    """What changed from object ``a`` to object ``b`` (the same object, frames apart), as verb
    clauses in a fixed order: shape, colour, size, cell; ``[stay]`` when nothing did."""
    out = []
    if b.shape != a.shape:
        shape = _word(SHAPE_WORDS[SHAPES[b.shape]], style)
        out.append(f"becomes {_article(shape)} {shape}")
    if b.colour != a.colour:
        out.append(f"turns {_word(COLOUR_WORDS[COLOURS[b.colour]], style)}")
    if b.size != a.size:
        out.append("grows" if b.size > a.size else "shrinks")
    dirs = [("left" if b.col < a.col else "right")] if b.col != a.col else []
    dirs += [("up" if b.row < a.row else "down")] if b.row != a.row else []
    if dirs:
        out.append(f"{motion_verb(a.shape)} {' and '.join(dirs)}")
    return out or [_word(STAY_WORDS, style)]


def event_sentence(a: SceneObject, b: SceneObject, style: CaptionStyle) -> str:
    """``"then the red sphere rolls left and turns orange"``: the change from ``a`` to ``b``
    told about ``a`` (definite, in the style's words)."""
    clauses = change_clauses(a, b, style)
    told = clauses[0] if len(clauses) == 1 else ", ".join(clauses[:-1]) + " and " + clauses[-1]
    subject = styled_phrase(a, style, definite=True)
    return f"{_word(CONNECTORS, style)} {subject} {told}"


def narrate(world, states: Sequence[int], style: CaptionStyle) -> list[str]:
    """The frames of a narration of ``states`` in ``style``: the first frame's styled caption,
    then ``"<event>: <caption>"`` for every later frame (join them with spaces for the text)."""
    scenes = [world.scene(int(s)) for s in states]
    # A styled caption of a one-object scene draws nothing (no object to omit, no relation).
    rng = random.Random(0)
    caps = [styled_caption(sc, style, rng, omit_prob=0.0) for sc in scenes]
    out = [caps[0]]
    for prev, now, cap in zip(scenes[:-1], scenes[1:], caps[1:]):
        out.append(f"{event_sentence(prev.objects[0], now.objects[0], style)}: {cap}")
    return out


def pieces(text: str) -> int:
    """Pre-tokens of ``text`` (words and punctuation marks, as BERT's pre-tokenizer splits it):
    its token count under a tokenizer that holds every one of its words whole."""
    return len(_PIECES.findall(text))


def _most(table) -> int:
    return max(pieces(w) for words in table.values() for w in words)


def max_narration_tokens(length: int) -> int:
    """An upper bound on the tokens of a narration of ``length`` frames, ``[BOS]`` and ``[EOS]``
    included, counted in :func:`pieces` (every part at its longest at once)."""
    shape, colour, size = _most(SHAPE_WORDS), _most(COLOUR_WORDS), _most(SIZE_WORDS)
    position = _most(POSITION_WORDS)
    frame = max(pieces(f.format(L="")) for f in FRAMES_ANY)
    caption = frame + 1 + size + colour + shape + position + 1  # article ... full stop
    clauses = (2 + shape) + (1 + colour) + 1 + 4  # becomes a X, turns X, grows, rolls left and up
    event = 1 + (1 + colour + shape) + clauses + 3 + 1  # connector, subject, 2 commas + and, ':'
    return 2 + caption + (length - 1) * (event + caption)


@dataclass(frozen=True)
class Narration:
    """One narration document.

    Attributes
    ----------
    states : tuple of int
        The narrated frames' states, ``stride`` chain steps apart.
    style : CaptionStyle
        The narrator's style, one for the document.
    frames : tuple of str
        The text of each frame (:func:`narrate`).
    """

    states: tuple[int, ...]
    style: CaptionStyle
    frames: tuple[str, ...]

    @property
    def text(self) -> str:
        return " ".join(self.frames)


class NarrationPaths:
    """Exact sampler of ``L`` frames ``stride`` steps apart, conditioned on every frame being in
    ``scene_ids`` (see the module).

    Parameters
    ----------
    world : MovingWorld
        A world with a chain (``pair_kernel``, ``chain.p``).
    scene_ids : sequence of int
        The states a frame may be (the training states; at least 2, distinct).
    length, stride : int
        Frames per narration and chain steps between two frames.
    """

    def __init__(self, world, scene_ids: Sequence[int], length: int, stride: int) -> None:
        check_narration(length, stride)
        if not isinstance(world, SpectralWorld):
            raise InputError(
                f"narrations: world {type(world).__name__} does not move (no chain to narrate)"
            )
        ids = world.check_ids(scene_ids)
        if ids.size < 2 or np.unique(ids).size != ids.size:
            raise InputError(f"narrations: need >= 2 distinct states, got {ids.size}")
        p = world.chain.p[ids]
        # Q^stride restricted to the set: p Q^k is symmetric, so Q^k(s, s') = Pi(s, s') / p(s).
        M = np.clip(world.pair_kernel(stride)[np.ix_(ids, ids)], 0.0, None) / p[:, None]
        h = np.ones((length, ids.size))  # h_j(s): weight of the frames after j, given s_j = s
        for j in range(length - 2, -1, -1):
            h[j] = M @ h[j + 1]
            h[j] /= h[j].max()  # scale is free (it cancels in every step); keeps it from underflow
        first = p * h[0]
        if not np.all(first > 0):
            raise InputError("narrations: a state has no continuation inside the set")
        self.scene_ids, self.length, self.stride = ids, length, stride
        self.weights = first / first.sum()  # (n,) law of the first frame
        self._first = np.cumsum(self.weights)
        self._M, self._h = M, h

    def __len__(self) -> int:
        return int(self.scene_ids.size)

    def slots(self, n: int = SLOTS) -> np.ndarray:
        """``n`` first-frame rows laid out by their law (stratified quantiles ``(i + 1/2) / n``)."""
        return search_cdf(self._first, (np.arange(n) + 0.5) / n)

    def continue_from(self, row: int, rng: np.random.Generator) -> np.ndarray:
        """Rows ``(L,)`` of a narration whose first frame is row ``row``; ``L - 1`` uniforms."""
        rows = np.empty(self.length, dtype=np.int64)
        rows[0] = row
        u = rng.random(self.length - 1)
        for j in range(1, self.length):
            w = self._M[rows[j - 1]] * self._h[j]  # Q^k(s, .) h_j(.): the conditioned step
            rows[j] = search_cdf(np.cumsum(w), u[j - 1 : j])[0]
        return rows

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` narrations as rows into ``scene_ids``, ``(n, L)``."""
        firsts = search_cdf(self._first, rng.random(n))
        return np.stack([self.continue_from(int(r), rng) for r in firsts])


class NarrationSource(SlotSource):
    """A caption source of narrations for the next-token sampler: item ``j`` is a first frame
    (items laid out by the first frame's law); ``draw(j, L, rng)`` is a fresh narration from it,
    with a fresh narrator style. Give it to :func:`~prh.views.text.make_view_dataset` with
    ``ViewConfig(doc_captions=L)``: each row is then one document, its frames joined by spaces.

    Parameters
    ----------
    world : MovingWorld
        The moving world.
    scene_ids : sequence of int
        The states a frame may be (a run's training states).
    length, stride : int
        Frames per narration (2..64) and chain steps between two frames (1..10,000).
    """

    label = "narration source"

    def __init__(
        self, world, scene_ids: Sequence[int], length: int, stride: int = NARRATION_STRIDE
    ) -> None:
        self.world = world
        self.paths = NarrationPaths(world, scene_ids, length, stride)
        self._slots = self.paths.slots()
        self._scene_ids = self.paths.scene_ids

    @property
    def length(self) -> int:
        return self.paths.length

    def min_captions(self) -> int:
        return self.length  # a document is exactly one narration

    def document(self, j: int, w: int) -> Narration:
        """Narration ``w`` from item ``j``: a pure function of ``(world seed, first frame, w)``."""
        row = int(self._slots[j])
        s0 = int(self.paths.scene_ids[row])
        seed = self.world.config.seed
        rows = self.paths.continue_from(row, np.random.default_rng([seed, 0x4A22, s0, int(w)]))
        style = draw_style(random.Random(hash((seed, 0x4A22, s0, int(w)))))
        states = tuple(int(s) for s in self.paths.scene_ids[rows])
        return Narration(states, style, tuple(narrate(self.world, states, style)))

    def draw(self, j: int, n: int, rng: np.random.Generator) -> tuple[list[str], list[int]]:
        """The ``n = L`` frames of a fresh narration from item ``j``; nuisance ids
        ``(w << 6) + frame`` (the document ``w`` and the frame)."""
        if n != self.length:
            raise InputError(f"{self.label}: draws documents of {self.length} frames, got {n}")
        w = int(rng.integers(0, 2**55))
        return list(self.document(j, w).frames), [(w << 6) + i for i in range(n)]

    def texts(self, n: int) -> list[str]:
        """``n`` narration texts from items spread over the first frames' law (documents
        ``0..n-1``): what a run adds to its tokenizer's training text, so that every narration
        word is a word of the vocabulary."""
        items = (np.arange(n) * (self.num_items // max(n, 1))).astype(np.int64)
        return [self.document(int(j), k).text for k, j in enumerate(items)]
