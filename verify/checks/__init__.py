"""Check modules; importing this package registers every implemented check.

One module per group of claims, so that each group can grow independently:
``paper_a_theory`` (A1), ``paper_a_rates`` (A2-A4, on the machinery of ``paper_a_numerics``), ``paper_a_coercivity`` (A5), ``paper_a_low_rank`` (A6),
``paper_b_ridge`` (B1), ``paper_b_null`` (B2), ``paper_b_attention_vs_ridge`` (B3), ``paper_b_cosine`` (B5),
``paper_b_spectrum`` (B6), all on the machinery of ``paper_b_core``; ``paper_b_structured`` (B7, and the machinery
of ``paper_b_alignment`` (B4) and ``paper_b_linearisation`` (B7-lin)), ``paper_b_reversal`` (B4-rev; command line ``paper_b_reversal_cli``),
``paper_b_softmax`` (B8), ``paper_b_strong_alignment`` (B9), ``paper_b_strong_alignment_risk`` (B10).
"""

from . import (  # noqa: F401
    paper_a_coercivity,
    paper_a_low_rank,
    paper_a_numerics,
    paper_a_rates,
    paper_a_theory,
    paper_b_alignment,
    paper_b_attention_vs_ridge,
    paper_b_core,
    paper_b_cosine,
    paper_b_linearisation,
    paper_b_null,
    paper_b_reversal,
    paper_b_ridge,
    paper_b_softmax,
    paper_b_spectrum,
    paper_b_strong_alignment,
    paper_b_strong_alignment_risk,
    paper_b_structured,
)
