"""The judge: each claim (docs/claims.md) = prediction (theory) vs measurement (numerics) under a stated tolerance."""

from theory import __version__  # noqa: F401  (one version for the three packages)

from .catalog import all_checks, check_spec
from .notebook import Run, run
from .registry import CheckContext, CheckResult, Comparison, Outcome, Verdict, check, run_check

__all__ = ["CheckContext", "CheckResult", "Comparison", "Outcome", "Run", "Verdict", "all_checks", "check",
           "check_spec", "run", "run_check"]
