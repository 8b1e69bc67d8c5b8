"""Caption styles: one register, vocabulary and ordering held fixed across a document.

A :class:`CaptionStyle` fixes every choice of the caption grammar that says nothing about the
scene: which synonym of each shape, colour, size and position (``vocab``), the frame (``frame``,
the register), how much is said (``verbosity``), the object order (``order``: reading order or its
reverse) and the closing punctuation. What a styled caption still draws is content: which object
a partial description leaves out and which true relation it states. Several captions of one scene
in one style form a *document* whose continuation is predictable from its prefix only through the
scene (the style is learnt from the prefix, the rest must come from the scene).

Layer: pure functions of a scene and a ``random.Random``; uses the word tables of
:mod:`prh.world.captions`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from prh.world.captions import (
    COLOUR_WORDS,
    FRAMES_ANY,
    POSITION_WORDS,
    RELATION_WORDS,
    SHAPE_WORDS,
    SIZE_WORDS,
)
from prh.world.scenes import COLOURS, SHAPES, SIZES, Scene, SceneObject

ORDERS: tuple[str, ...] = ("reading", "reverse")


@dataclass(frozen=True)
class CaptionStyle:
    """The non-content choices of a caption, fixed for a document.

    Attributes
    ----------
    vocab : int
        Synonym index: word ``vocab % len(synonyms)`` of every shape, colour, size, position and
        relation.
    frame : int
        Index into :data:`prh.world.captions.FRAMES_ANY`.
    verbosity : int
        0: colour and shape; 1: and size; 2: and position.
    order : {"reading", "reverse"}
        Objects in reading order (by cell) or its reverse.
    full_stop : bool
        Whether each caption ends with ``"."``.
    """

    vocab: int = 0
    frame: int = 0
    verbosity: int = 1
    order: str = "reading"
    full_stop: bool = True


def draw_style(rng: random.Random) -> CaptionStyle:
    """A random style (every field uniform over its values)."""
    return CaptionStyle(
        vocab=int(rng.random() * 3),
        frame=int(rng.random() * len(FRAMES_ANY)),
        verbosity=int(rng.random() * 3),
        order=ORDERS[int(rng.random() * len(ORDERS))],
        full_stop=rng.random() < 0.5,
    )


def _word(table: tuple[str, ...], style: CaptionStyle) -> str:
    return table[style.vocab % len(table)]


def styled_phrase(obj: SceneObject, style: CaptionStyle, definite: bool = False) -> str:
    """The noun phrase of one object in a style (no randomness: the style decides every word)."""
    shape = _word(SHAPE_WORDS[SHAPES[obj.shape]], style)
    colour = _word(COLOUR_WORDS[COLOURS[obj.colour]], style)
    words = [colour, shape]
    if style.verbosity >= 1 and not definite:
        words.insert(0, _word(SIZE_WORDS[SIZES[obj.size]], style))
    body = " ".join(words)
    det = "the" if definite else ("an" if body[0] in "aeiou" else "a")
    if style.verbosity >= 2 and not definite:
        return f"{det} {body} {_word(POSITION_WORDS[(obj.row, obj.col)], style)}"
    return f"{det} {body}"


def styled_caption(
    scene: Scene, style: CaptionStyle, rng: random.Random, omit_prob: float = 0.2
) -> str:
    """One true caption of ``scene`` in ``style``; ``rng`` draws only content choices.

    With probability ``omit_prob`` one object (random) is left out; with probability 1/2 a true
    relation between two mentioned objects (random pair, random true kind) is added.
    """
    objs = list(range(len(scene.objects)))
    if style.order == "reverse":
        objs.reverse()
    if len(objs) >= 2 and rng.random() < omit_prob:
        objs.pop(int(rng.random() * len(objs)))
    phrases = [styled_phrase(scene.objects[j], style) for j in objs]
    listing = phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " and " + phrases[-1]
    text = FRAMES_ANY[style.frame % len(FRAMES_ANY)].format(L=listing)
    if len(objs) >= 2 and rng.random() < 0.5:
        i = int(rng.random() * len(objs))
        j = (i + 1 + int(rng.random() * (len(objs) - 1))) % len(objs)
        a, b = objs[i], objs[j]
        kinds = scene.relation_kinds[(a, b)]
        kind = kinds[int(rng.random() * len(kinds))]
        na = styled_phrase(scene.objects[a], style, definite=True)
        nb = styled_phrase(scene.objects[b], style, definite=True)
        text += f", {na} is {_word(RELATION_WORDS[kind], style)} {nb}"
    return text + ("." if style.full_stop else "")


def styled_document(
    scene: Scene, n: int, rng: random.Random, omit_prob: float = 0.2
) -> tuple[CaptionStyle, list[str]]:
    """A style drawn from ``rng`` and ``n`` captions of ``scene`` in it."""
    style = draw_style(rng)
    return style, [styled_caption(scene, style, rng, omit_prob) for _ in range(n)]
