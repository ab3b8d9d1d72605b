"""The judge: each claim of SPEC.md = prediction (theory) vs measurement (numerics) under a stated tolerance."""

from .registry import CheckContext, CheckResult, Comparison, Outcome, Verdict, all_checks, check, run_check

__all__ = ["CheckContext", "CheckResult", "Comparison", "Outcome", "Verdict", "all_checks", "check", "run_check"]
