"""The table of ``tests/verify/test_fuzz_verify.py``: valid objects, bad values per argument kind, one valid call and
the argument domains per public callable of ``verify`` (module docstring of the test file: the protocol)."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import sys
import tempfile
from datetime import datetime
import time
from pathlib import Path
from typing import Any, Callable

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402

import verify  # noqa: E402
import verify.calibrate as calibrate  # noqa: E402
import verify.compare as compare  # noqa: E402
import verify.claim as claim  # noqa: E402
import verify.figures as figures  # noqa: E402
import verify.context as context  # noqa: E402
import verify.notebook as notebook  # noqa: E402
import verify.results as results  # noqa: E402
import verify.validation as validation  # noqa: E402
import theory.validation as theory_validation  # noqa: E402
import verify.report as report  # noqa: E402
import verify.verdicts as verdicts  # noqa: E402
import verify.sequential as sequential  # noqa: E402
import verify.budget as budget  # noqa: E402
from fuzz_support import (Case, EVIL, INF, NAN, Arg, choice, generic_bad_values, integer, nonneg, pos,  # noqa: E402
                          real)
from verify.context import CheckContext  # noqa: E402
from verify.results import CheckResult, Comparison, Outcome, Verdict  # noqa: E402

#: the modules whose callables take a user's values: the rest of verify is called with what these checked
MODULES = ("claim", "results", "context", "verdicts", "compare", "calibrate", "notebook")
TMP = Path(tempfile.mkdtemp(prefix="verify_fuzz_"))
NON_FINITE = frozenset({"nan", "np.nan", "inf", "-inf"})  # labels of the generic table's NaN and infinities


# ---------------------------------------------------------------------------------------------- valid objects
def _ok(ctx: Any) -> Outcome:
    return Outcome([Comparison("x", 1.0, 1.0, 0.1, "exact", True)], notes="fine")


C_EXACT = Comparison("x", 1.0, 1.0, 0.1, "|m - p| <= 3 SE", True)
C_EQ = Comparison.equivalence("slope", -0.8, -0.79, 0.01, 0.03, headline=True)
RESULT = CheckResult("A1", "A", "a claim", Verdict.PASS, [C_EXACT, C_EQ], 1.0, [1, 2], [], "notes", None, {"k": 1})
SPEC = claim.Claim("A1", "A", "a claim", design=lambda ctx: None, simulate=lambda ctx, d: _ok(ctx),
                   judge=lambda d, p, m: m.comparisons, describe=lambda d, p, m, c: ("", {}))
META = report.run_metadata("smoke", 0, False, ["--only", "A1"])
RECORD = {"id": "A2", "seed": 0, "verdict": "PASS", "runtime_s": 1.0, "error": None, "profile": "smoke",
          "comparisons": [C_EQ.to_json()]}
A_FILE = TMP / "a_file"
A_FILE.write_text("")


def _figure():
    fig, axes = figures.subplots(1, 2)
    ax = axes[0, 0]
    ax.plot([1.0, 10.0, 100.0], [1.0, 0.5, 0.2], "o", label="points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title("panel")
    return fig, ax


FIG, AX = _figure()
SAVED_FIG = _figure()[0]  # save_figure closes the figure it saves
CALIBRATION = calibrate.summarise("A2", [dict(RECORD, seed=k) for k in range(3)])
CAL_META = {"command": "python -m verify calibrate", "machine": "test", "date": "2026-01-01", "profile": "smoke",
            "n_seeds": 3, "check_s": 3.0, "wall_s": 3.0}


# ---------------------------------------------------------------------------------------------- bad values
def _junk(none_ok: bool = False) -> list[tuple[str, Any]]:
    out = [("None", None), ("str", "abc"), ("evil str", EVIL), ("int", 1), ("float", 1.5), ("nan", NAN),
           ("bool", True), ("object", object()), ("bytes", b"x"), ("list", [1]), ("dict", {"a": 1})]
    return [(k, v) for k, v in out if not (none_ok and v is None)]


def _without(labels: tuple[str, ...], a: Arg) -> list[tuple[str, Any]]:
    return [(k, v) for k, v in _junk(a.none_ok) if k not in labels]


def _text_bad(a: Arg) -> list[tuple[str, Any]]:
    return _without(("str", "evil str"), a)


def _name_bad(a: Arg) -> list[tuple[str, Any]]:
    return _text_bad(a) + [("empty", "")]


def _stem_bad(a: Arg) -> list[tuple[str, Any]]:
    return _name_bad(a) + [("separator", "a/b"), ("parent", ".."), ("NUL", "a\x00b")]


def _value_bad(a: Arg) -> list[tuple[str, Any]]:
    """A predicted / measured value: numbers, strings, None and lists of them are valid; objects are not."""
    return [("object", object()), ("bytes", b"x"), ("dict", {"a": 1}), ("complex", 1j), ("function", abs),
            ("set", {1}), ("list of objects", [object()])]


def _unc_bad(a: Arg) -> list[tuple[str, Any]]:
    return [(k, v) for k, v in generic_bad_values(nonneg(none_ok=True)) if k not in NON_FINITE]


def _path_bad(a: Arg) -> list[tuple[str, Any]]:
    return _without(("str", "evil str"), a) + [("list of str", ["a"])]


def _mapping_bad(a: Arg) -> list[tuple[str, Any]]:
    return _without(("dict",), a)


def _callable_bad(a: Arg) -> list[tuple[str, Any]]:
    return _junk(a.none_ok)


def _list_of(valid: Any, wrong: Any, a: Arg) -> list[tuple[str, Any]]:
    out = _junk(a.none_ok) + [("list of None", [None]), ("list of str", ["abc"]), ("list of the wrong kind", [wrong]),
                              ("one bad item", [valid, object()]), ("a single item", valid)]
    return out + ([("empty", [])] if a.low else [])


def _comparisons_bad(a: Arg) -> list[tuple[str, Any]]:
    return _list_of(C_EXACT, RESULT, a)


def _specs_bad(a: Arg) -> list[tuple[str, Any]]:
    return _list_of(SPEC, RESULT, a)


def _results_bad(a: Arg) -> list[tuple[str, Any]]:
    return _list_of(RESULT, C_EXACT, a)


def _replicates_bad(a: Arg) -> list[tuple[str, Any]]:
    return _junk(a.none_ok) + [("empty", []), ("list of comparisons", [C_EXACT]), ("list of lists of junk", [[1]])]


def _judgement_bad(a: Arg) -> list[tuple[str, Any]]:
    return _one_of(C_EXACT, {"verdict": "PASS", "comparisons": []}, a)


def _sequence_bad(a: Arg) -> list[tuple[str, Any]]:
    return _one_of(RESULT, {"spec": SPEC}, a)


def _sequences_bad(a: Arg) -> list[tuple[str, Any]]:
    return _list_of(RESULT, C_EXACT, a)


def _looks_bad(a: Arg) -> list[tuple[str, Any]]:
    return _list_of({"round": 0}, 1, a)


def _one_of(wrong: Any, lookalike: Any, a: Arg) -> list[tuple[str, Any]]:
    return _junk(a.none_ok) + [("the wrong kind", wrong), ("its fields as a dict", lookalike),
                               ("a list of one", [wrong])]


def _comparison_bad(a: Arg) -> list[tuple[str, Any]]:
    return _one_of(RESULT, C_EXACT.to_json(), a)


def _result_bad(a: Arg) -> list[tuple[str, Any]]:
    return _one_of(C_EXACT, RESULT.to_json(), a)


def _spec_bad(a: Arg) -> list[tuple[str, Any]]:
    return _one_of(RESULT, {"id": "A1", "paper": "A", "statement": "x"}, a) + [("an id", "A1")]


def _context_bad(a: Arg) -> list[tuple[str, Any]]:
    return _one_of(SPEC, {"profile": "smoke"}, a) + [("a profile name", "smoke")]


def _verdict_bad(a: Arg) -> list[tuple[str, Any]]:
    return _junk(a.none_ok) + [("unknown", "MAYBE"), ("lower case", "pass")]


def _ints_bad(a: Arg) -> list[tuple[str, Any]]:
    return _without(("list",), a) + [("floats", [1.5]), ("negative", [-1]), ("bools", [True]), ("nan", [NAN]),
                                     ("objects", [object()]), ("too large", [2**63]), ("strings", ["1"])]


def _strings_bad(a: Arg) -> list[tuple[str, Any]]:
    return _without(("str", "evil str"), a) + [("a string", "abc"), ("ints", [1]), ("None", [None]),
                                                ("objects", [object()]), ("bytes", [b"x"])]


def _seed_key_bad(a: Arg) -> list[tuple[str, Any]]:
    return [("None", None), ("object", object()), ("computed float", 0.1 + 0.2), ("nan", NAN), ("inf", INF),
            ("bytes", b"x"), ("list", [1]), ("dict", {"a": 1}), ("complex", 1j), ("numpy array", np.ones(2))]


def _sign_bad(a: Arg) -> list[tuple[str, Any]]:
    return _without(("int",), a) + [("zero", 0), ("two", 2), ("float one", 1.5), ("bool", True), ("inf", INF)]


def _figure_bad(a: Arg) -> list[tuple[str, Any]]:
    return _junk(a.none_ok) + [("an axes", AX)]


def _axes_bad(a: Arg) -> list[tuple[str, Any]]:
    return _junk(a.none_ok) + [("a figure", FIG), ("an array of axes", np.array([AX]))]


def _axes_list_bad(a: Arg) -> list[tuple[str, Any]]:
    return _without(("list",), a) + [("figures", [FIG]), ("ints", [1]), ("an axes", AX)]


def _color_bad(a: Arg) -> list[tuple[str, Any]]:
    return _without(("float",), a) + [("unknown name", "not-a-colour"), ("bad hex", "#12345"), ("float", 1.5),
                                      ("short tuple", (1.0, 0.0)), ("out of range", (2.0, 0.0, 0.0))]


def _marker_bad(a: Arg) -> list[tuple[str, Any]]:
    return _without(("int",), a) + [("unknown", "not-a-marker"), ("negative int", -5)]


def _linestyle_bad(a: Arg) -> list[tuple[str, Any]]:
    return _without(("str", "evil str"), a) + [("unknown", "wavy"), ("evil", EVIL)]


def _pair_bad(a: Arg) -> list[tuple[str, Any]]:
    return _junk(a.none_ok) + [("single", (1.0,)), ("triple", (1.0, 2.0, 3.0)), ("nan", (NAN, 1.0)),
                               ("inf", (1.0, INF)),
                      ("zero", (0.0, 1.0)), ("negative", (-1.0, 1.0)), ("str", ("a", 1.0)), ("bool", (True, 1.0))]


def _record_bad(a: Arg) -> list[tuple[str, Any]]:
    return _without(("dict",), a) + [("empty", {}), ("no comparisons", {"id": "A2", "verdict": "PASS"}),
                                     ("bad verdict", dict(RECORD, verdict="MAYBE")),
                                     ("comparisons not a list", dict(RECORD, comparisons="abc")),
                                     ("a bad comparison", dict(RECORD, comparisons=[{"name": "x"}])),
                                     ("id not a string", dict(RECORD, id=1))]


def _records_bad(a: Arg) -> list[tuple[str, Any]]:
    return _without(("list",), a) + [("empty", []), ("ints", [1]), ("a bad record", [RECORD, {}]),
                                     ("a record", RECORD), ("verdict missing", [{k: v for k, v in RECORD.items()
                                                                                  if k != "verdict"}])]


def _meta_bad(a: Arg, keys: tuple[str, ...]) -> list[tuple[str, Any]]:
    full = META if "python" in keys else CAL_META
    return _without(("dict",), a) + [("empty", {}), ("missing keys", {k: full[k] for k in keys[:1]}),
                                     ("non-str keys", {1: 2, **full})]


def _run_meta_bad(a: Arg) -> list[tuple[str, Any]]:
    return _meta_bad(a, ("profile", "seed", "strict", "started_utc", "python", "platform"))


def _cal_meta_bad(a: Arg) -> list[tuple[str, Any]]:
    return _meta_bad(a, ("command", "machine", "date", "profile", "n_seeds", "check_s", "wall_s"))


def _rows_bad(a: Arg) -> list[tuple[str, Any]]:
    return _list_of(CALIBRATION, RESULT, a)


def _argv_bad(a: Arg) -> list[tuple[str, Any]]:
    return [("a string", "--only A1"), ("int", 1), ("ints", [1]), ("None item", [None]), ("object", object()),
            ("bytes", [b"--only"]), ("dict", {"a": 1})]


def _console_bad(a: Arg) -> list[tuple[str, Any]]:
    return _junk(a.none_ok) + [("a file", sys.stdout)]


def _json_doc_bad(a: Arg) -> list[tuple[str, Any]]:
    return _without(("dict",), a) + [("object value", {"a": object()}), ("nan value", {"a": NAN})]


def _cells_bad(a: Arg) -> list[tuple[str, Any]]:
    return _without(("dict",), a) + [("object value", {"a": object()}), ("non-str key", {1: 2})]


def _compute_bad(a: Arg) -> list[tuple[str, Any]]:
    return _callable_bad(a) + [("returns None", lambda: None), ("returns objects", lambda: {"x": object()}),
                               ("returns strings", lambda: {"x": np.array(["a"])}),
                               ("reserved name", lambda: {"__key__": np.ones(1)}), ("returns a list", lambda: [1])]


def _claim_bad(a: Arg) -> list[tuple[str, Any]]:
    return _one_of(RESULT, {"id": "A1"}, a)


def _handles_bad(a: Arg) -> list[tuple[str, Any]]:
    return [("None", None), ("int", 1), ("ints", [1]), ("strings", ["abc"]), ("objects", [object()]),
            ("a handle", figures.proxy("x"))]


_KINDS: dict[str, Callable[[Arg], list[tuple[str, Any]]]] = {
    "text": _text_bad, "name": _name_bad, "stem": _stem_bad, "value": _value_bad, "uncertainty": _unc_bad,
    "path": _path_bad, "mapping": _mapping_bad, "callable": _callable_bad, "comparisons": _comparisons_bad,
    "specs": _specs_bad,
    "results": _results_bad, "comparison": _comparison_bad, "result": _result_bad, "spec": _spec_bad,
    "context": _context_bad, "verdict": _verdict_bad, "ints": _ints_bad, "strings": _strings_bad,
    "seed_key": _seed_key_bad, "sign": _sign_bad, "figure": _figure_bad, "axes": _axes_bad,
    "axes_list": _axes_list_bad, "color": _color_bad, "marker": _marker_bad, "linestyle": _linestyle_bad,
    "pair": _pair_bad, "record": _record_bad, "records": _records_bad, "run_meta": _run_meta_bad,
    "cal_meta": _cal_meta_bad, "rows": _rows_bad, "argv": _argv_bad, "console": _console_bad,
    "json_doc": _json_doc_bad, "cells": _cells_bad, "compute": _compute_bad, "claim": _claim_bad,
    "handles": _handles_bad, "replicates": _replicates_bad, "judgement": _judgement_bad,
    "sequence": _sequence_bad, "sequences": _sequences_bad, "looks": _looks_bad}


def bad_values(a: Arg, drop: frozenset = frozenset()) -> list[tuple[str, Any]]:
    """The bad values of an argument of domain ``a``: the generic table, or the kinds above."""
    out = _KINDS[a.kind](a) + list(a.extra) if a.kind in _KINDS else generic_bad_values(a)
    return [(k, v) for k, v in out if k not in drop]


def K(kind: str, **kw: Any) -> Arg:  # noqa: N802 - a short constructor of the table
    return Arg(kind, **kw)


# ---------------------------------------------------------------------------------------------- the table
# Case: tests/fuzz_support.py


TEXT, NAME, FLAG = K("text"), K("name"), Arg("flag")
ALPHA = real(0, 1, low_open=True, high_open=True)
DF = pos(none_ok=True)  # inf: the normal limit
MEASURED = real()  # NaN / inf: a failed measurement, judged FAIL (dropped below)
SE = nonneg()
P_VALUE = real(0, 1, none_ok=True)


@contextlib.contextmanager
def _registry(**entries: Any):
    """The registered claims replaced for the block (``{id: Claim}``): registering leaves the real ones alone."""
    claim.all_claims()
    saved = claim._CLAIMS
    claim._CLAIMS = {cid: dataclasses.replace(SPEC, id=cid) for cid in entries}
    try:
        yield
    finally:
        claim._CLAIMS = saved


def _results_cases(add: Callable[..., None]) -> None:
    """verify.results and verify.context: Comparison and its constructors, CheckContext and its methods."""
    cmp_kw = dict(name="x", predicted=1.0, measured=1.0, uncertainty=0.1, tolerance="rule", passed=True, kind="exact",
                  p_fail=None, p_pass=None, margin=None, df=None, decide_factor=None, outcome="", headline=False)
    add("Comparison", cmp_kw, dict(
        name=TEXT, predicted=K("value"), measured=K("value"), uncertainty=K("uncertainty"), tolerance=TEXT,
        passed=FLAG, kind=choice(*verdicts.KINDS), p_fail=P_VALUE, p_pass=P_VALUE, margin=pos(none_ok=True),
        df=DF, decide_factor=nonneg(none_ok=True), outcome=choice("", "PASS", "FAIL", "INCONCLUSIVE"),
        headline=FLAG), drop={"p_fail": NON_FINITE, "p_pass": NON_FINITE, "df": frozenset({"inf"})})
    eq = dict(name="slope", predicted=-0.8, measured=-0.79, se=0.01, margin=0.03, df=None, rule="", headline=True)
    stochastic = dict(name=TEXT, measured=MEASURED, se=SE, df=DF, rule=TEXT, headline=FLAG)
    measured_drop = {"measured": NON_FINITE, "se": NON_FINITE, "df": frozenset({"inf"})}
    add("Comparison.equivalence", eq, dict(stochastic, predicted=real(), margin=pos()), drop=measured_drop,
        func=Comparison.equivalence)
    add("Comparison.direction", dict(name="gap", predicted="> 0", measured=0.2, se=0.05, sign=1, reference=0.0, df=None,
                                     rule="", headline=False),
        dict(stochastic, predicted=K("value"), sign=K("sign"), reference=real()), drop=measured_drop,
        func=Comparison.direction)
    add("Comparison.bound", dict(name="bound", predicted="<= 0", measured=0.1, se=0.05, excess=-0.1, excess_se=None,
                                 df=None, rule="", headline=False),
        dict(stochastic, predicted=K("value"), measured=K("value"), excess=real(), excess_se=nonneg(none_ok=True)),
        drop={**measured_drop, "excess": NON_FINITE, "excess_se": NON_FINITE}, func=Comparison.bound)
    add("Comparison.consistency", dict(name="identity", predicted=0.0, measured=0.01, se=0.02, df=None, rule="",
                                       headline=False),
        dict(stochastic, predicted=real()), drop=measured_drop, func=Comparison.consistency)
    add("Comparison.from_json", dict(d=C_EQ.to_json()), dict(d=K("mapping", extra=(
        ("no name", {k: v for k, v in C_EQ.to_json().items() if k != "name"}),
        ("bad kind", dict(C_EQ.to_json(), kind="x")),
        ("passed as text", dict(C_EXACT.to_json(), outcome=None, passed="no")),
        ("p_fail as text", dict(C_EQ.to_json(), p_fail="abc"))))), func=Comparison.from_json)
    ctx_kw = dict(profile="smoke", seed=0, report_dir=None, cache_dir=None, device="cpu", n_jobs=1, executor="local",
                  scheduler=None, check_id="", seeds_used=[])
    add("CheckContext", ctx_kw, dict(
        profile=choice(*context.PROFILES), seed=integer(0, 2**63 - 1), report_dir=K("path", none_ok=True),
        cache_dir=K("path", none_ok=True), device=choice("cpu", "cuda", "cuda:0", extra=(("bad index", "cuda:x"),)),
        n_jobs=integer(1, 1024, extra=(("-2", -2),)), executor=choice(*context.EXECUTORS),
        scheduler=K("text", none_ok=True), check_id=TEXT),
        drop={"device": frozenset({"unknown", "list"})})  # "cuda" is a valid format (the CLI checks availability)
    ctx = CheckContext(profile="smoke", check_id="A1", cache_dir=TMP / "cache", report_dir=TMP / "figs")
    add("CheckContext.seed_for", dict(key="x"), dict(key=K("seed_key")), func=lambda key: ctx.seed_for("a", key),
        named={"key": "keys"})
    add("CheckContext.design_seed", dict(key=3), dict(key=K("seed_key")), func=lambda key: ctx.design_seed(key),
        named={"key": "keys"})

    def progress(description, total):
        with ctx.progress(description, total) as bar:
            bar.advance(1)

    add("CheckContext.progress", dict(description="cells", total=3), dict(description=TEXT, total=integer(0)),
        func=progress)
    add("CheckContext.cache_key", dict(name="mc", key={"n": 8}, version=""),
        dict(name=NAME, key=K("cells"), version=TEXT), func=ctx.cache_key)
    cached_kw = dict(name="mc", key={"n": 8}, compute=lambda: {"x": np.ones(2)}, version="")
    add("CheckContext.cached", cached_kw, dict(name=NAME, key=K("cells"), version=TEXT), func=ctx.cached)
    no_cache = CheckContext(profile="smoke", check_id="A1")  # compute runs on every call (a disk hit would not)
    add("CheckContext.cached[no cache]", cached_kw, dict(compute=K("compute")), func=no_cache.cached)
    add("CheckContext.save_figure", dict(fig=SAVED_FIG, name="panel"), dict(fig=K("figure"), name=K("stem")),
        func=lambda fig, name: ctx.save_figure(fig, name))
    add("with_key", dict(comparisons=[C_EQ]), dict(comparisons=K("comparisons")))


def _verdicts_cases(add: Callable[..., None]) -> None:
    """verify.verdicts: the tests behind the verdicts and the judge."""
    add("holm", dict(p_values=[0.001, 0.2], alpha=0.01),
        dict(p_values=real(0, 1, array=True, ndim=1), alpha=ALPHA), drop={"p_values": frozenset({"empty"})})
    add("judge", dict(comparisons=[Comparison.equivalence("s", 0.0, 0.0, 0.01, 0.03)], alpha=0.01),
        dict(comparisons=K("comparisons"), alpha=ALPHA))
    add("judged", dict(comparisons=[Comparison.equivalence("s", 0.0, 0.0, 0.01, 0.03)], alpha=0.01),
        dict(comparisons=K("comparisons"), alpha=ALPHA))


def _parts() -> dict[str, Callable[..., Any]]:
    return dict(design=lambda ctx: 1, simulate=lambda ctx, d: 2, judge=lambda d, p, m: [C_EXACT],
                describe=lambda d, p, m, c: ("notes", {}))


def _claim_cases(add: Callable[..., None]) -> None:
    """verify.claim: selecting, running and registering claims."""
    def register(claim_):
        with _registry():
            return claim.register(claim_)

    add("register", dict(claim_=SPEC), dict(claim_=K("claim")), func=register, named={"claim_": "claim"})
    add("select", dict(ids=["A1"]), dict(ids=K("strings", none_ok=True, extra=(("unknown", ["Z9"]),))))
    add("claim_of", dict(claim_id="A1"), dict(claim_id=K("name", extra=(("unknown", "Z9"),))))
    add("run_check", dict(claim=SPEC, ctx=CheckContext(profile="smoke")), dict(claim=K("spec"), ctx=K("context")))


def _calibrate_cases(add: Callable[..., None]) -> None:
    """verify.calibrate: its command line (``verify.cli.calibrate_main``)."""
    from verify.cli import calibrate_main

    def main(argv):
        with _registry(A1=_ok, A2=_ok):
            return calibrate_main(argv)

    add("main", dict(argv=["--profile", "smoke", "--only", "A1", "--seeds", "2", "--out", str(TMP / "cal_main"),
                           "--cache-dir", "none"]), dict(argv=K("argv")), func=main, module="calibrate")


def _compare_cases(add: Callable[..., None]) -> None:
    """verify.compare: two stored reports, comparison by comparison."""
    report_file = TMP / "compare_report.json"
    report_file.write_text(json.dumps({"results": [RESULT.to_json()]}))
    stored = [RESULT.to_json()]
    no_empty = {"old": frozenset({"empty"}), "new": frozenset({"empty"})}  # two empty reports compare: identical
    add("load_report", dict(path=report_file), dict(path=K("path", extra=(("missing file", TMP / "missing.json"),
                                                                           ("a directory", TMP)))))
    add("compare_reports", dict(old=stored, new=stored, rtol=0.0),
        dict(old=K("records"), new=K("records"), rtol=real(0, 1)), drop=no_empty)

    def main(argv):
        return compare.main(argv)

    add("main", dict(argv=[str(report_file), str(report_file)]), dict(argv=K("argv")), func=main, module="compare")


def _notebook_cases(add: Callable[..., None]) -> None:
    """verify.notebook: ``run`` (on a stand-in registry: the valid call costs nothing)."""

    def run(**kw):
        with _registry(A1=_ok):
            return notebook.run(**kw)

    add("run", dict(ids="A1", profile="smoke", seed=0, cache_dir=None, jobs=1, device="cpu", executor="local",
                    scheduler=None, figures=False, progress=False, budget=None, rounds=None),
        dict(ids=K("text", none_ok=True), profile=choice(*context.PROFILES), seed=integer(0, validation.MAX_SEED),
             cache_dir=K("path", none_ok=True), jobs=integer(1, validation.MAX_JOBS, none_ok=True),
             device=choice("cpu", "cuda", "cuda:0"), executor=choice(*context.EXECUTORS),
             scheduler=K("text", none_ok=True), figures=FLAG, progress=FLAG, budget=pos(none_ok=True),
             rounds=integer(0, 20, none_ok=True)),
        func=run, module="notebook", drop={"device": frozenset({"unknown", "list"})})


def _cases() -> list[Case]:
    cases: list[Case] = []
    homes = {"verdicts": verdicts, "claim": claim, "calibrate": calibrate, "compare": compare, "notebook": notebook,
             "results": results, "context": context}

    def add(label, kwargs, args, path=None, func=None, module=None, **kw):
        name = (path or label).split("[")[0]
        mod = module or next((m for m, obj in homes.items() if name in _public(obj)), None)
        f = func if func is not None else getattr(homes.get(mod), name, None) if mod else None
        if f is not None:
            cases.append(Case(label, mod or "claim", f, kwargs, args, **kw))

    for part in (_results_cases, _verdicts_cases, _claim_cases, _calibrate_cases, _compare_cases, _notebook_cases):
        part(add)
    return cases


def _public(module: Any) -> set[str]:
    """The public callables of a module: its ``__all__``, or its public functions and classes (exceptions left out)."""
    names = getattr(module, "__all__", None) or [n for n, v in vars(module).items() if not n.startswith("_")
                                                 and callable(v) and getattr(v, "__module__", "") == module.__name__]
    return {n for n in names if callable(getattr(module, n))
            and not (isinstance(getattr(module, n), type) and issubclass(getattr(module, n), BaseException))}
