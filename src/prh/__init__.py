"""prh: the Platonic Representation Hypothesis, made executable.

Subpackages, one per concern (pure functions under thin wrappers under thin orchestration):

- ``prh.theory``: finite worlds, the closed-form whitened JEPA, misalignment measures, bounds.
- ``prh.prove``: executable checks of every theorem statement (``prh prove``).
- ``prh.metrics``: the PRH benchmark's alignment metrics, exact at scale, calibrated.
- ``prh.world`` / ``prh.data`` / ``prh.views``: the cave world, real corpora, view samplers.
- ``prh.models`` / ``prh.losses`` / ``prh.training``: text JEPAs and the next-token baseline.
- ``prh.encoders``: frozen pretrained encoders behind one interface.
- ``prh.scaling``: sample efficiency and the scaling law.
- ``prh.bridge``: one rotation between frozen encoders, with pairs and without.
- ``prh.cli``: the ``prh`` command.

The main path, from the top level (each name is imported on first use, so ``import prh`` stays
light)::

    world = prh.make_world("cave", seed=0)                       # a world by name and seed
    run = prh.train(prh.train_config("tiny", samples=4096), "runs/good")   # a text JEPA
    text, _ = prh.embed_world(prh.load_encoder(str(run)), world, ids, prh.EmbedConfig("text"))
    prh.measure(text, image, metric="mutual_knn", k=10).score    # alignment
    prh.measure_matrix([text, caps], [image], null=1000, null_stop="adaptive")  # a score matrix

Each command is one call on a frozen request whose fields are its flags (``prh embed`` is
``prh.embed_to_files(prh.EmbedRequest(...))``, ``prh measure`` is ``prh.measure_files``, ...).
"""

from __future__ import annotations

from prh.lazy import lazy_exports

__version__ = "0.1.0"

# public name -> the module that defines it
_API = {
    "make_world": "prh.world",
    "World": "prh.world",
    "train": "prh.training",
    "train_config": "prh.training",
    "TrainConfig": "prh.training",
    "load_run": "prh.training",
    "load_encoder": "prh.encoders",
    "embed_world": "prh.encoders.embed",
    "EmbedConfig": "prh.encoders.embed",
    "load_features": "prh.features",
    "save_features": "prh.features",
    "measure": "prh.metrics",
    "measure_matrix": "prh.metrics",
    "make_map": "prh.bridge",
    "save_map": "prh.bridge",
    "load_map": "prh.bridge",
    # what each command does, one call on a frozen request (a field per flag; issue 32)
    "EmbedRequest": "prh.encoders.embed_request",
    "embed_to_files": "prh.encoders.embed_files",
    "MeasureRequest": "prh.metrics.matrix_request",
    "measure_files": "prh.metrics.matrix_files",
    "MatchRequest": "prh.bridge.match_files",
    "match_files": "prh.bridge.match_files",
    "MapFitRequest": "prh.bridge.files",
    "fit_map_files": "prh.bridge.files",
    "MapApplyRequest": "prh.bridge.files",
    "apply_map_file": "prh.bridge.files",
    "BridgeScoreRequest": "prh.bridge.score_files",
    "score_bridge_files": "prh.bridge.score_files",
    "CaptionRequest": "prh.caption.commands",
    "caption_command": "prh.caption.commands",
}

__all__ = ["__version__", *_API]


__getattr__, __dir__ = lazy_exports("prh", globals(), _API)
