"""Coverage scenarios: which shells the n training inputs come from (SPEC §3, paper B.4)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from udbench._validation import check_choice, param_error
from udbench.data.covariates import Covariates
from udbench.data.geometry import N_SHELLS, largest_remainder

__all__ = [
    "COVERAGES",
    "COVERAGE_SHARES",
    "COVERAGE_TABLE",
    "Coverage",
    "select_training_inputs",
    "shell_quotas",
]


@dataclass(frozen=True)
class Coverage:
    """One row of the coverage table (SPEC §3).

    Attributes
    ----------
    name : str
        The scenario's name (task ids, CLI).
    shares : tuple of float
        Share of n drawn from each shell, inner 0 … outermost ``N_SHELLS − 1``; sums to 1.
    description : str
        One line for listings and docs.
    """

    name: str
    shares: tuple[float, ...]
    description: str


#: The two coverage scenarios of SPEC §3, one row each.
COVERAGE_TABLE: tuple[Coverage, ...] = (
    Coverage("balanced", (0.2, 0.2, 0.2, 0.2, 0.2), "20 % of n from every shell"),
    Coverage(
        "ood",
        (0.25, 0.25, 0.25, 0.25, 0.0),
        "25 % of n from each of the four inner shells, none from the outermost",
    ),
)

#: Names of the coverage scenarios, in table order.
COVERAGES: tuple[str, ...] = tuple(c.name for c in COVERAGE_TABLE)

#: Share of n drawn from each shell (inner 0 … outermost 4), by scenario.
COVERAGE_SHARES: dict[str, tuple[float, ...]] = {c.name: c.shares for c in COVERAGE_TABLE}


def _quotas(coverage: str, n: int) -> np.ndarray:
    return largest_remainder(n, np.asarray(COVERAGE_SHARES[coverage]))


def shell_quotas(coverage: str, n: int) -> np.ndarray:
    """Number of training inputs per shell, shape (5,), largest-remainder rounding
    (ties to the inner shell)."""
    check_choice("shell_quotas", "coverage", coverage, COVERAGES)
    return _quotas(coverage, n)


def select_training_inputs(
    cov: Covariates,
    coverage: str,
    rng: np.random.Generator | int,
    n: int | None = None,
) -> np.ndarray:
    """Draw n training inputs from the candidate pool for a coverage scenario (SPEC §3).

    The shares per shell are the scenario's row of :data:`COVERAGE_TABLE`: ``balanced``
    takes 20 % of n from every shell; ``ood`` 25 % from each of the four inner shells and
    none from the outermost. Within a shell the rows are drawn uniformly without
    replacement.

    Parameters
    ----------
    cov : Covariates
    coverage : {"balanced", "ood"}
    rng : numpy.random.Generator or int
        The stream (derive it with :func:`udbench._seeding.make_rng`); an int seeds a new
        ``Generator``.
    n : int, optional
        Training-set size; defaults to the dataset's n (SPEC §2).

    Returns
    -------
    ndarray of shape (n,), int64
        Sorted row indices into ``cov.X``, all from ``cov.cand_idx``.

    Raises
    ------
    UdbenchError
        Unknown coverage, n not a positive integer, or a shell whose candidates cannot
        supply its quota.
    """
    check_choice("select_training_inputs", "coverage", coverage, COVERAGES)
    if n is None:
        n = cov.spec.n_train
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n <= 0:
        raise param_error("select_training_inputs", "n", "be a positive integer", n)
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(rng)
    quotas = _quotas(coverage, int(n))
    cand_shell = cov.shell[cov.cand_idx]
    chosen = []
    for k in range(N_SHELLS):
        pool = cov.cand_idx[cand_shell == k]
        if pool.size < quotas[k]:
            raise param_error(
                "select_training_inputs",
                "n",
                f"let shell {k} of {cov.key!r} supply {quotas[k]} inputs ({coverage!r}) "
                f"from its {pool.size} candidates",
                int(n),
            )
        chosen.append(rng.choice(pool, size=quotas[k], replace=False))
    return np.sort(np.concatenate(chosen)).astype(np.int64)
