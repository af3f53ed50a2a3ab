"""The seed-replacement rule for rejected task instances (SPEC §7), written once.

A reference instance whose posterior fails the acceptance rule
(:func:`udbench.priors.diagnostics.acceptance`: an MCMC family with any function-space
split-R̂ > 1.05) is discarded and generated again with a replacement seed. The one rule:
grid seed s is replaced by s + k·:data:`REPLACEMENT_STRIDE` for k = 1, 2, … (s + 1000, then
s + 2000, …; :func:`replacement_seed`), at most :data:`MAX_REPLACEMENTS` times unless the
caller says otherwise. Each grid seed has its own sequence, so an instance can be generated
alone, in any order or in parallel, with the same result, and a replacement never collides
with a grid seed (< :data:`REPLACEMENT_STRIDE`) or with another grid seed's replacements.
:func:`generate_with_seed_replacement` applies the rule to a ``run(seed)`` callable and
logs every rejection (:class:`SeedReplacement`), which task files record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from udbench._validation import param_error

__all__ = [
    "MAX_REPLACEMENTS",
    "REPLACEMENT_STRIDE",
    "SeedReplacement",
    "generate_with_seed_replacement",
    "replacement_seed",
]

#: Replacement seeds of grid seed s are s + k·REPLACEMENT_STRIDE, k = 1, 2, … (SPEC §7);
#: grid seeds must therefore be below it.
REPLACEMENT_STRIDE: int = 1000

#: Replacements tried for one instance before it is an error (``udbench generate``'s
#: ``--max-replacements`` default).
MAX_REPLACEMENTS: int = 5

T = TypeVar("T")


def replacement_seed(slot: int, taken: Sequence[int]) -> int:
    """The next unused seed for the rejected grid seed ``slot`` (SPEC §7).

    The smallest ``slot + k·REPLACEMENT_STRIDE`` (k >= 1) not in ``taken``: 2 → 1002 →
    2002 → … .

    Parameters
    ----------
    slot : int
        The grid seed, in ``[0, REPLACEMENT_STRIDE)``.
    taken : sequence of int
        Seeds already used for this slot (the grid seed and earlier replacements).

    Returns
    -------
    int
    """
    used = {int(t) for t in taken}
    k = 1
    while int(slot) + k * REPLACEMENT_STRIDE in used:
        k += 1
    return int(slot) + k * REPLACEMENT_STRIDE


@dataclass(frozen=True)
class SeedReplacement:
    """One rejected instance: ``slot`` is the grid seed, ``rejected`` the seed that failed
    (the grid seed or an earlier replacement), ``replacement`` the seed tried next and
    ``reason`` why (e.g. ``"rhat_max=1.08 > 1.05"``)."""

    slot: int
    rejected: int
    replacement: int
    reason: str


def generate_with_seed_replacement(
    run: Callable[[int], T],
    accepted: Callable[[T], tuple[bool, str]],
    seeds: Sequence[int],
    max_replacements: int = MAX_REPLACEMENTS,
) -> tuple[dict[int, tuple[int, T]], list[SeedReplacement]]:
    """Generate one instance per grid seed, replacing rejected seeds by :func:`replacement_seed`.

    Parameters
    ----------
    run : callable
        ``run(seed) -> result`` generates the instance with that seed.
    accepted : callable
        ``accepted(result) -> (ok, reason)``; e.g.
        ``lambda task: acceptance(task.diagnostics["sampler"])``.
    seeds : sequence of int
        Grid seeds, each below :data:`REPLACEMENT_STRIDE`; processed in the order given.
    max_replacements : int, default MAX_REPLACEMENTS
        Give up (raise) after this many replacements for one slot; 0 fails at the first
        rejection.

    Returns
    -------
    results : dict
        ``{grid seed: (seed actually used, result)}``.
    log : list of SeedReplacement
        The replacements made, in order (recorded in the task files).

    Raises
    ------
    UdbenchError
        If a slot is still rejected after ``max_replacements`` replacements.
    """
    taken: list[int] = [int(s) for s in seeds]
    results: dict[int, tuple[int, T]] = {}
    log: list[SeedReplacement] = []
    for slot in [int(s) for s in seeds]:
        seed = slot
        for attempt in range(int(max_replacements) + 1):
            result = run(seed)
            ok, reason = accepted(result)
            if ok:
                results[slot] = (seed, result)
                break
            if attempt == int(max_replacements):
                raise param_error(
                    "generate_with_seed_replacement",
                    "seeds",
                    f"give an accepted instance within {max_replacements} replacements",
                    slot,
                )
            new = replacement_seed(slot, taken)
            taken.append(new)
            log.append(SeedReplacement(slot, seed, new, reason))
            seed = new
    return results, log
