"""The literal captioners' targets (issue 31): the paired captioner against the oracle, the
zero-pair one against the paired, both against every floor that does not see the map."""

from prh.demo.literal_caption import literal_captioner_targets


def _cap(**kw):
    base = {"metric": "CIDEr", "paired": 0.95, "zero_pair": 0.90, "nearest_caption": 0.50,
            "unconditional": 0.20, "shuffled": 0.30, "oracle": 1.00}  # fmt: skip
    base.update(kw)
    base["ratio"] = base["zero_pair"] / base["paired"]
    return base


def _met(cap):
    return [t["met"] for t in literal_captioner_targets(cap)]


def test_all_three_met_when_the_map_carries_the_captions():
    assert _met(_cap()) == [True, True, True]


def test_each_target_misses_on_its_own_figure():
    assert _met(_cap(paired=0.85, zero_pair=0.80)) == [False, True, True]  # 85% of the oracle
    assert _met(_cap(zero_pair=0.80)) == [True, False, True]  # 84% of the paired
    assert _met(_cap(nearest_caption=0.92)) == [True, True, False]  # zero-pair below nearest
    assert _met(_cap(shuffled=0.91)) == [True, True, False]  # a shuffled map as good


def test_without_a_decoder_the_oracle_and_floors_are_not_judged():
    cap = _cap()
    for k in ("oracle", "unconditional", "shuffled"):
        del cap[k]
    assert _met(cap) == [None, True, None]
    figures = [t["figure"] for t in literal_captioner_targets(cap)]
    assert figures[0].startswith("95.0 vs oracle ") and "95.0" not in figures[0][8:]
