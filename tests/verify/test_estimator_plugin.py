"""Adding an estimator (docs/architecture.md): a subclass of numerics.InteractionEstimator plugs into paper A's
rate claims by name, through verify.checks.paper_a_rates.with_estimator, without touching the checks."""

from __future__ import annotations

import pytest

from numerics import InteractionEstimator, PairwiseInteractionEstimator
from verify.claim import claim_of
from verify.checks._paper_a_numerics import estimator_class, trial
from verify.checks.paper_a_rates import with_estimator
from verify.context import CheckContext

FITS: list[int] = []


class CountingEstimator(PairwiseInteractionEstimator):
    """A toy: the default estimator with a single start, counting its fits."""

    def fit(self, X, Y, **options):
        FITS.append(len(X))
        return super().fit(X, Y, **options)


def test_a_named_estimator_runs_in_the_trial():
    cell = {"d": 1, "N": 5, "r": 1, "P": 3, "n_knots": 6, "truth_seed": 1, "law": "uniform", "sigma": 0.05, "K": 6,
            "M": 80, "n_pairs": 2**10, "estimator": "test_estimator_plugin:CountingEstimator",
            "estimator_params": {"restarts": 1}}
    FITS.clear()
    out = trial(cell, 3)
    assert FITS == [80] and out["err"] > 0 and out["refits"] == 0


def test_a2_runs_with_another_estimator_at_smoke_size():
    FITS.clear()
    claim = with_estimator(claim_of("A2"), "test_estimator_plugin:CountingEstimator", restarts=1)
    out = claim.run(CheckContext(profile="smoke", cache_dir=None, n_jobs=1, check_id="A2"))
    assert FITS and out.comparisons and out.verdict in ("PASS", "FAIL", "INCONCLUSIVE")


@pytest.mark.parametrize("name, error", [("numerics:IPSModel", TypeError), ("no_colon", ValueError),
                                         ("numerics:NoSuchThing", AttributeError)])
def test_a_wrong_estimator_name_is_refused_early(name, error):
    with pytest.raises(error):
        with_estimator(claim_of("A2"), name)


def test_the_base_class_is_public():
    assert issubclass(estimator_class("numerics:PairwiseInteractionEstimator"), InteractionEstimator)
