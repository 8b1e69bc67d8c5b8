"""`prh embed --models LIST`: the benchmark's loop over a model list (issue 24, item 1)."""

from __future__ import annotations

import numpy as np
import pytest

import prh.cli
from prh.features import load_features
from prh.modelsets import SETS, feature_filename, read_model_list

pytest.importorskip("datasets")


@pytest.fixture()
def cli(monkeypatch):
    monkeypatch.setattr(prh.cli, "COMMANDS", {"embed": prh.cli.COMMANDS["embed"]})

    def run(*argv: str) -> int:
        return prh.cli.main(["embed", *map(str, argv), "--threads", "1", "--no-progress"])

    return run


def test_builtin_sets_mirror_the_reference():
    # platonic-rep tasks.get_models("val"): 12 language models, 17 vision models, in this order.
    lang = [e.name for e in read_model_list("val-language")]
    assert len(lang) == 12 and lang[:2] == ["bigscience/bloomz-560m", "bigscience/bloomz-1b1"]
    assert lang[-1] == "huggyllama/llama-65b"
    assert len(SETS["val-vision"]) == 17
    # The reference's own file names (its results/features folder).
    assert (
        feature_filename("bigscience/bloomz-1b1", "avg", "text")
        == "bigscience_bloomz-1b1_pool-avg.pt"
    )
    vit = read_model_list("val-vision")[0]
    assert vit.spec == "hf:timm/vit_tiny_patch16_224.augreg_in21k"
    assert (
        feature_filename(vit.name, "cls", "image")
        == "vit_tiny_patch16_224.augreg_in21k_pool-none.pt"
    )


def test_a_list_embeds_each_model_skips_existing_and_force_remakes(
    cli, tmp_path, tiny_dataset, tiny_bert, tiny_gpt2, capsys
):
    folder, _ = tiny_dataset
    listing = tmp_path / "models.txt"
    listing.write_text(f"# two tiny models\nhf:{tiny_gpt2}\n\nhf:{tiny_bert}  # second\n")
    out = tmp_path / "feats"
    argv = ["--models", listing, "--dataset", folder, "--modality", "text", "--out-dir", out]
    assert cli(*argv) == 0
    gpt2 = out / f"{tiny_gpt2.name}_pool-avg.pt"
    bert = out / f"{tiny_bert.name}_pool-avg.pt"
    assert gpt2.is_file() and bert.is_file()
    # Each file equals the one-model command's output.
    one = tmp_path / "one.pt"
    assert cli(f"hf:{tiny_bert}", "--dataset", folder, "--modality", "text", "--out", one) == 0
    np.testing.assert_array_equal(load_features(bert).features, load_features(one).features)
    # A second run skips both; --force remakes them.
    capsys.readouterr()
    mtime = bert.stat().st_mtime_ns
    assert cli(*argv) == 0
    said = capsys.readouterr().out
    assert said.count("skip ") == 2 and bert.stat().st_mtime_ns == mtime
    assert cli(*argv, "--force") == 0
    assert capsys.readouterr().out.count("wrote ") == 2


def test_a_bare_hub_id_is_an_hf_spec(tmp_path):
    listing = tmp_path / "m.txt"
    listing.write_text("bigscience/bloomz-560m\nminilm\n")
    entries = read_model_list(str(listing))
    assert [e.spec for e in entries] == ["hf:bigscience/bloomz-560m", "minilm"]


def test_a_list_reuses_only_files_made_from_the_same_source(
    cli, tmp_path, tiny_dataset, tiny_bert, capsys
):
    """Issue 36: an existing file is skipped only when its metadata records this source,
    input and embedding config; a file made from another source is one line, exit 2."""
    import shutil

    folder, _ = tiny_dataset
    other = tmp_path / "other"
    shutil.copytree(folder, other)
    listing = tmp_path / "models.txt"
    listing.write_text(f"hf:{tiny_bert}\n")
    out = tmp_path / "feats"
    argv = ["--models", listing, "--modality", "text", "--out-dir", out]
    assert cli(*argv, "--dataset", folder) == 0
    made = out / f"{tiny_bert.name}_pool-avg.pt"
    before = made.read_bytes()
    capsys.readouterr()
    assert cli(*argv, "--dataset", folder, "--batch-size", "3") == 0  # the batch changes nothing
    assert capsys.readouterr().out.count("skip ") == 1
    assert cli(*argv, "--dataset", other) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"{made.name} ({tiny_bert.name}) was made with source" in err
    assert "--force remakes it" in err and made.read_bytes() == before


def test_a_list_of_ten_thousand_lines_is_refused_at_once(tmp_path, bad_input):
    import time

    listing = tmp_path / "models.txt"
    listing.write_text("".join(f"org/model{i}\n" for i in range(10_000)))
    t0 = time.perf_counter()
    bad_input(
        [
            "embed",
            "--models",
            listing,
            "--out-dir",
            tmp_path / "o",
            "--modality",
            "text",
            "--world",
            "cave",
        ],
        inputs=[listing],
        match=r"lists 10,000 models; at most 1,000 per list",
    )
    assert time.perf_counter() - t0 < 30 and not (tmp_path / "o").exists()
