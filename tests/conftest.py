"""Shared helpers of the test suite (pytest loads this file first).

- :func:`run_smoke`: one check at the ``smoke`` profile (tiny sizes, verdicts meaningless), through :func:`verify.claim.run_check`.
- :func:`fake_claims`: the registered claims replaced by functions of the context (tests of the runner).
- :func:`assert_well_formed`: what every check result must satisfy whatever its verdict.
- :func:`false_fail_count`: how many of ``n`` synthetic runs of a judge FAIL (the way the judges' tests measure
  their false-FAIL rate under a known truth), and :func:`max_false_fails`, the count a check at ``alpha``
  exceeds with probability at most ``tail``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

from scipy import stats

from verify import claim as claim_module
from verify.claim import Claim, all_claims, claim_of, run_check
from verify.context import CheckContext
from verify.results import CheckResult, Outcome, Verdict
from verify.verdicts import judge

__all__ = ["assert_well_formed", "claim_from", "fake_claims", "false_fail_count", "max_false_fails", "run_smoke"]


def run_smoke(check_id: str, report_dir: Path | None = None, *, seed: int = 0, n_jobs: int = 1,
              **ctx: Any) -> CheckResult:
    """Run ``check_id`` at the smoke profile (``report_dir`` None: no figures written)."""
    return run_check(claim_of(check_id),
                     CheckContext(profile="smoke", report_dir=report_dir, seed=seed, n_jobs=n_jobs, **ctx))


def fake_claims(monkeypatch: Any, checks: dict[str, Callable[[CheckContext], Outcome]],
                informational: tuple[str, ...] = ()) -> dict[str, Claim]:
    """Replace the registered claims by ``checks``: ``{id: f(ctx) -> Outcome}``, each run as the claim of its id
    (its statement and study flag kept; ``informational`` makes more ids studies); the others are unregistered."""
    real = {c.id: c for c in all_claims()}
    fakes = {cid: claim_from(cid, fn, real[cid].paper, real[cid].statement,
                             real[cid].informational or cid in informational) for cid, fn in checks.items()}
    monkeypatch.setattr(claim_module, "_CLAIMS", fakes)
    return fakes


def claim_from(cid: str, fn: Callable[[CheckContext], Outcome], paper: str = "A", statement: str = "a test claim",
               informational: bool = False) -> Claim:
    """A claim whose simulation is ``fn(ctx) -> Outcome`` and whose judge reads the outcome's comparisons."""
    return Claim(cid, paper, statement, design=lambda ctx: None, simulate=lambda ctx, d: fn(ctx),
                 judge=lambda d, p, out: list(out.comparisons),
                 describe=lambda d, p, out, comps: (out.notes, dict(out.data)), informational=informational)


def assert_well_formed(res: CheckResult, *, figures: bool = False) -> None:
    """A judged verdict, no error, comparisons with a tolerance rule and finite numbers, seeds recorded."""
    assert res.verdict in (Verdict.PASS, Verdict.FAIL, Verdict.INCONCLUSIVE, Verdict.INFO), res.error
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
