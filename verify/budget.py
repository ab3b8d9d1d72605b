"""A run that decides with the least compute: every check at its base design, then rounds where they are needed.

:func:`run_sequential` runs round 0 (replicate 0: the fixed design at the run's seed) of every selected check, then
spends the rest of a wall-clock budget (``--budget MINUTES``) and / or a number of rounds per check (``--rounds N``)
on the undecided checks, one round at a time, each time on the check whose decision is expected to come cheapest:
the replicates its current estimates need (:func:`verify.sequential.replicates_to_decide`) times its measured time
per replicate.  The verdicts are the sequential ones of :mod:`verify.sequential` (stated error rates under this
optional stopping).  Every replicate is an ordinary cached run at its own seed, so a second run with the same seed
and cache reads the first one's rounds back and continues; ``--rounds`` alone is reproducible on any machine."""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .context import CheckContext
from .claim import Claim, run_check
from .report import headline_comparison
from .results import CheckResult, Verdict
from .sequential import (MAX_ROUND, boundaries, judge_look, look_levels, pooled, replicate_seed, replicates_after,
                         replicates_to_decide, round_of)
from .verdicts import Judgement


def replicate_context(base: CheckContext, r: int) -> CheckContext:
    """Replicate ``r``'s context: seed :func:`~verify.sequential.replicate_seed` ``(seed, r)``, figures at r = 0."""
    return dataclasses.replace(base, seed=replicate_seed(base.seed, r), seeds_used=[],
                               report_dir=base.report_dir if r == 0 else None)


@dataclass
class CheckSequence:
    """One check's replicates, its looks and its current sequential judgement."""

    claim: Claim
    seed: int = 0
    replicates: list[CheckResult] = field(default_factory=list)
    looks: list[dict] = field(default_factory=list)
    judgement: Judgement | None = None
    decided_at_s: float | None = None

    @property
    def n(self) -> int:
        """Replicates held."""
        return len(self.replicates)

    @property
    def judged_n(self) -> int:
        """Replicates behind the last look (a round cut by the budget leaves more cached for the next run)."""
        return replicates_after(self.round) if self.looks else 0

    @property
    def round(self) -> int:
        """The last round judged (``-1`` before round 0)."""
        return self.looks[-1]["round"] if self.looks else -1

    @property
    def error(self) -> CheckResult | None:
        """The first replicate that ended in ERROR, if any."""
        return next((r for r in self.replicates if r.verdict is Verdict.ERROR), None)

    @property
    def sequential(self) -> bool:
        """Whether more data can change the verdict: a stochastic check that ran (not an ERROR)."""
        first = self.replicates[0] if self.replicates else None
        return (first is not None and first.verdict in (Verdict.PASS, Verdict.FAIL, Verdict.INCONCLUSIVE)
                and any(c.kind != "exact" for c in first.comparisons))

    @property
    def undecided(self) -> bool:
        """A sequential check whose last look is INCONCLUSIVE and whose replicates all ran."""
        return (self.sequential and self.judgement is not None and self.judgement.verdict == "INCONCLUSIVE"
                and self.error is None)

    @property
    def seconds_per_replicate(self) -> float:
        """Mean wall time of its replicates (a replicate read back from the cache counts its short time: a run
        that continues another estimates its next replicates low)."""
        return sum(r.runtime_s for r in self.replicates) / max(1, self.n)

    def needed(self) -> int | None:
        """Replicates at which the current estimates would decide it (``None``: not within the last round)."""
        return None if self.judgement is None else replicates_to_decide(self.judgement, self.judged_n)

    def seconds_to_decide(self) -> float:
        """Expected wall time to the decision, ``inf`` when no finite amount of data decides it at the estimate."""
        need = self.needed()
        return math.inf if need is None else max(0, need - self.judged_n) * self.seconds_per_replicate

    def look(self, elapsed_s: float) -> None:
        """Judge the pooled replicates at the round they complete (``n`` a power of two)."""
        j = round_of(self.n)
        if not self.sequential or self.error is not None:
            self.judgement = None
        else:
            self.judgement = judge_look(pooled([r.comparisons for r in self.replicates]), j)
            if self.judgement.verdict != "INCONCLUSIVE" and self.decided_at_s is None:
                self.decided_at_s = elapsed_s
        self.looks.append({"round": j, "replicates": self.n, "elapsed_s": round(elapsed_s, 2),
                           "verdict": self.judgement.verdict if self.judgement else self.replicates[0].verdict.value})

    def result(self) -> CheckResult:
        """The pooled, sequentially judged result (replicate 0 alone for a non-sequential check, or its first ERROR)."""
        first = self.replicates[0]
        if self.judgement is None:
            return self.error or first
        fail_level, pass_level = look_levels(self.round)
        need, seconds = self.needed(), self.seconds_to_decide()
        n = self.judged_n
        info = {"round": self.round, "replicates": n,
                "replicate_seeds": [replicate_seed(self.seed, r) for r in range(n)], "fail_level": fail_level,
                "pass_level": pass_level, "looks": self.looks, "decided_at_s": self.decided_at_s,
                "replicates_to_decide": need, "seconds_to_decide": None if math.isinf(seconds) else seconds}
        note = (f"Sequential verdict after round {self.round} ({n} replicate{'s' * (n > 1)} of the design, "
                f"pooled): FAIL at Holm level {fail_level:.2g}, PASS at {pass_level:.2g} (verify.sequential).")
        if self.judgement.verdict == "INCONCLUSIVE":
            note += (f" Undecided: the current estimates decide at {need} replicates (~{seconds:.0f} s"
                     " more)." if need is not None else " Undecided: the estimates sit on a decision boundary.")
        if n > 1:
            note += " The notes below describe replicate 0."
        return dataclasses.replace(
            first, verdict=Verdict(self.judgement.verdict), comparisons=list(self.judgement.comparisons),
            runtime_s=sum(r.runtime_s for r in self.replicates),
            seeds=list(dict.fromkeys(s for r in self.replicates for s in r.seeds)),
            notes=note + ("\n\n" + first.notes if first.notes else ""), data={**first.data, "sequential": info})


def look_line(seq: CheckSequence) -> str:
    """One progress line: the check's round, its headline estimate against the boundaries, the time it needs."""
    if seq.judgement is None:
        return f"{seq.claim.id} round {seq.round}: {seq.replicates[0].verdict.value} (not sequential)"
    fail_level, pass_level = look_levels(seq.round)
    stochastic = [c for c in seq.judgement.comparisons if c.kind != "exact"]
    head = headline_comparison(stochastic) if stochastic else None
    est = ""
    if head is not None and isinstance(head.measured, (int, float)) and isinstance(head.uncertainty, (int, float)):
        bounds = boundaries(head, seq.round, len(stochastic))
        est = (f"; {head.name[:48]}: {head.measured:.4g} ± {head.uncertainty:.2g} ({head.outcome})"
               + (f" [{bounds}]" if bounds else ""))
    text = (f"{seq.claim.id} round {seq.round} ({seq.judged_n} rep., {seq.seconds_per_replicate:.1f} s each): "
            f"{seq.judgement.verdict} at FAIL {fail_level:.1e} / PASS {pass_level:.1e}{est}")
    if seq.undecided:
        need = seq.needed()
        text += (f"; needs ~{need} replicates (~{seq.seconds_to_decide():.0f} s)" if need is not None
                 else "; estimate on a boundary")
    return text


def sequence_table(seqs: Sequence[CheckSequence]) -> Any:
    """A rich table: per check its verdict, rounds, replicates, when it was decided and what it still needs."""
    from rich.table import Table

    t = Table("check", "verdict", "round", "replicates", "decided at", "needs",
              title="Sequential verdicts (verify.sequential: Bonferroni over rounds)")
    for s in (s for s in seqs if s.looks):
        needs = ""
        if s.undecided:
            n = s.needed()
            needs = f"~{n} rep., ~{s.seconds_to_decide():.0f} s more" if n is not None else "on a boundary"
        t.add_row(s.claim.id, s.judgement.verdict if s.judgement is not None else s.result().verdict.value,
                  str(s.round), str(s.judged_n), f"{s.decided_at_s:.0f} s" if s.decided_at_s is not None else "", needs)
    return t


def run_sequential(claims: Sequence[Claim], base: CheckContext, *, budget_s: float | None = None,
                   rounds: int | None = None, run: Callable[[Claim, CheckContext], CheckResult] = run_check,
                   on_look: Callable[[CheckSequence], Any] | None = None,
                   clock: Callable[[], float] = time.perf_counter,
                   sequences: list | None = None) -> list[CheckSequence]:
    """Round 0 of every check, then rounds on the undecided ones (module docstring); the checks' sequences.

    Parameters
    ----------
    claims : the claims, in report order.
    base : the run's context (its seed is replicate 0's).
    budget_s : wall-clock budget in seconds from the start (``None``: none); a replicate that would not finish
        within it by its check's measured time is not started.
    rounds : at most this many rounds after round 0 per check (``None``: up to the budget; one of the two is needed).
    run : runs one replicate (``verify.claim.run_check``).
    on_look : called with a sequence after each of its looks (progress).
    clock : seconds (``time.perf_counter``).
    sequences : a list the sequences are appended to as they start (``None``: a new one): a caller keeps them
        when a ``KeyboardInterrupt`` propagates (the replicates run are cached: the same command resumes).
    """
    if budget_s is None and rounds is None:
        raise ValueError("run_sequential needs budget_s or rounds (without them, run the fixed design)")
    t0 = clock()
    seqs = [] if sequences is None else sequences

    def look(seq: CheckSequence) -> None:
        seq.look(clock() - t0)
        if on_look is not None:
            on_look(seq)

    for claim in claims:
        seqs.append(CheckSequence(claim, base.seed, [run(claim, replicate_context(base, 0))]))
        look(seqs[-1])
    stalled: set[str] = set()  # checks whose next replicate does not fit the budget (a cheaper check's may)
    while True:
        open_ = [s for s in seqs if s.undecided and s.claim.id not in stalled and s.round < MAX_ROUND
                 and (rounds is None or s.round < rounds)]
        if not open_:
            return seqs
        seq = min(open_, key=CheckSequence.seconds_to_decide)  # the first of equals: report order
        target = replicates_after(seq.round + 1)
        while seq.n < target and (budget_s is None or clock() - t0 + seq.seconds_per_replicate <= budget_s):
            seq.replicates.append(run(seq.claim, replicate_context(base, seq.n)))
        if seq.n < target:
            stalled.add(seq.claim.id)
        else:
            look(seq)
