"""One device convention, GPU by default where CUDA is present (issue 24, item 4).

CUDA is mocked: the resolution logic is what is tested, on a CPU machine.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from prh.cli import build_parser  # noqa: E402
from prh.device import resolve_device  # noqa: E402
from prh.encoders import EncoderOptions  # noqa: E402
from prh.encoders.embed_files import encoder_options as _encoder_options  # noqa: E402
from prh.encoders.hf import load_kwargs  # noqa: E402


@pytest.fixture
def cuda(monkeypatch):
    """CUDA present with two GPUs."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)


def _embed_args(*extra: str):
    argv = ["embed", *extra, "--dataset", "d", "--modality", "text", "--out", "o.safetensors"]
    return build_parser().parse_args(argv)


def test_embed_defaults_to_cuda_where_present(cuda):
    options = _encoder_options(_embed_args("hf:m"))
    assert options.device == "auto"
    assert resolve_device(options.device) == torch.device("cuda")


def test_embed_defaults_to_the_cpu_without_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device(_encoder_options(_embed_args("hf:m")).device) == torch.device("cpu")


def test_cuda_index_and_a_missing_gpu(cuda):
    from prh.errors import InputError

    assert resolve_device("cuda:1") == torch.device("cuda:1")
    with pytest.raises(InputError, match="has 2 CUDA device"):
        resolve_device("cuda:2")


def test_encoders_without_a_device_keep_the_cpu():
    # efficientnet and friends refuse any --device; the auto default must not trip that refusal
    assert _encoder_options(_embed_args("efficientnet-lite0"), torch_models=False).device == "cpu"


@pytest.mark.parametrize("command", ["embed", "measure"])
def test_every_command_takes_the_same_device_names(command):
    extra = ["hf:m", "--dataset", "d", "--modality", "text", "--out", "o.safetensors"]
    base = [command, *(extra if command == "embed" else ["a", "b"])]
    for name in ("auto", "cpu", "cuda", "cuda:3"):
        assert build_parser().parse_args([*base, "--device", name]).device == name


def test_load_kwargs_carry_revision_and_device_map():
    got = load_kwargs(
        EncoderOptions(revision="abc123", device_map="auto"), torch.device("cpu"), torch.float32
    )
    assert got == {"dtype": torch.float32, "revision": "abc123", "device_map": "auto"}
    assert load_kwargs(EncoderOptions(), torch.device("cpu"), torch.bfloat16) == {
        "dtype": torch.bfloat16
    }


def test_a_pinned_revision_reaches_from_pretrained(monkeypatch, tiny_bert):
    import transformers

    seen = {}
    real = transformers.AutoModel.from_pretrained

    def spy(source, **kw):
        seen.update(kw)
        kw.pop("revision", None)
        return real(source, **kw)

    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", spy)
    from prh.encoders import load_encoder

    load_encoder(f"hf:{tiny_bert}", options=EncoderOptions(revision="v2"))
    assert seen["revision"] == "v2"
