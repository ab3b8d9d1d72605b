"""What actually happens: simulations, estimators, sweeps and their statistics.

``numerics`` may import ``theory`` (for parameter choices such as K_M), never ``verify``.

Modules
-------
ips        paper A: IPSModel (token laws, truths phi*, A*, noise; forward operator R_g)
estimator  paper A: PairwiseInteractionEstimator (variable projection ERM, torch, float64)
sweep      sweep runner: configurations x seeds -> table (joblib or Dask; disk cache); to_jsonable, the JSON conversion
slopes     fit_slope: log-log OLS slope with SE, t and bootstrap intervals, R^2
rmt        paper B: samplers X = mu y^T + Z, attention/ridge features, interpolation error on a gamma grid
mc_settings  paper B: MonteCarloSettings, how a Monte Carlo runs (trials, seed, threads, batching, device, labels)
model_simulation  paper B: simulate_model, the Monte Carlo of theory.AttentionModel s (the twin of model.error):
           one model, or several on the same draws with their linearised kernels and ridge
softmax    paper B: softmax attention's kernel and its Monte Carlo, softmax_error_mc (not re-exported here)
strong_alignment  paper B: strong_alignment_mc, attention against ridge under strong alignment, labels integrated out
threads    the thread policy: torch_threads(n), the one way to pin torch's threads; thread_map, the thread-pool map
malloc     keep_freed_memory: glibc keeps freed large blocks in the heap (verify's command line and its sweep workers)
"""

from theory import __version__  # noqa: F401  (one version for the three packages)

from ._estimator_base import InteractionEstimator  # noqa: F401  (the public base class of paper A's estimators)
from .estimator import *  # noqa: F401,F403
from .ips import *  # noqa: F401,F403
from .mc_settings import *  # noqa: F401,F403
from .model_simulation import *  # noqa: F401,F403
from .rmt import *  # noqa: F401,F403
from .slopes import *  # noqa: F401,F403
from .strong_alignment import *  # noqa: F401,F403
from .sweep import *  # noqa: F401,F403
from .threads import *  # noqa: F401,F403
