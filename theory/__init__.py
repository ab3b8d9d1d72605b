"""What the papers predict: sympy expressions and their numeric evaluation.

``theory`` imports neither ``numerics`` nor ``verify``. Public names are re-exported here;
each module lists its own in ``__all__``.  Paper B's model is one object, :class:`AttentionModel` (with
:class:`Spike`); its deterministic equivalents are its methods (``error``, ``error_taylor``, ``small_gamma_law``,
``solve``, ``ridge_error``, ``linearisation_control``, ``hermite``).

Modules
-------
symbols           standard sympy symbols with assumptions
minimax           paper A: rate exponent, bounds, low-rank condition, K_M, finite-sample slope
activations       paper B: activation registry and Hermite coefficients
marchenko_pastur  paper B: Marchenko–Pastur Stieltjes transform, density, support, moments
kernel_spectrum   paper B: free-convolution law of the nonlinear kernel
ridge             paper B: ridge-regression interpolation error (sympy derivation as code)
null_system       paper B: the corrected null system of attention (solver, derivatives, kept diagonal)
attention         paper B: the error of AttentionModel (null model here, the structured case in structured)
structured        paper B: attention with signal and spiked weights (project's own derivation)
implicit          paper B: Taylor coefficients of the null system in gamma (implicit-function derivatives)
symbolic          the solvers as sympy functions (symbolic gamma or c: evalf, diff, series, lambdify, plot)
laws              scipy.stats-style spectral laws: MarchenkoPastur, KernelSpectralLaw
settings          frozen settings: AttentionModel (paper B's model), StrongAlignment (it under strong alignment),
                  RateSetting (paper A's setting)
multi_head        paper B with H heads: MultiHeadModel (shared or random heads, sum or concatenation; B11)
strong_alignment  paper B under strong alignment (||w_K|| ||w_Q|| ~ sqrt p): the gamma -> 0 gap, its T1 and T2 parts
strong_alignment_risk  the same on fresh labels: prediction risk of attention and ridge, leverage by bins of |a|

Input validation: one layer, :mod:`theory.validation` (its docstring states the rules), at the public entry
points; a wrong type raises :class:`ArgumentTypeError` (a ``TypeError`` and a ``ValueError``), a wrong value
``ValueError``; sizes and memory are bounded by :class:`Limits` (:func:`get_limits`, :func:`set_limits`).
"""

from . import (activations, attention, implicit, kernel_spectrum, laws, marchenko_pastur, minimax, multi_head,
               null_system, ridge, settings, strong_alignment, strong_alignment_risk, structured, symbolic, symbols)
from .validation import ArgumentTypeError, Limits, get_limits, set_limits
from ._version import __version__
from .activations import *  # noqa: F401,F403
from .implicit import *  # noqa: F401,F403
from .kernel_spectrum import *  # noqa: F401,F403
from .laws import *  # noqa: F401,F403
from .marchenko_pastur import *  # noqa: F401,F403
from .minimax import *  # noqa: F401,F403
from .multi_head import *  # noqa: F401,F403
from .null_system import *  # noqa: F401,F403
from .ridge import *  # noqa: F401,F403
from .settings import *  # noqa: F401,F403
from .strong_alignment import *  # noqa: F401,F403
from .strong_alignment_risk import *  # noqa: F401,F403
from .structured import *  # noqa: F401,F403

__all__ = ["symbols", "symbolic", "ArgumentTypeError", "Limits", "get_limits", "set_limits"]
for _module in (activations, implicit, kernel_spectrum, laws, marchenko_pastur, minimax, multi_head, null_system, ridge,
                settings, strong_alignment, strong_alignment_risk, structured):
    __all__ += list(_module.__all__)
del _module
