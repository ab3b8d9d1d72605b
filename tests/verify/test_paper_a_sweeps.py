"""Paper-A sweeps: resume after an interruption, cache keys independent of n_jobs / threads, --device.

The interruption is simulated in-process: the progress bar raises ``KeyboardInterrupt`` after ``k``
finished trials (``run_sweep`` writes each pair's cache entry before it reports progress, so exactly
``k`` pairs are on disk, as after a kill at that moment). The rerun must read them back, report
``n_cached``, and give the same numbers as an uninterrupted run without a cache.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
import torch

from verify.checks._paper_a_numerics import _device_extra, balanced_sigma, trial
from verify.claim import claim_of
from verify.context import CheckContext
from verify.results import Verdict
from verify.claim import run_check


_spec = claim_of


class _Interrupt:
    """Progress factory whose trial-sweep bar raises KeyboardInterrupt after ``after`` advances."""

    def __init__(self, after: int) -> None:
        self.after = after
        self.count = 0

    def __call__(self, desc: str, total: int):
        outer = self

        class Bar:
            def advance(self, n: int = 1) -> None:
                if desc.endswith("sweep"):
                    outer.count += n
                    if outer.count >= outer.after:
                        raise KeyboardInterrupt("simulated interruption")

        return contextlib.nullcontext(Bar())


def _errors(res) -> list:
    return res.data["errors"]


def test_a6_resumes_after_interruption_and_reports_cached(tmp_path):
    cache = tmp_path / "cache"
    with pytest.raises(KeyboardInterrupt):
        run_check(_spec("A6"), CheckContext(profile="smoke", cache_dir=cache, n_jobs=1,
                                            _progress_factory=_Interrupt(after=4)))
    n_files = len(list((cache / "paper_a_rates").rglob("*.json")))
    assert n_files == 3 + 4  # 3 cached predictions (one per configuration) and the 4 finished trials
    res = run_check(_spec("A6"), CheckContext(profile="smoke", cache_dir=cache, n_jobs=1))
    assert res.verdict in (Verdict.PASS, Verdict.FAIL, Verdict.INCONCLUSIVE), res.error
    assert res.data["sweep"]["trials"] == {"n_computed": 2, "n_cached": 4}
    assert res.data["sweep"]["predictions"] == {"n_computed": 0, "n_cached": 3}
    assert "4 from the cache" in res.notes
    fresh = run_check(_spec("A6"), CheckContext(profile="smoke", cache_dir=None, n_jobs=1))
    assert _errors(res) == _errors(fresh)  # resumed == uninterrupted, bit for bit
    assert res.data["pred"] == fresh.data["pred"]


def test_cache_keys_do_not_depend_on_n_jobs(tmp_path):
    cache = tmp_path / "cache"
    first = run_check(_spec("A6"), CheckContext(profile="smoke", cache_dir=cache, n_jobs=1))
    again = run_check(_spec("A6"), CheckContext(profile="smoke", cache_dir=cache, n_jobs=2))
    assert again.data["sweep"]["trials"] == {"n_computed": 0, "n_cached": 6}
    assert again.data["sweep"]["predictions"]["n_computed"] == 0
    assert _errors(first) == _errors(again)


@pytest.mark.slow
def test_worker_processes_give_the_in_process_results(tmp_path):
    """Trials and predictions computed by 2 loky workers equal the in-process ones (and fill the cache)."""
    cache = tmp_path / "cache"
    par = run_check(_spec("A6"), CheckContext(profile="smoke", cache_dir=cache, n_jobs=2))
    assert par.verdict in (Verdict.PASS, Verdict.FAIL, Verdict.INCONCLUSIVE), par.error
    assert par.data["sweep"]["trials"]["n_computed"] == 6
    ser = run_check(_spec("A6"), CheckContext(profile="smoke", cache_dir=None, n_jobs=1))
    assert _errors(par) == _errors(ser) and par.data["pred"] == ser.data["pred"]


def test_sigma_does_not_depend_on_torch_threads():
    """``sigma`` enters every cell (and cache key): it must not change with the caller's thread count."""
    cfg = {"d": 1, "N": 5, "r": 1, "P": 3, "n_knots": 6, "truth_seed": 3, "law": "uniform"}
    old = torch.get_num_threads()
    try:
        vals = []
        for nt in (1, 2):
            torch.set_num_threads(nt)
            vals.append(balanced_sigma(cfg, 32, 2000, 1, 5, n_pop=3000, n_pairs=2**15))
    finally:
        torch.set_num_threads(old)
    assert vals[0] == vals[1]
    assert torch.get_num_threads() == old


def test_cpu_cells_are_unchanged_by_the_device_option():
    assert _device_extra(CheckContext(device="cpu")) == {}
    assert _device_extra(CheckContext(device="cuda")) == {"device": "cuda"}
    cell = {"d": 3, "N": 4, "r": 1, "P": 3, "n_knots": 6, "truth_seed": 1, "sigma": 0.05, "K": 8, "M": 400,
            "restarts": 2, "max_iter": 20, "n_pairs": 2**12, "ridge": 1e-4}
    a, b = trial(cell, 3), trial({**cell, "device": "cpu"}, 3)
    a.pop("fit_time"), b.pop("fit_time")
    assert a == b


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_trial_on_cuda_agrees_with_cpu():
    """One sweep trial (d = 5, rank 1, the A3 settings) on the GPU vs the CPU.

    Tolerance: both run the same float64 algorithm; only the order of floating-point reductions
    differs (~1e-16 relative per operation). Amplified by the conditioning of the least-squares
    problems (relative ridge 1e-4 bounds the Gram's condition number by ~1e4 p) and by a few
    Gauss-Newton steps, the fitted coefficients agree to ~1e-9; the error, a smooth function of
    them, to well below 1e-6 relative. A larger difference means a discrete decision differed (a
    pair on a knot, a start joined or not): then the fits are different, and the test should say so.
    """
    cell = {"d": 5, "N": 5, "r": 1, "P": 3, "n_knots": 6, "truth_seed": 1, "sigma": 0.002, "K": 20, "M": 2000,
            "restarts": 3, "max_iter": 50, "n_pairs": 2**14, "ridge": 1e-4}
    for seed in (0, 1):
        cpu = trial(cell, seed)
        gpu = trial({**cell, "device": "cuda"}, seed)
        assert gpu["err"] == pytest.approx(cpu["err"], rel=1e-6, abs=1e-14)
        assert gpu["objective"] == pytest.approx(cpu["objective"], rel=1e-9)
        assert gpu["refits"] == cpu["refits"]
        assert np.isfinite(gpu["err"])


def test_refit_of_a_stalled_fit_runs_the_random_starts():
    """A replicate whose two moment starts agree on a wrong basin (objective 8.5 sigma^2; found in the paper
    A4 design, d = 2, N = 3, M = 500). With adaptive restarts on the refits, the random starts never ran and
    every refit repeated the stalled fit (L2 error 0.027, 100x the typical one); the refits must reach the
    global basin (objective ~ sigma^2)."""
    cell = {"d": 2, "N": 3, "r": 1, "P": 3, "n_knots": 6, "truth_seed": 1058958167, "law": "uniform",
            "sigma": 0.040152251238164974, "restarts": 2, "max_iter": 50, "n_pairs": 2**14, "ridge": 1e-4,
            "K": 20, "M": 500}
    out = trial(cell, 2019249099)
    assert out["refits"] >= 1  # the first fit stalled (objective > 2 sigma^2)
    assert out["objective"] <= 2 * cell["sigma"] ** 2
    assert out["err"] < 1e-3
