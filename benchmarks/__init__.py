"""Benchmarks of the toolkit against baselines: ``python -m benchmarks [--quick] [--json PATH] [--only ...]``.

Workloads (each measured in the same process and the same run, against its own baseline):

- ``erm`` (:mod:`benchmarks.erm`): paper A's ERM (:class:`numerics.PairwiseInteractionEstimator`)
  against the paper's own pipeline (:class:`benchmarks.paper_style.PaperStyleEstimator`): time to the same
  ``L2(rho)`` error, and fit time against ``M``.
- ``interpolation`` (:mod:`benchmarks.interpolation`, paper B), when present: one eigendecomposition for
  a 50-gamma grid vs per-gamma solves (target >= 20x); the achieved GFLOP/s of the feature and Gram products
  as a fraction of the machine's matmul rate (target >= 50 %); the time of one attention Monte Carlo trial
  against ``n`` at fixed ``n / p`` with its fitted exponent (expected 3).
- ``verify``: the wall time of ``python -m verify --profile quick`` (``--verify-profile paper``: the paper
  profile, ~17 min) on a fresh cache, with its cost split per check.
- ``device`` (:mod:`benchmarks.device`, only when named: ``--only device [--device cpu|cuda]``): the estimators
  and paper B's Monte Carlo on a torch device against the CPU of the same process (the same numbers to stated
  tolerances, the same verdicts, the speed-ups) within a 5-minute budget; ``--device cpu --tiny`` is its dry run.
- a machine reference: the GFLOP/s of a float64 ``2048 x 2048`` matmul measured in the same run, so
  that timings from different machines can be compared.

Sizes: ``quick`` (default of the runner's ``--quick``) and ``full``; the environment variable
``BENCHMARKS_TINY=1`` (or ``--tiny``) shrinks every workload to a smoke-test size (used by the tests;
its numbers mean nothing).
"""

from __future__ import annotations

import os

__all__ = ["tiny_mode"]


def tiny_mode(tiny: bool | None = None) -> bool:
    """Whether benchmarks run at smoke-test size (``tiny`` if given, else ``$BENCHMARKS_TINY``)."""
    if tiny is not None:
        return bool(tiny)
    return os.environ.get("BENCHMARKS_TINY", "").strip().lower() in ("1", "true", "yes", "on")
