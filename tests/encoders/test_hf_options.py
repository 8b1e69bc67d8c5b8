"""hf: options on tiny models the tests build: pooling against hand computations, towers, random
init, dtype, device and prompt."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from prh.encoders import EncoderOptions, load_encoder
from prh.errors import InputError

SENTENCES = [
    "a red cube",
    "there is a small blue sphere left of a large green cone",
    "two cubes",
    "the scene shows one tiny red cone above a big blue cube",
]


def _states(enc, texts):
    """The model's own hidden states on the encoder's batch: ``(L+1, B, T, D)`` and mask, numpy."""
    inputs = enc.tokenize(texts)
    with torch.no_grad():
        hs = enc.model(**inputs, output_hidden_states=True).hidden_states
    return np.stack([h.numpy() for h in hs]), inputs["attention_mask"].numpy()


def _alone(enc, text):
    """Hidden states of one text with no padding at all: ``(L+1, T, D)``."""
    hs, mask = _states(enc, [text])
    assert mask.all()
    return hs[:, 0]


def test_avg_is_the_mean_over_real_tokens(tiny_bert):
    enc = load_encoder(f"hf:{tiny_bert}", options=EncoderOptions(pool="avg"))
    feats = enc.encode_texts(SENTENCES, batch_size=4)
    hs, mask = _states(enc, SENTENCES)
    assert not mask.all()  # the batch really is padded (on the right, for BERT)
    assert (mask[:, 0] == 1).all()
    for b in range(len(SENTENCES)):
        real = mask[b] == 1
        for layer in range(hs.shape[0]):
            expected = hs[layer, b][real].sum(0) / real.sum()
            np.testing.assert_allclose(feats[b, layer], expected, atol=1e-5, rtol=1e-5)


def test_last_is_the_real_last_token_under_left_padding(tiny_gpt2):
    enc = load_encoder(f"hf:{tiny_gpt2}", options=EncoderOptions(pool="last"))
    assert enc.left_padding and enc.tokenizer.padding_side == "left"
    feats = enc.encode_texts(SENTENCES, batch_size=4)
    hs, mask = _states(enc, SENTENCES)
    assert (mask[:, -1] == 1).all() and not (mask[:, 0] == 1).all()  # left padded
    np.testing.assert_allclose(feats, hs[:, :, -1].transpose(1, 0, 2), atol=1e-5, rtol=1e-5)
    # ...and that token is exactly the last token of the text run alone (positions count from
    # the first real token, so padding changes nothing).
    for b, text in enumerate(SENTENCES):
        np.testing.assert_allclose(feats[b], _alone(enc, text)[:, -1], atol=2e-5, rtol=1e-4)


def test_cls_is_the_first_token(tiny_bert, tiny_gpt2):
    bert = load_encoder(f"hf:{tiny_bert}", options=EncoderOptions(pool="cls"))
    hs, _ = _states(bert, SENTENCES)
    feats = bert.encode_texts(SENTENCES, batch_size=4)
    np.testing.assert_allclose(feats, hs[:, :, 0].transpose(1, 0, 2), atol=1e-5, rtol=1e-5)
    # Under left padding the first REAL token, not position 0.
    gpt = load_encoder(f"hf:{tiny_gpt2}", options=EncoderOptions(pool="cls"))
    feats = gpt.encode_texts(SENTENCES, batch_size=4)
    for b, text in enumerate(SENTENCES):
        np.testing.assert_allclose(feats[b], _alone(gpt, text)[:, 0], atol=2e-5, rtol=1e-4)


def test_pools_differ(tiny_gpt2):
    out = {
        p: load_encoder(f"hf:{tiny_gpt2}", options=EncoderOptions(pool=p)).encode_texts(SENTENCES)
        for p in ("avg", "last", "cls")
    }
    assert not np.allclose(out["avg"][:, -1], out["last"][:, -1])
    assert not np.allclose(out["cls"][:, -1], out["last"][:, -1])


@pytest.mark.parametrize("name", ["tiny_bert", "tiny_gpt2", "tiny_llama"])
@pytest.mark.parametrize("pool", ["avg", "last", "cls"])
def test_batch_size_does_not_change_features(name, pool, request):
    enc = load_encoder(f"hf:{request.getfixturevalue(name)}", options=EncoderOptions(pool=pool))
    one = enc.encode_texts(SENTENCES, batch_size=1)
    together = enc.encode_texts(SENTENCES, batch_size=4)
    np.testing.assert_allclose(one, together, atol=2e-5, rtol=1e-4)


def test_vision_pools_by_hand(tiny_vit, images):
    from transformers import AutoImageProcessor, AutoModel

    proc = AutoImageProcessor.from_pretrained(tiny_vit)
    model = AutoModel.from_pretrained(tiny_vit).eval()
    px = proc(images=images, return_tensors="pt")["pixel_values"]
    with torch.no_grad():
        hs = np.stack(
            [h.numpy() for h in model(pixel_values=px, output_hidden_states=True).hidden_states[1:]]
        )  # (L, B, T, D)
    expected = {"cls": hs[:, :, 0], "avg": hs.mean(2), "last": hs[:, :, -1]}
    for pool, ref in expected.items():
        enc = load_encoder(f"hf:{tiny_vit}", options=EncoderOptions(pool=pool))
        feats = enc.encode_images(images, batch_size=2)
        np.testing.assert_allclose(feats, ref.transpose(1, 0, 2), atol=2e-5, rtol=1e-4)
    # the default is the CLS token
    np.testing.assert_array_equal(
        load_encoder(f"hf:{tiny_vit}").encode_images(images, batch_size=2),
        load_encoder(f"hf:{tiny_vit}", options=EncoderOptions(pool="cls")).encode_images(
            images, batch_size=2
        ),
    )


def test_clip_towers(tiny_clip, images):
    from transformers import AutoImageProcessor, CLIPModel

    clip = CLIPModel.from_pretrained(tiny_clip).eval()
    text = load_encoder(f"hf:{tiny_clip}", modality="text")
    assert text.modality == "text" and type(text.model).__name__ == "CLIPTextModel"
    assert text.encode_texts(SENTENCES).shape == (4, 3, 16)  # embeddings + 2 layers
    explicit = load_encoder(f"hf-text:{tiny_clip}")
    np.testing.assert_array_equal(explicit.encode_texts(SENTENCES), text.encode_texts(SENTENCES))
    ids = explicit.tokenizer(SENTENCES[0], return_tensors="pt")["input_ids"]
    with torch.no_grad():
        hs = clip.text_model(input_ids=ids, output_hidden_states=True).hidden_states
    ref = np.stack([h[0].mean(0).numpy() for h in hs])
    np.testing.assert_allclose(text.encode_texts(SENTENCES[:1])[0], ref, atol=2e-5, rtol=1e-4)

    vision = load_encoder(f"hf:{tiny_clip}", modality="image")
    assert vision.modality == "image"
    assert load_encoder(f"hf-vision:{tiny_clip}").modality == "image"
    feats = vision.encode_images(images, batch_size=2)
    px = AutoImageProcessor.from_pretrained(tiny_clip)(images=images, return_tensors="pt")
    with torch.no_grad():
        hs = clip.vision_model(pixel_values=px["pixel_values"], output_hidden_states=True)
    ref = np.stack([h[:, 0].numpy() for h in hs.hidden_states[1:]]).transpose(1, 0, 2)
    np.testing.assert_allclose(feats, ref, atol=2e-5, rtol=1e-4)


def test_tower_errors(tiny_clip, tiny_bert):
    with pytest.raises(InputError, match=r"two-tower model .* hf-text: or hf-vision:"):
        load_encoder(f"hf:{tiny_clip}")
    with pytest.raises(InputError, match="text model with no image tower"):
        load_encoder(f"hf-vision:{tiny_bert}")


def test_random_init_is_seeded_and_not_the_trained_model(tiny_bert):
    state = torch.random.get_rng_state()
    a = load_encoder(f"random:hf:{tiny_bert}", seed=1).encode_texts(SENTENCES)
    assert torch.equal(state, torch.random.get_rng_state())  # the global generator is untouched
    b = load_encoder(f"random:hf:{tiny_bert}", seed=1).encode_texts(SENTENCES)
    c = load_encoder(f"random:hf:{tiny_bert}", seed=2).encode_texts(SENTENCES)
    saved = load_encoder(f"hf:{tiny_bert}").encode_texts(SENTENCES)
    np.testing.assert_array_equal(a, b)
    assert a.shape == saved.shape
    assert not np.allclose(a, c) and not np.allclose(a, saved)


def test_random_init_of_a_tower(tiny_clip, images):
    a = load_encoder(f"random:hf-vision:{tiny_clip}", seed=0).encode_images(images)
    b = load_encoder(f"hf-vision:{tiny_clip}").encode_images(images)
    assert a.shape == b.shape and not np.allclose(a, b)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_dtypes_return_float32_close_to_float32(tiny_bert, dtype):
    enc = load_encoder(f"hf:{tiny_bert}", options=EncoderOptions(dtype=dtype))
    assert next(enc.model.parameters()).dtype == getattr(torch, dtype)
    half = enc.encode_texts(SENTENCES)
    full = load_encoder(f"hf:{tiny_bert}").encode_texts(SENTENCES)
    assert half.dtype == np.float32
    np.testing.assert_allclose(half, full, atol=0.1, rtol=0.05)


def test_prompt_template(tiny_bert):
    prompted = load_encoder(f"hf:{tiny_bert}", options=EncoderOptions(prompt="there is {} above"))
    plain = load_encoder(f"hf:{tiny_bert}")
    np.testing.assert_allclose(
        prompted.encode_texts(["a red cube"]),
        plain.encode_texts(["there is a red cube above"]),
        atol=1e-6,
    )
    with pytest.raises(InputError, match="must contain"):
        EncoderOptions(prompt="no slot")


def test_device_errors(tiny_bert):
    with pytest.raises(InputError, match="--device tpu: unknown device; expected cpu, cuda"):
        load_encoder(f"hf:{tiny_bert}", options=EncoderOptions(device="tpu"))
    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="--device cuda: CUDA is not available"):
            load_encoder(f"hf:{tiny_bert}", options=EncoderOptions(device="cuda"))
    auto = load_encoder(f"hf:{tiny_bert}", options=EncoderOptions(device="auto"))
    want = "cuda" if torch.cuda.is_available() else "cpu"
    assert next(auto.model.parameters()).device.type == want


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu(tiny_gpt2):
    cpu = load_encoder(f"hf:{tiny_gpt2}").encode_texts(SENTENCES)
    gpu = load_encoder(f"hf:{tiny_gpt2}", options=EncoderOptions(device="cuda"))
    np.testing.assert_allclose(gpu.encode_texts(SENTENCES), cpu, atol=1e-4, rtol=1e-3)


def test_options_refused_by_other_encoders():
    with pytest.raises(InputError, match="apply to hf: and minilm encoders only"):
        load_encoder("efficientnet-lite0", options=EncoderOptions(pool="cls"))


def test_vision_without_class_token_averages(tiny_siglip, images):
    """SigLIP's vision tower has no class token: token 0 is a patch, so the default is avg."""
    from transformers import AutoImageProcessor, SiglipModel

    enc = load_encoder(f"hf:{tiny_siglip}", modality="image")
    assert enc.pool == "avg"
    feats = enc.encode_images(images, batch_size=2)
    model = SiglipModel.from_pretrained(tiny_siglip).eval()
    px = AutoImageProcessor.from_pretrained(tiny_siglip)(images=images, return_tensors="pt")
    with torch.no_grad():
        hs = model.vision_model(pixel_values=px["pixel_values"], output_hidden_states=True)
    ref = np.stack([h.mean(1).numpy() for h in hs.hidden_states[1:]]).transpose(1, 0, 2)
    np.testing.assert_allclose(feats, ref, atol=2e-5, rtol=1e-4)
    with pytest.raises(InputError, match="has no class token"):
        load_encoder(f"hf-vision:{tiny_siglip}", options=EncoderOptions(pool="cls"))
    assert load_encoder(f"hf:{tiny_siglip}", modality="text").modality == "text"


def test_encoder_decoder_gives_its_encoder_stack(tiny_t5):
    from transformers import AutoTokenizer, T5Model

    feats = load_encoder(f"hf:{tiny_t5}").encode_texts(SENTENCES, batch_size=4)
    assert feats.shape == (4, 3, 16)  # embeddings + 2 encoder layers
    stack = T5Model.from_pretrained(tiny_t5).eval().get_encoder()
    tok = AutoTokenizer.from_pretrained(tiny_t5)
    for b, text in enumerate(SENTENCES):
        with torch.no_grad():
            hs = stack(**tok(text, return_tensors="pt"), output_hidden_states=True).hidden_states
        ref = np.stack([h[0].mean(0).numpy() for h in hs])
        np.testing.assert_allclose(feats[b], ref, atol=2e-5, rtol=1e-4)
