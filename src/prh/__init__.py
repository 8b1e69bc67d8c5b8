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
"""

__version__ = "0.1.0"
