"""The design of a user's dataset: the rules that give n_eval, n, ρ and the kernel family.

Design rules for a new dataset (documented in ``docs/data.md``; applied by
:func:`udbench.data.user.prepare_dataset`):

- n_eval = min(1500, ⌊N/2⌋) and the stratified split, exactly as for the suite (SPEC §2).
- n (training size) = min(:data:`TRAIN_CAP`, ⌊:data:`TRAIN_MARGIN` · n_max⌋), n_max the largest
  n whose ``balanced`` and ``ood`` quotas both fit the candidate pool's shells; 2000 is the
  suite's median n, the margin keeps ``ood`` draws from exhausting an inner shell.
- ρ = the median ρ of the packaged suite (0.32), unless given.
- GP kernel family: chosen by the caller among :func:`spec_kernel_families`
  (:func:`udbench.priors.gp.fit.select_kernel_family`) when there is a target, else
  :data:`DEFAULT_KERNEL_FAMILY`.
"""

from __future__ import annotations

import statistics

import numpy as np

from udbench._validation import param_error
from udbench.data.geometry import N_SHELLS, largest_remainder
from udbench.data.registry import _registry

__all__ = [
    "DEFAULT_KERNEL_FAMILY",
    "MAX_EVAL",
    "MIN_TRAIN",
    "TRAIN_CAP",
    "TRAIN_MARGIN",
    "design_train_size",
    "min_rows_needed",
    "spec_kernel_families",
    "suite_median_rho",
]

#: Largest evaluation pool (SPEC §2: n_eval = min(1500, ⌊N/2⌋)).
MAX_EVAL = 1500
#: Largest training size given to a new dataset: the median n of SPEC §2's suite.
TRAIN_CAP = 2000
#: Share of the largest feasible n that a new dataset gets (room for the ``ood`` draws).
TRAIN_MARGIN = 0.9
#: Smallest training size a dataset may have.
MIN_TRAIN = 50
#: GP kernel family of a dataset without a real target (nothing to fit): RBF, the field's
#: default smooth kernel (also the embedded ``diabetes`` default's family). Its
#: hyperparameters are the fit's starting values
#: (``udbench.priors.gp.fit.default_kernel_hyper``).
DEFAULT_KERNEL_FAMILY = "rbf"

_BALANCED = np.full(N_SHELLS, 1.0 / N_SHELLS)
_OOD = np.array([0.25, 0.25, 0.25, 0.25, 0.0])
_COMMAND = "udbench datasets add"


def suite_median_rho() -> float:
    """Median ρ of the packaged benchmark datasets (SPEC §2; ``diabetes`` excluded): 0.32."""
    return float(
        statistics.median(
            s.rho
            for s in _registry().values()
            if s.rho is not None and s.source in ("uci", "openml")
        )
    )


def spec_kernel_families() -> tuple[str, ...]:
    """The distinct GP kernel families of SPEC §2's table, in table order (nine families)."""
    families = [
        s.kernel_family
        for s in _registry().values()
        if s.kernel_family and s.source in ("uci", "openml")
    ]
    return tuple(dict.fromkeys(families))


def _quotas_fit(n: int, available: np.ndarray) -> bool:
    return all(
        bool(np.all(largest_remainder(n, shares) <= available)) for shares in (_BALANCED, _OOD)
    )


def design_train_size(shell: np.ndarray, cand_idx: np.ndarray) -> tuple[int, int]:
    """Training size n of a new dataset, and the largest n that fits (n_max).

    n_max is the largest n for which the ``balanced`` (20 % per shell) and ``ood`` (25 % from
    each inner shell) quotas, rounded by largest remainder, fit the candidate pool's shells;
    n = min(:data:`TRAIN_CAP`, ⌊:data:`TRAIN_MARGIN` · n_max⌋).

    Parameters
    ----------
    shell : ndarray of shape (N,), int
        Shell of every row.
    cand_idx : ndarray of int
        Candidate rows.

    Returns
    -------
    n, n_max : int
    """
    available = np.bincount(np.asarray(shell)[cand_idx], minlength=N_SHELLS)
    n_max = int(min(4 * available[:4].min(), N_SHELLS * available.min())) + 4
    while n_max > 0 and not _quotas_fit(n_max, available):
        n_max -= 1
    return min(TRAIN_CAP, int(np.floor(TRAIN_MARGIN * n_max))), n_max


def min_rows_needed() -> int:
    """Smallest N whose design gives n ≥ :data:`MIN_TRAIN` whatever the rounding.

    Quantile shells hold at least ⌊N/5⌋ rows each (without ties in the distance) and the
    evaluation pool takes at most ⌈n_eval/5⌉ of them, so every shell keeps at least
    ⌊N/5⌋ − ⌈n_eval/5⌉ candidates; N is the smallest with ⌊0.9 · 4 · that⌋ ≥ 50 (140).
    """
    N = 2 * N_SHELLS
    while True:
        n_eval = min(MAX_EVAL, N // 2)
        per_shell = N // N_SHELLS - -(-n_eval // N_SHELLS)
        if np.floor(TRAIN_MARGIN * 4 * per_shell) >= MIN_TRAIN:
            return N
        N += 1


def _check_shells(shell: np.ndarray, n_eval: int) -> None:
    """Raise when a shell holds fewer than n_eval/5 rows (the stratified split needs them)."""
    sizes = np.bincount(shell, minlength=N_SHELLS)
    if sizes.min() * N_SHELLS < n_eval:  # ties in the distance make unequal shells
        raise param_error(
            _COMMAND,
            "table",
            f"give shells of at least n_eval/5 = {n_eval / N_SHELLS:g} rows each (many "
            "rows share a Mahalanobis distance, e.g. repeated or few-valued covariates, so "
            "the quintile shells are unequal); drop repeats or few-valued covariates",
            f"shell sizes {sizes.tolist()}",
        )


def _train_size(
    shell: np.ndarray, cand_idx: np.ndarray, n_train: int | None, n_rows: int
) -> tuple[int, str]:
    """The training size n (``n_train``, else the rule) and how it was set (recorded)."""
    n_rule, n_max = design_train_size(shell, cand_idx)
    if n_train is None:
        if n_rule < MIN_TRAIN:
            raise param_error(
                _COMMAND,
                "table",
                f"give a training size n ≥ {MIN_TRAIN} (the shells are too unequal: the "
                f"`ood` quotas fit only n ≤ {n_max}); add rows",
                f"{n_rows} rows",
            )
        return n_rule, (
            f"min({TRAIN_CAP}, ⌊{TRAIN_MARGIN}·{n_max}⌋) (n_max = {n_max}: largest n whose "
            "balanced and ood quotas fit the candidate shells)"
        )
    if not (isinstance(n_train, int | np.integer) and MIN_TRAIN <= n_train <= n_max):
        raise param_error(
            _COMMAND,
            "--n",
            f"be an integer from {MIN_TRAIN} to {n_max} (the largest n whose balanced and "
            "ood quotas fit the candidate pool's shells)",
            n_train,
        )
    return int(n_train), "given (--n)"
