"""Deeply nested JSON (issue 36): every JSON file prh reads goes through one bounded reader, so
``[[[[...]]]]`` is one line naming the file, exit 2, never a ``RecursionError`` traceback.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from prh.jsonio import MAX_DEPTH, depth, loads, read_json

DEEP = "[" * 100_000 + "]" * 100_000  # RecursionError in json.loads
NESTED = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)  # parses, but deeper than the bound
DEEP_OBJ = '{"a": ' * 50_000 + "1" + "}" * 50_000


def test_depth_counts_levels_against_a_recursive_reference():
    def ref(v):
        if isinstance(v, dict):
            v = list(v.values())
        return 1 + max((ref(x) for x in v), default=0) if isinstance(v, list) else 0

    for text in ("1", "[]", "[1, [2, {}]]", '{"a": [{"b": [[3]]}], "c": 1}', NESTED):
        assert depth(json.loads(text)) == ref(json.loads(text))


@pytest.mark.parametrize("text", [DEEP, NESTED, DEEP_OBJ], ids=["deep", "over bound", "objects"])
def test_loads_refuses_deep_json_in_one_line(text):
    from prh.errors import InputError

    with pytest.raises(InputError, match=r"^src: JSON nested .*expected at most 64") as e:
        loads(text, "src")
    assert "\n" not in str(e.value)


def test_read_json_bounds_the_size_before_reading(tmp_path):
    from prh.errors import InputError

    p = tmp_path / "big.json"
    p.write_text("[" + "1," * 600 + "1]")
    assert len(read_json(p)) == 601
    with pytest.raises(InputError, match=r"big\.json: 1,203 bytes of JSON; expected at most 100"):
        read_json(p, max_bytes=100)


@pytest.fixture
def deep_files(tmp_path, caption_run):
    """The files each reader opens, holding :data:`DEEP`."""
    from prh.bridge import make_map, save_map

    rng = np.random.default_rng(0)
    x = rng.standard_normal((20, 4)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    save_map(tmp_path / "m.safetensors", make_map("orthogonal").fit(x, x))
    (tmp_path / "m.json").write_text(DEEP)
    (tmp_path / "deep.json").write_text(DEEP)
    (tmp_path / "results.jsonl").write_text(DEEP + "\n")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.json").write_text(DEEP)
    cap = tmp_path / "cap"
    shutil.copytree(caption_run, cap)
    (cap / "caption" / "caption.json").write_text(DEEP)
    return tmp_path


CASES = {
    "train --config": (["train", "--config", "{t}/deep.json", "--out", "{t}/new"], "deep.json"),
    "word-collapse": (["word-collapse", "{t}/run"], "run/config.json"),
    "bridge apply's map": (
        ["bridge", "apply", "{t}/m.safetensors", "--x", "{t}/x.npy", "--out", "{t}/new.npy"],
        "m.json",
    ),
    "caption manifest": (["caption", "--eval", "--run", "{t}/cap", "--no-progress"],
                         "caption.json"),
    "fit-law": (["fit-law", "{t}/results.jsonl", "--out", "{t}/new"], "results.jsonl"),
    "efficiency": (["efficiency", "{t}/results.jsonl"], "results.jsonl"),
}  # fmt: skip


@pytest.mark.parametrize("args, name", CASES.values(), ids=CASES.keys())
def test_deep_json_is_one_line_in_every_reader(bad_input, deep_files, args, name):
    t = deep_files
    before = sorted(p.name for p in t.iterdir())
    bad_input(
        [a.format(t=t) for a in args],
        inputs=[t / "m.json", t / "deep.json", t / "results.jsonl"],
        match=rf"{name}.*: JSON nested",
    )
    assert sorted(p.name for p in t.iterdir()) == before  # nothing written


def test_serve_summary_and_manifest_refuse_deep_json(tmp_path, caption_run):
    from prh.errors import InputError
    from prh.serve.runinfo import read_run_info, run_world

    (tmp_path / "summary.json").write_text(DEEP)
    with pytest.raises(InputError, match=r"summary\.json: JSON nested"):
        read_run_info(tmp_path)
    cap = tmp_path / "cap"
    shutil.copytree(caption_run, cap)
    (cap / "caption" / "caption.json").write_text(DEEP)
    (cap / "config.json").write_text(DEEP)
    assert run_world(cap) == ("cave", 0)  # unreadable: the documented fallback, no traceback
