"""Shared helpers of the test suite (pytest loads this file first).

- :func:`run_smoke`: one check at the ``smoke`` profile (tiny sizes, verdicts meaningless), through :func:`verify.claim.run_check`.
- :func:`fake_claims`: the registered claims replaced by functions of the context (tests of the runner).
- :func:`assert_well_formed`: what every check result must satisfy whatever its verdict.
- :func:`false_fail_count`: how many of ``n`` synthetic runs of a judge FAIL (the way the judges' tests measure
  their false-FAIL rate under a known truth), and :func:`max_false_fails`, the count a check at ``alpha``
  exceeds with probability at most ``tail``.
"""

from __future__ import annotations

import contextlib
import math
import os
from pathlib import Path
from typing import Any, Callable

from scipy import stats

from verify import claim as claim_module
from verify.claim import Claim, all_claims, claim_of, run_check
from verify.context import CheckContext
from verify.results import CheckResult, Outcome, Verdict
from verify.verdicts import judge

#: the heaviest cases of the default run (seconds each on 2 cores): marked ``slow`` here, in one list, so that the
#: default run stays short; ``.ci/run`` runs them in a step of their own (``python -m pytest -m slow``)
SLOW_CASES = frozenset({
    "tests/numerics/test_malloc.py::test_sweep_workers_take_the_parents_settings",
    "tests/numerics/test_malloc.py::test_glibc_takes_the_settings_and_large_blocks_stop_faulting",
    "tests/numerics/test_malloc.py::test_workers_that_keep_freed_memory_are_not_restarted",
    "tests/numerics/test_cache_integrity.py::test_two_concurrent_sweeps_never_compute_a_pair_twice",
    "tests/numerics/test_cache_integrity.py::test_two_concurrent_runs_never_compute_a_cached_cell_twice",
    "tests/numerics/test_error_model_finite_m.py::test_model_predicts_the_mean_log_error_of_the_estimator"
    "[cfg1-13-2000-40-0.0001]",
    "tests/numerics/test_rmt.py::test_benchmark_runs_tiny_and_paths_agree",
    "tests/numerics/test_sweep.py::test_dask_local_cluster_on_loopback_equals_local",
    "tests/numerics/test_sweep.py::test_local_processes_equal_in_process",
    "tests/theory/test_strong_alignment_risk.py::test_binned_solve_agrees_with_the_gauss_hermite_solve",
    "tests/theory/test_strong_alignment.py::test_gamma_zero_is_the_gap_plus_ridge",
    "tests/theory/test_strong_alignment.py::test_leverage_theory_against_simulation[0.5]",
    "tests/theory/test_strong_alignment.py::test_leverage_theory_against_simulation[2.0]",
    "tests/verify/test_claim_conformance.py::test_claim_is_judged_once_purely_and_round_trips[A2]",
    "tests/verify/test_claim_conformance.py::test_claim_is_judged_once_purely_and_round_trips[A3]",
    "tests/verify/test_claim_conformance.py::test_claim_is_judged_once_purely_and_round_trips[A4]",
    "tests/verify/test_claim_conformance.py::test_claim_is_judged_once_purely_and_round_trips[B8]",
    "tests/verify/test_claim_conformance.py::test_claim_is_judged_once_purely_and_round_trips[B9]",
    "tests/verify/test_claim_conformance.py::test_claim_is_judged_once_purely_and_round_trips[B10]",
    "tests/verify/test_cache_degrades.py::test_run_goes_on_when_a_cell_cannot_be_claimed[A2]",
    "tests/verify/test_cache_degrades.py::test_run_goes_on_when_the_cache_cannot_be_written[A2]",
    "tests/verify/test_reproducible_draws.py::test_every_cell_has_a_fingerprint",
    "tests/verify/test_reproducible_draws.py::test_seeds_and_first_draws_match_the_reference",
    "tests/verify/test_judges_b10.py::test_false_fail_rate_when_the_theory_is_true[0.0]",
    "tests/verify/test_judges_b10.py::test_false_fail_rate_when_the_theory_is_true[0.006]",
    "tests/verify/test_judges_b10.py::test_false_fail_rate_when_the_theory_is_true[-0.006]",
    "tests/verify/test_checks_paper_a.py::test_check_runs_at_smoke_size[A2]",
    "tests/verify/test_checks_paper_a.py::test_check_runs_at_smoke_size[A3]",
    "tests/verify/test_checks_paper_a.py::test_check_runs_at_smoke_size[A4]",
    "tests/verify/test_blas_independence.py::test_measured_values_do_not_depend_on_the_blas_path[A3]",
    "tests/verify/test_cli_interrupts.py::"
    "test_sigint_keeps_finished_checks_and_the_resumed_run_equals_an_uninterrupted_one",
    "tests/verify/test_estimator_plugin.py::test_a2_runs_with_another_estimator_at_smoke_size",
    "tests/test_notebooks.py::test_notebook_runs[paper_b_figure1]",
    "tests/test_benchmarks.py::test_runner_tiny_produces_table_and_json",
    "tests/test_benchmarks.py::test_device_dry_run_checks_every_section",
})


_WORKER_THREADS = contextlib.ExitStack()


def pytest_configure(config: Any) -> None:
    """In a pytest-xdist worker (``-n``, the default), run torch and BLAS at ``cores // workers`` threads for the
    session (:func:`numerics.threads.torch_threads`): the workers share the cores, and more threads than cores only
    spin."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if workers > 1:
        from numerics.threads import torch_threads

        _WORKER_THREADS.enter_context(torch_threads(max(1, (os.cpu_count() or 1) // workers)))


def pytest_unconfigure(config: Any) -> None:
    """Restore the thread counts :func:`pytest_configure` set."""
    _WORKER_THREADS.close()


def pytest_collection_modifyitems(config: Any, items: list) -> None:
    """Mark :data:`SLOW_CASES` ``slow`` (by node id, relative to the repository root)."""
    import pytest

    for item in items:
        if item.nodeid in SLOW_CASES:
            item.add_marker(pytest.mark.slow)


__all__ = ["assert_well_formed", "claim_from", "fake_claims", "false_fail_count", "max_false_fails", "run_smoke"]


def run_smoke(check_id: str, report_dir: Path | None = None, *, seed: int = 0, n_jobs: int = 1,
              **ctx: Any) -> CheckResult:
    """Run ``check_id`` at the smoke profile (``report_dir`` None: no figures written)."""
    return run_check(claim_of(check_id),
                     CheckContext(profile="smoke", report_dir=report_dir, seed=seed, n_jobs=n_jobs, **ctx))


def fake_claims(monkeypatch: Any, checks: dict[str, Callable[[CheckContext], Outcome]]) -> dict[str, Claim]:
    """Replace the registered claims by ``checks``: ``{id: f(ctx) -> Outcome}``, each run as the claim of its id
    (its statement kept); the others are unregistered."""
    real = {c.id: c for c in all_claims()}
    fakes = {cid: claim_from(cid, fn, real[cid].paper, real[cid].statement) for cid, fn in checks.items()}
    monkeypatch.setattr(claim_module, "_CLAIMS", fakes)
    return fakes


def claim_from(cid: str, fn: Callable[[CheckContext], Outcome], paper: str = "A",
               statement: str = "a test claim") -> Claim:
    """A claim whose simulation is ``fn(ctx) -> Outcome`` and whose judge reads the outcome's comparisons."""
    return Claim(cid, paper, statement, design=lambda ctx: None, simulate=lambda ctx, d: fn(ctx),
                 judge=lambda d, p, out: list(out.comparisons),
                 describe=lambda d, p, out, comps: (out.notes, dict(out.data)))


def assert_well_formed(res: CheckResult, *, figures: bool = False) -> None:
    """A judged verdict, no error, comparisons with a tolerance rule and finite numbers, seeds recorded."""
    assert res.verdict in (Verdict.PASS, Verdict.FAIL, Verdict.INCONCLUSIVE), res.error
    assert res.error is None, res.error
    assert res.comparisons and res.seeds
    for c in res.comparisons:
        assert c.tolerance and isinstance(c.passed, bool)
        if isinstance(c.measured, float):
            assert math.isfinite(c.measured)
    if figures:
        assert res.figures and all(Path(p).exists() for p in res.figures)


def false_fail_count(make_comparisons: Callable[[], list], n: int) -> int:
    """FAIL verdicts among ``n`` calls of ``make_comparisons`` (each call: one synthetic run of a judge)."""
    return sum(judge(make_comparisons()) == "FAIL" for _ in range(n))


def max_false_fails(alpha: float, n: int, tail: float = 1e-3) -> int:
    """The FAIL count of ``n`` runs that a check with false-FAIL rate ``alpha`` exceeds with probability <= ``tail``.

    ``count <= max_false_fails(alpha, n)`` is then a test of "the rate is at most alpha" that itself fails
    (wrongly) with probability at most ``tail``; e.g. ``alpha = 0.01 / 12``, ``n = 200``: 2.
    """
    return int(stats.binom.isf(tail, n, alpha))
