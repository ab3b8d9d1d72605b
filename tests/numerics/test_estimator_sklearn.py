"""scikit-learn conventions of paper A's estimators: get_params / set_params / clone, score, random_state.

Both estimators take the 3-D ``X`` of shape ``(M, N, d)`` and ``Y`` of shape ``(M, N)``; scikit-learn's
model-selection tools only index the first axis, so ``GridSearchCV`` runs on them as they are.
"""

from __future__ import annotations


import numpy as np
import pytest

from benchmarks.paper_style import PaperStyleEstimator
from numerics import IPSModel, PairwiseInteractionEstimator

sklearn = pytest.importorskip("sklearn")
from sklearn.base import clone  # noqa: E402
from sklearn.metrics import r2_score  # noqa: E402
from sklearn.model_selection import GridSearchCV, KFold  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:PaperStyleEstimator. no convergence")
SMALL_BASELINE = dict(rounds=3, hidden=8, surrogate_steps=20, surrogate_points=64, batch_size=64)


@pytest.fixture(scope="module")
def data():
    model = IPSModel(d=3, N=4, degree=3, noise=0.1, n_knots=6, support=1.0, seed=0)
    X, Y = model.sample(400, rng=1)
    return model, X, Y


def _estimators():
    return [PairwiseInteractionEstimator(rank=1, degree=1, n_intervals=6),
            PaperStyleEstimator(rank=1, n_intervals=6, **SMALL_BASELINE)]


@pytest.mark.parametrize("est", _estimators(), ids=["project", "baseline"])
def test_clone_and_params_round_trip(est):
    params = est.get_params()
    assert "random_state" in params and "n_intervals" in params and params["n_intervals"] == 6
    twin = clone(est)
    assert twin is not est and twin.get_params() == params
    assert type(est)(**params).get_params() == params  # the parameters rebuild the estimator
    assert est.set_params(n_intervals=4) is est and est.get_params()["n_intervals"] == 4
    with pytest.raises(ValueError, match="Invalid parameter"):
        est.set_params(not_a_parameter=1)


def test_parameters_are_stored_as_given():
    """No conversion in ``__init__`` (scikit-learn's clone checks identity); ``fit`` converts."""
    k, dev, A0 = np.int64(5), "cpu", [[1.0, 0.0], [0.0, 1.0]]
    est = PairwiseInteractionEstimator(n_intervals=k, device=dev, ridge=0)
    assert est.n_intervals is k and est.device is dev and est.ridge == 0 and type(est.ridge) is int
    base = PaperStyleEstimator(rank=1, A_init=A0, device=dev)
    assert base.A_init is A0 and base.device is dev
    for e in (est, base):
        clone(e)  # raises if a parameter were modified by __init__


def test_set_params_takes_effect_at_fit_and_is_validated_there(data):
    _, X, Y = data
    est = PairwiseInteractionEstimator(rank=1, degree=1, n_intervals=6).fit(X, Y)
    assert est.coef_.shape == (6, 2)
    est.set_params(n_intervals=3)
    assert est.coef_.shape == (6, 2)  # fitted attributes stay until the next fit
    assert est.fit(X, Y).coef_.shape == (3, 2)
    with pytest.raises(ValueError, match="n_intervals"):
        est.set_params(n_intervals=0).fit(X, Y)
    with pytest.raises(ValueError, match="n_intervals"):
        PairwiseInteractionEstimator(n_intervals=0)  # and early, at construction


def test_grid_search_over_n_intervals_on_3d_X(data):
    _, X, Y = data
    search = GridSearchCV(PairwiseInteractionEstimator(rank=1, degree=1), {"n_intervals": [1, 6]},
                          cv=KFold(3, shuffle=True, random_state=0))
    search.fit(X, Y)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and search.best_params_ == {"n_intervals": 6}  # K = 1 underfits
    assert search.best_estimator_.coef_.shape == (6, 2)
    assert search.predict(X).shape == Y.shape


@pytest.mark.parametrize("est", _estimators(), ids=["project", "baseline"])
def test_score_is_r2_score(data, est):
    _, X, Y = data
    est.fit(X[:200], Y[:200])
    P = est.predict(X[200:])
    assert est.score(X[200:], Y[200:]) == pytest.approx(r2_score(Y[200:], P), rel=1e-12)
    w = np.linspace(0.0, 2.0, 200)
    assert est.score(X[200:], Y[200:], sample_weight=w) == pytest.approx(r2_score(Y[200:], P, sample_weight=w),
                                                                         rel=1e-12)
    with pytest.raises(ValueError, match="sample_weight"):
        est.score(X[200:], Y[200:], sample_weight=-w)


def test_random_state_none_int_or_generator(data):
    _, X, Y = data
    kw = dict(rank=1, degree=1, n_intervals=6, restarts=4, adaptive_restarts=False, max_iter=20)
    by_int = PairwiseInteractionEstimator(random_state=3, **kw).fit(X, Y)
    by_gen = PairwiseInteractionEstimator(random_state=np.random.default_rng(3), **kw).fit(X, Y)
    assert np.array_equal(by_int.A_, by_gen.A_) and by_int.restart_objectives_ == by_gen.restart_objectives_
    PairwiseInteractionEstimator(random_state=None, **kw).fit(X, Y)  # fresh entropy: runs
    with pytest.raises(ValueError, match="random_state"):
        PairwiseInteractionEstimator(random_state="3")


def test_baseline_random_state(data):
    _, X, Y = data
    a = PaperStyleEstimator(rank=1, n_intervals=6, random_state=2, **SMALL_BASELINE).fit(X[:200], Y[:200])
    b = PaperStyleEstimator(rank=1, n_intervals=6, random_state=2, **SMALL_BASELINE).fit(X[:200], Y[:200])
    assert np.array_equal(a.A_, b.A_)
    g1 = PaperStyleEstimator(rank=1, n_intervals=6, random_state=np.random.default_rng(5), **SMALL_BASELINE)
    g2 = PaperStyleEstimator(rank=1, n_intervals=6, random_state=np.random.default_rng(5), **SMALL_BASELINE)
    assert np.array_equal(g1.fit(X[:200], Y[:200]).A_, g2.fit(X[:200], Y[:200]).A_)


def test_repr_shows_the_parameters_that_differ_from_their_defaults():
    assert repr(PairwiseInteractionEstimator()) == "PairwiseInteractionEstimator()"
    assert repr(PairwiseInteractionEstimator(n_intervals=8, random_state=1)) == \
        "PairwiseInteractionEstimator(n_intervals=8, random_state=1)"
    assert repr(PaperStyleEstimator(rank=2)) == "PaperStyleEstimator(rank=2)"


def test_readme_library_example_runs():
    """The README's "Using it as a library" block runs and finds what its comments say."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## Using it as a library", 1)[1]
    code = re.findall(r"```python\n(.*?)```", section, flags=re.S)[0]
    ns: dict = {}
    exec(compile(code, "README.md", "exec"), ns)  # noqa: S102 - our own README
    assert ns["search"].best_params_ == {"n_intervals": 8}
    err, se = ns["search"].best_estimator_.l2_error(ns["model"], rng=2)
    assert 0 < se < err
