"""``python -m benchmarks.check_times``: the report's cost per check, before and after, from its JSON files.

- ``summarise REPORT.json [--commit C]``: the compact record of one ``python -m verify ... --json`` run (profile,
  seed, machine, wall time and, per check, its seconds, verdict and headline's standard error), printed as JSON.
- ``table BEFORE AFTER``: a markdown table of the two (reports or summaries): seconds per check and their ratio,
  and the headline's ``SE x sqrt(s)`` (certainty per second; lower is better) and its ratio.

The seconds are the check's own wall time (``runtime_s``) on the machine the report names; a ratio compares two
runs of the same profile and seed.
"""

from __future__ import annotations

import argparse
import json
import math
from datetime import datetime
from pathlib import Path
from typing import Any


def _headline(result: dict) -> dict | None:
    rows = [c for c in result.get("comparisons", []) if c.get("headline")]
    if not rows:
        return None
    c = rows[0]
    unc = c.get("uncertainty")
    return {"name": c["name"], "uncertainty": unc if isinstance(unc, (int, float)) else None}


def summarise(report: dict, commit: str = "") -> dict:
    """The compact record of a report (a summary is returned as it is)."""
    if "checks" in report:
        return report
    start, end = (datetime.fromisoformat(report[k]) for k in ("started_utc", "finished_utc"))
    return {"commit": commit, "profile": report["profile"], "seed": report["seed"], "platform": report["platform"],
            "cpu_count": report["cpu_count"], "started_utc": report["started_utc"],
            "wall_s": round((end - start).total_seconds(), 1),
            "checks": {r["id"]: {"runtime_s": round(r["runtime_s"], 2), "verdict": r["verdict"],
                                 "headline": _headline(r)} for r in report["results"]}}


def _load(path: str) -> dict:
    return summarise(json.loads(Path(path).read_text()))


def _certainty(check: dict) -> float | None:
    head = check.get("headline") or {}
    se = head.get("uncertainty")
    return None if se is None or not math.isfinite(se) else se * math.sqrt(check["runtime_s"])


def _fmt(v: float | None, spec: str) -> str:
    return "" if v is None else format(v, spec)


def table(before: dict, after: dict) -> str:
    """Markdown: per check seconds before / after / ratio, and ``SE x sqrt(s)`` before / after / ratio."""
    lines = [f"Before: commit {before.get('commit') or '?'}, {before['started_utc']}; after: commit "
             f"{after.get('commit') or '?'}, {after['started_utc']}; profile `{after['profile']}`, seed "
             f"{after['seed']}, {after['platform']} ({after['cpu_count']} cores). Whole run: {before['wall_s']} s -> "
             f"{after['wall_s']} s ({after['wall_s'] / before['wall_s']:.2f}).", "",
             "| check | s before | s after | ratio | SE x sqrt(s) before | after | ratio | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for cid, a in after["checks"].items():
        b = before["checks"].get(cid)
        cb, ca = (_certainty(b) if b else None), _certainty(a)
        ratio = "" if b is None or not b["runtime_s"] else f"{a['runtime_s'] / b['runtime_s']:.2f}"
        cratio = "" if cb is None or ca is None or not cb else f"{ca / cb:.2f}"
        lines.append(f"| {cid} | {_fmt(b and b['runtime_s'], '.1f') if b else 'new'} | {a['runtime_s']:.1f} | {ratio} | "
                     f"{_fmt(cb, '.3g')} | {_fmt(ca, '.3g')} | {cratio} | {a['verdict']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.check_times", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("summarise", help="the compact record of one report, as JSON")
    s.add_argument("report")
    s.add_argument("--commit", default="", help="the commit the report was made at")
    t = sub.add_parser("table", help="markdown: two reports (or summaries) check by check")
    t.add_argument("before")
    t.add_argument("after")
    args = parser.parse_args(argv)
    if args.command == "summarise":
        print(json.dumps(summarise(json.loads(Path(args.report).read_text()), args.commit), indent=1))
    else:
        print(table(_load(args.before), _load(args.after)), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
