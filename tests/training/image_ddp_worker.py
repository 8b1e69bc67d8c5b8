"""Run under ``torch.distributed.run`` by test_image_train.py: an image run, rank weights saved."""

import sys
from pathlib import Path

import torch.distributed as dist
from safetensors.torch import save_file

from prh.training import train_config
from prh.training.distributed import leave_process_group
from prh.training.image import train_image
from prh.training.image_config import ImageConfig

out = Path(sys.argv[1])
cfg = train_config("tiny", samples=16 * 4, batch_size=16, train_scenes=24, checkpoint_every=2,
                   model_overrides={"d_model": 16, "image_stages": 2, "embed_dim": 8})  # fmt: skip
image = ImageConfig(image_size=16, render_views=3, cache_dir=str(out / "cache"))
run, model = train_image(cfg, image, out / "run", False, threads=1, workers=1)
state = {k: v.contiguous() for k, v in model.state_dict().items()}
save_file(state, str(out / f"rank{dist.get_rank()}.st"))
dist.barrier()  # no rank leaves while another still talks to it
leave_process_group()
