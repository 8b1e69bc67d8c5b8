"""Caption grammar of the cave world: many true wordings of one scene.

A caption is drawn from a small probabilistic grammar:

- **noun phrases** with synonyms for shapes, colours and sizes, and several word orders
  ("a small red cube", "a red cube that is small", "a tiny block coloured red");
- **verbosity**: the size and the position of an object are said or left out (``partial``
  captions, alt-text-like); ``literal`` captions state every factor of every object, the wording
  nuisance kept (recaptions: docs/theory.md sec. 9, what each modality can learn);
- **positions** in words ("in the top left corner", "on the right", "in the middle");
- **relations** computed from the cells ("the red cube is to the left of the blue ball"),
  always true;
- **object order**: objects are listed in a random order;
- **partial descriptions**: with probability ``omit_prob`` one object is left out (never all). A
  caption that leaves an object out is still true; it is the pair mismatch of the theory;
- **frames**: "there is ...", "a picture of ...", "we see ...", counts only when every object
  is mentioned, optional capital letter and final full stop.

Every word choice comes from a ``random.Random`` passed in: the grammar is a pure function of the
scene and that generator's state. Layer: pure functions.
"""

from __future__ import annotations

import itertools
import random
import re

from prh.errors import InputError
from prh.world.scenes import COLOURS, SHAPES, SIZES, Scene, SceneObject

SHAPE_WORDS: dict[str, tuple[str, ...]] = {
    "cube": ("cube", "block", "box"),
    "sphere": ("sphere", "ball", "orb"),
    "cylinder": ("cylinder", "drum", "column"),
    "cone": ("cone",),
    "pyramid": ("pyramid",),
    "torus": ("ring", "torus", "donut"),
    "star": ("star",),
    "diamond": ("diamond", "gem", "octahedron"),
}
COLOUR_WORDS: dict[str, tuple[str, ...]] = {
    "red": ("red", "scarlet"),
    "orange": ("orange",),
    "yellow": ("yellow", "golden"),
    "green": ("green",),
    "cyan": ("cyan", "turquoise", "teal"),
    "blue": ("blue",),
    "purple": ("purple", "violet"),
    "pink": ("pink",),
    "brown": ("brown",),
    "gray": ("gray", "grey", "silver"),
}
SIZE_WORDS: dict[str, tuple[str, ...]] = {
    "small": ("small", "little", "tiny"),
    "medium": ("medium-sized", "mid-sized", "medium"),
    "large": ("large", "big", "huge"),
}
# Position phrases per (row, col); row 0 is the top.
_COL = {0: "left", 1: "center", 2: "right"}
_ROW = {0: "top", 1: "middle", 2: "bottom"}


def _position_phrases(row: int, col: int) -> tuple[str, ...]:
    if row == 1 and col == 1:
        return ("in the middle", "in the center", "at the centre", "in the middle of the image")
    if row == 1:
        side = _COL[col]
        return (f"on the {side}", f"on the {side} side", f"at the {side}", f"to the {side}")
    if col == 1:
        end = _ROW[row]
        up = "upper" if row == 0 else "lower"
        return (f"at the {end}", f"near the {end}", f"in the {up} middle", f"at the {end} center")
    end, side = _ROW[row], _COL[col]
    up = "upper" if row == 0 else "lower"
    return (
        f"in the {end} {side} corner",
        f"in the {end} {side}",
        f"at the {up} {side}",
        f"in the {up} {side} corner",
    )


POSITION_WORDS: dict[tuple[int, int], tuple[str, ...]] = {
    (r, c): _position_phrases(r, c) for r in range(3) for c in range(3)
}
RELATION_WORDS: dict[str, tuple[str, ...]] = {
    "left of": ("to the left of", "left of", "on the left of"),
    "right of": ("to the right of", "right of", "on the right of"),
    "above": ("above", "higher up than", "over"),
    "below": ("below", "beneath", "lower down than", "under"),
    "next to": ("next to", "beside", "adjacent to"),
}
FRAMES_ANY: tuple[str, ...] = (
    "{L}",
    "there is {L}",
    "a picture of {L}",
    "an image showing {L}",
    "we see {L}",
    "this scene shows {L}",
    "{L} on a textured background",
    "a rendering of {L}",
    "a photo with {L}",
)
FRAMES_COUNT: tuple[str, ...] = (
    "{N} objects: {L}",
    "a scene with {N} shapes, {L}",
    "{N} things are visible: {L}",
)
FRAMES_ONE_ALL: tuple[str, ...] = ("a single object: {L}", "just {L}", "only {L}")
NUMBER = {2: "two", 3: "three"}
# One caption's verbosity is drawn uniformly from VERBOSITY_DRAW (partial style): 0 says colour and
# shape, 1 adds the size half the time, 2 the size, 3 the size and the position (noun_phrase).
VERBOSITY_DRAW = (0, 1, 1, 2, 2, 3)
LITERAL_VERBOSITY = 3
CAPTION_STYLES = ("partial", "literal")
_SIZE_SET = frozenset(w for ws in SIZE_WORDS.values() for w in ws)
_POSITION_SET = frozenset(("left", "right", "center", "centre", "middle", "top", "bottom",
                           "upper", "lower", "corner", "side"))  # fmt: skip


def check_caption_style(style: str) -> str:
    """``style`` if it is one of :data:`CAPTION_STYLES` (one line otherwise)."""
    if style not in CAPTION_STYLES:
        raise InputError(f"caption style {style!r}: expected one of {', '.join(CAPTION_STYLES)}")
    return style


def stated_probabilities(style: str = "partial") -> dict[tuple[bool, bool], float]:
    """``{(size stated, position stated): probability}`` of one object's noun phrase under
    ``style``: the grammar's observation model of a one-object scene (the position is only ever
    stated with the size)."""
    if check_caption_style(style) == "literal":
        return {(True, True): 1.0}
    out: dict[tuple[bool, bool], float] = {}
    w = 1.0 / len(VERBOSITY_DRAW)
    for v in VERBOSITY_DRAW:
        laws = {0: {(False, False): 1.0}, 1: {(True, False): 0.5, (False, False): 0.5},
                2: {(True, False): 1.0}, 3: {(True, True): 1.0}}[v]  # fmt: skip
        for key, pr in laws.items():
            out[key] = out.get(key, 0.0) + w * pr
    return out


def stated_factors(text: str) -> tuple[bool, bool]:
    """``(size stated, position stated)`` of a caption of a ONE-object scene, read from its
    words (size and position words occur nowhere else in such a caption: relations need two
    objects)."""
    words = set(re.findall(r"[a-z\-]+", text.lower()))
    return bool(words & _SIZE_SET), bool(words & _POSITION_SET)


def _pick(rng: random.Random, seq):
    """``rng.choice(seq)``, about three times faster (one C call to ``random``)."""
    return seq[int(rng.random() * len(seq))]


# Word tables indexed by the integer factors of an object (no name lookups in the hot path).
_SHAPE_W = tuple(SHAPE_WORDS[k] for k in SHAPES)
_COLOUR_W = tuple(COLOUR_WORDS[k] for k in COLOURS)
_SIZE_W = tuple(SIZE_WORDS[k] for k in SIZES)
_POS_W = tuple(POSITION_WORDS[(r, c)] for r in range(3) for c in range(3))
_PERMS = {n: tuple(itertools.permutations(range(n))) for n in range(1, 4)}
_PAIRS = {n: tuple(itertools.permutations(range(n), 2)) for n in range(2, 4)}


def noun_phrase(
    obj: SceneObject, rng: random.Random, verbosity: int, definite: bool = False
) -> str:
    """A true noun phrase for one object.

    ``verbosity`` 0 says colour and shape; 1 adds the size with probability 1/2; 2 always adds the
    size; 3 adds the size and the position.
    """
    u = rng.random
    words = _SHAPE_W[obj.shape]
    shape = words[int(u() * len(words))]
    words = _COLOUR_W[obj.colour]
    colour = words[int(u() * len(words))]
    size = ""
    if verbosity >= 2 or (verbosity == 1 and u() < 0.5):
        words = _SIZE_W[obj.size]
        size = words[int(u() * 3)]
    form = u()
    if form < 0.6 or definite:
        body = f"{size} {colour} {shape}" if size else f"{colour} {shape}"
        tail = ""
    elif form < 0.8:
        body = f"{size} {shape}" if size else shape
        k = int(u() * 3)
        tail = (f" coloured {colour}", f" that is {colour}", f" in {colour}")[k]
    else:
        body = f"{colour} {shape}"
        tail = f" that is {size}" if size else ""
    det = "the" if definite else ("an" if body[0] in "aeiou" else "a")
    if verbosity >= 3:
        words = _POS_W[obj.row * 3 + obj.col]
        return f"{det} {body}{tail} {words[int(u() * len(words))]}"
    return f"{det} {body}{tail}"


def _join(items: list[str], rng: random.Random) -> str:
    if len(items) == 1:
        return items[0]
    conj = _pick(rng, (" and ", " and ", " as well as ")) if len(items) == 2 else " and "
    return ", ".join(items[:-1]) + conj + items[-1]


def caption(
    scene: Scene, rng: random.Random, omit_prob: float = 0.2, style: str = "partial"
) -> str:
    """Draw one true caption of ``scene``.

    Parameters
    ----------
    scene : Scene
        The scene to describe.
    rng : random.Random
        The source of every word choice.
    omit_prob : float
        Probability that one object is left out (scenes with two or more objects; partial
        style only).
    style : {"partial", "literal"}
        ``literal``: every object, with its size and position (the wording still drawn).

    Returns
    -------
    str
        One caption; every statement in it holds in the scene.
    """
    literal = style == "literal"
    objs = list(_pick(rng, _PERMS[len(scene.objects)]))  # a random object order
    if len(objs) >= 2 and rng.random() < omit_prob and not literal:
        objs.pop()  # leave one (random) object out
    complete = len(objs) == len(scene.objects)
    verbosity = _pick(rng, VERBOSITY_DRAW)
    if literal:
        verbosity = LITERAL_VERBOSITY
    phrases = [noun_phrase(scene.objects[j], rng, verbosity) for j in objs]
    listing = _join(phrases, rng)
    r = rng.random()
    if complete and len(objs) >= 2 and r < 0.2:
        text = _pick(rng, FRAMES_COUNT).format(N=NUMBER[len(objs)], L=listing)
    elif complete and len(objs) == 1 and r < 0.2:
        text = _pick(rng, FRAMES_ONE_ALL).format(L=listing)
    else:
        text = _pick(rng, FRAMES_ANY).format(L=listing)
    if len(objs) >= 2 and verbosity >= 1 and rng.random() < 0.6:
        text += _pick(rng, (", ", ". ", "; ")) + _relation_sentence(scene, objs, rng)
    if rng.random() < 0.5:
        text = text[0].upper() + text[1:]
    if rng.random() < 0.4:
        text += "."
    return text


def _relation_sentence(scene: Scene, mentioned: list[int], rng: random.Random) -> str:
    """One true relation between two mentioned objects, in words."""
    i, j = _pick(rng, _PAIRS[len(mentioned)])
    a, b = mentioned[i], mentioned[j]
    kinds = scene.relation_kinds[(a, b)]
    kind = _pick(rng, kinds)  # two objects in distinct cells always have a relation
    na = noun_phrase(scene.objects[a], rng, 0, definite=True)
    nb = noun_phrase(scene.objects[b], rng, 0, definite=True)
    rel = _pick(rng, RELATION_WORDS[kind])
    verb = _pick(rng, ("is", "sits", "is placed"))
    return f"{na} {verb} {rel} {nb}"


def captions(
    scene: Scene, n: int, rng: random.Random, omit_prob: float = 0.2, style: str = "partial"
) -> list[str]:
    """``n`` captions of ``scene`` with pairwise different wording.

    Draws until ``n`` distinct strings are found (at most ``50 n`` draws; the grammar has many
    thousand wordings per scene, so this never binds in practice).
    """
    out: list[str] = []
    seen: set[str] = set()
    for _ in range(50 * n + 50):
        if len(out) == n:
            break
        c = caption(scene, rng, omit_prob, style)
        if c not in seen:
            seen.add(c)
            out.append(c)
    if len(out) < n:
        raise InputError(
            f"world: scene {scene.index} gave only {len(out)} distinct captions, asked for {n}"
        )
    return out
