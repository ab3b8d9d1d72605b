"""How a Monte Carlo of paper B runs, as one frozen record: trials, seed, threads, batching, device and labels.

A simulation takes the model (:class:`theory.AttentionModel`), the size and a :class:`MonteCarloSettings`; the settings
never change the law of a trial, only how many trials there are, where they come from (``seed``) and how they are
computed (``n_jobs``, ``batch_size``, ``device``: the numbers do not depend on them):

>>> MonteCarloSettings(n_trials=8, seed=0, labels="iid")
MonteCarloSettings(n_trials=8, seed=0, n_jobs=1, batch_size=None, device='cpu', labels='iid')
"""

from __future__ import annotations

from dataclasses import dataclass

from theory.validation import as_int, check_choice, check_seed

from .threads import check_device, check_n_jobs

__all__ = ["MonteCarloSettings"]

#: largest ``batch_size`` of the Monte Carlo (a larger batch than ``n_trials`` is one batch)
MAX_BATCH = 2**31 - 1
#: the most trials a record holds (each simulation's memory check, before any draw, refuses far fewer)
MAX_TRIALS = 2**62
#: how the labels of a draw are made: ``"balanced"`` (``ceil(n/2)`` of ``+1``, random order) or ``"iid"`` (Rademacher)
LABEL_LAWS = ("balanced", "iid")


@dataclass(frozen=True)
class MonteCarloSettings:
    """The trials of a Monte Carlo and how they run (frozen, validated on construction).

    Parameters
    ----------
    n_trials : int
        Independent draws, in ``[1, 2**62]`` (a simulation that reports a standard error asks for ``>= 2``).
    seed : int
        In ``[0, 2**63 - 1]``; trial ``t`` draws from ``numpy.random.SeedSequence(seed).spawn(n_trials)[t]``.
    n_jobs : int
        Threads over batches of trials (torch releases the GIL).
    batch_size : int, optional
        Trials stacked per batched product / ``eigh``, in ``[1, 2**31 - 1]`` (default: memory-based, at most 64).
    device : str
        torch device of the products and eigendecompositions (``"cpu"``, ``"cuda"``, ``"cuda:k"``; it must exist).
    labels : {"balanced", "iid"}

    Raises
    ------
    ValueError
        A value out of its range (``ArgumentTypeError``, also a ``TypeError``, for a wrong type).
    """

    n_trials: int
    seed: int
    n_jobs: int = 1
    batch_size: int | None = None
    device: str = "cpu"
    labels: str = "balanced"

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "n_trials", as_int("n_trials", self.n_trials, 1, MAX_TRIALS))
        set_(self, "seed", check_seed("seed", self.seed))
        set_(self, "n_jobs", check_n_jobs("n_jobs", self.n_jobs))
        if self.batch_size is not None:
            set_(self, "batch_size", as_int("batch_size", self.batch_size, 1, MAX_BATCH))
        set_(self, "device", check_device("device", self.device))
        check_choice("labels", self.labels, LABEL_LAWS)
