"""Each command turns its flags into one frozen request and hands it to one library call
(issue 32): the request's defaults are the command line's, every flag is a field, and a request
built in Python does what the command does."""

from __future__ import annotations

import argparse
import dataclasses
import json

import numpy as np
import pytest

import prh
from prh.cli import build_parser
from prh.cli._args import as_request

# argv (the required flags only) -> the request class its command builds
CASES = [
    (["embed", "minilm", "--world", "cave", "--modality", "text", "--out", "o.safetensors"],
     "prh.encoders.embed_request", "EmbedRequest"),
    (["measure", "a.npy", "b.npy"], "prh.metrics.matrix_request", "MeasureRequest"),
    (["match", "--x", "x.npy", "--y", "y.npy", "--json", "m.json"],
     "prh.bridge.match_files", "MatchRequest"),
    (["bridge", "fit", "--x", "x.npy", "--y", "y.npy", "--out", "m.safetensors"],
     "prh.bridge.files", "MapFitRequest"),
    (["bridge", "apply", "m.safetensors", "--x", "x.npy", "--out", "y.npy"],
     "prh.bridge.files", "MapApplyRequest"),
    (["bridge", "score", "--files", "a.npy", "b.npy"],
     "prh.bridge.score_files", "BridgeScoreRequest"),
    (["caption", "--run", "r", "--image", "i.png"], "prh.caption.commands", "CaptionRequest"),
    (["serve"], "prh.serve.launch", "ServeRequest"),
    (["prove"], "prh.prove.command", "ProveRequest"),
    (["fit-law", "results.jsonl"], "prh.scaling.commands", "FitLawRequest"),
    (["efficiency", "results.jsonl"], "prh.scaling.commands", "EfficiencyRequest"),
    (["world", "sample", "--out", "d"], "prh.world.commands", "CaveWorldRequest"),
    (["world", "spectrum"], "prh.world.moving_commands", "MovingWorldRequest"),
    (["world", "trajectory", "--out", "t.png"], "prh.world.moving_commands", "MovingWorldRequest"),
]  # fmt: skip

PLUMBING = {"command", "_run", "_command", "action"}


def _request(argv: list[str], module: str, name: str):
    import importlib

    cls = getattr(importlib.import_module(module), name)
    args = build_parser().parse_args(argv)
    return cls, args, as_request(cls, args)


@pytest.mark.parametrize(("argv", "module", "name"), CASES, ids=lambda v: str(v)[:30])
def test_every_flag_is_a_field(argv, module, name) -> None:
    cls, args, _ = _request(argv, module, name)
    flags = set(vars(args)) - PLUMBING
    assert flags <= {f.name for f in dataclasses.fields(cls)}


@pytest.mark.parametrize(("argv", "module", "name"), CASES, ids=lambda v: str(v)[:30])
def test_request_defaults_equal_the_flag_defaults(argv, module, name) -> None:
    """A field the command line left at its default holds the same default in Python; the
    per-action defaults of a shared request (``--size``: 64 to sample, 160 for a figure) are
    the exception the command line fills in."""
    cls, _, req = _request(argv, module, name)
    given = {a.lstrip("-").replace("-", "_") for a in argv if a.startswith("--")}
    shared = {"captions", "size"} if name in ("CaveWorldRequest", "MovingWorldRequest") else set()
    checked = 0
    for f in dataclasses.fields(cls):
        value = getattr(req, f.name)
        left_out = f.name not in given and value not in argv  # neither a flag nor a positional
        if f.default is not dataclasses.MISSING and left_out and f.name not in shared:
            assert value == f.default, f.name
            checked += 1
    assert checked >= 1


def test_requests_are_frozen_and_lists_become_tuples() -> None:
    _, _, req = _request(["measure", "--x", "a.npy", "b.npy", "--y", "c.npy"],
                         "prh.metrics.matrix_request", "MeasureRequest")  # fmt: skip
    assert req.x == ("a.npy", "b.npy")
    with pytest.raises(dataclasses.FrozenInstanceError):
        req.k = 3  # type: ignore[misc]


def test_as_request_leaves_another_actions_fields_at_their_defaults() -> None:
    ns = argparse.Namespace(action="trajectory", out="t.png", seed=1)
    from prh.world.moving_commands import MovingWorldRequest

    req = as_request(MovingWorldRequest, ns)
    assert (req.seed, req.k, req.eigs) == (1, 8, 16)


def test_measure_files_from_python_equals_the_command(tmp_path, capsys) -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(size=(40, 6))
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", a @ rng.normal(size=(6, 6)))
    files = [str(tmp_path / "a.npy"), str(tmp_path / "b.npy")]
    cli = tmp_path / "cli.json"
    assert prh.cli.main(["measure", *files, "--k", "5", "--json", str(cli)]) == 0
    api = tmp_path / "api.json"
    result = prh.measure_files(prh.MeasureRequest(a=files[0], b=files[1], k=5, json=str(api)))
    assert result.scores["mutual_knn"].shape == (1, 1)
    want, got = json.loads(cli.read_text()), json.loads(api.read_text())
    for doc in (want, got):
        doc.pop("created", None)
        doc.pop("options", None)
        doc.pop("git", None)
    assert got["matrices"] == want["matrices"] and got["results"] == want["results"]
