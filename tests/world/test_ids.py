"""Scene ids (``prh.world.ids``): one writer, one reader."""

from __future__ import annotations

import numpy as np
import pytest

from prh.errors import InputError
from prh.world.ids import parse_scene_id, scene_id, scene_ids_of


def test_the_reader_inverts_the_writer_and_refuses_anything_else():
    assert [parse_scene_id(scene_id(i)) for i in (0, 7, np.int64(12))] == [0, 7, 12]
    assert [parse_scene_id(s) for s in ("scene_", "scene_-1", "img_3", "scene_1x", 3)] == [None] * 5
    assert scene_ids_of(["scene_2", "scene_0"]).tolist() == [2, 0]
    assert scene_ids_of([]).dtype == np.int64


def test_a_bad_id_is_one_line_naming_it_and_where():
    with pytest.raises(InputError, match=r"^--eval-features: id 'x_1' is not a world scene id"):
        scene_ids_of(["scene_1", "x_1", "y"], "--eval-features")
    with pytest.raises(InputError, match=r"^id 'y' is not"):
        scene_ids_of(["y"])
