"""Check A1 runs through :func:`verify.claim.run_check` and passes (symbolic statements only; fast)."""

from __future__ import annotations

from verify.claim import claim_of
from verify.context import CheckContext
from verify.results import Verdict
from verify.claim import run_check


def _spec():
    return claim_of("A1")


def test_check_a1_passes_and_reports(tmp_path):
    spec = _spec()
    res = run_check(spec, CheckContext(report_dir=tmp_path))
    assert res.error is None, res.error
    assert res.verdict is Verdict.PASS, [c.name for c in res.comparisons if not c.passed]
    assert len(res.comparisons) >= 20
    for c in res.comparisons:
        assert c.uncertainty is None and c.tolerance.startswith("exact")
    names = " ".join(c.name for c in res.comparisons)
    for needle in ("beta -> oo", "beta -> 0+", "M -> oo", "min_samples(r=1, d=30, beta=2)",
                   "min_samples(r=1, d=30, beta=7)", "P=3", "P=8", "lower_bound <= upper_bound"):
        assert needle in names
    assert res.figures and all(p.endswith(".png") for p in res.figures)
    assert res.seeds  # the random points are seeded and recorded
    assert res.data["finite_M"]["beta=2"]["upper_slope_at_M=1e4"] > 0  # the printed log gap dominates at 1e4
