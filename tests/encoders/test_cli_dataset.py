"""`prh embed --dataset`: a Hugging Face table (the PRH benchmark layout) from disk or cache."""

from __future__ import annotations

import json

import numpy as np
import pytest

import prh.cli
from prh.encoders import EncoderOptions, load_encoder
from prh.features import load_features

pytest.importorskip("datasets")


@pytest.fixture()
def cli(monkeypatch):
    """``prh.cli.main`` with only ``embed`` registered (other commands may be mid-development)."""
    monkeypatch.setattr(prh.cli, "COMMANDS", {"embed": prh.cli.COMMANDS["embed"]})

    def run(*argv: str) -> int:
        return prh.cli.main(["embed", *map(str, argv), "--threads", "1"])

    return run


def test_text_and_images_of_a_saved_dataset_line_up(
    cli, tmp_path, tiny_dataset, tiny_bert, tiny_vit, table_captions
):
    folder, arrays = tiny_dataset
    txt, img = tmp_path / "t.safetensors", tmp_path / "i.safetensors"
    common = ["--dataset", folder, "--batch-size", 2, "--no-progress"]
    assert (
        cli(f"hf:{tiny_bert}", *common, "--modality", "text", "--caption-index", 1, "--out", txt)
        == 0
    )
    assert cli(f"hf:{tiny_vit}", *common, "--modality", "image", "--out", img) == 0
    t, i = load_features(txt), load_features(img)
    assert t.ids == i.ids == [f"row_{r}" for r in range(5)]
    assert t.features.shape == (5, 3, 16) and i.features.shape == (5, 3, 16)
    # Reference: the encoders applied directly to caption 1 of each row and to the source arrays.
    ref_t = load_encoder(f"hf:{tiny_bert}").encode_texts([c[1] for c in table_captions])
    np.testing.assert_allclose(t.features, ref_t, rtol=1e-4, atol=1e-5)
    ref_i = load_encoder(f"hf:{tiny_vit}").encode_images(arrays)
    np.testing.assert_allclose(i.features, ref_i, rtol=1e-4, atol=1e-5)
    assert "column=text caption=1 n=5" in t.metadata["source"]
    assert json.loads(t.metadata["encoder_options"])["pool"] == "avg"
    assert json.loads(i.metadata["encoder_options"])["pool"] == "cls"


def test_streamed_in_chunks_with_progress(
    cli, tmp_path, tiny_dataset, tiny_vit, capsys, monkeypatch
):
    import prh.progress

    monkeypatch.setattr(prh.progress, "PLAIN_INTERVAL_S", 0.0)  # a line per chunk
    folder, _ = tiny_dataset
    small, big = tmp_path / "s.safetensors", tmp_path / "b.safetensors"
    base = [f"hf:{tiny_vit}", "--dataset", folder, "--modality", "image"]
    assert cli(*base, "--batch-size", 1, "--out", small) == 0  # chunks of 4 rows: 4 + 1
    err = capsys.readouterr().err
    assert "embed image: 4/5" in err and "embed image: 5/5" in err
    assert cli(*base, "--batch-size", 8, "--no-progress", "--out", big) == 0
    np.testing.assert_allclose(
        load_features(small).features, load_features(big).features, rtol=1e-5, atol=1e-6
    )


def test_n_takes_the_first_rows(cli, tmp_path, tiny_dataset, tiny_bert, table_captions):
    folder, _ = tiny_dataset
    out = tmp_path / "t.safetensors"
    args = ["--dataset", folder, "--modality", "text", "--n", 3, "--no-progress", "--out", out]
    assert cli(f"hf:{tiny_bert}", *args) == 0
    fs = load_features(out)
    assert fs.ids == ["row_0", "row_1", "row_2"]
    ref = load_encoder(f"hf:{tiny_bert}").encode_texts([c[0] for c in table_captions[:3]])
    np.testing.assert_allclose(fs.features, ref, rtol=1e-4, atol=1e-5)


def test_the_benchmark_name_from_the_local_cache(
    cli, tmp_path, tiny_dataset, tiny_dataset_cache, tiny_bert
):
    """`--dataset minhuh/prh --revision wit_1024` offline reads the cached copy, as load_dataset."""
    folder, _ = tiny_dataset
    cached, saved = tmp_path / "c.safetensors", tmp_path / "s.safetensors"
    name = ["--dataset", "minhuh/prh", "--revision", "wit_1024", "--split", "train"]
    args = ["--modality", "text", "--no-progress"]
    assert (
        cli(f"hf:{tiny_bert}", *name, "--cache-dir", tiny_dataset_cache, *args, "--out", cached)
        == 0
    )
    assert cli(f"hf:{tiny_bert}", "--dataset", folder, *args, "--out", saved) == 0
    c, s = load_features(cached), load_features(saved)
    assert c.ids == s.ids
    np.testing.assert_array_equal(c.features, s.features)
    assert c.metadata["source"].startswith(
        "dataset:minhuh/prh@wit_1024 commit=0123abcd split=train"
    )


def test_the_cache_from_the_datasets_setting(
    monkeypatch, tmp_path, tiny_dataset_cache, tiny_bert, table_captions
):
    """Without --cache-dir the datasets cache setting (HF_DATASETS_CACHE) is used."""
    import datasets

    from prh.data.hf_dataset import DatasetRows, DatasetSpec, open_hf_dataset

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tiny_dataset_cache)
    spec = DatasetSpec("minhuh/prh", revision="wit_1024")
    table, source = open_hf_dataset(spec)
    rows = DatasetRows(table, spec)
    assert rows.texts(0, 5) == [c[0] for c in table_captions]
    assert source == "dataset:minhuh/prh@wit_1024 commit=0123abcd split=train"


def test_clip_embeds_both_modalities_by_its_towers(
    cli, tmp_path, tiny_dataset, tiny_clip, table_captions
):
    folder, arrays = tiny_dataset
    txt, img = tmp_path / "t.safetensors", tmp_path / "i.safetensors"
    common = [f"hf:{tiny_clip}", "--dataset", folder, "--no-progress"]
    assert cli(*common, "--modality", "text", "--pool", "last", "--out", txt) == 0
    assert cli(*common, "--modality", "image", "--out", img) == 0
    t, i = load_features(txt), load_features(img)
    assert t.ids == i.ids
    assert t.metadata["modality"] == "text" and i.metadata["modality"] == "image"
    ref = load_encoder(f"hf-text:{tiny_clip}", options=EncoderOptions(pool="last"))
    np.testing.assert_allclose(
        t.features, ref.encode_texts([c[0] for c in table_captions]), rtol=1e-4, atol=1e-5
    )
    ref_i = load_encoder(f"hf-vision:{tiny_clip}").encode_images(arrays)
    np.testing.assert_allclose(i.features, ref_i, rtol=1e-4, atol=1e-5)


def test_dataset_dict_splits(cli, tmp_path, tiny_bert, make_tiny_table, table_captions):
    import datasets

    table, _ = make_tiny_table()
    folder = tmp_path / "dd"
    datasets.DatasetDict(
        {"train": table.select(range(3)), "test": table.select([3, 4])}
    ).save_to_disk(str(folder))
    out = tmp_path / "t.safetensors"
    args = ["--dataset", folder, "--modality", "text", "--no-progress", "--out", out]
    assert cli(f"hf:{tiny_bert}", *args, "--split", "test") == 0
    ref = load_encoder(f"hf:{tiny_bert}").encode_texts([table_captions[3][0], table_captions[4][0]])
    np.testing.assert_allclose(load_features(out).features, ref, rtol=1e-4, atol=1e-5)
    assert cli(f"hf:{tiny_bert}", *args) == 0  # default split: train
    assert len(load_features(out).ids) == 3


def test_a_cached_copy_of_another_revision_is_refused(monkeypatch, tmp_path, tiny_dataset_cache):
    """Offline, load_dataset reads the latest cached copy whatever the revision; when the hub
    cache knows the revision's commit, prh checks that the copy read is that commit."""
    from huggingface_hub import constants

    from prh.data.hf_dataset import DatasetSpec, open_hf_dataset
    from prh.errors import InputError

    refs = tmp_path / "hub" / "datasets--minhuh--prh" / "refs"
    refs.mkdir(parents=True)
    (refs / "wit_1024").write_text("0123abcd")
    (refs / "wit_4096").write_text("fedc9876")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    cache = str(tiny_dataset_cache)
    _, source = open_hf_dataset(DatasetSpec("minhuh/prh", revision="wit_1024", cache_dir=cache))
    assert "commit=0123abcd" in source
    with pytest.raises(InputError, match="cached copy is commit 0123abcd, but wit_4096 is commit"):
        open_hf_dataset(DatasetSpec("minhuh/prh", revision="wit_4096", cache_dir=cache))
