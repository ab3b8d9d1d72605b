"""The judge: each claim (docs/claims.md) = prediction (theory) vs measurement (numerics) under a stated tolerance."""

from theory import __version__  # noqa: F401  (one version for the three packages)

from .claim import Claim, all_claims, claim_of, register, run_check
from .context import CheckContext
from .notebook import Run, run
from .results import CheckResult, Comparison, Outcome, Verdict

__all__ = ["CheckContext", "CheckResult", "Claim", "Comparison", "Outcome", "Run", "Verdict", "all_claims", "claim_of",
           "register", "run", "run_check"]
