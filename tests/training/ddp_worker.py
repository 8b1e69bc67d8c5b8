"""Run under ``torch.distributed.run`` by test_ddp.py: train each view kind, save rank weights."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import torch.distributed as dist
from fakes import fake_factory, tiny_config
from safetensors.torch import save_file

from prh.training.api import _train
from prh.training.distributed import leave_process_group

out = Path(sys.argv[1])
for views in sys.argv[2:]:
    cfg = tiny_config(views=views, samples=16 * 6)
    run, model = _train(cfg, out / f"run-{views}", False, False, "cpu", 1, None, fake_factory)
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(out / f"{views}-rank{dist.get_rank()}.st"))
dist.barrier()  # no rank leaves while another still talks to it
leave_process_group()
