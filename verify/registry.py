"""Registry of checks: one per claim id (docs/claims.md).

A check is a function ``f(ctx: CheckContext) -> Outcome``, registered with :func:`check`.
Claims without a registered function are reported as ``NOT IMPLEMENTED`` (never PASS).
"""

from __future__ import annotations

import contextlib
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

from .claims import CLAIMS, STUDIES


class Verdict(str, Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"  # neither the claim nor its violation is established at the stated levels
    ERROR = "ERROR"  # the check raised: counts as a failure
    INFO = "INFO"  # informational check: reported, never decides the exit status
    NOT_IMPLEMENTED = "NOT IMPLEMENTED"


@dataclass
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
        overwritten by :func:`verify.verdicts.judge` (``outcome == "PASS"``).
    kind : one of :data:`verify.verdicts.KINDS` (default ``"exact"``).
    p_fail : p-value of the test whose rejection FAILS the comparison (null hypothesis: the claim holds).
    p_pass : p-value of the evidence test behind PASS (null: the claim fails); ``None`` for ``bound`` and
        ``consistency`` comparisons, which pass unless rejected.
    margin : equivalence margin (``kind="equivalence"``).
    df : degrees of freedom of the test statistic (``None``: normal).
    decide_factor : for an undecided comparison, how many times the current data would decide it.
    outcome : ``PASS`` / ``FAIL`` / ``INCONCLUSIVE``, set by :func:`verify.verdicts.judge`.
    headline : the comparison shown for the check in compact tables and tracked by ``calibrate``.

    Use the constructors :meth:`equivalence`, :meth:`direction`, :meth:`bound`, :meth:`consistency` for
    stochastic comparisons; the plain constructor builds an exact one.
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

        self.passed = _as_bool("passed", self.passed)  # numpy / sympy booleans -> a plain bool (JSON true/false)
        self.headline = _as_bool("headline", self.headline)
        if not isinstance(self.kind, str) or self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        for fname in ("name", "tolerance", "outcome"):
            if not isinstance(getattr(self, fname), str):
                raise TypeError(f"{fname} must be a string, got {type(getattr(self, fname)).__name__}")
        if self.outcome not in ("", "PASS", "FAIL", "INCONCLUSIVE"):
            raise ValueError(f"outcome must be '', 'PASS', 'FAIL' or 'INCONCLUSIVE', got {self.outcome!r}")
        for fname, low, high in (("p_fail", 0.0, 1.0), ("p_pass", 0.0, 1.0), ("margin", 0.0, math.inf),
                                 ("df", 0.0, math.inf), ("decide_factor", 0.0, math.inf)):
            setattr(self, fname, _optional_real(fname, getattr(self, fname), low, high))
        self.exact_ok = self.passed
        if not self.outcome:
            if self.kind == "exact":
                self.outcome = "PASS" if self.passed else "FAIL"
            else:  # standalone reading (the check's judge re-reads it with Holm over all its comparisons)
                from .verdicts import judge

                judge([self])

    def to_json(self) -> dict:
        return {k: _jsonable(v) for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Comparison":
        """Rebuild a comparison from its :meth:`to_json` form (to judge stored results again)."""
        keys = ("name", "predicted", "measured", "uncertainty", "tolerance", "passed", "kind", "p_fail", "p_pass",
                "margin", "df", "decide_factor", "headline")
        kw = {k: d.get(k) for k in keys if k in d}
        for k in ("p_fail", "p_pass", "margin", "df", "decide_factor"):
            if isinstance(kw.get(k), str):  # non-finite floats are stored as text
                kw[k] = float(kw[k])
        kw.setdefault("kind", "exact")
        kw["headline"] = bool(kw.get("headline", False))
        if kw["kind"] == "exact":
            kw["passed"] = d.get("outcome", "PASS" if d.get("passed") else "FAIL") == "PASS"
        return cls(**kw)

    # ------------------------------------------------------------------ stochastic constructors
    @classmethod
    def equivalence(cls, name: str, predicted: float, measured: float, se: float, margin: float, *,
                    df: float | None = None, rule: str = "", **kw: Any) -> "Comparison":
        """``|measured - predicted| < margin`` as an equivalence test (TOST for PASS; beyond the margin for FAIL)."""
        from .verdicts import ALPHA_PASS, equivalence_p, scale_to_decide

        delta = float(measured) - float(predicted)
        p_pass, p_fail = equivalence_p(delta, float(se), float(margin), df)
        from scipy import stats as _st

        q = float((_st.norm if df is None else _st.t(df)).isf(ALPHA_PASS))
        lo, hi = delta - q * se, delta + q * se
        tol = (f"equivalence, margin {margin:g}: PASS iff the {1 - 2 * ALPHA_PASS:.0%} interval of measured - "
               f"predicted [{lo:+.4f}, {hi:+.4f}] lies inside +-{margin:g} (TOST p = {p_pass:.2g}); FAIL iff "
               f"|difference| > {margin:g} is significant (p = {p_fail:.2g}, Holm within the check)"
               + (f", df = {df:.1f}" if df is not None else "") + (f"; {rule}" if rule else ""))
        return cls(name=name, predicted=predicted, measured=measured, uncertainty=float(se), tolerance=tol,
                   passed=False, kind="equivalence", p_fail=p_fail, p_pass=p_pass, margin=float(margin), df=df,
                   decide_factor=scale_to_decide(delta, float(se), float(margin), "equivalence"), **kw)

    @classmethod
    def direction(cls, name: str, predicted: Any, measured: float, se: float, sign: int, *,
                  reference: float = 0.0, df: float | None = None, rule: str = "", **kw: Any) -> "Comparison":
        """``sign * (measured - reference) > 0``: PASS when significant at ALPHA_PASS, FAIL when the opposite is."""
        from .verdicts import direction_p, scale_to_decide

        delta = float(measured) - float(reference)
        p_pass, p_fail = direction_p(delta, float(se), int(sign), df)
        tol = (f"direction: claim {'>' if sign > 0 else '<'} {reference:g}; z = {delta / se if se > 0 else float('inf'):.2f} "
               f"(p_pass = {p_pass:.2g}; FAIL iff the opposite sign is significant, p = {p_fail:.2g}, Holm)"
               + (f", df = {df:.1f}" if df is not None else "") + (f"; {rule}" if rule else ""))
        return cls(name=name, predicted=predicted, measured=measured, uncertainty=float(se), tolerance=tol,
                   passed=False, kind="direction", p_fail=p_fail, p_pass=p_pass, df=df,
                   decide_factor=scale_to_decide(delta, float(se), None, "direction"), **kw)

    @classmethod
    def bound(cls, name: str, predicted: Any, measured: Any, se: float, excess: float, *, excess_se: float | None = None,
              df: float | None = None, rule: str = "", **kw: Any) -> "Comparison":
        """A one-sided bound ``excess <= 0`` (statistic minus its allowed maximum); PASS unless violated significantly."""
        from .verdicts import bound_p

        s = float(se if excess_se is None else excess_se)
        p_fail = bound_p(float(excess), s, df)
        tol = (rule + "; " if rule else "") + f"bound: FAIL iff the excess {excess:+.3g} is significant (z = " \
            f"{excess / s if s > 0 else float('inf'):.2f}, p = {p_fail:.2g}, Holm within the check)"
        return cls(name=name, predicted=predicted, measured=measured, uncertainty=float(se), tolerance=tol,
                   passed=False, kind="bound", p_fail=p_fail, df=df, **kw)

    @classmethod
    def consistency(cls, name: str, predicted: float, measured: float, se: float, *, df: float | None = None,
                    rule: str = "", **kw: Any) -> "Comparison":
        """An identity measured with noise: two-sided test of ``measured == predicted``."""
        from .verdicts import consistency_p

        delta = float(measured) - float(predicted)
        p_fail = consistency_p(delta, float(se), df)
        tol = (rule + "; " if rule else "") + f"identity: FAIL iff |measured - predicted| is significant " \
            f"(z = {delta / se if se > 0 else float('inf'):.2f}, two-sided p = {p_fail:.2g}, Holm within the check)"
        return cls(name=name, predicted=predicted, measured=measured, uncertainty=float(se), tolerance=tol,
                   passed=False, kind="consistency", p_fail=p_fail, df=df, **kw)


@dataclass
class Outcome:
    """What a check function returns."""

    comparisons: list[Comparison]
    notes: str = ""
    figures: list[str] = field(default_factory=list)
    data: dict = field(default_factory=dict)
    informational: bool = False


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

    def __post_init__(self) -> None:
        if not isinstance(self.profile, str) or self.profile not in PROFILES:
            raise ValueError(f"profile must be one of {PROFILES}, got {self.profile!r}")
        self.seed = _check_int("seed", self.seed, 0)
        self.n_jobs = _check_n_jobs(self.n_jobs)
        self.device = _check_device(self.device)
        if not isinstance(self.executor, str) or self.executor not in EXECUTORS:
            raise ValueError(f"executor must be one of {EXECUTORS}, got {self.executor!r}")
        if self.scheduler is not None and not isinstance(self.scheduler, str):
            raise TypeError(f"scheduler must be None or an address string, got {type(self.scheduler).__name__}")
        self.report_dir = _check_dir("report_dir", self.report_dir)
        self.cache_dir = _check_dir("cache_dir", self.cache_dir)
        if not isinstance(self.check_id, str):
            raise TypeError(f"check_id must be a string, got {type(self.check_id).__name__}")

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
        """Context manager yielding an object with ``advance(n=1)``."""
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

        cell = {"check": self.check_id, "name": str(name), "key": dict(key), "profile": self.profile,
                "device": str(self.device)}
        return cache_key(CheckContext.cached, cell, int(self.seed), version=f"{CACHE_VERSION}/{version}")

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
        disables the memo. Cached values are the float64 arrays bit for bit, so the cache never changes
        a result.

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
        import numpy as np

        if self.cache_dir is None:
            return {k: np.asarray(v) for k, v in compute().items()}
        h = self.cache_key(name, key, version)
        path = Path(self.cache_dir) / (self.check_id or "_") / f"{h}.npz"
        meta = self._cache_meta(name, key, version)
        hit = _npz_read(path, h, meta)
        if hit is not None:
            return hit
        with _claim(path):
            hit = _npz_read(path, h, meta, warn=False)  # another run may have computed it meanwhile
            if hit is not None:
                return hit
            out = {k: np.asarray(v) for k, v in compute().items()}
            for k, v in out.items():
                if k.startswith("__") or v.dtype == object:
                    raise ValueError(f"cached values must be numeric arrays under names not starting with '__', "
                                     f"got {k!r}")
            _npz_write(path, h, meta, out)
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

        try:
            if self.report_dir is None:
                return None
            self.report_dir.mkdir(parents=True, exist_ok=True)
            path = self.report_dir / f"{self.check_id}_{name}.png"
            fig.savefig(path, dpi=110, bbox_inches="tight")
            return str(path)
        finally:
            plt.close(fig)


@dataclass(frozen=True)
class CheckSpec:
    id: str
    paper: str
    claim: str
    func: Callable[[CheckContext], Outcome] | None

    @property
    def implemented(self) -> bool:
        return self.func is not None


_REGISTRY: dict[str, Callable[[CheckContext], Outcome]] = {}


def check(claim_id: str) -> Callable[[Callable[[CheckContext], Outcome]], Callable[[CheckContext], Outcome]]:
    """Decorator registering ``func`` as the check of ``claim_id`` (an id of :data:`CLAIMS` or :data:`STUDIES`)."""
    if claim_id not in CLAIMS and claim_id not in STUDIES:
        raise ValueError(f"claim_id must be one of {sorted(CLAIMS) + sorted(STUDIES)}, got {claim_id!r}")

    def deco(func: Callable[[CheckContext], Outcome]) -> Callable[[CheckContext], Outcome]:
        if claim_id in _REGISTRY and _REGISTRY[claim_id] is not func:
            raise ValueError(f"a check for {claim_id} is already registered")
        _REGISTRY[claim_id] = func
        return func

    return deco


def run_check(spec: CheckSpec, ctx: CheckContext) -> CheckResult:
    """Run one check; exceptions become an ERROR verdict with the traceback in ``error``."""
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
        res.verdict = judge_outcome(spec.id, res.comparisons, informational=out.informational)
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
    from .verdicts import judge

    if not comparisons:
        return Verdict.INFO if informational or check_id in STUDIES else Verdict.FAIL
    v = Verdict(judge(comparisons))
    if informational or check_id in STUDIES:
        return Verdict.INFO
    return v


def rejudge_stored(result: Mapping[str, Any]) -> tuple[Verdict, list[Comparison]]:
    """Verdict and comparisons of a stored result (``CheckResult.to_json`` or a calibration record), judged
    again with the current rules: no simulation.  ERROR and NOT IMPLEMENTED stay what they were."""
    comps = [Comparison.from_json(c) for c in result.get("comparisons", [])]
    stored = result.get("verdict")
    if stored in (Verdict.ERROR.value, Verdict.NOT_IMPLEMENTED.value):
        return Verdict(stored), comps
    return judge_outcome(result["id"], comps, informational=stored == Verdict.INFO.value), comps


def exit_status(results: list[CheckResult], strict: bool = False) -> int:
    """0 iff no selected check FAILED or raised (INFO and INCONCLUSIVE do not fail it);
    with ``strict`` INCONCLUSIVE and NOT IMPLEMENTED fail it too."""
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


def _optional_real(name: str, v: Any, low: float, high: float) -> float | None:
    """``None``, or a real number (not a bool, not text) in ``[low, high]``; NaN passes (an undecided test)."""
    import numbers

    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} must be None or a real number, got {v!r} ({type(v).__name__})")
    if not (low <= v <= high) and v == v:
        raise ValueError(f"{name} must lie in [{low:g}, {high:g}], got {v!r}")
    return v


def _seed_text(k: Any) -> str:
    if isinstance(k, float) and k != round(k, 12):
        raise ValueError(f"seed keys must be integers, strings or literal constants, got the float {k!r}")
    return str(k)


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
def _check_int(name: str, v: Any, low: int) -> int:
    """An integer ``>= low`` (Python or NumPy; not a bool, not a float)."""
    import numbers

    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {v!r} ({type(v).__name__})")
    if int(v) < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
    return int(v)


def _check_n_jobs(v: Any) -> int:
    """``n_jobs``: an integer ``>= 1``, or ``-1`` for every core (returned as ``os.cpu_count()``)."""
    import numbers

    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"n_jobs must be an integer >= 1 or -1 (all cores), got {v!r} ({type(v).__name__})")
    if int(v) == -1:
        return os.cpu_count() or 1
    if int(v) < 1:
        raise ValueError(f"n_jobs must be an integer >= 1 or -1 (all cores), got {v!r}")
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
