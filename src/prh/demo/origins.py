"""Where a run's curves start: its own initial weights, measured as the run measures itself.

A curve's first point is after ``eval_every`` samples, and the demo's control is another
architecture's draw (the random-init *JEPA*, :func:`prh.demo.world.random_init_encoder`). A
next-token LM starts from its own draw, with its own tokenizer and its last hidden state as the
embedding. Rebuilding a run's model from its stored config (:func:`prh.training.api.build_model`
seeds it from the run's seed, so these are exactly the weights its step 0 trained from) and
evaluating it with the training hook's own evaluators gives the curve's point at 0 samples:
whether training moved the run towards the reference or away from it. A diagnostic: no rule
reads it.

Layer: glue over :mod:`prh.training`; reads the run folder and its evaluation files.
"""

from __future__ import annotations

from pathlib import Path


def run_origin(run_dir: Path) -> dict[str, float]:
    """``{"vision": mutual-kNN, "theory": held-out cc}`` of a text run's initial weights against
    its ``eval_features`` and ``eval_theory`` (each key only where the run has that file)."""
    from prh.training import load_run
    from prh.training.api import TextTask, build_model, encode_texts
    from prh.training.distributed import DistInfo
    from prh.training.lifecycle import eval_target, evaluators
    from prh.training.theory_eval import theory_target

    run = load_run(run_dir, device="cpu")
    cfg, task = run.config, TextTask()
    model, _ = build_model(cfg, run.tokenizer.vocab_size)

    def encode(texts):
        return encode_texts(model, run.tokenizer, texts, cfg.max_len, "cpu")

    evaluate = evaluators(encode, eval_target(task, cfg), theory_target(task, cfg), DistInfo())
    if evaluate is None:
        return {}
    names = {"eval_mutual_knn": "vision", "eval_theory_cc": "theory"}
    return {names[k]: float(v) for k, v in evaluate(0).items() if k in names}
