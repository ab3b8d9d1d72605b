"""Registry of checks: one per claim id of SPEC.md.

A check is a function ``f(ctx: CheckContext) -> Outcome``, registered with :func:`check`.
Claims without a registered function are reported as ``NOT IMPLEMENTED`` (never PASS).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
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
    ERROR = "ERROR"  # the check raised: counts as a failure
    INFO = "INFO"  # informational check: reported, never decides the exit status
    NOT_IMPLEMENTED = "NOT IMPLEMENTED"


@dataclass
class Comparison:
    """One prediction-vs-measurement line of a check.

    Parameters
    ----------
    name : what is compared (e.g. ``"slope P=3"``).
    predicted : the theory value (number or short text).
    measured : the measured value (number or short text).
    uncertainty : standard error or interval half-width of ``measured`` (``None`` when exact).
    tolerance : the rule, in words with its numbers (e.g. ``"|m-p| <= 3 SE + 0.01 (finite-size)"``).
    passed : whether the rule holds.
    """

    name: str
    predicted: Any
    measured: Any
    uncertainty: Any
    tolerance: str
    passed: bool

    def __post_init__(self) -> None:
        self.passed = bool(self.passed)  # numpy / sympy booleans -> a plain bool (JSON true/false)

    def to_json(self) -> dict:
        return {k: _jsonable(v) for k, v in asdict(self).items()}


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


#: part of every :meth:`CheckContext.cached` key; bump it when the numerics behind cached cells change
#: meaning (not for rounding-level changes), to invalidate every stored cell at once.
CACHE_VERSION = "1"


class _NullProgress:
    def advance(self, n: int = 1) -> None:  # noqa: D401 - trivial
        pass


@dataclass
class CheckContext:
    """What a check gets: profile, seeds, where to write figures, progress reporting.

    ``seed_for(*keys)`` derives a reproducible integer seed from the run's base seed and the keys,
    and records it, so that every report lists the seeds actually used.
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

    @property
    def quick(self) -> bool:
        return self.profile == "quick"

    def seed_for(self, *keys: Any) -> int:
        text = "|".join([str(self.seed), self.check_id, *map(str, keys)])
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
        either a complete entry or none; a rerun recomputes only the missing cells. An unreadable or
        mismatching file is recomputed. ``cache_dir=None`` disables the memo. Cached values are the
        float64 arrays bit for bit, so the cache never changes a result.

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
        try:
            with np.load(path, allow_pickle=False) as z:
                if str(z["__key__"]) == h:
                    return {k: z[k] for k in z.files if k != "__key__"}
        except Exception:  # noqa: BLE001 - missing, truncated or corrupt: recompute
            pass
        out = {k: np.asarray(v) for k, v in compute().items()}
        for k, v in out.items():
            if k == "__key__" or v.dtype == object:
                raise ValueError(f"cached values must be numeric arrays under names other than '__key__', got {k!r}")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{h}.{os.getpid()}.tmp")
        try:
            with open(tmp, "wb") as fh:
                np.savez(fh, __key__=np.array(h), **out)
            os.replace(tmp, path)  # atomic: never a half-written entry under the key
        finally:
            if tmp.exists():
                tmp.unlink()
        return out

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


def all_checks() -> list[CheckSpec]:
    """Every claim id of SPEC, in order, with its check function (None when not implemented), then the
    informational studies (:data:`STUDIES`) that have a function."""
    from . import checks  # noqa: F401  (importing registers the checks)

    specs = [CheckSpec(cid, paper, claim, _REGISTRY.get(cid)) for cid, (paper, claim) in CLAIMS.items()]
    return specs + [CheckSpec(sid, paper, text, _REGISTRY[sid]) for sid, (paper, text) in STUDIES.items() if sid in _REGISTRY]


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
        if out.informational or spec.id in STUDIES:
            res.verdict = Verdict.INFO
        elif not res.comparisons:
            res.verdict = Verdict.FAIL
            res.error = "the check produced no comparison"
        else:
            res.verdict = Verdict.PASS if all(bool(c.passed) for c in res.comparisons) else Verdict.FAIL
    except Exception:  # noqa: BLE001 - reported, not hidden
        res.verdict = Verdict.ERROR
        res.error = traceback.format_exc()
    res.runtime_s = time.perf_counter() - t0
    res.seeds = list(dict.fromkeys(ctx.seeds_used))
    return res


def exit_status(results: list[CheckResult], strict: bool = False) -> int:
    """0 when every selected, implemented check passed (INFO ignored); with ``strict`` NOT IMPLEMENTED fails."""
    bad = {Verdict.FAIL, Verdict.ERROR}
    if strict:
        bad.add(Verdict.NOT_IMPLEMENTED)
    return 1 if any(r.verdict in bad for r in results) else 0


def _jsonable(v: Any) -> Any:
    try:
        import numpy as np

        if isinstance(v, np.generic):
            v = v.item()
        elif isinstance(v, np.ndarray):
            v = v.tolist()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)
