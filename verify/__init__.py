"""The judge: each claim (docs/claims.md) = prediction (theory) vs measurement (numerics) under a stated tolerance."""

from theory._version import __version__  # noqa: F401  (one version for the three packages)

from .catalog import all_checks, check_spec
from .registry import CheckContext, CheckResult, Comparison, Outcome, Verdict, check, run_check

__all__ = ["CheckContext", "CheckResult", "Comparison", "Outcome", "Verdict", "all_checks", "check", "check_spec",
           "run_check"]
