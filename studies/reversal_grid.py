"""Study B4-rev on a custom grid from the command line (``python studies/reversal_grid.py --help``):
the registered study's seeds and cache keys, its tables printed (docs/reversal.md lists the commands)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Sequence

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, when run as a script

from verify.checks.paper_b_reversal import (REVERSAL_DESIGNS, describe_reversal, figure_reversal,  # noqa: E402
                                            judge_reversal, predict_reversal, simulate_reversal)
from verify.context import CheckContext  # noqa: E402
from verify.validation import path_or_none  # noqa: E402
from verify.verdicts import judged  # noqa: E402

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python studies/reversal_grid.py",
                                 description="Study B4-rev on a custom grid (defaults: the paper profile's).")
    ap.add_argument("--base", choices=sorted(REVERSAL_DESIGNS), default="paper", help="design to start from")
    ap.add_argument("--activations", nargs="+")
    ap.add_argument("--cs", nargs="+", type=float)
    ap.add_argument("--snrs", nargs="+", type=float)
    ap.add_argument("--strengths", nargs="+", type=float)
    ap.add_argument("--ps", nargs="+", type=int)
    ap.add_argument("--trials", nargs="+", type=int)
    ap.add_argument("--no-linearised", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cache-dir", default=".cache/verify/B4-rev-cli",
                    help="where the cells are cached ('none': no cache, as for python -m verify)")
    ap.add_argument("--figure", help="write the study's figure to this PNG path")
    ap.add_argument("--json", help="write notes and data to this JSON path")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Run the study on the grid of the command line and print its tables (``--help``)."""
    import json

    from verify.validation import jsonable

    args = _parser().parse_args(argv)
    over = {k: tuple(v) for k in ("activations", "cs", "snrs", "strengths", "ps", "trials")
            if (v := getattr(args, k)) is not None}
    if args.no_linearised:
        over["linearised"] = False
    design = replace(REVERSAL_DESIGNS[args.base], **over)
    # profile "paper": the cache key and the seeds are those of the registered study's paper cells
    ctx = CheckContext(profile="paper", seed=args.seed, cache_dir=path_or_none(args.cache_dir), n_jobs=args.jobs,
                       check_id="B4-rev")
    prediction = predict_reversal(ctx, design)
    cells = simulate_reversal(ctx, design)
    judgement = judged(judge_reversal(design, prediction, cells)).as_info()  # a study: reported, never decides
    notes, data = describe_reversal(design, prediction, cells, list(judgement.comparisons))
    print(data["table_md"], "\n", data["table_linearisation_md"], sep="\n")
    if args.figure:
        figure_reversal(design, prediction, cells, judgement).savefig(args.figure, dpi=120, bbox_inches="tight")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(jsonable({"notes": notes, "data": data, "seeds": ctx.seeds_used}), fh, indent=1)
    return 0


if __name__ == "__main__":  # pragma: no cover - command line
    raise SystemExit(main())
