"""Standard sympy symbols with assumptions, shared by every theory module.

>>> from theory.symbols import beta, M
>>> beta.is_positive, M.is_positive
(True, True)
"""

import sympy as sp

# Paper A: minimax rates for pairwise interactions
beta = sp.Symbol("beta", positive=True)  # Hölder smoothness of phi*
M = sp.Symbol("M", positive=True)  # number of samples (sequences)
N = sp.Symbol("N", positive=True, integer=True)  # tokens per sample
d = sp.Symbol("d", positive=True, integer=True)  # token dimension
r = sp.Symbol("r", positive=True, integer=True)  # rank of A*
P = sp.Symbol("P", positive=True, integer=True)  # B-spline degree of the truth
s = sp.Symbol("s", nonnegative=True, integer=True)  # degree of the piecewise polynomial estimator
K = sp.Symbol("K", positive=True, integer=True)  # number of intervals

# Paper B: random-matrix theory of the interpolation error
x = sp.Symbol("x", real=True)  # argument of the activation f(x)
xi = sp.Symbol("xi", real=True)  # standard Gaussian variable
z = sp.Symbol("z")  # complex spectral argument
gamma = sp.Symbol("gamma", positive=True)  # ridge regularisation
c = sp.Symbol("c", positive=True)  # aspect ratio p / n
snr = sp.Symbol("snr", nonnegative=True)  # ||mu||^2
delta = sp.Symbol("delta", positive=True)  # Marchenko–Pastur resolvent trace at z = -gamma
a1 = sp.Symbol("a1", real=True)  # first Hermite coefficient of f
nu = sp.Symbol("nu", positive=True)  # second moment of the centred f

__all__ = ["beta", "M", "N", "d", "r", "P", "s", "K", "x", "xi", "z", "gamma", "c", "snr", "delta", "a1", "nu"]
