"""Good against bad text views on the moving world: held-out theory CCA after a fixed budget.

    PYTHONPATH=src python benchmarks/bench_moving_views.py --samples 6400 --batch-size 128

Trains a tiny text JEPA (width 8, the world's gap ``k``) on good views (two captions ``D = 175``
steps apart) and on bad views (two distortions of one caption), with the same seed and budget,
and prints each one's held-out CCA with ``g*`` (fitted on the train states, scored on the test
states; :func:`prh.training.moving.text_theory_cca`), and the random-init copy's.

``TrainConfig`` refuses worlds other than ``cave`` until src/prh/training/config.py takes the
registry's names; this script sets ``world`` after validation, so the rest is the path
``prh train --world moving`` will take.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from prh.training.api import _train, build_model
from prh.training.config import train_config
from prh.training.moving import text_theory_cca
from prh.views import TextTokenizer
from prh.world import make_world


def run(views: str, samples: int, batch_size: int, seed: int, folder: Path) -> dict:
    """One text run on the moving world; its (and, for good views, its init's) theory CCA."""
    cfg = train_config(
        "tiny", world="moving", views=views, samples=samples, batch_size=batch_size, seed=seed,
        checkpoint_every=0, log_every=0,
    )  # fmt: skip
    t = time.time()
    _, model = _train(cfg, folder / views, False, False, None, 1, None, None)
    tok = TextTokenizer.load(folder / views / "tokenizer.json")
    world = make_world("moving", seed=0)
    score = text_theory_cca(model, tok, world, max_len=cfg.max_len)
    out = {"views": views, "cca": round(score.mean, 3), "ci": [round(c, 3) for c in score.ci]}
    out["layers"] = [
        round(text_theory_cca(model, tok, world, layer=i).mean, 3) for i in range(3)
    ]  # token embeddings, block 1, block 2
    if views == "good":
        init = build_model(cfg, model.cfg.vocab_size)[0]
        out["init_cca"] = round(text_theory_cca(init, tok, world).mean, 3)
    out["seconds"] = round(time.time() - t, 1)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samples", type=int, default=6400)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        for views in ("good", "bad"):
            print(json.dumps(run(views, a.samples, a.batch_size, a.seed, Path(d))), flush=True)


if __name__ == "__main__":
    main()
