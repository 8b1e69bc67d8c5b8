"""Python users: bf16/fp16 tensors measured as their float32 values; one install hint."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from prh.metrics import measure

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("metric", ["mutual_knn", "cka"])
def test_half_precision_tensors_equal_their_float32_values(dtype, metric):
    rng = np.random.default_rng(0)
    a = torch.from_numpy(rng.standard_normal((40, 2, 8)).astype(np.float32)).to(
        getattr(torch, dtype)
    )
    b = torch.from_numpy(rng.standard_normal((40, 8)).astype(np.float32)).to(getattr(torch, dtype))
    r = measure(a, b, metric, k=5, null=5)
    ref = measure(a.float().numpy(), b.float().numpy(), metric, k=5, null=5)
    assert r.to_dict() == ref.to_dict()


def test_a_complex_tensor_is_one_line():
    from prh.errors import InputError

    with pytest.raises(InputError, match=r"A: holds complex numbers \(torch.complex64\)"):
        measure(torch.zeros(5, 3, dtype=torch.complex64), np.ones((5, 3)))


SRC = Path(__file__).resolve().parents[2] / "src"
NO_TORCH = textwrap.dedent(
    """
    import importlib.abc, sys

    class NoTorch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name == "torch" or name.startswith("torch."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, NoTorch())
    import prh
    from prh.errors import MissingExtraError

    def hint(call):
        try:
            call()
        except MissingExtraError as e:
            assert isinstance(e, ModuleNotFoundError) and e.name == "torch"
            return str(e)
        return "no error"

    print(hint(lambda: prh.train(prh.train_config("tiny"), "run")))
    print(hint(lambda: prh.load_run("run")))
    print(hint(lambda: __import__("prh.training", fromlist=["train"]).train))
    print(hint(lambda: prh.load_features(sys.argv[1])))
    """
)


def test_every_torch_entry_point_gives_the_clis_install_hint(tmp_path):
    torch.save({"feats": torch.zeros(4, 1, 3)}, tmp_path / "a.pt")
    env = {"PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", NO_TORCH, str(tmp_path / "a.pt")],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    hint = "torch is not installed; pip install 'prh[torch]'"
    assert out.stdout.splitlines() == [hint] * 4
