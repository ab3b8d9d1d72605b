"""Registry of checks: one per claim id (docs/claims.md).

A check is a function ``f(ctx: CheckContext) -> Outcome``, registered with :func:`check`.
Claims without a registered function are reported as ``NOT IMPLEMENTED`` (never PASS).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import math
import os
import re
import threading
import time
import traceback
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from theory._validation import ArgumentTypeError, as_float, describe

from .claims import CLAIMS, STUDIES


class Verdict(str, Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"  # neither the claim nor its violation is established at the stated levels
    ERROR = "ERROR"  # the check raised: counts as a failure
    INFO = "INFO"  # informational check: reported, never decides the exit status
    NOT_IMPLEMENTED = "NOT IMPLEMENTED"


@dataclass(frozen=True)
class Comparison:
    """One prediction-vs-measurement line of a check, with the statistical test that judges it.

    Parameters
    ----------
    name : what is compared (e.g. ``"slope P=3"``).
    predicted : the theory value (number or short text).
    measured : the measured value (number or short text).
    uncertainty : standard error of ``measured`` (``None`` when exact).
    tolerance : the rule, in words with its numbers.
    passed : for ``kind="exact"``: whether the deterministic statement holds.  For the other kinds it is
        ``outcome == "PASS"`` of a judged copy (:func:`verify.verdicts.judged`).
    kind : one of :data:`verify.verdicts.KINDS` (default ``"exact"``).
    p_fail : p-value of the test whose rejection FAILS the comparison (null hypothesis: the claim holds).
    p_pass : p-value of the evidence test behind PASS (null: the claim fails); ``None`` for ``bound`` and
        ``consistency`` comparisons, which pass unless rejected.
    margin : equivalence margin (``kind="equivalence"``).
    df : degrees of freedom of the test statistic (``None``: normal).
    decide_factor : for an undecided comparison, how many times the current data would decide it.
    outcome : ``PASS`` / ``FAIL`` / ``INCONCLUSIVE`` on the judged copies that :func:`verify.verdicts.judged` returns
        (``""`` on a stochastic comparison not yet judged; an exact one carries its outcome from construction).
    headline : the comparison shown for the check in compact tables and tracked by ``calibrate``.

    Use the constructors :meth:`equivalence`, :meth:`direction`, :meth:`bound`, :meth:`consistency` for
    stochastic comparisons; the plain constructor builds an exact one.

    Fields are checked on construction (``TypeError`` / ``ValueError`` naming the field): ``passed`` and
    ``headline`` real booleans; ``predicted`` / ``measured`` numbers, strings, bools, ``None``, sympy expressions
    or lists of those; ``uncertainty`` ``None`` or ``>= 0``; ``p_fail`` / ``p_pass`` in ``[0, 1]``; ``margin`` finite
    ``> 0``; ``df > 0`` (``inf``: normal).  A measurement may be NaN or infinite (``measured``, ``uncertainty``, a
    NaN p-value): it is judged FAIL, never a silent PASS.

    A comparison is immutable (a row of the check's evidence table): judging returns new comparisons and leaves
    the judged ones as they were.
    """

    name: str
    predicted: Any
    measured: Any
    uncertainty: Any
    tolerance: str
    passed: bool
    kind: str = "exact"
    p_fail: float | None = None
    p_pass: float | None = None
    margin: float | None = None
    df: float | None = None
    decide_factor: float | None = None
    outcome: str = ""
    headline: bool = False

    def __post_init__(self) -> None:
        from .verdicts import KINDS

        def put(name: str, value: Any) -> None:  # normalised fields of a frozen instance
            object.__setattr__(self, name, value)

        put("passed", _as_bool("passed", self.passed))  # numpy / sympy booleans -> a plain bool (JSON true/false)
        put("headline", _as_bool("headline", self.headline))
        if not isinstance(self.kind, str) or self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {describe(self.kind)}")
        for fname in ("name", "tolerance", "outcome"):
            _check_text(fname, getattr(self, fname))
        if self.outcome not in ("", "PASS", "FAIL", "INCONCLUSIVE"):
            raise ValueError(f"outcome must be '', 'PASS', 'FAIL' or 'INCONCLUSIVE', got {self.outcome!r}")
        _check_value("predicted", self.predicted)
        _check_value("measured", self.measured)
        if self.uncertainty is not None:
            _measurement("uncertainty", self.uncertainty, low=0.0)
        for fname in ("p_fail", "p_pass"):  # NaN: the test could not be computed (judged FAIL)
            put(fname, _optional_real(fname, getattr(self, fname), 0.0, 1.0, nan_ok=True))
        put("margin", _optional_real("margin", self.margin, 0.0, math.inf, low_open=True))
        put("df", _optional_real("df", self.df, 0.0, math.inf, low_open=True, inf_ok=True))
        put("decide_factor", _optional_real("decide_factor", self.decide_factor, 0.0, math.inf))
        if self.kind == "exact" and not self.outcome:
            put("outcome", "PASS" if self.passed else "FAIL")

    @property
    def exact_ok(self) -> bool:
        """For ``kind="exact"``: whether the deterministic statement holds (``passed``)."""
        return self.passed

    def to_json(self) -> dict:
        return {k: _jsonable(v) for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Comparison":
        """Rebuild a comparison from its :meth:`to_json` form (to judge stored results again).

        ``d`` must hold ``name``, ``predicted``, ``measured``, ``uncertainty``, ``tolerance`` and ``passed``; the
        fields are checked as by the constructor (a message names ``d`` and the field).
        """
        d = _check_mapping("d", d)
        keys = ("name", "predicted", "measured", "uncertainty", "tolerance", "passed", "kind", "p_fail", "p_pass",
                "margin", "df", "decide_factor", "headline")
        missing = [k for k in keys[:6] if k not in d]
        if missing:
            raise ValueError(f"d must be a stored comparison (Comparison.to_json), got one without {missing}")
        kw = {k: d[k] for k in keys if k in d}
        for k in ("p_fail", "p_pass", "margin", "df", "decide_factor"):
            if isinstance(kw.get(k), str):  # non-finite floats are stored as text
                if kw[k] not in ("nan", "inf", "-inf"):
                    raise ValueError(f"d['{k}'] must be a number, None or 'nan' / 'inf' / '-inf', got {kw[k]!r}")
                kw[k] = float(kw[k])
        kw.setdefault("kind", "exact")
        kw["headline"] = _as_bool("d['headline']", kw.get("headline", False))
        if kw["kind"] == "exact":
            outcome = d["outcome"] if "outcome" in d else ("PASS" if _as_bool("d['passed']", d["passed"]) else "FAIL")
            kw["passed"] = _check_text("d['outcome']", outcome) == "PASS"
        try:
            return cls(**kw)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"d (a stored comparison): {exc}") from None

    # ------------------------------------------------------------------ stochastic constructors
    @classmethod
    def equivalence(cls, name: str, predicted: float, measured: float, se: float, margin: float, *,
                    df: float | None = None, rule: str = "", **kw: Any) -> "Comparison":
        """``|measured - predicted| < margin`` as an equivalence test (TOST for PASS; beyond the margin for FAIL).

        ``predicted`` and ``margin > 0`` are finite numbers of the design; ``measured`` and ``se >= 0`` may be NaN
        or infinite (a failed measurement: the p-values are NaN and the comparison FAILS).
        """
        from .verdicts import ALPHA_PASS, equivalence_p, scale_to_decide

        _check_text("rule", rule)
        x_pred, x_meas = as_float("predicted", predicted), _measurement("measured", measured)
        se, df = _measurement("se", se, low=0.0), _check_df(df)
        margin = as_float("margin", margin, low=0, low_open=True)
        delta = x_meas - x_pred
        measurable = math.isfinite(delta) and math.isfinite(se)
        p_pass, p_fail = equivalence_p(delta, se, margin, df) if measurable else (math.nan, math.nan)
        from scipy import stats as _st

        q = float((_st.norm if df is None else _st.t(df)).isf(ALPHA_PASS))
        lo, hi = delta - q * se, delta + q * se
        tol = (f"equivalence, margin {margin:g}: PASS iff the {1 - 2 * ALPHA_PASS:.0%} interval of measured - "
               f"predicted [{lo:+.4f}, {hi:+.4f}] lies inside +-{margin:g} (TOST p = {p_pass:.2g}); FAIL iff "
               f"|difference| > {margin:g} is significant (p = {p_fail:.2g}, Holm within the check)"
               + (f", df = {df:.1f}" if df is not None else "") + (f"; {rule}" if rule else ""))
        return cls(name=name, predicted=predicted, measured=measured, uncertainty=se, tolerance=tol,
                   passed=False, kind="equivalence", p_fail=p_fail, p_pass=p_pass, margin=margin, df=df,
                   decide_factor=scale_to_decide(delta, se, margin, "equivalence") if measurable else None, **kw)

    @classmethod
    def direction(cls, name: str, predicted: Any, measured: float, se: float, sign: int, *,
                  reference: float = 0.0, df: float | None = None, rule: str = "", **kw: Any) -> "Comparison":
        """``sign * (measured - reference) > 0``: PASS when significant at ALPHA_PASS, FAIL when the opposite is.

        ``sign`` is ``+1`` or ``-1`` and ``reference`` a finite number; ``measured`` and ``se >= 0`` may be NaN or
        infinite (a failed measurement: FAIL).
        """
        from .verdicts import _check_sign, direction_p, scale_to_decide

        _check_text("rule", rule)
        sign, reference = _check_sign(sign), as_float("reference", reference)
        x_meas, se, df = _measurement("measured", measured), _measurement("se", se, low=0.0), _check_df(df)
        delta = x_meas - reference
        measurable = math.isfinite(delta) and math.isfinite(se)
        p_pass, p_fail = direction_p(delta, se, sign, df) if measurable else (math.nan, math.nan)
        tol = (f"direction: claim {'>' if sign > 0 else '<'} {reference:g}; z = {delta / se if se > 0 else float('inf'):.2f} "
               f"(p_pass = {p_pass:.2g}; FAIL iff the opposite sign is significant, p = {p_fail:.2g}, Holm)"
               + (f", df = {df:.1f}" if df is not None else "") + (f"; {rule}" if rule else ""))
        return cls(name=name, predicted=predicted, measured=measured, uncertainty=se, tolerance=tol,
                   passed=False, kind="direction", p_fail=p_fail, p_pass=p_pass, df=df,
                   decide_factor=scale_to_decide(delta, se, None, "direction") if measurable else None, **kw)

    @classmethod
    def bound(cls, name: str, predicted: Any, measured: Any, se: float, excess: float, *, excess_se: float | None = None,
              df: float | None = None, rule: str = "", **kw: Any) -> "Comparison":
        """A one-sided bound ``excess <= 0`` (statistic minus its allowed maximum); PASS unless violated significantly.

        ``se``, ``excess`` and ``excess_se`` (``>= 0``) may be NaN or infinite (a failed measurement: FAIL).
        """
        from .verdicts import bound_p

        _check_text("rule", rule)
        se, excess = _measurement("se", se, low=0.0), _measurement("excess", excess)
        s = se if excess_se is None else _measurement("excess_se", excess_se, low=0.0)
        df = _check_df(df)
        p_fail = bound_p(excess, s, df) if math.isfinite(excess) and math.isfinite(s) else math.nan
        tol = (rule + "; " if rule else "") + f"bound: FAIL iff the excess {excess:+.3g} is significant (z = " \
            f"{excess / s if s > 0 else float('inf'):.2f}, p = {p_fail:.2g}, Holm within the check)"
        return cls(name=name, predicted=predicted, measured=measured, uncertainty=se, tolerance=tol,
                   passed=False, kind="bound", p_fail=p_fail, df=df, **kw)

    @classmethod
    def consistency(cls, name: str, predicted: float, measured: float, se: float, *, df: float | None = None,
                    rule: str = "", **kw: Any) -> "Comparison":
        """An identity measured with noise: two-sided test of ``measured == predicted``.

        ``predicted`` is a finite number; ``measured`` and ``se >= 0`` may be NaN or infinite (FAIL).
        """
        from .verdicts import consistency_p

        _check_text("rule", rule)
        x_pred, x_meas = as_float("predicted", predicted), _measurement("measured", measured)
        se, df = _measurement("se", se, low=0.0), _check_df(df)
        delta = x_meas - x_pred
        p_fail = consistency_p(delta, se, df) if math.isfinite(delta) and math.isfinite(se) else math.nan
        tol = (rule + "; " if rule else "") + f"identity: FAIL iff |measured - predicted| is significant " \
            f"(z = {delta / se if se > 0 else float('inf'):.2f}, two-sided p = {p_fail:.2g}, Holm within the check)"
        return cls(name=name, predicted=predicted, measured=measured, uncertainty=se, tolerance=tol,
                   passed=False, kind="consistency", p_fail=p_fail, df=df, **kw)


@dataclass
class Outcome:
    """What a check function returns: its comparisons (a list of :class:`Comparison`), notes (text), the paths of
    its figures, data (a mapping with string keys, written to the JSON report), whether it is informational and,
    from :meth:`verify.claim.Claim.run`, the verdict it judged the comparisons to (``None``: not judged yet; the
    registry judges them).  Fields are checked on construction (``TypeError`` naming the field)."""

    comparisons: list[Comparison]
    notes: str = ""
    figures: list[str] = field(default_factory=list)
    data: dict = field(default_factory=dict)
    informational: bool = False
    verdict: str | None = None

    def __post_init__(self) -> None:
        self.comparisons = _check_items("comparisons", self.comparisons, Comparison, "Comparison objects")
        _check_text("notes", self.notes)
        self.figures = _check_paths("figures", self.figures)
        self.data = _check_mapping("data", self.data)
        self.informational = _as_bool("informational", self.informational)
        if self.verdict is not None:
            if self.verdict not in ("PASS", "FAIL", "INCONCLUSIVE", "INFO"):
                raise ValueError(f"verdict must be None or one of 'PASS', 'FAIL', 'INCONCLUSIVE', 'INFO', got "
                                 f"{describe(self.verdict)}")
            if any(not c.outcome for c in self.comparisons):
                raise ValueError("a judged outcome (verdict given) must hold judged comparisons (verify.verdicts."
                                 "judged), got one without an outcome")


@dataclass
class CheckResult:
    id: str
    paper: str
    claim: str
    verdict: Verdict
    comparisons: list[Comparison] = field(default_factory=list)
    runtime_s: float = 0.0
    seeds: list[int] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    notes: str = ""
    error: str | None = None
    data: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Fields checked like :class:`Outcome`'s; ``verdict`` may be given as its value (``"PASS"``)."""
        _check_text("id", self.id, empty=False)
        _check_text("paper", self.paper)
        _check_text("claim", self.claim)
        self.verdict = _check_verdict("verdict", self.verdict)
        self.comparisons = _check_items("comparisons", self.comparisons, Comparison, "Comparison objects")
        self.runtime_s = as_float("runtime_s", self.runtime_s, low=0)
        self.seeds = _check_seeds("seeds", self.seeds)
        self.figures = _check_paths("figures", self.figures)
        _check_text("notes", self.notes)
        _check_text("error", self.error, none_ok=True)
        self.data = _check_mapping("data", self.data)

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "paper": self.paper,
            "claim": self.claim,
            "verdict": self.verdict.value,
            "comparisons": [c.to_json() for c in self.comparisons],
            "runtime_s": round(self.runtime_s, 4),
            "seeds": list(self.seeds),
            "figures": list(self.figures),
            "notes": self.notes,
            "error": self.error,
            "data": _jsonable(self.data),
        }


#: the profiles of every check: ``smoke`` (tests only: tiny sizes, verdicts meaningless), ``quick`` (the default
#: report, minutes), ``paper`` (the papers' scale).  :class:`CheckContext` refuses any other name.
PROFILES = ("smoke", "quick", "paper")

#: part of every :meth:`CheckContext.cached` key; bump it when the numerics behind cached cells change
#: meaning (not for rounding-level changes), to invalidate every stored cell at once.
CACHE_VERSION = "1"


#: where sweep cells run (:attr:`CheckContext.executor`, :func:`numerics.sweep.run_sweep`)
EXECUTORS = ("local", "dask")


class _NullProgress:
    def advance(self, n: int = 1) -> None:  # noqa: D401 - trivial
        pass


@dataclass
class CheckContext:
    """What a check gets: profile, seeds, where to write figures, progress reporting.

    ``seed_for(*keys)`` derives a reproducible integer seed from the run's base seed and the keys,
    and records it, so that every report lists the seeds actually used.

    Fields are validated on construction (``ValueError`` / ``TypeError`` naming the field): ``profile`` one of
    :data:`PROFILES`; ``seed`` an integer ``>= 0`` (not a bool, not a float); ``n_jobs`` an integer ``>= 1``, or
    ``-1`` for all cores (stored as ``os.cpu_count()``, so that every check sees the same positive count);
    ``device`` ``"cpu"``, ``"cuda"`` or ``"cuda:<k>"``; ``executor`` one of :data:`EXECUTORS`; ``scheduler``
    ``None`` or an address; ``report_dir`` / ``cache_dir`` ``None`` or a path (stored as :class:`~pathlib.Path`).
    """

    profile: str = "quick"
    seed: int = 0
    report_dir: Path | None = None
    cache_dir: Path | None = None
    device: str = "cpu"
    n_jobs: int = 2
    executor: str = "local"
    scheduler: str | None = None
    check_id: str = ""
    seeds_used: list[int] = field(default_factory=list)
    _progress_factory: Callable[[str, int], Any] | None = None
    #: the run's in-memory cells without a cache directory (:meth:`cached`), shared by its checks; None: none kept
    memo: dict | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.profile, str) or self.profile not in PROFILES:
            raise ValueError(f"profile must be one of {PROFILES}, got {self.profile!r}")
        self.seed = _check_int("seed", self.seed, 0, MAX_SEED)
        self.n_jobs = _check_n_jobs(self.n_jobs)
        self.device = _check_device(self.device)
        if not isinstance(self.executor, str) or self.executor not in EXECUTORS:
            raise ValueError(f"executor must be one of {EXECUTORS}, got {self.executor!r}")
        if self.scheduler is not None and not isinstance(self.scheduler, str):
            raise TypeError(f"scheduler must be None or an address string, got {type(self.scheduler).__name__}")
        self.report_dir = _check_dir("report_dir", self.report_dir)
        self.cache_dir = _check_dir("cache_dir", self.cache_dir)
        _check_text("check_id", self.check_id)
        self.seeds_used = _check_seeds("seeds_used", self.seeds_used)
        _check_callable("_progress_factory", self._progress_factory, none_ok=True)
        if self.memo is not None and not isinstance(self.memo, dict):
            raise TypeError(f"memo must be None or a dict, got {type(self.memo).__name__}")

    @property
    def quick(self) -> bool:
        """True for the quick and smoke profiles (the reduced sizes)."""
        return self.profile != "paper"

    def seed_for(self, *keys: Any) -> int:
        """Seed of one random draw of this run: hash of the base seed, the check id and ``keys``.

        ``keys`` must be integers and strings of the design (or literal design constants): never a computed
        float, whose last bits may depend on the machine.
        """
        text = "|".join([str(self.seed), self.check_id, *map(_seed_text, keys)])
        s = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
        self.seeds_used.append(s)
        return s

    def borrowing(self, lender: str) -> "CheckContext":
        """This context with the seeds and the cache entries of check ``lender``: reads another check's draws.

        Two checks that simulate the same cells (B4 reads B7's structured Monte Carlo) then draw them once:
        ``seed_for`` and ``cached`` of the returned context hash ``lender`` instead of this check's id, so the
        entries are the lender's own (on disk, or in this process's memo without a cache directory).  The seeds
        are still recorded in this check's report (the list is shared); progress stays this check's.
        """
        _check_text("lender", lender, empty=False)
        out = dataclasses.replace(self, check_id=lender)
        out.seeds_used = self.seeds_used
        return out

    def design_seed(self, *keys: Any) -> int:
        """Seed of a part of the DESIGN (a ground truth, a pilot calculation): the same for every base seed.

        A run's base seed redraws the data; the design (which truth, which noise level) stays fixed, so that
        verdicts at different seeds are replicates of one experiment and their spread measures the data's
        noise only (what ``calibrate`` compares with the reported standard errors).
        """
        text = "|".join(["design", self.check_id, *map(_seed_text, keys)])
        s = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
        self.seeds_used.append(s)
        return s

    @contextlib.contextmanager
    def progress(self, description: str, total: int) -> Iterator[Any]:
        """Context manager yielding an object with ``advance(n=1)``: ``description`` a string, ``total`` an integer
        ``>= 0`` (the number of steps)."""
        _check_text("description", description)
        total = _check_int("total", total, 0, MAX_SEED)
        if self._progress_factory is None:
            yield _NullProgress()
            return
        with self._progress_factory(f"{self.check_id}: {description}", total) as p:
            yield p

    def cache_key(self, name: str, key: Mapping[str, Any], version: str = "") -> str:
        """Stable SHA-256 key of one cached cell (see :meth:`cached`); 64 hex digits.

        Hashes the check id, ``name``, the key dict, the base seed, the profile, the device and
        ``CACHE_VERSION`` + ``version`` through :func:`numerics.sweep.cache_key` (canonical JSON).
        """
        from numerics.sweep import cache_key

        _check_text("name", name, empty=False)
        key = _check_json("key", key)
        _check_text("version", version)
        cell = {"check": self.check_id, "name": str(name), "key": dict(key), "profile": self.profile,
                "device": str(self.device)}
        # ``CheckContext.cached`` only names the kind of entry (the computation is ``compute``): its code stays out;
        # the original method (:data:`_ENTRY_KIND`), so that a wrapped ``cached`` keeps the keys
        return cache_key(_ENTRY_KIND, cell, int(self.seed), version=f"{CACHE_VERSION}/{version}", source=False)

    def cached(
        self,
        name: str,
        key: Mapping[str, Any],
        compute: Callable[[], Mapping[str, Any]],
        version: str = "",
    ) -> dict[str, Any]:
        """Disk memo of one Monte Carlo cell: ``compute()`` once, later runs read it back.

        The result (a dict of arrays) is stored as ``<cache_dir>/<check_id>/<key>.npz``, ``key`` from
        :meth:`cache_key` (check id, ``name``, the JSON-serialisable ``key`` dict - it must name
        everything the cell depends on, seed included - base seed, profile, device, version). The
        file is written to a temporary name and renamed (atomic), so an interrupted run leaves
        either a complete entry or none; a rerun recomputes only the missing cells. ``cache_dir=None``
        computes every time, or once per run when the run shares a ``memo`` (``python -m verify`` and ``calibrate``
        do, one per run / seed): a cell borrowed by another check (:meth:`borrowing`) is then still drawn once.
        Cached values are the float64 arrays bit for bit, so the cache never changes a result.

        Every entry stores its key (the hash, and the check id, name, key dict, version, profile, device and
        seed as JSON) and the SHA-256 of its arrays; a read verifies both.  An entry that fails - unreadable or
        truncated, another cell's file (a foreign key), altered values (checksum mismatch), no arrays - is
        recomputed and rewritten with a :class:`numerics.sweep.CacheIntegrityWarning`.  Entries written before
        checksums were stored (only ``__key__``) are accepted when their key matches, and rewritten with a
        checksum.  The cell is computed under a file lock (:func:`numerics.sweep.cell_lock`): a second run on
        the same cache directory waits for it and reads it back instead of computing it again.

        Parameters
        ----------
        name : short name of the cell kind (e.g. ``"mc"``).
        key : JSON-serialisable mapping (numbers, strings, lists, numpy scalars / arrays).
        compute : zero-argument callable returning a mapping of names to array-likes
            (numeric, no objects).
        version : extra version string for this cell kind.

        Returns
        -------
        dict of name -> ndarray
        """
        _check_callable("compute", compute)
        h = self.cache_key(name, key, version)  # checks name, key and version
        if self.cache_dir is None or (self.memo is not None and h in self.memo):
            return _memoised(self.memo, h, compute)
        path = Path(self.cache_dir) / (self.check_id or "_") / f"{h}.npz"
        meta = self._cache_meta(name, key, version)
        hit = _npz_read(path, h, meta)
        if hit is not None:
            return hit
        with _claim(path):
            hit = _npz_read(path, h, meta, warn=False)  # another run may have computed it meanwhile
            if hit is not None:
                return hit
            out = _computed(compute)
            try:
                _npz_write(path, h, meta, out)
            except OSError as exc:  # a full disk, a read-only directory: warn once, keep the cell in memory
                from numerics.sweep import cache_unwritable

                cache_unwritable(self.cache_dir, exc)
                if self.memo is not None:
                    self.memo[h] = out
                    return {k: v.copy() for k, v in out.items()}
        return out

    def _cache_meta(self, name: str, key: Mapping[str, Any], version: str) -> str:
        """The key fields of a cached cell as canonical JSON (stored in the entry, compared on read)."""
        import json

        from numerics.sweep import to_jsonable

        fields = {"check": self.check_id, "name": str(name), "key": to_jsonable(dict(key)), "profile": self.profile,
                  "device": str(self.device), "seed": int(self.seed), "version": f"{CACHE_VERSION}/{version}"}
        return json.dumps(fields, sort_keys=True, separators=(",", ":"), allow_nan=True)

    def save_figure(self, fig: Any, name: str) -> str | None:
        """Save a matplotlib figure as ``<report_dir>/<check_id>_<name>.png``; return the path or None."""
        import matplotlib.pyplot as plt
        from matplotlib.figure import Figure

        if not isinstance(fig, Figure):
            raise ArgumentTypeError(f"fig must be a matplotlib Figure, got {describe(fig)} ({type(fig).__name__})")
        _check_stem("name", name)
        try:
            if self.report_dir is None:
                return None
            self.report_dir.mkdir(parents=True, exist_ok=True)
            path = self.report_dir / f"{self.check_id}_{name}.png"
            fig.savefig(path, dpi=110, bbox_inches="tight")
            return str(path)
        finally:
            plt.close(fig)


#: what names a report cache entry in its key (the method as defined, even when a caller wraps it)
_ENTRY_KIND = CheckContext.cached


def _memoised(memo: dict | None, h: str, compute: Callable[[], Mapping[str, Any]]) -> dict[str, Any]:
    """:func:`_computed`, once per key in the run's ``memo`` (``cache_dir=None``; ``None``: every time); copies
    out, so that a caller cannot alter what the next reader gets."""
    if memo is None:
        return _computed(compute)
    if h not in memo:
        memo[h] = _computed(compute)
    return {k: v.copy() for k, v in memo[h].items()}


def _computed(compute: Callable[[], Mapping[str, Any]]) -> dict[str, Any]:
    """``compute()`` of :meth:`CheckContext.cached` as a dict of numeric arrays (names not starting with ``__``)."""
    import numpy as np

    out = compute()
    if not isinstance(out, Mapping):
        raise ArgumentTypeError(f"compute must return a mapping of names to numeric arrays, got {describe(out)}")
    arrays = {}
    for k, v in out.items():
        a = np.asarray(v) if isinstance(k, str) and not k.startswith("__") else None
        if a is None or a.dtype.kind not in "biufc":
            raise ValueError(f"compute must return numeric arrays under names (strings) not starting with '__', got "
                             f"{describe(k)}: {describe(v)}")
        arrays[k] = a
    return arrays


@dataclass(frozen=True)
class CheckSpec:
    id: str
    paper: str
    claim: str
    func: Callable[[CheckContext], Outcome] | None

    def __post_init__(self) -> None:
        _check_text("id", self.id, empty=False)
        _check_text("paper", self.paper)
        _check_text("claim", self.claim)
        _check_callable("func", self.func, none_ok=True)

    @property
    def implemented(self) -> bool:
        return self.func is not None


_REGISTRY: dict[str, Callable[[CheckContext], Outcome]] = {}


def check(claim_id: str) -> Callable[[Callable[[CheckContext], Outcome]], Callable[[CheckContext], Outcome]]:
    """Decorator registering ``func`` as the check of ``claim_id`` (an id of :data:`CLAIMS` or :data:`STUDIES`)."""
    _check_text("claim_id", claim_id)
    if claim_id not in CLAIMS and claim_id not in STUDIES:
        raise ValueError(f"claim_id must be one of {sorted(CLAIMS) + sorted(STUDIES)}, got {claim_id!r}")

    def deco(func: Callable[[CheckContext], Outcome]) -> Callable[[CheckContext], Outcome]:
        _check_callable("func", func)
        if claim_id in _REGISTRY and _REGISTRY[claim_id] is not func:
            raise ValueError(f"a check for {claim_id} is already registered")
        _REGISTRY[claim_id] = func
        return func

    return deco


def run_check(spec: CheckSpec, ctx: CheckContext) -> CheckResult:
    """Run one check; exceptions become an ERROR verdict with the traceback in ``error``."""
    if not isinstance(spec, CheckSpec):
        raise ArgumentTypeError(f"spec must be a CheckSpec, got {describe(spec)} ({type(spec).__name__})")
    if not isinstance(ctx, CheckContext):
        raise ArgumentTypeError(f"ctx must be a CheckContext, got {describe(ctx)} ({type(ctx).__name__})")
    res = CheckResult(id=spec.id, paper=spec.paper, claim=spec.claim, verdict=Verdict.NOT_IMPLEMENTED)
    if spec.func is None:
        return res
    ctx.check_id = spec.id
    ctx.seeds_used = []
    t0 = time.perf_counter()
    try:
        out = spec.func(ctx)
        res.comparisons = list(out.comparisons)
        res.notes = out.notes
        res.figures = list(out.figures)
        res.data = dict(out.data)
        if out.verdict is None:  # a plain check function: judged here
            res.verdict = judge_outcome(spec.id, res.comparisons, informational=out.informational)
            res.comparisons = _judged_comparisons(res.comparisons)
        elif out.informational or spec.id in STUDIES:
            res.verdict = Verdict.INFO
        else:
            res.verdict = Verdict(out.verdict) if res.comparisons else Verdict.FAIL
        if not res.comparisons and res.verdict is Verdict.FAIL:
            res.error = "the check produced no comparison"
    except Exception:  # noqa: BLE001 - reported, not hidden
        res.verdict = Verdict.ERROR
        res.error = traceback.format_exc()
    res.runtime_s = time.perf_counter() - t0
    res.seeds = list(dict.fromkeys(ctx.seeds_used))
    return res


def judge_outcome(check_id: str, comparisons: list[Comparison], informational: bool = False) -> Verdict:
    """The verdict of a check from its comparisons (:func:`verify.verdicts.judge`); pure, no simulation.

    Informational studies (:data:`STUDIES`, or ``informational``) are judged too (their comparisons get
    outcomes) but their verdict is ``INFO``; a check without comparisons FAILS.
    """
    from .verdicts import judged

    _check_text("check_id", check_id, empty=False)
    comparisons = _check_items("comparisons", comparisons, Comparison, "Comparison objects")
    informational = _as_bool("informational", informational)
    if not comparisons:
        return Verdict.INFO if informational or check_id in STUDIES else Verdict.FAIL
    v = Verdict(judged(comparisons).verdict)
    if informational or check_id in STUDIES:
        return Verdict.INFO
    return v


def _judged_comparisons(comparisons: list[Comparison]) -> list[Comparison]:
    """The judged copies of ``comparisons`` (:func:`verify.verdicts.judged`; ``[]`` stays ``[]``)."""
    from .verdicts import judged

    return list(judged(comparisons).comparisons) if comparisons else []


def rejudge_stored(result: Mapping[str, Any]) -> tuple[Verdict, list[Comparison]]:
    """Verdict and comparisons of a stored result (``CheckResult.to_json`` or a calibration record), judged
    again with the current rules: no simulation.  ERROR and NOT IMPLEMENTED stay what they were.

    ``result`` must hold ``id`` (a string), ``verdict`` (a :class:`Verdict` value) and ``comparisons`` (a list of
    stored comparisons, :meth:`Comparison.from_json`)."""
    result = _check_mapping("result", result)
    missing = [k for k in ("id", "verdict", "comparisons") if k not in result]
    if missing:
        raise ValueError(f"result must be a stored result (CheckResult.to_json or a calibration record), got one "
                         f"without {missing}")
    _check_text("result['id']", result["id"], empty=False)
    stored = _check_verdict("result['verdict']", result["verdict"]).value
    try:
        comps = [Comparison.from_json(c) for c in _check_items("result['comparisons']", result["comparisons"],
                                                                Mapping, "stored comparisons (dicts)")]
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"result['comparisons']: {exc}") from None
    if stored in (Verdict.ERROR.value, Verdict.NOT_IMPLEMENTED.value):
        return Verdict(stored), _judged_comparisons(comps)
    return (judge_outcome(result["id"], comps, informational=stored == Verdict.INFO.value),
            _judged_comparisons(comps))


def exit_status(results: list[CheckResult], strict: bool = False) -> int:
    """0 iff no selected check FAILED or raised (INFO and INCONCLUSIVE do not fail it);
    with ``strict`` INCONCLUSIVE and NOT IMPLEMENTED fail it too."""
    results = _check_items("results", results, CheckResult, "CheckResult objects")
    strict = _as_bool("strict", strict)
    bad = {Verdict.FAIL, Verdict.ERROR}
    if strict:
        bad |= {Verdict.NOT_IMPLEMENTED, Verdict.INCONCLUSIVE}
    return 1 if any(r.verdict in bad for r in results) else 0


def _as_bool(name: str, v: Any) -> bool:
    """A real boolean (Python, NumPy or sympy), never a string or a number read as truthy."""
    import numpy as np

    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    try:
        import sympy as sp

        if isinstance(v, sp.logic.boolalg.BooleanAtom):
            return bool(v)
    except ImportError:  # pragma: no cover
        pass
    raise TypeError(f"{name} must be a boolean, got {v!r} ({type(v).__name__})")


def _optional_real(name: str, v: Any, low: float, high: float, *, nan_ok: bool = False, low_open: bool = False,
                   inf_ok: bool = False) -> float | None:
    """``None``, or a real number (not a bool, not text) in ``[low, high]`` (``(low, high]`` with ``low_open``);
    NaN only with ``nan_ok`` (a p-value that could not be computed), infinities only with ``inf_ok``."""
    if v is None:
        return None
    x = _real(name, v, "None or a real number")
    if math.isnan(x):
        if nan_ok:
            return v
        raise ValueError(f"{name} must be None or a real number, got {describe(v)}")
    if math.isinf(x) and not inf_ok:
        raise ValueError(f"{name} must be None or a finite real number, got {describe(v)}")
    if not (low < x if low_open else low <= x) or not x <= high:
        raise ValueError(f"{name} must lie in {'(' if low_open else '['}{low:g}, {high:g}], got {describe(v)}")
    return v


def _real(name: str, v: Any, what: str = "a real number") -> float:
    """``float(v)`` of a real number (Python, NumPy or sympy; not a bool, not text), NaN and infinities included."""
    import numbers

    import numpy as np

    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        raise ArgumentTypeError(f"{name} must be {what}, got {describe(v)} ({type(v).__name__})")
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be {what} within the float64 range, got {describe(v)}") from None


def _measurement(name: str, v: Any, low: float | None = None) -> float:
    """A measured number (or its standard error, ``low = 0``) as a float: NaN and infinities are valid (a failed
    measurement, judged FAIL), a finite value must be ``>= low``."""
    x = _real(name, v)
    if low is not None and math.isfinite(x) and x < low:
        raise ValueError(f"{name} must be a real number >= {low:g} (NaN or inf for a failed measurement), got "
                         f"{describe(v)}")
    return x


def _check_df(df: Any) -> Any:
    """Degrees of freedom: ``None`` (normal) or a real number ``> 0`` (``inf``: normal)."""
    return _optional_real("df", df, 0.0, math.inf, low_open=True, inf_ok=True)


def _check_text(name: str, v: Any, *, empty: bool = True, none_ok: bool = False) -> str | None:
    """A string (non-empty unless ``empty``; ``None`` passes with ``none_ok``)."""
    if v is None and none_ok:
        return None
    if not isinstance(v, str):
        raise ArgumentTypeError(f"{name} must be a string{' or None' if none_ok else ''}, got {describe(v)} "
                                f"({type(v).__name__})")
    if not empty and not v:
        raise ValueError(f"{name} must be a non-empty string, got ''")
    return v


def _check_stem(name: str, v: Any) -> str:
    """A file stem: a non-empty string without path separators or NUL, not ``.`` or ``..``."""
    _check_text(name, v, empty=False)
    if any(ch in v for ch in "/\\\x00") or v in (".", ".."):
        raise ValueError(f"{name} must be a file name without '/', '\\' or NUL (a stem), got {v!r}")
    return v


def _check_value(name: str, v: Any, depth: int = 0) -> Any:
    """A value shown in a report: a real number (NaN and infinities included), a string, a bool, ``None``, a sympy
    expression, or a list / tuple of those."""
    import numbers

    import numpy as np
    import sympy as sp

    if v is None or isinstance(v, (str, bool, np.bool_, sp.Basic)):
        return v
    if isinstance(v, numbers.Real):
        return v
    if isinstance(v, (list, tuple)) and depth < 2:
        for x in v:
            _check_value(name, x, depth + 1)
        return v
    raise ArgumentTypeError(f"{name} must be a real number, a string, None or a list of those, got {describe(v)} "
                            f"({type(v).__name__})")


def _check_items(name: str, v: Any, cls: type | tuple, what: str, *, nonempty: bool = False) -> list:
    """A list (or tuple) of instances of ``cls`` as a new list; not a single instance, not a string."""
    if not isinstance(v, (list, tuple)):
        raise ArgumentTypeError(f"{name} must be a list of {what}, got {describe(v)} ({type(v).__name__})")
    bad = [x for x in v if not isinstance(x, cls)]
    if bad:
        raise ArgumentTypeError(f"{name} must be a list of {what}, got an item {describe(bad[0])} "
                                f"({type(bad[0]).__name__})")
    if nonempty and not v:
        raise ValueError(f"{name} must be a non-empty list of {what}, got []")
    return list(v)


def _check_paths(name: str, v: Any) -> list[str]:
    """A list of paths (strings or path-likes) as strings."""
    return [os.fspath(p) for p in _check_items(name, v, (str, os.PathLike), "paths (strings)")]


def _check_mapping(name: str, v: Any) -> dict:
    """A mapping with string keys, as a new dict."""
    if not isinstance(v, Mapping):
        raise ArgumentTypeError(f"{name} must be a mapping (a dict), got {describe(v)} ({type(v).__name__})")
    bad = [k for k in v if not isinstance(k, str)]
    if bad:
        raise ArgumentTypeError(f"{name} must be a mapping with string keys, got the key {describe(bad[0])}")
    return dict(v)


def _check_json(name: str, v: Any) -> dict:
    """A mapping with string keys whose values are JSON-serialisable (numbers, strings, lists, dicts, arrays)."""
    from numerics.sweep import to_jsonable

    out = _check_mapping(name, v)
    try:
        to_jsonable(out)
    except ValueError as exc:
        raise ValueError(f"{name} must be JSON-serialisable: {exc}") from None
    return out


def _check_callable(name: str, v: Any, *, none_ok: bool = False) -> Any:
    if v is None and none_ok:
        return None
    if not callable(v):
        raise ArgumentTypeError(f"{name} must be a callable{' or None' if none_ok else ''}, got {describe(v)} "
                                f"({type(v).__name__})")
    return v


#: largest seed: a non-negative 63-bit integer (the sweep runner's bound, :data:`numerics.sweep.MAX_SEED`)
MAX_SEED = 2**63 - 1


def _check_seeds(name: str, v: Any) -> list[int]:
    """A list of seeds: integers in ``[0, MAX_SEED]`` (not bools)."""
    items = _check_items(name, v, object, "integer seeds")
    for x in items:
        if not _is_integer(x) or not 0 <= int(x) <= MAX_SEED:
            raise (ValueError if _is_integer(x) else ArgumentTypeError)(
                f"{name} must be a list of integer seeds in [0, 2**63 - 1], got an item {describe(x)}")
    return [int(x) for x in items]


def _is_integer(x: Any) -> bool:
    """An integer (Python or NumPy), not a bool."""
    import numbers

    import numpy as np

    return isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_))


def _check_verdict(name: str, v: Any) -> "Verdict":
    """A :class:`Verdict`, or its value (``"PASS"``, ``"NOT IMPLEMENTED"``, ...)."""
    if isinstance(v, Verdict):
        return v
    if not isinstance(v, str):
        raise ArgumentTypeError(f"{name} must be a Verdict or one of {[x.value for x in Verdict]}, got {describe(v)}")
    try:
        return Verdict(v)
    except ValueError:
        raise ValueError(f"{name} must be a Verdict or one of {[x.value for x in Verdict]}, got {v!r}") from None


def _seed_text(k: Any) -> str:
    """A seed key as text: an integer, a string, a bool or a literal float constant (12 digits at most)."""
    if isinstance(k, str) or _is_integer(k) or isinstance(k, bool):
        return str(k)
    if isinstance(k, float):
        if not math.isfinite(k) or k != round(k, 12):
            raise ValueError(f"seed keys must be integers, strings or literal constants, got the float {k!r}")
        return str(k)
    raise ArgumentTypeError(f"seed keys must be integers, strings or literal constants, got {describe(k)} "
                            f"({type(k).__name__})")


def _jsonable(v: Any) -> Any:
    """The report's JSON form of ``v``: NaN / infinities as the strings ``"nan"`` / ``"inf"`` / ``"-inf"``, any
    other unknown value as ``str(v)`` (:func:`numerics.sweep.to_jsonable`)."""
    from numerics.sweep import to_jsonable

    return to_jsonable(v, nonfinite="str", unknown="str")


# ----------------------------------------------------------------------------------------- cache entries
def _arrays_checksum(arrays: Mapping[str, Any]) -> str:
    """SHA-256 of named arrays: names, dtypes, shapes and bytes, in name order."""
    import numpy as np

    h = hashlib.sha256()
    for k in sorted(arrays):
        a = np.ascontiguousarray(arrays[k])
        h.update(f"{k}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _npz_read(path: Path, h: str, meta: str, warn: bool = True) -> dict | None:
    """The verified arrays of the entry at ``path`` (key hash ``h``, key fields ``meta``), or ``None``: missing,
    or rejected (with a :class:`numerics.sweep.CacheIntegrityWarning` when ``warn``)."""
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as z:
            stored = {k: z[k] for k in z.files}
    except FileNotFoundError:
        return None
    except Exception as exc:  # noqa: BLE001 - truncated, not a zip, object arrays: never trusted
        return _npz_reject(path, f"unreadable ({type(exc).__name__}: truncated or not an .npz)", warn)
    problem = _npz_problem(stored, h, meta)
    if problem:
        return _npz_reject(path, problem, warn)
    out = {k: v for k, v in stored.items() if not k.startswith("__")}
    if "__sha256__" not in stored:  # written before checksums: key verified, upgrade it in place
        with contextlib.suppress(OSError):
            _npz_write(path, h, meta, out)
    return out


def _npz_problem(stored: Mapping[str, Any], h: str, meta: str) -> str:
    """Why a loaded ``.npz`` entry cannot be trusted (``""`` when it can)."""
    if "__key__" not in stored or str(stored["__key__"]) != h:
        return "foreign entry (its stored key is not the key of this cell: another cell's file)"
    if "__meta__" in stored and str(stored["__meta__"]) != meta:
        return "foreign entry (its stored check, name, key, version, profile, device or seed differ)"
    out = {k: v for k, v in stored.items() if not k.startswith("__")}
    if not out or any(v.dtype == object for v in out.values()):
        return "malformed (no numeric arrays)"
    if "__sha256__" in stored and str(stored["__sha256__"]) != _arrays_checksum(out):
        return "checksum mismatch (the stored values were altered)"
    if ("__sha256__" in stored) != ("__meta__" in stored):
        return "malformed (a checksum without its key fields, or the reverse)"
    return ""


def _npz_reject(path: Path, why: str, warn: bool) -> None:
    import warnings

    from numerics.sweep import CacheIntegrityWarning

    if warn:
        warnings.warn(f"cache entry {path} ignored: {why}; recomputing it", CacheIntegrityWarning, stacklevel=4)
    return None


def _npz_write(path: Path, h: str, meta: str, out: Mapping[str, Any]) -> None:
    """Write an entry atomically (temporary file, then rename): key hash, key fields, checksum, arrays."""
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{h}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            np.savez(fh, __key__=np.array(h), __meta__=np.array(meta), __sha256__=np.array(_arrays_checksum(out)),
                     **out)
        os.replace(tmp, path)  # atomic: never a half-written entry under the key
    finally:
        if tmp.exists():
            tmp.unlink()


@contextlib.contextmanager
def _claim(path: Path) -> Iterator[None]:
    """Hold the inter-process lock of the cache entry ``path`` (waits while another run holds it); without a
    writable directory, no lock (the entry cannot be written either)."""
    from numerics.sweep import cell_lock

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = cell_lock(path.with_suffix(".lock"))
        lock.acquire()
    except OSError:
        yield
        return
    try:
        yield
    finally:
        lock.release()


# ----------------------------------------------------------------------------------------- field checks
def _check_int(name: str, v: Any, low: int, high: int | None = None) -> int:
    """An integer in ``[low, high]`` (Python or NumPy; not a bool, not a float)."""
    if not _is_integer(v):
        raise ArgumentTypeError(f"{name} must be an integer, got {describe(v)} ({type(v).__name__})")
    if int(v) < low or (high is not None and int(v) > high):
        rule = f">= {low}" if high is None else f">= {low} and <= {high}"
        raise ValueError(f"{name} must be an integer {rule}, got {describe(v)}")
    return int(v)


#: most workers of a run (:data:`numerics.threads.MAX_THREADS`, the sweep runner's bound)
MAX_JOBS = 1024


def _check_n_jobs(v: Any) -> int:
    """``n_jobs``: an integer ``>= 1``, or ``-1`` for every core (returned as ``os.cpu_count()``)."""
    import numbers

    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"n_jobs must be an integer >= 1 or -1 (all cores), got {v!r} ({type(v).__name__})")
    if int(v) == -1:
        return os.cpu_count() or 1
    if not 1 <= int(v) <= MAX_JOBS:
        raise ValueError(f"n_jobs must be an integer in [1, {MAX_JOBS}] or -1 (all cores), got {describe(v)}")
    return int(v)


_DEVICE_RE = re.compile(r"cpu|cuda(:[0-9]+)?")


def _check_device(v: Any) -> str:
    """``device``: ``"cpu"``, ``"cuda"`` or ``"cuda:<k>"`` (the format only; the CLI checks availability)."""
    if not isinstance(v, str):
        raise TypeError(f"device must be a string ('cpu', 'cuda' or 'cuda:<k>'), got {type(v).__name__}")
    if not _DEVICE_RE.fullmatch(v):
        raise ValueError(f"device must be 'cpu', 'cuda' or 'cuda:<k>', got {v!r}")
    return v


def _check_dir(name: str, v: Any) -> Path | None:
    """``None`` or a path (``str`` / ``os.PathLike``) as a :class:`~pathlib.Path`."""
    if v is None or isinstance(v, Path):
        return v
    if isinstance(v, (str, os.PathLike)):
        return Path(v)
    raise TypeError(f"{name} must be None or a path, got {type(v).__name__}")
