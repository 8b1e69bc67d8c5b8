"""`prh embed --world-themes/--theme-strength` on bad input: one line, exit 2, inputs intact."""

from __future__ import annotations

import json

import pytest


@pytest.fixture()
def corpus(tmp_path):
    rows = [{"image": f"{i}.png", "captions": ["a cube", "one cube"]} for i in range(3)]
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--world-themes", "3"], "--world-themes/--theme-strength apply to --world cave only"),
        (["--theme-strength", "1.5"], "apply to --world cave only, not --corpus"),
    ],
)
def test_theme_flags_outside_the_world(bad_input, corpus, tmp_path, extra, match):
    argv = ["embed", "minilm", "--corpus", str(corpus), "--modality", "text", *extra]
    bad_input([*argv, "--out", str(tmp_path / "o.safetensors")], [corpus], match)


@pytest.mark.parametrize(
    ("extra", "match"),
    [(["--world-themes", "-1"], "--world-themes"), (["--theme-strength", "nan"], "--theme")],
)
def test_theme_flags_out_of_range(bad_input, tmp_path, extra, match):
    argv = ["embed", "efficientnet-lite0", "--world", "cave", "--modality", "image", *extra]
    bad_input([*argv, "--out", str(tmp_path / "o.safetensors")], [], match)
