"""Check modules; importing this package registers every implemented check.

One module per group of claims, so that each group can grow independently:
``paper_a_theory`` (A1), ``paper_a_rates`` (A2-A4, on the machinery of ``paper_a_numerics``), ``paper_a_coercivity`` (A5, A6),
``paper_b_core`` (B1, B2, B3, B5, B6), ``paper_b_structured`` (B4, B7), ``paper_b_reversal`` (B4-rev),
``paper_b_softmax`` (B8).
"""

from . import (  # noqa: F401
    paper_a_coercivity,
    paper_a_numerics,
    paper_a_rates,
    paper_a_theory,
    paper_b_core,
    paper_b_reversal,
    paper_b_softmax,
    paper_b_structured,
)
