"""``python -m verify compare OLD.json NEW.json``: two reports, comparison by comparison.

Matches the checks of two ``--json`` reports (or calibration records) by id and, inside a check, the comparisons
by name (the k-th comparison of a name with the k-th), then lists what differs: verdicts, comparisons present in
one report only, and the judged fields of each comparison (predicted, measured, uncertainty, tolerance, outcome,
p_fail, p_pass, margin, df).  Runtimes, notes and metadata are not compared.  Numbers are equal when they are
equal as stored (``--rtol 0``, the default) or within the relative tolerance given.  Reports of different schema
versions compare: a field missing from one of them is skipped.

The exit status is 0 when every shared check agrees and no comparison is missing, 1 otherwise, 2 on a usage
error.  Used to show that a refactor leaves the reports unchanged (docs/architecture.md)."""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from theory.validation import as_float

from .validation import check_dir, check_items

__all__ = ["JUDGED_FIELDS", "ReportDiff", "compare_reports", "load_report", "main"]

#: the fields of a stored comparison that a refactor must leave unchanged
JUDGED_FIELDS = ("predicted", "measured", "uncertainty", "tolerance", "outcome", "p_fail", "p_pass", "margin", "df")


@dataclass(frozen=True)
class ReportDiff:
    """What differs between two reports.

    Attributes
    ----------
    n_checks, n_comparisons : int
        Checks and comparisons found in both reports.
    verdicts : tuple
        ``(id, old, new)`` for each shared check whose verdict changed.
    only_old, only_new : tuple
        Checks, or ``"id: comparison name"``, present in one report only.
    fields : tuple
        ``(id, comparison name, field, old, new)`` for each judged field that differs.
    """

    n_checks: int
    n_comparisons: int
    verdicts: tuple = ()
    only_old: tuple = ()
    only_new: tuple = ()
    fields: tuple = ()

    @property
    def identical(self) -> bool:
        """Whether nothing differs."""
        return not (self.verdicts or self.only_old or self.only_new or self.fields)


def load_report(path: str | Path) -> list[Mapping[str, Any]]:
    """The check results of a ``--json`` report (its ``results`` list) or of one stored record (a single result);
    ``ValueError`` naming the path when the file is not JSON or holds neither form."""
    path = check_dir("path", path)
    if path is None:
        raise TypeError("path must be the path of a JSON file, got None")
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"path {path}: not a readable JSON report ({exc})") from None
    if isinstance(doc, Mapping) and isinstance(doc.get("results"), list):
        results = doc["results"]
    elif isinstance(doc, Mapping) and "id" in doc and "comparisons" in doc:
        results = [doc]
    else:
        raise ValueError(f"path {path}: neither a report written by --json nor a stored check result")
    return _check_results(f"path {path}", results)


def _check_results(name: str, v: Any) -> list[Mapping[str, Any]]:
    """A list of stored results: mappings with a string ``id`` and ``verdict`` and a list of named comparisons."""
    results = check_items(name, v, Mapping, "stored check results (mappings)")
    for r in results:
        if not (isinstance(r.get("id"), str) and isinstance(r.get("verdict"), str)
                and isinstance(r.get("comparisons"), list)):
            raise ValueError(f"{name} must hold stored results (an id, a verdict and a comparisons list), got "
                             f"one with keys {sorted(map(str, r))[:8]}")
        if not all(isinstance(c, Mapping) and isinstance(c.get("name"), str) for c in r["comparisons"]):
            raise ValueError(f"{name} must hold comparisons with a name, got one without in {r['id']}")
    return results


def _same(a: Any, b: Any, rtol: float) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y, rtol) for x, y in zip(a, b))
    if a == b or isinstance(a, bool) or isinstance(b, bool):
        return a == b
    return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isfinite(a) and math.isfinite(b) \
        and abs(a - b) <= rtol * max(abs(a), abs(b))


def _named(comparisons: Sequence[Mapping[str, Any]]) -> dict[tuple[str, int], Mapping[str, Any]]:
    """The comparisons keyed by ``(name, how many of that name came before)``."""
    names = [str(c.get("name")) for c in comparisons]
    return {(n, names[:k].count(n)): c for k, (n, c) in enumerate(zip(names, comparisons))}


def _label(name: tuple[str, int]) -> str:
    return name[0] if name[1] == 0 else f"{name[0]} [#{name[1] + 1}]"


def compare_reports(old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]], *,
                    rtol: float = 0.0) -> ReportDiff:
    """Compare two lists of stored check results (:func:`load_report`), check by check and comparison by comparison.

    >>> a = [{"id": "A1", "verdict": "PASS", "comparisons": [{"name": "x", "predicted": 1.0, "measured": 1.0}]}]
    >>> b = [{"id": "A1", "verdict": "PASS", "comparisons": [{"name": "x", "predicted": 1.0, "measured": 1.5}]}]
    >>> compare_reports(a, a).identical, compare_reports(a, b).fields
    (True, (('A1', 'x', 'measured', 1.0, 1.5),))
    """
    rtol = as_float("rtol", rtol, low=0.0, high=1.0)
    olds = {r["id"]: r for r in _check_results("old", old)}
    news = {r["id"]: r for r in _check_results("new", new)}
    shared = [i for i in olds if i in news]
    only_old = [i for i in olds if i not in news]
    only_new = [i for i in news if i not in olds]
    verdicts, fields, n_comp = [], [], 0
    for cid in shared:
        o, n = olds[cid], news[cid]
        if o.get("verdict") != n.get("verdict"):
            verdicts.append((cid, o.get("verdict"), n.get("verdict")))
        oc, nc = _named(o["comparisons"]), _named(n["comparisons"])
        only_old += [f"{cid}: {_label(k)}" for k in oc if k not in nc]
        only_new += [f"{cid}: {_label(k)}" for k in nc if k not in oc]
        for k in (k for k in oc if k in nc):
            n_comp += 1
            for f in JUDGED_FIELDS:
                if f in oc[k] and f in nc[k] and not _same(oc[k][f], nc[k][f], rtol):
                    fields.append((cid, _label(k), f, oc[k][f], nc[k][f]))
    return ReportDiff(len(shared), n_comp, tuple(verdicts), tuple(only_old), tuple(only_new), tuple(fields))


def _print_diff(diff: ReportDiff, limit: int) -> None:
    print(f"{diff.n_checks} checks and {diff.n_comparisons} comparisons in both reports")
    for cid, a, b in diff.verdicts:
        print(f"verdict {cid}: {a} -> {b}")
    for side, items in (("only in OLD", diff.only_old), ("only in NEW", diff.only_new)):
        for item in items[:limit]:
            print(f"{side}: {item}")
        if len(items) > limit:
            print(f"{side}: ... and {len(items) - limit} more")
    for cid, name, f, a, b in diff.fields[:limit]:
        print(f"{cid}: {name}: {f}: {a!r} -> {b!r}")
    if len(diff.fields) > limit:
        print(f"... and {len(diff.fields) - limit} more differing fields")
    changed = len({(c, n) for c, n, *_ in diff.fields})
    print("identical" if diff.identical else
          f"differ: {len(diff.verdicts)} verdicts, {changed} comparisons changed, "
          f"{len(diff.only_old)} only in OLD, {len(diff.only_new)} only in NEW")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m verify compare``; 0 when the reports agree, 1 when they differ, 2 on bad input."""
    parser = argparse.ArgumentParser(prog="python -m verify compare", description=__doc__.split("\n\n")[1])
    parser.add_argument("old", help="a report written by --json, or a stored record")
    parser.add_argument("new", help="the report to compare with it")
    parser.add_argument("--only", nargs="+", metavar="ID", help="compare only these check ids")
    parser.add_argument("--rtol", type=float, default=0.0,
                        help="relative tolerance for numbers (default 0: equal as stored)")
    parser.add_argument("--limit", type=int, default=50, help="most lines per kind of difference (default 50)")
    args = parser.parse_args(None if argv is None else check_items("argv", argv, str, "strings (command-line words)"))
    try:
        old, new = load_report(args.old), load_report(args.new)
        if args.only:
            old = [r for r in old if r["id"] in args.only]
            new = [r for r in new if r["id"] in args.only]
        diff = compare_reports(old, new, rtol=args.rtol)
    except (ValueError, TypeError) as exc:
        parser.exit(2, f"error: {exc}\n")
    _print_diff(diff, max(args.limit, 1))
    return 0 if diff.identical else 1
