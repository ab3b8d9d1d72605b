"""Fuzz suite of ``verify``'s public callables: every bad input refused clearly, nothing hangs or runs code.

The protocol and its machinery are those of ``tests/fuzz_support.py`` (argument domains :class:`Arg`,
:func:`classify`): one valid call per public callable of ``verify`` (``__all__`` of each module, or its public
functions where it has none) of the modules that take a user's values (``MODULES`` of the table), and the methods of
``Comparison`` and ``CheckContext``; the rest of ``verify`` is called with what these checked), *one* argument made bad at a time,
each call classified as ``refused`` (``ValueError`` / ``TypeError`` naming the argument within 2 s), ``silent``
(NaN or inf returned), ``accepted``, ``unnamed``, ``memory``, ``other`` (``SystemExit`` and ``AttributeError``
included) or ``hang``.

Added to the generic table (numbers, choices, flags): texts, paths, mappings, callables, comparisons and results
(lists of them, and look-alikes such as a dict with their fields), specs, contexts, verdicts, seed keys, figures
and axes (each passed where the other is meant), colours, markers, records, metadata, command lines and
consoles.  Values a parameter documents as valid are left out of its bad values (``drop``), with the reason:
a measured value or its standard error may be NaN or infinite (a failed measurement is judged FAIL, never a
silent PASS), and so may a ``p_fail`` / ``p_pass``.

The table (valid objects, bad values, one valid call per callable) is ``tests/fuzz_verify_table.py``.
Every module must refuse 100 % of its bad calls (``pytest -s`` prints the counts per module);
``python tests/verify/test_fuzz_verify.py [-v]`` prints them (and with ``-v`` every non-refused call) without asserting.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections import Counter

import matplotlib

matplotlib.use("Agg")
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))  # tests/: run as a script too

import verify  # noqa: E402
import verify.calibrate as calibrate  # noqa: E402
import verify.compare as compare  # noqa: E402
import verify.claim as claim  # noqa: E402
import verify.context as context  # noqa: E402
import verify.notebook as notebook  # noqa: E402
import verify.results as results  # noqa: E402
import verify.verdicts as verdicts  # noqa: E402
from fuzz_support import (Case, GENERIC_KINDS, MARKER, NAN, OUTCOMES, bad_strategy, choice, classify,  # noqa: E402
                          nonfinite, restore_limits, st)
from fuzz_verify_table import MODULES, _cases, _public, bad_values  # noqa: E402
from verify.context import CheckContext  # noqa: E402
from verify.results import Comparison, Outcome  # noqa: E402


# ---------------------------------------------------------------------------------------------- running
def run_table(cases: list[Case]) -> tuple[dict[str, Counter], list[str]]:
    """Outcome counts per module over the table of bad values, and every non-refused call (with its outcome)."""
    counts: dict[str, Counter] = {}
    problems: list[str] = []
    for case in cases:
        for name, arg in case.args.items():
            for label, value in bad_values(arg, case.drop.get(name, frozenset())):
                kwargs = dict(case.kwargs)
                kwargs[name] = value
                try:
                    outcome, detail = classify(case.func, kwargs, case.named.get(name, name))
                finally:
                    restore_limits()
                    pass
                counts.setdefault(case.module, Counter())[outcome] += 1
                if outcome != "refused":
                    problems.append(f"[{case.module}] {case.label}({name}={label}): {outcome} {detail}")
    return counts, problems


def report_text(counts: dict[str, Counter]) -> str:
    lines = []
    for mod in MODULES:
        c = counts.get(mod, Counter())
        parts = ", ".join(f"{k} {c.get(k, 0)}" for k in OUTCOMES)
        lines.append(f"  verify.{mod}: {sum(c.values())} bad calls: {parts}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------- tests
CASES = _cases()
#: callables without an argument to fuzz: none at all, or any value is valid (``fmt_value`` and ``settings`` show
#: whatever they are given as text)
NO_BAD_VALUES = {"all_claims"}
#: records and results the library builds (not fuzzed: their fields come from checked values), and what reads them
RECORDS = {"Claim", "Outcome", "CheckResult", "Verdict", "Run", "Judgement", "ReportDiff", "all_claims", "exit_status",
           "rejudge_stored", "CheckCalibration", "summarise", "rejudge", "clopper_pearson", "markdown_table",
           "sequential_table", "calibrate"}


def test_every_public_callable_is_in_the_table():
    covered = {c.label.split("[")[0].split(".")[0] for c in CASES}
    homes = {"verdicts": verdicts, "claim": claim, "calibrate": calibrate, "compare": compare, "notebook": notebook,
             "results": results, "context": context}
    missing = {m: sorted(_public(mod) - covered - RECORDS) for m, mod in homes.items() if _public(mod) - covered - RECORDS}
    assert not missing, f"public callables without a fuzz entry: {missing}"
    assert set(verify.__all__) - RECORDS <= covered
    methods = {c.label for c in CASES if "." in c.label}
    for cls, names in ((Comparison, ("equivalence", "direction", "bound", "consistency", "from_json")),
                       (CheckContext, ("seed_for", "design_seed", "progress", "cache_key", "cached", "save_figure"))):
        assert {f"{cls.__name__}.{n}" for n in names} <= methods
    for case in CASES:
        if not case.args:
            assert case.label in NO_BAD_VALUES, case.label


def test_valid_calls_succeed():
    """The starting points are valid: each returns a finite result."""
    for case in CASES:
        try:
            out = case.func(**case.kwargs)
        finally:
            restore_limits()
        assert not nonfinite(out), case.label


def test_table_of_bad_values_all_refused():
    """100 % refused for every module of verify (counts printed per module)."""
    MARKER.unlink(missing_ok=True)
    t0 = time.perf_counter()
    counts, problems = run_table(CASES)
    print(f"\nverify fuzz table ({time.perf_counter() - t0:.1f} s):\n{report_text(counts)}")
    assert not MARKER.exists(), "a string argument was evaluated as code"
    total = sum(sum(c.values()) for c in counts.values())
    assert sum(c["refused"] for c in counts.values()) == total, "\n".join(problems[:60])


if st is not None:
    from hypothesis import HealthCheck, given, settings

    _FUZZ = [(case, name, arg) for case in CASES for name, arg in case.args.items()
             if arg.kind in GENERIC_KINDS and not case.drop.get(name)]
    _HYP_COUNTS: Counter = Counter()

    @settings(max_examples=300, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def test_hypothesis_bad_values_refused(data):
        """Random values outside the domain of every number, choice and flag argument (:func:`bad_strategy`)."""
        case, name, arg = data.draw(st.sampled_from(_FUZZ), label="argument")
        value = data.draw(bad_strategy(arg), label="bad value")
        if arg.none_ok and value is None:  # a valid default, not a bad value
            return
        kwargs = dict(case.kwargs)
        kwargs[name] = value
        outcome, detail = classify(case.func, kwargs, case.named.get(name, name))
        _HYP_COUNTS[outcome] += 1
        assert outcome == "refused", f"{case.label}({name}={value!r}): {outcome} {detail}"

    def test_hypothesis_counts_printed():
        """Runs after the hypothesis test (file order): prints its counts."""
        print("\nverify fuzz hypothesis: " + ", ".join(f"{k} {_HYP_COUNTS.get(k, 0)}" for k in OUTCOMES))
        assert not MARKER.exists()


def test_a_bad_passed_flag_never_becomes_a_pass():
    """The audit's cases: ``passed='no'`` and ``passed=nan`` were PASS; a profile typed in capitals ran paper sizes."""
    for bad in ("no", NAN, 1, None):
        with _raises(TypeError, "passed"):
            Comparison("x", 1.0, 1.0, 0.1, "rule", bad)
    with _raises(ValueError, "profile"):
        CheckContext(profile="Quick")
    with _raises(ValueError, "n_jobs"):
        CheckContext(n_jobs=0)


@contextlib.contextmanager
def _raises(exc_type: type, word: str):
    """``pytest.raises`` with the argument named in the message (and usable when the file runs as a script)."""
    try:
        yield
    except exc_type as exc:
        assert word in str(exc), str(exc)
        return
    raise AssertionError(f"{exc_type.__name__} not raised")


if __name__ == "__main__":  # counts per module, without asserting
    MARKER.unlink(missing_ok=True)
    t0 = time.perf_counter()
    counts, problems = run_table(CASES)
    if "-v" in sys.argv:
        print("\n".join(problems))
    print(f"verify fuzz table ({time.perf_counter() - t0:.1f} s); strings evaluated: {int(MARKER.exists())}")
    print(report_text(counts))
    MARKER.unlink(missing_ok=True)
