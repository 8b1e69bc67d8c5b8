"""``prh demo``: the paper's three claims reproduced on the cave world, with a report.

Modules, each importing only those listed before it: :mod:`.config` (:class:`DemoConfig`, the
``quick`` and ``full`` presets), :mod:`.analysis` (pure: curves, efficiency, law rows),
:mod:`.context` (output folder, log, timings), :mod:`.world` (scenes, text encoders),
:mod:`.protocol` (the runs as a :class:`~prh.scaling.grid.Grid` preset and cave runner),
:mod:`.plots`, :mod:`.html_parts` (the report's table, figure and cell), :mod:`.captioner`,
:mod:`.steps` (prove ... law), :mod:`.bridge`, :mod:`.modalities` (image and sketch encoders
trained apart, the modality evidence, issue 13's targets), :mod:`.report_modalities`,
:mod:`.report`, :mod:`.pipeline` (:func:`run_demo`: the steps in order). See ``docs/demo.md``.
"""

from prh.demo.config import DemoConfig, demo_config
from prh.demo.pipeline import run_demo

__all__ = ["DemoConfig", "demo_config", "run_demo"]
