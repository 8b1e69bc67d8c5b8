"""What an image encoder sees of the scene: leave-one-out kNN accuracy of scene factors.

The factors of a cave-world scene: the shape and the colour of its largest object (only scenes
with ONE largest object: on a tie the label is undefined, -1, and the scene is left out), and its
object count. ``knn_accuracy`` is the issue-13 probe: each held-out scene's ``k`` nearest
neighbours (cosine, self excluded) vote on its label.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from prh.errors import InputError
from prh.metrics.probe import chance
from prh.metrics.probe import knn_accuracy as _knn_accuracy
from prh.world.factors import scene_factors as _world_factors

FACTORS = ("shape", "colour", "count")


def scene_factors(world, scene_ids: Sequence[int]) -> dict[str, np.ndarray]:
    """``{"shape", "colour", "count"}`` -> ``(N,)`` int labels; -1 where undefined."""
    return _world_factors(world, scene_ids, ties="undefined")


def knn_accuracy(features: np.ndarray, labels: np.ndarray, k: int = 10) -> float:
    """Leave-one-out kNN accuracy over the rows with a label (``labels >= 0``).

    Each labelled row's ``k`` most cosine-similar OTHER labelled rows vote; the most frequent
    label wins, a tie going to the smallest label. ``features`` ``(N, D)``, ``labels`` ``(N,)``.
    (:func:`prh.metrics.probe.knn_accuracy`, uncentred, with this module's size check.)
    """
    n = int((np.asarray(labels) >= 0).sum())
    if n <= k:
        raise InputError(f"kNN accuracy: {n} labelled rows, need more than k = {k}")
    return _knn_accuracy(features, labels, k)


def probe_table(
    features: np.ndarray, factors: dict[str, np.ndarray], k: int = 10
) -> dict[str, list[float]]:
    """kNN accuracy of every factor at every layer of ``features`` ``(N, L, D)``."""
    return {
        name: [knn_accuracy(features[:, layer], y, k) for layer in range(features.shape[1])]
        for name, y in factors.items()
    }


def probe_run(
    run_dir, n: int = 500, k: int = 10, random_init: bool = False
) -> tuple[dict[str, list[float]], dict[str, float]]:
    """kNN accuracy per factor and layer of an image/sketch run on its world's first ``n``
    held-out scenes (nuisance seed 0), and each factor's chance level. ``random_init`` probes the
    run's architecture at its initialisation seed instead of its trained weights."""
    from prh.training.image import (
        build_image_model,
        draw_scenes,
        encode_images,
        load_image_run,
    )
    from prh.world import make_world

    run = load_image_run(run_dir, "cpu")
    model = build_image_model(run.config, run.image)[0] if random_init else run.model
    world = make_world("cave", seed=run.config.world_seed)
    ids = world.split("test")[:n]
    feats = encode_images(model, draw_scenes(run.config, run.image, ids), run.image.image_size)
    factors = scene_factors(world, ids)
    return probe_table(feats, factors, k), {f: chance(y) for f, y in factors.items()}


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m prh.training.image_probe RUN [--n 500] [--k 10] [--random-init]``."""
    import argparse

    p = argparse.ArgumentParser(description="kNN accuracy of scene factors, per layer of a run")
    p.add_argument("run")
    p.add_argument("--n", type=int, default=500, help="held-out scenes (default 500)")
    p.add_argument("--k", type=int, default=10, help="neighbours (default 10)")
    p.add_argument("--random-init", action="store_true", help="probe the untrained copy")
    args = p.parse_args(argv)
    table, base = probe_run(args.run, args.n, args.k, args.random_init)
    layers = len(next(iter(table.values())))
    print(f"{'factor':<8} {'chance':>7} " + " ".join(f"{f'L{i}':>6}" for i in range(layers)))
    for name, accs in table.items():
        print(f"{name:<8} {base[name]:>7.3f} " + " ".join(f"{a:>6.3f}" for a in accs))


if __name__ == "__main__":
    main()
