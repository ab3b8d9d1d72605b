"""What the papers predict: sympy expressions and their numeric evaluation.

``theory`` imports neither ``numerics`` nor ``verify``. Public names are re-exported here;
each module lists its own in ``__all__``.

Modules
-------
symbols           standard sympy symbols with assumptions
minimax           paper A: rate exponent, bounds, low-rank condition, K_M, finite-sample slope
activations       paper B: activation registry and Hermite coefficients
marchenko_pastur  paper B: Marchenko–Pastur Stieltjes transform, density, support, moments
kernel_spectrum   paper B: free-convolution law of the nonlinear kernel
ridge             paper B: ridge-regression interpolation error (sympy derivation as code)
attention         paper B: null-model attention deterministic equivalent
structured        paper B: attention with signal and spiked weights (project's own derivation)
"""

from . import symbols
from .activations import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .kernel_spectrum import *  # noqa: F401,F403
from .marchenko_pastur import *  # noqa: F401,F403
from .minimax import *  # noqa: F401,F403
from .ridge import *  # noqa: F401,F403
from .structured import *  # noqa: F401,F403
