"""The catalogue of checks: every claim id with its registered check, looked up by id.

Kept apart from :mod:`verify.registry` so that the check modules (which import the registry to register
themselves) and the registry do not import each other: this module imports both.
"""

from __future__ import annotations

from typing import Sequence

from . import registry
from .claims import CLAIMS, STUDIES
from .registry import CheckSpec
from .validation import check_items, check_text

__all__ = ["all_checks", "check_spec", "claim_of", "select"]


def all_checks() -> list[CheckSpec]:
    """Every claim id, in order, with its check function (None when not implemented), then the
    informational studies (:data:`verify.claims.STUDIES`) that have a function."""
    from . import checks  # noqa: F401  (importing registers the checks)

    reg = registry._REGISTRY
    specs = [CheckSpec(cid, paper, claim, reg.get(cid)) for cid, (paper, claim) in CLAIMS.items()]
    return specs + [CheckSpec(sid, paper, text, reg[sid]) for sid, (paper, text) in STUDIES.items() if sid in reg]


def check_spec(claim_id: str) -> CheckSpec:
    """The :class:`~verify.registry.CheckSpec` of one claim id (case-insensitive).

    Raises
    ------
    ValueError
        Unknown id (the message lists the known ones).
    """
    check_text("claim_id", claim_id, empty=False)
    specs = {s.id.upper(): s for s in all_checks()}
    key = claim_id.upper()
    if key not in specs:
        raise ValueError(f"claim_id must be a known claim id, got {claim_id!r}; known: "
                         f"{', '.join(s.id for s in specs.values())}")
    return specs[key]


def select(ids: Sequence[str] | None) -> list[CheckSpec]:
    """The specs of ``ids`` (a list of claim ids, case-insensitive) in catalogue order (all of them for ``None`` or
    empty).

    Raises
    ------
    ValueError
        An unknown id (the message lists the known ones); ``TypeError`` for ``ids`` not a list of strings.
    """
    specs = all_checks()
    if ids is None:
        return specs
    ids = [check_text("ids item", i) for i in check_items("ids", ids, object, "claim ids (strings)")]
    if not ids:
        return specs
    known = {k.upper(): k for k in [*CLAIMS, *STUDIES]}
    unknown = [i for i in ids if i.upper() not in known]
    if unknown:
        raise ValueError(f"ids must be known claim ids; unknown: {', '.join(unknown)}; known: "
                         f"{', '.join(known.values())}")
    wanted = [known[i.upper()] for i in ids]
    return [s for s in specs if s.id in wanted]


def claim_of(claim_id: str):
    """The registered :class:`verify.claim.Claim` of ``claim_id`` (its parts: design, predict, simulate, judge, ...).

    Raises
    ------
    KeyError
        The id has no check written as a :class:`~verify.claim.Claim`.
    """
    from . import checks  # noqa: F401  (importing registers the checks)
    from .claim import Claim

    spec = check_spec(claim_id)
    owner = getattr(spec.func, "__self__", None)  # a registered Claim is registered as its bound ``run``
    if not isinstance(owner, Claim):
        raise KeyError(f"{spec.id} has no check written as a Claim")
    return owner
