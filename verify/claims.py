"""The claims (docs/claims.md), one id each. The registry attaches a check to each id."""

from __future__ import annotations

CLAIMS: dict[str, tuple[str, str]] = {
    # id: (paper, claim in words)
    "A1": ("A", "Rate exponent 2b/(2b+1), minimax rate, upper/lower bounds, low-rank condition: "
                "symbolic identities, limits and monotonicity"),
    "A2": ("A", "Empirical convergence slope matches -4/5 for B-spline degree P=3 and -14/15 for P=8 "
                "(consistent with the finite-M model given the design, which tends to the rate)"),
    "A3": ("A", "Dimension-free slopes: (a) where the parametric term is negligible, the slope for every d is "
                "consistent with the finite-M model, which tends to the same rate; (b) outside the low-rank "
                "condition, estimating A shifts the slope by the predicted parametric shift"),
    "A4": ("A", "The rate does not depend on N or on r inside the low-rank condition (each slope consistent with "
                "the finite-M model, which tends to the rate)"),
    "A5": ("A", "Coercivity: ||g-g*||^2/(N-1) <= E_inf(g) - E_inf(g*). Tested: the exact identity RHS - LHS = "
                "(N-2)/(N-1) E[h12 h13] (>= 0 for conditionally i.i.d. tokens, so those cases test the samplers), "
                "the tight case, and the predicted violation for negatively correlated exchangeable tokens"),
    "A6": ("A", "The low-rank condition marks where the rate holds: the error grows with r d log M / M, the "
                "parametric term is dominated inside the condition and shows outside it"),
    "B1": ("B", "Ridge deterministic equivalent matches simulation on the three Figure-1 sweeps"),
    "B2": ("B", "Null-model attention deterministic equivalent matches simulation (several f, c < 1 and c > 1)"),
    "B3": ("B", "On random inputs nonlinear attention has the larger interpolation error "
                "(sqrt(gamma) vs gamma^2 law for c > 1)"),
    "B4": ("B", "With signal, attention weights aligned with mu lower attention's error and its gap to ridge, "
                "orthogonal ones do not; attention beats ridge only for gamma >= gamma* (at c >= 2 only with "
                "alignment), never as gamma -> 0 (finite-p wins there are the linearisation error: study B4-rev)"),
    "B5": ("B", "a1 = 0 (e.g. cos) memorises poorly: a linear component of f is needed"),
    "B6": ("B", "The kernel's eigenvalue histogram follows the free-convolution law"),
    "B7": ("B", "The structured deterministic equivalent (derived by the project) matches simulation"),
    "B8": ("B", "Paper B, Remark 5: the entrywise theory predicts softmax attention's interpolation error"),
    "B9": ("B", "Strong alignment (||w_K|| ||w_Q|| = t sqrt p): as gamma -> 0 with c < 1, E_att - E_RR tends to the "
                "project's limit theory, negative for erf and tanh at every t > 0 (attention beats ridge), positive "
                "for gelu at c = 1/2; at c > 1 attention does not win. Judged against the same theory at each "
                "simulated p (t + 1/sqrt p and the kernel's mean part at n = p/c tokens) by the finite-size rule, "
                "and the limit's sign"),
    "B10": ("B", "What B9's win is made of: T1 (the Bayes predictor the features capture), T2 (label noise the "
                 "features fit, by their leverage), the risk on fresh labels at the same tokens (T1 - T2: attention "
                 "predicts better only while |T2| < |T1|) and the leverage profile by |a|, each consistent with "
                 "the project's theory at each simulated p (t + 1/sqrt p and the kernel's mean part) by the "
                 "finite-size rule (the gap shrinking at least like p^-1/2 from p to 4p); the risk gap's sign where "
                 "the theory's is at least 0.005; the theory's worst case (c = 2, t = 2, gamma = 1e-3) by the same "
                 "rule on B9's draws"),
}


# Informational studies: reported with an INFO verdict, never deciding the exit status; listed after the claims.
STUDIES: dict[str, tuple[str, str]] = {
    "B7-lin": ("B", "Informational: where the linearised kernel behind B4/B7 stops describing the true kernel "
                    "(strong aligned spikes, small p)"),
    "B4-rev": ("B", "Informational: does attention's finite-p win over ridge at small gamma (aligned spikes, true "
                    "kernel) survive p -> infinity? Decay of E_att - E_RR to its limit, fitted in p"),
}
