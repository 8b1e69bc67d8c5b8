"""Scaling: sweeps of (rho, samples, seed), candidate laws, held-out judgement, sample efficiency.

See ``docs/scaling.md``. Modules: :mod:`.laws` (candidate forms), :mod:`.fit` (multi-start least
squares, held-out selection, seed spread), :mod:`.efficiency` (samples to reach a target, ratio,
bootstrap over seeds), :mod:`.grid` (grids and cells), :mod:`.sweep` (resumable runner),
:mod:`.executors` (where cells run: in-process, a local pool, a Ray cluster), :mod:`.backends` /
:mod:`.theory_world` / :mod:`.cave` (cell runners), :mod:`.plot`.
"""
