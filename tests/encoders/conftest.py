"""Tiny transformers models built and saved by the tests themselves (hermetic, no hub)."""

from __future__ import annotations

from pathlib import Path

import pytest

WORDS = (
    "a the red blue green cube sphere cone small large left of right above below is and "
    "two three one big tiny scene shows there"
).split()


@pytest.fixture(scope="session", autouse=True)
def _one_thread():
    import torch

    torch.set_num_threads(1)


def _word_tokenizer(folder: Path, *, bert: bool):
    """A whitespace word-level tokenizer over WORDS, saved as a HF tokenizer folder."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] if bert else ["<unk>", "<eos>"]
    vocab = {w: i for i, w in enumerate(specials + WORDS)}
    unk = "[UNK]" if bert else "<unk>"
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=unk))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    if bert:
        from tokenizers import processors

        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
        )
        fast = PreTrainedTokenizerFast(
            tokenizer_object=tok,
            unk_token="[UNK]",
            pad_token="[PAD]",
            cls_token="[CLS]",
            sep_token="[SEP]",
            mask_token="[MASK]",
        )
    else:  # GPT-2 style: no pad token, the encoder must fall back to eos
        fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", eos_token="<eos>")
    fast.save_pretrained(folder)
    return len(vocab)


def _save(model, folder: Path) -> Path:
    model.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    import torch
    from transformers import BertConfig, BertModel

    folder = tmp_path_factory.mktemp("tiny-bert")
    vocab = _word_tokenizer(folder, bert=True)
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=vocab,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    return _save(BertModel(cfg), folder)


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory) -> Path:
    import torch
    from transformers import GPT2Config, GPT2Model

    folder = tmp_path_factory.mktemp("tiny-gpt2")
    vocab = _word_tokenizer(folder, bert=False)
    torch.manual_seed(1)
    cfg = GPT2Config(vocab_size=vocab, n_embd=16, n_layer=2, n_head=2, n_positions=64)
    return _save(GPT2Model(cfg), folder)


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> Path:
    import torch
    from transformers import LlamaConfig, LlamaModel

    folder = tmp_path_factory.mktemp("tiny-llama")
    vocab = _word_tokenizer(folder, bert=False)
    torch.manual_seed(2)
    cfg = LlamaConfig(
        vocab_size=vocab,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=64,
    )
    return _save(LlamaModel(cfg), folder)


@pytest.fixture(scope="session")
def tiny_clip(tmp_path_factory) -> Path:
    """A random two-tower CLIP (text: 2 layers, vision: 2 blocks on 32 px, width 16)."""
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel

    folder = tmp_path_factory.mktemp("tiny-clip")
    vocab = _word_tokenizer(folder, bert=False)
    torch.manual_seed(4)
    small = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2)
    cfg = CLIPConfig(
        text_config=dict(vocab_size=vocab, max_position_embeddings=32, **small),
        vision_config=dict(image_size=32, patch_size=8, **small),
        projection_dim=8,
    )
    CLIPImageProcessor(
        size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}
    ).save_pretrained(folder)
    return _save(CLIPModel(cfg), folder)


# tiny_vit (a random 3-block ViT on 32 px, saved as a transformers folder) is in tests/conftest.py.


@pytest.fixture()
def images():
    """Three random RGB images of different sizes, (H, W, 3) uint8."""
    import numpy as np

    rng = np.random.default_rng(0)
    return [
        rng.integers(0, 256, size=s, dtype=np.uint8)
        for s in [(40, 40, 3), (30, 50, 3), (64, 64, 3)]
    ]


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """A real (one-step) prh train run on the cave world."""
    import prh.training as training

    out = tmp_path_factory.mktemp("runs") / "good"
    cfg = training.train_config(
        "tiny",
        samples=64,
        batch_size=64,
        train_scenes=100,
        world_seed=5,  # not the default: prh embed must pick it up from the run
        vocab_size=200,
        checkpoint_every=0,
        log_every=0,
    )
    return training.train(cfg, out, progress=False, threads=1)


CAPTIONS = [
    ["a red cube", "one red cube is there"],
    ["two blue spheres", "the blue spheres"],
    ["a small green cone left of a cube", "a cone and a cube"],
    ["the scene shows a big sphere", "there is one big sphere"],
    ["three tiny cubes above a cone", "tiny cubes and one cone"],
]


def tiny_table():
    """The PRH benchmark's layout at toy size: ``image`` (Image feature) and ``text`` (captions).

    Returns the ``datasets.Dataset`` and the ``(H, W, 3)`` uint8 arrays its images were made from.
    """
    import datasets
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(7)
    arrays = [rng.integers(0, 256, (24 + 4 * i, 40 - 3 * i, 3), dtype=np.uint8) for i in range(5)]
    features = datasets.Features(
        {"image": datasets.Image(), "text": datasets.List(datasets.Value("string"))}
    )
    table = datasets.Dataset.from_dict(
        {"image": [Image.fromarray(a) for a in arrays], "text": CAPTIONS}, features=features
    )
    return table, arrays


@pytest.fixture(scope="session")
def table_captions():
    """The captions of :func:`tiny_table`, one list per row."""
    return [list(c) for c in CAPTIONS]


@pytest.fixture(scope="session")
def make_tiny_table():
    """:func:`tiny_table` itself, for tests that save it their own way."""
    return tiny_table


@pytest.fixture(scope="session")
def tiny_dataset(tmp_path_factory):
    """``(folder, arrays)``: :func:`tiny_table` written by ``save_to_disk``."""
    folder = tmp_path_factory.mktemp("tiny-dataset") / "saved"
    table, arrays = tiny_table()
    table.save_to_disk(str(folder))
    return folder, arrays


@pytest.fixture(scope="session")
def tiny_dataset_cache(tmp_path_factory) -> Path:
    """A ``datasets`` cache folder holding :func:`tiny_table` as ``minhuh/prh`` (split train).

    Built offline the way ``load_dataset`` caches a hub data set: a packaged builder prepares the
    Arrow files under ``minhuh___prh/default/0.0.0/<hash>/`` with ``prh-train.arrow``, which
    ``load_dataset("minhuh/prh", ...)`` then finds in offline mode.
    """
    from datasets.packaged_modules.parquet.parquet import Parquet

    root = tmp_path_factory.mktemp("tiny-dataset-cache")
    table, _ = tiny_table()
    parquet = root / "train.parquet"
    table.to_parquet(str(parquet))
    builder = Parquet(
        cache_dir=str(root / "cache"),
        dataset_name="minhuh___prh",  # the cache folder of the hub name minhuh/prh
        config_name="default",
        config_id="default",
        hash="0123abcd",
        data_files={"train": [str(parquet)]},
        features=table.features,
    )
    builder.dataset_name = "prh"  # file names: prh-train.arrow, as the hub builder writes
    builder.download_and_prepare()
    return root / "cache"


@pytest.fixture(scope="session")
def tiny_siglip(tmp_path_factory) -> Path:
    """A random two-tower SigLIP (no class token: its vision tower pools by attention)."""
    import torch
    from transformers import SiglipConfig, SiglipImageProcessor, SiglipModel

    folder = tmp_path_factory.mktemp("tiny-siglip")
    vocab = _word_tokenizer(folder, bert=False)
    torch.manual_seed(5)
    small = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2)
    cfg = SiglipConfig(
        text_config=dict(vocab_size=vocab, max_position_embeddings=32, **small),
        vision_config=dict(image_size=32, patch_size=8, **small),
    )
    SiglipImageProcessor(size={"height": 32, "width": 32}).save_pretrained(folder)
    return _save(SiglipModel(cfg), folder)


@pytest.fixture(scope="session")
def tiny_t5(tmp_path_factory) -> Path:
    """A random encoder-decoder T5 (2 + 2 layers, width 16)."""
    import torch
    from transformers import T5Config, T5Model

    folder = tmp_path_factory.mktemp("tiny-t5")
    vocab = _word_tokenizer(folder, bert=False)
    torch.manual_seed(6)
    cfg = T5Config(
        vocab_size=vocab,
        d_model=16,
        d_kv=8,
        d_ff=32,
        num_layers=2,
        num_heads=2,
        decoder_start_token_id=0,
        pad_token_id=0,
        eos_token_id=1,
    )
    return _save(T5Model(cfg), folder)
