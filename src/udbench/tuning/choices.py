"""What the tuner chose: per method and hyperparameter, the tuned values across conditions
against the default (issue 36, item 3: why a method's rank moved when tuned).

:func:`tuned_choices` reads tuning records (``udbench tune`` records, or the tuning
campaign's results: both hold ``tuned_params``, ``base_config`` and ``search_space``) and
summarises each tuned hyperparameter over the sweeps: the method's default, the median (a
categorical one: the most frequent choice and its share), the range, and the share of sweeps
whose value lies at an edge of the search space (within 2 % of the range, on the log scale
for a log-uniform parameter): a tuner that keeps choosing an edge says the range cuts off
the optimum.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "EDGE_FRACTION",
    "MIN_CHANGE",
    "changes_markdown",
    "edge_chance",
    "largest_changes",
    "tuned_choices",
    "tuned_choices_markdown",
]

#: A tuned value within this fraction of the search range from a bound counts as at the edge.
EDGE_FRACTION = 0.02
#: Smallest change :func:`largest_changes` names: a factor of 1.25 between the tuned median and
#: the default (|log ratio| >= log 1.25); a categorical choice counts when its most frequent
#: value is not the default.
MIN_CHANGE = math.log(1.25)


def _default(rec: dict[str, Any], name: str) -> Any:
    base = rec.get("base_config")
    if isinstance(base, str):
        try:
            base = json.loads(base)
        except ValueError:
            return None
    params = (base or {}).get("params") if isinstance(base, dict) else None
    return None if params is None else params.get(name)


def _scaled(value: float, space: dict[str, Any]) -> tuple[float, float, float]:
    """(value, low, high) on the search's own scale (log for a log-uniform parameter)."""
    low, high = float(space["low"]), float(space["high"])
    if space.get("log") and low > 0 and value > 0:
        return math.log(value), math.log(low), math.log(high)
    return value, low, high


def _at_edge(value: float, space: dict[str, Any]) -> bool:
    return _at_low(value, space) or _at_high(value, space)


def _at_low(value: float, space: dict[str, Any]) -> bool:
    v, low, high = _scaled(value, space)
    return high > low and v - low <= EDGE_FRACTION * (high - low)


def _at_high(value: float, space: dict[str, Any]) -> bool:
    v, low, high = _scaled(value, space)
    return high > low and high - v <= EDGE_FRACTION * (high - low)


def edge_chance(space: dict[str, Any]) -> float:
    """The share of a uniform draw from the search space that lies at one of its edges
    (:data:`EDGE_FRACTION`): the level :func:`tuned_choices`' ``share_at_low`` and
    ``share_at_high`` are compared with.

    A float parameter: :data:`EDGE_FRACTION` (on its sampling scale). An integer one (drawn
    uniformly over its values, Optuna's ``suggest_int`` without a log scale): the share of its
    values within the edge band of the low end, at least one value in ``high - low + 1``.
    A layer count searched over {1, 2, 3} is at its low end with chance 1/3 under a uniform
    choice, so a tuner choosing it in 79 % of the sweeps says more than 40 % of a float would.

    Parameters
    ----------
    space : dict
        One hyperparameter's search-space entry (``type``, ``low``, ``high``, ``log``).

    Returns
    -------
    float
        In (0, 1].
    """
    if space.get("type") == "int":
        low, high = int(space["low"]), int(space["high"])
        values = np.arange(low, high + 1, dtype=float)
        at = [_at_low(float(v), space) for v in values]
        return max(float(np.mean(at)), 1.0 / len(values))
    return EDGE_FRACTION


def tuned_choices(records: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """The tuned values of every (method, hyperparameter) over the sweeps.

    Parameters
    ----------
    records : iterable of dict
        Tuning records with ``method``, ``status``, ``tuned_params``, ``search_space`` and
        ``base_config`` (:func:`udbench.tuning.records.load_records`, or the ``result`` of a
        tuning-campaign record). Records without a complete trial (``tuned_params`` None) are
        skipped.

    Returns
    -------
    DataFrame
        One row per (method, param), sorted: ``method, param, kind`` (``numeric`` or
        ``categorical``), ``default``, ``n`` (sweeps), ``median`` (numeric: for an integer
        hyperparameter the lower middle value of an even count, a value chosen; the most
        frequent choice for a categorical one), ``low``, ``high`` (range of the tuned values;
        None for a categorical one), ``share_mode`` (categorical: the share of the most frequent
        choice), ``share_at_edge`` (numeric: the share of sweeps at an edge of the search
        space, :data:`EDGE_FRACTION`), ``share_at_low`` and ``share_at_high`` (at each edge)
        and ``edge_chance`` (what a uniform choice gives at one edge, :func:`edge_chance`):
        an edge chosen far more often than by chance says the range cuts off the optimum
        there (issue 61).
    """
    values: dict[tuple[str, str], list[Any]] = {}
    info: dict[tuple[str, str], tuple[dict[str, Any], Any]] = {}
    for rec in records:
        tuned = rec.get("tuned_params")
        if rec.get("status") != "ok" or not tuned:
            continue
        space = rec.get("search_space") or {}
        for name, value in tuned.items():
            key = (str(rec["method"]), str(name))
            values.setdefault(key, []).append(value)
            info.setdefault(key, (dict(space.get(name) or {}), _default(rec, name)))
    rows = []
    for (method, name), vals in sorted(values.items()):
        space, default = info[(method, name)]
        row: dict[str, Any] = {"method": method, "param": name, "default": default, "n": len(vals)}
        if space.get("type") in ("int", "float") and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in vals
        ):
            arr = np.asarray(vals, dtype=float)
            row.update(
                kind="numeric",
                # an integer hyperparameter's median is a value the tuner chose (the lower
                # middle one of an even count), never a 5.5 for a layer count
                median=float(
                    np.quantile(arr, 0.5, method="lower")
                    if space.get("type") == "int"
                    else np.median(arr)
                ),
                low=float(arr.min()),
                high=float(arr.max()),
                share_mode=None,
                share_at_edge=float(np.mean([_at_edge(float(v), space) for v in arr])),
                share_at_low=float(np.mean([_at_low(float(v), space) for v in arr])),
                share_at_high=float(np.mean([_at_high(float(v), space) for v in arr])),
                edge_chance=edge_chance(space),
            )
        else:
            counts = pd.Series([json.dumps(v) for v in vals]).value_counts()
            row.update(
                kind="categorical",
                median=json.loads(str(counts.index[0])),
                low=None,
                high=None,
                share_mode=float(counts.iloc[0] / len(vals)),
                share_at_edge=None,
                share_at_low=None,
                share_at_high=None,
                edge_chance=None,
            )
        rows.append(row)
    cols = ["method", "param", "kind", "default", "n", "median", "low", "high"]
    edges = ["share_at_edge", "share_at_low", "share_at_high", "edge_chance"]
    return pd.DataFrame(rows, columns=[*cols, "share_mode", *edges])


def tuned_choices_markdown(table: pd.DataFrame) -> str:
    """:func:`tuned_choices`' table as Markdown (3 significant digits)."""

    def g(v: Any) -> str:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "–"
        return f"{v:.3g}" if isinstance(v, float) else str(v)

    lines = [
        "| method | hyperparameter | default | tuned: median or most chosen | range | at an edge "
        "| at low / high (chance each) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in table.to_dict(orient="records"):
        if r["kind"] == "numeric":
            tuned, rng = g(r["median"]), f"{g(r['low'])}–{g(r['high'])}"
            edge = f"{r['share_at_edge']:.0%}"
            sides = f"{r['share_at_low']:.0%} / {r['share_at_high']:.0%} ({r['edge_chance']:.0%})"
        else:
            tuned, rng, edge, sides = f"{g(r['median'])} ({r['share_mode']:.0%})", "–", "–", "–"
        lines.append(
            f"| {r['method']} | {r['param']} | {g(r['default'])} | {tuned} | {rng} | {edge} "
            f"| {sides} |"
        )
    return "\n".join(lines)


def _change(row: dict[str, Any]) -> float:
    """How far the tuner moved one hyperparameter from its default: |log(median/default)| for
    positive numbers, otherwise |median − default| / max(|median|, |default|) (at most 2; 1
    for a move away from 0); for a categorical one, the share of
    sweeps choosing another value than the default when the most frequent choice differs."""
    default, tuned = row["default"], row["median"]
    if default is None:
        return 0.0
    if row["kind"] == "categorical":
        return float(row["share_mode"]) if tuned != default else 0.0
    if isinstance(default, bool) or not isinstance(default, int | float):
        return 0.0
    d, t = float(default), float(tuned)
    if d > 0 and t > 0:
        return abs(math.log(t / d))
    # otherwise relative to the larger magnitude: 1 for a move away from a default of 0
    return abs(t - d) / max(abs(d), abs(t)) if t != d else 0.0


def largest_changes(table: pd.DataFrame, method: str, top: int = 3) -> list[str]:
    """The hyperparameters the tuner moved most from the default, for one method.

    Numeric ones count when the median tuned value differs from the default by a factor of at
    least 1.25 (:data:`MIN_CHANGE`), ranked by |log(median/default)| (where a value is not
    positive: |median − default| / max(|median|, |default|)); categorical ones when the most
    frequent choice is not the default, ranked by that choice's share, on the same scale (a
    share of 1 ranks as a factor of e). Issue 36, item 3: why a method's rank moved when
    tuned.

    Parameters
    ----------
    table : DataFrame
        :func:`tuned_choices`' table.
    method : str
        The method (rows of other methods are ignored).
    top : int, default 3
        At most this many.

    Returns
    -------
    list of str
        ``"<param> <default> → <tuned>"`` (numeric: the median over the sweeps;
        categorical: the most frequent choice with its share), largest change first; empty
        when the tuner kept every default within the threshold, or the method has no rows.
    """
    rows = [{str(k): v for k, v in r.items()} for r in table.to_dict(orient="records")]
    rows = [r for r in rows if r["method"] == method]
    scored = sorted(((_change(r), r["param"], r) for r in rows), key=lambda t: (-t[0], t[1]))

    def g(v: Any) -> str:
        return f"{v:.3g}" if isinstance(v, float) else str(v)

    out = []
    for score, name, r in scored:  # the threshold first, then the top ones
        if r["kind"] == "categorical" and score > 0:
            out.append(f"{name} {g(r['default'])} → {g(r['median'])} ({r['share_mode']:.0%})")
        elif r["kind"] == "numeric" and score >= MIN_CHANGE:
            out.append(f"{name} {g(r['default'])} → {g(r['median'])}")
    return out[:top]


def changes_markdown(
    comparison: pd.DataFrame,
    choices: pd.DataFrame,
    metric: str = "rho_eu_risk",
    methods: dict[str, str] | None = None,
) -> str:
    """Per compared method, largest rank move first: ranks and means untuned → tuned, and what
    the tuner changed most (:func:`largest_changes`).

    Parameters
    ----------
    comparison : DataFrame
        :attr:`udbench.analyses.tuned_compare.TunedComparison.table` (``method``,
        ``rank_untuned``, ``rank_tuned``, ``rank_move``, ``mean_untuned``, ``mean_tuned``).
    choices : DataFrame
        :func:`tuned_choices` of the tuning records the tuned run used.
    metric : str, default "rho_eu_risk"
        The metric of the means (named in the header).
    methods : dict, optional
        The registry name of each label in ``comparison`` that is not one (e.g.
        ``"blr:max_iter=100" -> "blr"``); ``choices`` is keyed by registry name.

    Returns
    -------
    str
        A Markdown section (heading, one sentence, the table).
    """
    table = comparison.assign(_abs=comparison["rank_move"].abs())
    lines = [
        "\n## What the tuner changed\n",
        "Per method, the hyperparameters whose tuned value (median over the tuning records "
        "that the tuned cells used) is farthest from the default (a factor of at least 1.25; "
        "categorical: the most chosen value, with its share):\n",
        f"| method | rank untuned → tuned | {metric} untuned → tuned | largest changes |",
        "|---|---|---|---|",
    ]

    def f(v: Any, spec: str) -> str:  # a method in one run only has no rank there
        return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)

    for r in table.sort_values(["_abs", "method"], ascending=[False, True]).to_dict("records"):
        name = (methods or {}).get(str(r["method"]), str(r["method"]))
        if not (choices["method"] == name).any():  # nothing read: no claim about defaults
            changed = "no tuning record found"
        else:
            changed = ", ".join(largest_changes(choices, name)) or "none so large"
        lines.append(
            f"| {r['method']} | {f(r['rank_untuned'], 'g')} → {f(r['rank_tuned'], 'g')} | "
            f"{f(r['mean_untuned'], '.3f')} → {f(r['mean_tuned'], '.3f')} | {changed} |"
        )
    return "\n".join(lines) + "\n"
