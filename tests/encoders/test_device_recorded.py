"""A feature file records the device its encoder ran on, not the `auto` it was asked for."""

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")


def test_feature_file_records_the_resolved_device(tmp_path, monkeypatch):
    import torch
    from safetensors import safe_open

    import prh.cli as cli

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = tmp_path / "f.safetensors"
    argv = ["embed", "minilm", "--world", "cave", "--n", "8", "--split", "test"]
    assert cli.main([*argv, "--modality", "text", "--out", str(out), "--no-progress"]) == 0
    with safe_open(str(out), framework="numpy") as f:
        options = json.loads(f.metadata()["encoder_options"])
    assert options["device"] == "cpu"
