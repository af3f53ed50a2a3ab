"""Does every knob of a search space matter? (issue 61, item 1)

A search space is only as good as its worst knob: a hyperparameter whose whole range moves
nothing makes a sweep spend trials on noise, and a leaderboard that says "tuned" over it
claims more than was done. The decoupled weight decay of the neural methods was such a knob:
``optax.nadamw`` multiplies it by the learning rate, so its whole range [1e-6, 1e-2] shrinks
a weight by at most ~1e-5 per step.

:func:`search_space_check` is scikit-learn's ``check_param_validation`` idea turned to
tuning: on one fixed task, each hyperparameter of a method's ``search_space`` is set to the
low and to the high end of its range (the first and last choice of a categorical one; the
others at the method's configuration as given), and the tuning objective itself — SPEC §9's
held-out NLL, :func:`udbench.tuning.objective.evaluate_trial`, the same split — is computed
under several method seeds. The knob **matters** when the mean objective at one end differs
from the mean at the other by more than the seed-to-seed spread at the configuration as given
(the range, max − min, of its objective over the same seeds) and by more than
:data:`MIN_EFFECT` (10⁻³ nats per point), so that a deterministic method's (spread 0) tiny
effects do not count: measured on 2026-12-07 on a concrete task, blr's four Gamma
hyperprior knobs (``alpha_1`` … ``lambda_2`` over [1e-8, 1e-4]) moved its held-out NLL of
1.214 by at most 2.5e-7 nats — a sweep over them tunes nothing. A conditional entry
(``when``) is checked with the entries it depends on set to
their first qualifying value.

The comparison is on the objective only (not on the predictions): a knob that moves the
predictions but never the held-out NLL does not change what a sweep selects, so for tuning it
is inert too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from udbench._validation import param_error

__all__ = ["MIN_EFFECT", "KnobEnds", "knob_ends", "search_space_check"]

#: Smallest difference of the held-out NLL (nats per point) between a knob's two ends that
#: counts as an effect, whatever the seed spread: below it, no sweep's choice would change what
#: a method predicts in a way the benchmark can see (our choice; the objective's own values
#: are O(1) nats).
MIN_EFFECT = 1e-3


@dataclass(frozen=True)
class KnobEnds:
    """The two ends of one hyperparameter's range and the settings that make it active.

    Attributes
    ----------
    low, high : Any
        The range's ends (a categorical entry: its first and last choice; a bool: False and
        True).
    requires : dict
        Values of the entries a conditional (``when``) entry depends on (empty otherwise).
    """

    low: Any
    high: Any
    requires: dict[str, Any]


def knob_ends(space: Mapping[str, Mapping[str, Any]]) -> dict[str, KnobEnds]:
    """The ends of every entry of a search space (:func:`udbench.tuning.space.suggest`'s
    format).

    Parameters
    ----------
    space : mapping
        A method's ``search_space``.

    Returns
    -------
    dict
        Entry name -> :class:`KnobEnds`, in the space's order; entries with a single value
        (one choice, or low == high) are left out: they have no range to check.
    """
    out: dict[str, KnobEnds] = {}
    for key, spec in space.items():
        kind = spec.get("type", "float")
        if kind in ("float", "int"):
            cast = float if kind == "float" else int
            low, high = cast(spec["low"]), cast(spec["high"])
        elif kind == "bool":
            low, high = False, True
        else:
            choices = list(spec["choices"])
            low, high = choices[0], choices[-1]
        if low == high:
            continue
        requires: dict[str, Any] = {}
        for other, wanted in (spec.get("when") or {}).items():
            values = wanted if isinstance(wanted, list | tuple) else [wanted]
            requires[other] = values[0]
        out[key] = KnobEnds(low, high, requires)
    return out


def search_space_check(
    estimator: Any,
    task_path: str,
    *,
    seeds: Sequence[int] = (0, 1, 2),
    params: Sequence[str] | None = None,
    split_seed: int = 0,
) -> pd.DataFrame:
    """Whether each hyperparameter of ``estimator``'s search space moves the tuning objective
    by more than the seed-to-seed spread (module docstring).

    Parameters
    ----------
    estimator : BaseMethod or BaseClassifier
        The method with the configuration the other knobs keep (e.g. its defaults, or its
        ``smoke_params`` for a fast check); its class's ``search_space`` is checked.
    task_path : str
        A task file (regression for a method, classification for a classifier); only its
        training sample is read, split as a sweep splits it.
    seeds : sequence of int, default (0, 1, 2)
        Method seeds (``random_state``); at least 2, so that a spread exists.
    params : sequence of str, optional
        Check only these entries (default: all of the space).
    split_seed : int, default 0
        Seed of the hold-out split (:func:`udbench.tuning.objective.holdout_split`).

    Returns
    -------
    DataFrame
        One row per entry: ``method, param, low, high, nll_low, nll_high`` (means over the
        seeds, nats per point), ``effect`` (``|nll_high − nll_low|``), ``spread`` (max − min
        of the objective at the configuration as given), ``nll_given`` (its mean),
        ``matters`` (bool) and ``error`` (a trial's one-line failure, else ""; such a row
        has ``matters`` False).

    Raises
    ------
    UdbenchError
        Fewer than 2 seeds; an entry of ``params`` not in the search space; the
        configuration as given fails a trial (nothing to compare with).
    """
    from udbench.tuning.objective import TrialJob, evaluate_trial

    cls = type(estimator)
    name = str(getattr(estimator, "name", cls.__name__))
    seeds = [int(s) for s in seeds]
    if len(seeds) < 2:
        raise param_error("search_space_check", "seeds", "hold at least 2 seeds", seeds)
    ends = knob_ends(cls.search_space)
    chosen = list(ends) if params is None else list(params)
    for p in chosen:
        if p not in ends:
            raise param_error(
                "search_space_check", "params", f"name entries of {name}'s space {list(ends)}", p
            )

    def objective(settings: dict[str, Any], seed: int) -> tuple[float, str]:
        job = TrialJob(
            sweep=f"{name}/space-check",
            number=0,
            task_path=str(task_path),
            estimator=estimator,
            params=settings,
            seed=seed,
            split_seed=split_seed,
        )
        out = evaluate_trial(job)
        return (np.nan if out.value is None else float(out.value)), (out.error or "")

    given = [objective({}, s) for s in seeds]
    failed = [e for _, e in given if e]
    if failed:
        raise param_error(
            "search_space_check", "estimator", "pass a trial at the configuration as given",
            failed[0],
        )  # fmt: skip
    base = np.array([v for v, _ in given])
    spread = float(base.max() - base.min())
    rows = []
    for p in chosen:
        knob = ends[p]
        means, errors = [], []
        for value in (knob.low, knob.high):
            got = [objective({**knob.requires, p: value}, s) for s in seeds]
            errors += [e for _, e in got if e]
            means.append(float(np.mean([v for v, _ in got])))
        effect = abs(means[1] - means[0])
        rows.append(
            {
                "method": name,
                "param": p,
                "low": knob.low,
                "high": knob.high,
                "nll_low": means[0],
                "nll_high": means[1],
                "effect": effect,
                "spread": spread,
                "nll_given": float(base.mean()),
                "matters": bool(not errors and effect > max(spread, MIN_EFFECT)),
                "error": errors[0] if errors else "",
            }
        )
    return pd.DataFrame(rows)
