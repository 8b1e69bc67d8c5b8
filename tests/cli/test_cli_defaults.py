"""A subcommand run with no optional flags passes its library exactly the library's defaults.

Each test replaces the library call the command ends in with a recorder, runs the command
in-process, and compares what it was given with the config dataclass (or the function's own
signature) built from defaults alone. A default changed in one place and not the other fails here.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from prh.cli import main


class _Called(Exception):
    """Raised by the recorder so the command stops right after the library call."""


def record(monkeypatch, target: Any, name: str) -> dict[str, Any]:
    """Replace ``target.name`` by a recorder; returns the dict it fills with the call."""
    seen: dict[str, Any] = {}

    def recorder(*args: Any, **kwargs: Any) -> Any:
        seen.update(args=args, kwargs=kwargs)
        raise _Called

    monkeypatch.setattr(target, name, recorder)
    return seen


def run_until_called(argv: list[str]) -> None:
    with pytest.raises(_Called):
        main(argv)


def signature_defaults(fn: Any) -> dict[str, Any]:
    return {
        k: p.default
        for k, p in inspect.signature(fn).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


def test_train_defaults_equal_the_config_defaults(monkeypatch, tmp_path) -> None:
    import prh.training.api
    from prh.training import TrainConfig, train_config

    seen = record(monkeypatch, prh.training.api, "train")
    run_until_called(["train", "--out", str(tmp_path / "run")])
    cfg = seen["args"][0]
    assert isinstance(cfg, TrainConfig)
    assert cfg == train_config(TrainConfig().preset)  # dataclass defaults, then the preset's
    assert cfg.samples == TrainConfig().samples and cfg.seed == TrainConfig().seed


def test_train_help_states_the_config_defaults() -> None:
    """The help of a flag whose default is None ("use the config's") names the config's value."""
    from prh.cli import build_parser
    from prh.training import TrainConfig

    train = build_parser()._subparsers._group_actions[0].choices["train"]
    helps = {a.dest: a.help for a in train._actions}
    assert f"default {TrainConfig().samples})" in helps["samples"]


def test_caption_build_defaults_equal_the_config_defaults(monkeypatch, tmp_path, text_run) -> None:
    import prh.caption
    from prh.caption.build import CaptionBuildConfig

    seen = record(monkeypatch, prh.caption, "build_caption_run")
    run_until_called(["caption", "--build", "--text-run", str(text_run), "--out", str(tmp_path)])
    overrides = {k: v for k, v in seen["kwargs"].items() if k != "progress"}
    assert dataclasses.replace(CaptionBuildConfig(), **overrides) == CaptionBuildConfig()


def test_caption_eval_defaults_equal_the_function_defaults(monkeypatch, caption_run) -> None:
    import prh.caption
    import prh.caption.commands as caption_commands

    want = signature_defaults(prh.caption.evaluate_captioner)
    monkeypatch.setattr(caption_commands, "load_request_captioner", lambda req, beam=1: object())
    seen = record(monkeypatch, prh.caption, "evaluate_captioner")
    run_until_called(["caption", "--eval", "--run", str(caption_run)])
    got = {k: v for k, v in seen["kwargs"].items() if k != "progress"}
    assert got == {k: want[k] for k in got}


def test_prove_defaults_equal_the_config_defaults(monkeypatch) -> None:
    import prh.prove
    from prh.prove import ProveConfig

    seen = record(monkeypatch, prh.prove, "run_checks")
    run_until_called(["prove"])
    assert seen["args"][1] == ProveConfig()


def test_serve_defaults_equal_the_app_defaults(monkeypatch) -> None:
    import prh.serve.app
    import prh.serve.launch as launch

    want = signature_defaults(prh.serve.app.create_app)
    monkeypatch.setattr(launch, "check_port_free", lambda host, port: None)
    seen = record(monkeypatch, prh.serve.app, "create_app")
    run_until_called(["serve", "--captioner", "colour"])
    for name in ("max_upload_bytes", "max_queue", "workers"):
        assert seen["kwargs"][name] == want[name], name


def test_efficiency_defaults_equal_the_function_defaults(monkeypatch, tmp_path) -> None:
    import prh.scaling.efficiency as eff
    import prh.scaling.rows as rows

    want = signature_defaults(eff.sample_efficiency)
    monkeypatch.setattr(rows, "read_rows", lambda path: ([], []))
    monkeypatch.setattr(eff, "curves_from_rows", lambda *a, **k: None)
    monkeypatch.setattr(eff, "default_target", lambda a, b: 0.5)
    seen = record(monkeypatch, eff, "sample_efficiency")
    run_until_called(["efficiency", str(tmp_path / "results.jsonl")])
    assert seen["kwargs"] == {"n_boot": want["n_boot"], "seed": want["seed"]}


def test_train_image_defaults_equal_the_config_defaults(monkeypatch, tmp_path) -> None:
    """``prh train --modality image`` with no other flag trains ImageConfig's defaults, and the
    help of every flag derived from ImageConfig states the field's default."""
    import prh.training.image
    from prh.cli import build_parser
    from prh.training.image_config import DEFAULT_TRAIN_SCENES, ImageConfig

    seen = record(monkeypatch, prh.training.image, "train_image")
    run_until_called(["train", "--modality", "image", "--out", str(tmp_path / "run")])
    train, image = seen["args"][:2]
    assert image == ImageConfig(modality="image")
    assert train.train_scenes == DEFAULT_TRAIN_SCENES
    parser = build_parser()._subparsers._group_actions[0].choices["train"]
    helps = {a.dest: a.help for a in parser._actions}
    for f in dataclasses.fields(ImageConfig):
        if "help" in f.metadata and f.type != "bool":
            assert helps[f.name].endswith(f"(default {f.default})"), f.name
