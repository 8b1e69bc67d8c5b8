"""`prh train`: every bad input is one line, exit status 2, inputs untouched (issue 11)."""

from __future__ import annotations

import json

import pytest

from prh.training.config import TrainConfig, train_config


def _corpus(path, n=64):
    rows = [
        json.dumps({"image": f"img_{i}", "captions": [f"a {i % 7} cube {i}", f"one cube {i}"]})
        for i in range(n)
    ]
    path.write_text("\n".join(rows) + "\n")
    return path


# Small and fast on a 64-image corpus: two steps of the tiny preset.
SMALL = ["--samples", "128", "--batch-size", "64", "--max-len", "12", "--no-progress"]
SMALL += ["--threads", "1"]


@pytest.fixture
def stored_run(tmp_path):
    """A run folder as `prh train` leaves it after its first checkpoint (no weights needed)."""
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    cfg = train_config("tiny", views="mixture", rho=0.5, samples=256, seed=3)
    (run / "config.json").write_text(json.dumps({"train": cfg.to_dict(), "model": {}}))
    (run / "meta.json").write_text(json.dumps({"threads": 2}))
    (run / "checkpoints" / "step_00000002.json").write_text("{}")
    return run


@pytest.mark.parametrize(
    "flags, match",
    [
        (["--lr", "inf"], "--lr"),
        (["--lr", "nan"], "--lr"),
        (["--lr", "-1"], "--lr"),
        (["--rho", "nan", "--views", "mixture"], "--rho"),
        (["--seed", "-1"], "--seed"),
        (["--seed", "4294967296"], "--seed"),
        (["--threads", "100000"], "--threads"),
        (["--max-len", "100000000"], "--max-len"),
        (["--samples", "0"], "--samples"),
        (["--views", "good", "--rho", "0.3"], "--rho 0.3: only --views mixture"),
        (["--views", "bad", "--rho", "0.3"], "--views bad takes no --rho"),
        (["--views", "mixture"], "--views mixture needs --rho"),
        (["--device", "tpu"], "--device tpu: unknown device"),
        ([], "give --out RUN"),
    ],
)
def test_bad_flags(bad_input, tmp_path, flags, match):
    out = [] if flags == [] else ["--out", str(tmp_path / "r")]
    bad_input(["train", *out, *flags], match=match)
    assert not (tmp_path / "r").exists()


def test_device_cuda_without_cuda(bad_input, tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    bad_input(["train", "--out", tmp_path / "r", "--device", "cuda"], match="CUDA is not available")


def test_output_folder_under_a_file_or_a_file(bad_input, tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("keep me")
    bad_input(["train", "--out", f / "run"], inputs=[f], match=r"is a file, so the folder")
    bad_input(["train", "--out", f], inputs=[f], match=r"is a file, expected a folder")


def test_resume_of_a_file_or_nothing(bad_input, tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("keep me")
    bad_input(["train", "--resume", f], inputs=[f], match="is a file, expected a run folder")
    bad_input(["train", "--resume", tmp_path / "nowhere"], match="no such run folder")


def test_resume_of_a_start_without_config_says_start_again(bad_input, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "tokenizer.json").write_text("{}")
    bad_input(["train", "--resume", run], match=rf"start it again with --out {run}")


@pytest.mark.parametrize(
    "flags, match",
    [
        (["--samples", "512"], "--samples 512: the run in .* was started with 256"),
        (["--views", "good"], "--views good: .* started with mixture"),
        (["--rho", "0.3"], "--rho 0.3: .* started with 0.5"),
        (["--lr", "0.1"], "--lr 0.1"),
        (["--seed", "4"], "--seed 4"),
        (["--preset", "small"], "--preset small"),
        (["--objective", "soft"], "--objective soft"),
        (["--threads", "4"], "--threads 4: the run in .* used 2 threads"),
    ],
)
def test_resume_refuses_flags_that_change_the_run(bad_input, stored_run, flags, match):
    files = [stored_run / "config.json", stored_run / "meta.json"]
    bad_input(["train", "--resume", stored_run, *flags], inputs=files, match=match)


def test_out_over_a_run_with_checkpoints(bad_input, stored_run):
    files = [stored_run / "config.json", stored_run / "checkpoints" / "step_00000002.json"]
    bad_input(["train", "--out", stored_run], inputs=files, match="use --resume")


def test_eval_features_and_corpus_paths(bad_input, tmp_path):
    out = ["--out", tmp_path / "r"]
    bad_input(["train", *out, "--eval-features", tmp_path], match="is a folder, expected a")
    bad_input(["train", *out, "--eval-features", tmp_path / "x.npy"], match="no such file")
    bad_input(["train", *out, "--corpus", tmp_path / "x.jsonl"], match="no such file or folder")


def test_diverging_lr_is_one_line_naming_the_step(bad_input, tmp_path):
    corpus = _corpus(tmp_path / "c.jsonl")
    argv = ["train", "--corpus", corpus, "--out", tmp_path / "r", *SMALL, "--lr", "1e30"]
    line = bad_input(argv, inputs=[corpus], match=r"at step \d+")
    assert "cholesky" not in line.lower() and "smaller learning rate" in line


def test_retry_over_a_failed_start_and_resume_of_a_config_only_run(tmp_path, capsys):
    from prh.cli import main

    corpus = _corpus(tmp_path / "c.jsonl")
    run = tmp_path / "r"
    run.mkdir()
    (run / "tokenizer.json").write_text("{}")  # a start killed while building its tokenizer
    assert main(["train", "--corpus", str(corpus), "--out", str(run), *SMALL]) == 0
    assert "started over" in capsys.readouterr().err
    assert (run / "model.safetensors").is_file()
    # A start that wrote its config and stopped before a checkpoint resumes from step 0.
    (run / "model.safetensors").unlink()
    assert main(["train", "--resume", str(run)]) == 0
    assert (run / "model.safetensors").is_file()


def test_cli_defaults_equal_the_config_defaults(tmp_path):
    from prh.cli import build_parser
    from prh.cli.train import config_from_args

    args = build_parser().parse_args(["train", "--out", str(tmp_path / "r")])
    assert config_from_args(args) == train_config("tiny") == TrainConfig()
    help_text = build_parser()._subparsers._group_actions[0].choices["train"].format_help()
    assert f"(default {TrainConfig.samples})" in " ".join(help_text.split())


def test_a_bad_eval_features_file_fails_before_the_run_folder_is_made(bad_input, tmp_path):
    feats = tmp_path / "feats.jsonl"
    feats.write_text("{}\n")
    argv = ["train", "--out", tmp_path / "r", "--eval-features", feats, *SMALL]
    bad_input(argv, inputs=[feats], match="feats.jsonl")
    assert not (tmp_path / "r").exists()


def test_no_progress_and_no_warning_on_stderr(tmp_path, capsys):
    from prh.cli import main

    corpus = _corpus(tmp_path / "c.jsonl")
    argv = ["train", "--corpus", str(corpus), "--out", str(tmp_path / "r"), *SMALL]
    assert main([*argv, "--objective", "soft"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out.strip() == str(tmp_path / "r")


@pytest.mark.parametrize(
    "rows, ids, match",
    [
        (1, ["scene_1"], r"1 row\(s\); alignment needs at least 2"),
        (2, ["scene_1", "scene_99999999"], "scene index 99999999 out of range"),
        (2, ["scene_1", "cat"], "is not a world scene id"),
        (0, ["scene_1", "scene_2"], "row 0 holds NaN"),
    ],
)
def test_eval_features_content_is_checked_before_training(bad_input, tmp_path, rows, ids, match):
    import numpy as np

    from prh.features import save_features

    feats = np.full((len(ids), 1, 4), np.nan) if rows == 0 else np.ones((len(ids), 1, 4))
    path = tmp_path / "f.safetensors"
    save_features(path, feats, ids=ids)
    argv = ["train", "--out", tmp_path / "r", "--eval-features", path, *SMALL]
    bad_input(argv, inputs=[path], match=match)
    assert not (tmp_path / "r").exists()


def test_an_input_inside_the_run_folder_is_refused(bad_input, tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    corpus = _corpus(run / "metrics.jsonl")  # a failed start's file name: would be cleared
    argv = ["train", "--corpus", corpus, "--out", run, *SMALL]
    bad_input(argv, inputs=[corpus], match="is inside the run folder")


@pytest.mark.parametrize(
    "content, sets, match",
    [
        ('{"lr": 0.001, "learning_rate": 2}', [], r"unknown key 'learning_rate'; known keys: .*lr"),
        ('{"train": {"samples": 64}, "model": {"width": 8}}', [], "unknown key 'model.width'"),
        ("lr = 0.001\n", [], "not JSON"),
        ("[1, 2]", [], "expected a JSON object"),
        ('{"samples": "many"}', [], 'samples is int, got "many"'),
        ('{"doc_style": 1}', [], "doc_style is bool, got 1"),
        (None, ["lr"], "--set lr: expected key=value"),
        (None, ["lr=fast"], "--set lr=fast: lr is float"),
        (None, ["samples=1.5"], "--set samples=1.5: samples is int"),
        (None, ["lr=inf"], "expected a finite number"),
        (None, ["model.depth=3"], r"unknown key 'model.depth'; known keys: .*model.n_layers"),
        (None, ["weight_decay=-1"], "weight_decay must be a finite number >= 0"),
        (None, ["views=mixture"], "mixture needs --rho"),
        (None, ["views=good", "rho=0.5"], "rho 0.5: views good implies rho 1"),
        # issue 32: a key or a file of another run kind, named
        (None, ["freeze_until=3"], "--set freeze_until=3: freeze_until is a setting of image runs"),
        (None, ["image_lr=0.1"], "--set image_lr=0.1: image_lr is a setting of prh demo"),
        ('{"backbone": "none"}', [], "backbone is a setting of image runs"),
        ('{"train": {"curve_seeds": 3}}', [], "curve_seeds is a setting of prh demo"),
        ('{"modality": "sketch", "train": {}, "image": {}}', [], "the config of an image run"),
        ('{"config": {"image_samples": 256, "control": "cave"}}', [], "a prh demo config"),
    ],
)
def test_bad_config_file_and_sets(bad_input, tmp_path, content, sets, match):
    argv = ["train", "--out", str(tmp_path / "r")]
    if content is not None:
        (tmp_path / "c.json").write_text(content)
        argv += ["--config", str(tmp_path / "c.json")]
    for item in sets:
        argv += ["--set", item]
    bad_input(argv, [tmp_path / "c.json"] if content is not None else [], match)
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    "flags, match",
    [
        (["--weight-decay", "x"], "--weight-decay"),
        (["--warmup-frac", "1.5"], r"warmup_frac must be in \[0, 1\]"),
        (["--whiten-eps", "0"], "whiten_eps must be a finite number > 0"),
        (["--d-model", "100", "--n-heads", "3"], "not divisible by n_heads"),
        (["--embed-dim", "0"], "embed_dim must be >= 1"),
        (["--config", "{missing}"], "no such file"),
    ],
)
def test_bad_knobs(bad_input, tmp_path, flags, match):
    flags = [f.format(missing=tmp_path / "missing.json") for f in flags]
    bad_input(["train", "--out", str(tmp_path / "r"), *flags], match=match)
    assert not (tmp_path / "r").exists()


def test_config_and_set_on_resume_are_refused(bad_input, stored_run):
    (stored_run.parent / "c.json").write_text("{}")
    for extra in (["--config", str(stored_run.parent / "c.json")], ["--set", "lr=0.1"]):
        bad_input(
            ["train", "--resume", str(stored_run), *extra],
            [stored_run / "config.json"],
            "start a new run",
        )


def test_model_flag_on_resume_is_refused(bad_input, stored_run):
    bad_input(
        ["train", "--resume", str(stored_run), "--d-model", "64"],
        [stored_run / "config.json"],
        "--d-model 64",
    )


# --- issue 36: --set and --config take the flags' own rules; shapes beyond the machine ---------

SET_CASES = {  # each: what the flag refuses, given through --set, then through --config
    "seed -1": ("seed", -1, r"seed=-1: expected a seed in \[0, 4294967295\], got -1 \(as --seed\)"),
    "seed 20 digits": ("seed", 10**19 + 7, r"seed=10000000000000000007: expected a seed in"),
    "sigreg_slices 0": ("sigreg_slices", 0, r"sigreg_slices=0: expected a positive integer"),
    "checkpoint_every -1": ("checkpoint_every", -1, r"checkpoint_every=-1: expected an integer "
                            r">= 0, got -1 \(as --checkpoint-every\)"),
    "eval_every -1": ("eval_every", -1, r"eval_every=-1: expected an integer >= 0"),
    "sigreg_lambda 2": ("sigreg_lambda", 2.0, r"sigreg_lambda=2\.0: expected a number in \[0, 1\]"),
    "log_every -1": ("log_every", -1, r"log_every=-1: expected an integer >= 0"),
    "samples 0": ("samples", 0, r"samples=0: expected a positive integer, got 0 \(as --samples\)"),
    "views unknown": ("views", "weird", r"views=weird: expected one of good, bad"),
    "max_len huge": ("max_len", 10**8, r"max_len=100000000: expected 2 to"),
}  # fmt: skip


@pytest.mark.parametrize("how", ["--set", "--config"])
@pytest.mark.parametrize("key, value, match", SET_CASES.values(), ids=SET_CASES.keys())
def test_set_and_config_take_the_flags_rules(bad_input, tmp_path, how, key, value, match):
    if how == "--set":
        given, where = ["--set", f"{key}={value}"], "--set"
    else:
        (tmp_path / "c.json").write_text(json.dumps({key: value}))
        given, where = ["--config", str(tmp_path / "c.json")], r"--config .*c\.json"
    bad_input(["train", "--out", tmp_path / "r", *given, *SMALL], match=f"^prh train: error: "
              f"{where}: {match}")  # fmt: skip
    assert not (tmp_path / "r").exists()  # refused before the run folder, not deep in training


@pytest.mark.parametrize(
    "flags",
    [["--d-model", "1000000000"], ["--set", "model.n_layers=1000000"],
     ["--set", "model.d_ff=100000000000"]],
    ids=["d-model", "n_layers", "d_ff"],
)  # fmt: skip
def test_a_model_beyond_the_machine_is_refused_by_an_estimate(bad_input, tmp_path, flags):
    bad_input(["train", "--out", tmp_path / "r", *flags, *SMALL],
              match=r"training a model of d_model .* needs about [\d,.]+ GiB of memory, "
              r"[\d,.]+ GiB available")  # fmt: skip
    assert not (tmp_path / "r").exists()


def test_the_memory_estimate_counts_the_parameters_the_model_has():
    """The closed form against the built models (the reference), and the estimate's refusal
    against a stated budget."""
    from prh.errors import InputError
    from prh.models.budget import TRAIN_BYTES_PER_PARAM, parameter_count, train_memory_bytes
    from prh.models.config import ModelConfig
    from prh.models.transformer import CausalLM, TextEncoder, count_parameters
    from prh.training.preflight import check_fits_machine

    for kw in ({}, {"d_model": 48, "n_layers": 3, "n_heads": 4, "d_ff": 100, "embed_dim": 7,
                    "vocab_size": 300, "max_len": 17}):  # fmt: skip
        cfg = ModelConfig(**kw)
        assert parameter_count(cfg) == count_parameters(TextEncoder(cfg))
        assert parameter_count(cfg, lm=True) == count_parameters(CausalLM(cfg))
        assert train_memory_bytes(cfg, 8) > TRAIN_BYTES_PER_PARAM * parameter_count(cfg)
    cfg = train_config("tiny", samples=64, batch_size=64)
    check_fits_machine(cfg, available=2**30)  # the tiny preset fits in 1 GiB
    with pytest.raises(InputError, match=r"needs about 0\.\d GiB of memory, 0\.0 GiB available"):
        check_fits_machine(cfg, available=2**20)
    # a GPU run: its activations live on the device; the host still builds the 1.3 TB weights
    check_fits_machine(cfg, available=2**25, on_cpu=False)  # 0.5M parameters: 8 MiB
    huge = train_config("tiny", samples=64, batch_size=64, model_overrides={"d_model": 10**9})
    with pytest.raises(InputError, match=r"d_model 1,000,000,000.* needs about [\d,.]+ GiB"):
        check_fits_machine(huge, available=2**40, on_cpu=False)


def test_set_values_the_flags_accept_still_train(tmp_path, capsys):
    """The flags' rules refuse only what the flags refuse: a run's own config.json as --config
    and in-range --set values start a run."""
    from prh.cli import main

    sets = ["--set", "seed=7", "--set", "checkpoint_every=0", "--set", "log_every=0"]
    assert main(["train", "--out", str(tmp_path / "a"), *sets, *SMALL]) == 0, capsys.readouterr()
    config = ["--config", str(tmp_path / "a" / "config.json")]
    assert main(["train", "--out", str(tmp_path / "b"), *config, *SMALL]) == 0, capsys.readouterr()
    assert json.loads((tmp_path / "b" / "config.json").read_text())["train"]["seed"] == 7
