"""Measuring the cost model's calibration table on this machine (:func:`calibrate`).

What each entry measures, on which synthetic data and with which clock, is written in
:mod:`udbench.tuning.calibration`, which holds the table, its power laws and the shipped
file; this module runs the measurements (``udbench plan --calibrate``,
``benchmarks/calibration_table.py``) in a stated budget of CPU seconds.
"""

from __future__ import annotations

import math
import os
import platform
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from udbench._validation import param_error
from udbench.priors.base import prior_capabilities, prior_class
from udbench.tuning.calibration import (
    _MIN_SECONDS,
    EVAL_POINTS,
    FIT_SIZES,
    N_FEATURES,
    WARM_N,
    CalibrationTable,
    PowerLaw,
    _check_family,
    _read_table,
    _shipped_path,
)

__all__ = ["calibrate"]


def _synthetic(n: int, seed: int, d: int = N_FEATURES) -> tuple[np.ndarray, np.ndarray]:
    """``n`` uniform rows in [0, 1]^d and a smooth target with heteroscedastic noise."""
    rng = np.random.default_rng([seed, n, d])
    X = rng.uniform(size=(n, d))
    w = np.linspace(1.0, 3.0, d)
    f = np.sin(X @ w) + 0.5 * np.cos(3.0 * X[:, 0])
    y = f + np.sqrt(0.1 + 0.2 * X[:, -1]) * rng.standard_normal(n)
    return X, y


def _cpu(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(CPU seconds, wall seconds, result) of ``fn()``."""
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return time.process_time() - c0, time.perf_counter() - w0, out


def _nudged(method: Any) -> tuple[str, float] | None:
    """A float hyperparameter of the search space and its default × 1.01 (in range)."""
    params = method.get_params(deep=False)
    for key, spec in type(method).search_space.items():
        if spec.get("type", "float") != "float" or spec.get("when"):
            continue
        value = params.get(key)
        if not isinstance(value, float) or spec["low"] >= spec["high"]:
            continue
        nudged = min(max(value * 1.01, float(spec["low"])), float(spec["high"]))
        if nudged == value:
            nudged = min(max(value * 0.99, float(spec["low"])), float(spec["high"]))
        if nudged != value:
            return key, nudged
    return None


def _measure_method(
    name: str, sizes: Sequence[int], heldout: int | None, budget: _Budget
) -> dict[str, Any] | None:
    from udbench.methods import make_method

    def fit_predict(n: int, **params: Any) -> tuple[float, float, float]:
        X, y = _synthetic(n, 0)
        Xe, _ = _synthetic(EVAL_POINTS, 1)
        est = make_method(name, random_state=0, **params)
        cf, wf, _ = _cpu(lambda: est.fit(X, y))
        _cpu(lambda: est.predict(Xe))  # a new shape may compile: the second call is timed
        cp, wp, _ = _cpu(lambda: est.predict(Xe))
        return cf, cp, wf + wp

    t_first = fit_predict(WARM_N)
    t_again = fit_predict(WARM_N)
    nudge = _nudged(make_method(name))
    if nudge is not None:
        t_new = fit_predict(WARM_N, **{nudge[0]: nudge[1]})
        new_config = max(0.0, (t_new[0] + t_new[1]) - (t_again[0] + t_again[1]))
    else:
        new_config = 0.0
    first_call = max(0.0, (t_first[0] + t_first[1]) - (t_again[0] + t_again[1]))
    points: list[dict[str, Any]] = []
    for n in [*sizes, *([heldout] if heldout else [])]:
        guess = _guess(points, n, new_config)
        if not budget.allows(guess):
            budget.skipped.append(f"method:{name} at n={n} (about {guess:.0f} s)")
            break
        cf, cp, wall = fit_predict(n)
        budget.spend(cf + cp)
        points.append(
            {
                "n": n,
                "fit_s": cf,
                "warm_fit_s": max(cf - new_config, _MIN_SECONDS),
                "predict_s": cp,
                "wall_s": wall,
                "heldout": n == heldout and n not in sizes,
            }
        )
    fit_pts = [p for p in points if not p["heldout"]]
    if len(fit_pts) < 2:
        return None
    entry: dict[str, Any] = {
        "kind": "method",
        "name": name,
        "first_call_s": first_call,
        "new_config_s": new_config,
        "nudged": None if nudge is None else {"param": nudge[0], "value": nudge[1]},
        "points": points,
    }
    _add_laws(entry, points, {"fit": "warm_fit_s", "predict": "predict_s"})
    return entry


def _guess(points: list[dict[str, Any]], n: int, extra: float) -> float:
    """Seconds the next measurement may take: the law so far, cubic beyond one point."""
    if not points:
        return extra
    if len(points) == 1:
        p = points[0]
        return (p["fit_s"] + p["predict_s"]) * (n / p["n"]) ** 3
    law = PowerLaw.fit([p["n"] for p in points], [p["fit_s"] + p["predict_s"] for p in points])
    return law(n) * 1.5


def _add_laws(entry: dict[str, Any], points: list[dict[str, Any]], fields: dict[str, str]) -> None:
    """``law`` (every point) and, if a held-out point exists, ``heldout`` errors per field."""
    fit_pts = [p for p in points if not p.get("heldout")]
    held = [p for p in points if p.get("heldout")]
    entry["law"] = {
        k: PowerLaw.fit([p["n"] for p in points], [p[f] for p in points]).as_dict()
        for k, f in fields.items()
    }
    entry["law_fit_sizes"] = [p["n"] for p in fit_pts]
    if held:
        h = held[0]
        laws = {
            k: PowerLaw.fit([p["n"] for p in fit_pts], [p[f] for p in fit_pts])
            for k, f in fields.items()
        }
        predicted = sum(laws[k](h["n"]) for k in fields)
        measured = sum(h[f] for f in fields.values())
        entry["heldout"] = {
            "n": h["n"],
            "measured_s": measured,
            "predicted_s": predicted,
            "rel_error": predicted / measured - 1.0 if measured > 0 else None,
        }


def _measure_generation(
    family: str, fidelity: str, sizes: Sequence[int], heldout: int | None, budget: _Budget
) -> dict[str, Any] | None:
    from udbench.priors.base import Fidelity
    from udbench.tasks import TaskSpec, make_task

    # a family whose cost is set by n + n_eval (the GP) is timed at n_eval = n
    joint = prior_capabilities(family).cost_grows_with_eval_points
    n_eval_of = _joint_eval_points if joint else (lambda n: EVAL_POINTS)

    def instance(n: int) -> tuple[float, float]:
        m = n_eval_of(n)
        rng = np.random.default_rng([7, n])
        X = rng.uniform(size=(n + m, N_FEATURES))
        eval_idx, train_idx = np.arange(m), np.arange(m, m + n)
        nv = 0.3 * np.exp(X[:, 0] - 0.5)
        prior = _synthetic_prior(family, fidelity, X[eval_idx])
        spec = TaskSpec(
            "diabetes", family, "smooth-monotone", "balanced", 0, fidelity=Fidelity(fidelity)
        )
        c, w, _ = _cpu(
            lambda: make_task(spec, prior, X, eval_idx, train_idx, nv[eval_idx], nv[train_idx])
        )
        return c, w

    _ = instance(min(60, min(sizes)))  # imports and compilation at a tiny size, not timed
    points: list[dict[str, Any]] = []
    for n in [*sizes, *([heldout] if heldout else [])]:
        guess = 2.0 * _guess(
            [{"n": p["n"], "fit_s": p["instance_s"], "predict_s": 0.0} for p in points], n, 0.0
        )
        if not budget.allows(guess):
            budget.skipped.append(f"generate:{family} at n={n} (about {guess:.0f} s)")
            break
        # the first instance at a new shape compiles (JAX samplers, kernels); the second,
        # warm, is the law's (a worker compiles once per dataset, then makes its instances)
        c_first, _ = instance(n)
        c, w = instance(n)
        budget.spend(c_first + c)
        points.append(
            {
                "n": n,
                "instance_s": c,
                "first_instance_s": c_first,
                "wall_s": w,
                "heldout": n == heldout and n not in sizes,
            }
        )
    if len([p for p in points if not p["heldout"]]) < 2:
        return None
    entry: dict[str, Any] = {
        "kind": "generate",
        "family": family,
        "fidelity": fidelity,
        "size": "n + n_eval" if joint else "n",
        "eval_points": "n" if joint else EVAL_POINTS,
        "first_call_s": float(np.median([p["first_instance_s"] - p["instance_s"] for p in points])),
        "points": points,
    }
    if joint:  # the law's variable is n + n_eval (the joint factorisation's size)
        for p in points:
            p["n_train"], p["n"] = p["n"], p["n"] + n_eval_of(p["n"])
    _add_laws(entry, points, {"instance": "instance_s"})
    return entry


def _joint_eval_points(n: int) -> int:
    """Evaluation points of a calibration instance with n training inputs of a family whose
    cost is set by n + n_eval (the GP: the size of the joint prior's factorisation): n."""
    return int(n)


def _synthetic_prior(family: str, fidelity: str, X_eval: np.ndarray) -> Any:
    """A prior of ``family`` with fixed settings for synthetic inputs (scale a = 1): its
    class's ``synthetic(fidelity, X_eval)``."""
    _check_family("calibrate", family)
    return prior_class(family).synthetic(fidelity, X_eval)


def _measure_prior_fit(
    dataset: str, n_evals: int | None, repeats: int, budget: _Budget
) -> dict[str, Any] | None:
    """Seconds per marginal-likelihood evaluation of ``dataset``'s kernel fit (synthetic
    inputs of its fit size and d), times ``n_evals`` evaluations."""
    import jax
    from jax.flatten_util import ravel_pytree

    from udbench.data import get_dataset_spec
    from udbench.priors.gp import fit as gpfit
    from udbench.priors.gp.kernels import parse_kernel_family

    spec = get_dataset_spec(dataset)
    if not spec.kernel_family or not spec.n_eval:
        return None
    n_fit = int(min(gpfit.FIT_SETTINGS["standard"]["max_rows"], spec.n_rows - spec.n_eval))
    X, y = _synthetic(n_fit, 3, spec.n_features)
    parts = parse_kernel_family(spec.kernel_family)
    guess = 2e-9 * n_fit**3 * (repeats + 3)
    if not budget.allows(guess):
        budget.skipped.append(f"prior-fit:{dataset} (about {guess:.0f} s)")
        return None
    with jax.enable_x64(True):
        theta = gpfit._init_theta(parts, spec.n_features)
        flat, unravel = ravel_pytree(theta)
        orders = tuple(1 if p == "arccosine" else 0 for p in parts)
        objective = gpfit._make_objective(X, (y - y.mean()) / y.std(), parts, orders, unravel)
        c_first, _, _ = _cpu(lambda: jax.block_until_ready(objective(flat)))
        c, _, _ = _cpu(lambda: [jax.block_until_ready(objective(flat)) for _ in range(repeats)])
    budget.spend(c_first + c)
    per_eval = c / repeats
    entry: dict[str, Any] = {
        "kind": "prior-fit",
        "dataset": dataset,
        "kernel_family": spec.kernel_family,
        "n_fit": n_fit,
        "n_features": spec.n_features,
        "eval_s": per_eval,
        "compile_s": max(0.0, c_first - per_eval),
        "n_evals": n_evals,
    }
    if n_evals is not None:
        entry["seconds"] = per_eval * n_evals + entry["compile_s"]
    return entry


class _Budget:
    """CPU seconds left for a calibration; measurements that would exceed it are skipped."""

    def __init__(self, seconds: float | None) -> None:
        self.left = math.inf if seconds is None else float(seconds)
        self.skipped: list[str] = []

    def allows(self, guess: float) -> bool:
        return guess <= self.left

    def spend(self, seconds: float) -> None:
        self.left -= seconds


def _machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "platform": platform.platform(),
        "load_average_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }


def calibrate(
    *,
    methods: Sequence[str] | None = None,
    families: Sequence[str] = ("gp", "hbart", "bnn"),
    datasets: Sequence[str] | None = None,
    sizes: Sequence[int] = FIT_SIZES,
    heldout: int | None = None,
    budget_s: float | None = 1800.0,
    base: CalibrationTable | None = None,
    on_entry: Callable[[str, dict[str, Any] | None], None] | None = None,
) -> CalibrationTable:
    """Measure the calibration table on this machine (module docstring).

    Parameters
    ----------
    methods : sequence of str, optional
        Methods to measure (default: every registered method).
    families : sequence of str
        Prior families whose instance generation to measure.
    datasets : sequence of str, optional
        Datasets whose GP kernel fit to measure (default: every dataset with a GP kernel
        family). The evaluation count of a full fit is taken from ``base``'s entry.
    sizes : sequence of int
        Training-set sizes of the laws (at least two).
    heldout : int, optional
        A size measured to check each law, not used for its fit
        (:data:`~udbench.tuning.calibration.HELDOUT_SIZE` for the shipped table).
    budget_s : float or None, default 1800
        CPU seconds the whole calibration may take; a measurement that would exceed what is
        left (judged from the sizes measured so far) is skipped and its entry missing.
    base : CalibrationTable, optional
        Table giving the kernel fits' evaluation counts (default: the shipped one).
    on_entry : callable, optional
        ``on_entry(key, entry or None)`` after each entry (None: skipped).

    Returns
    -------
    CalibrationTable
        ``meta["skipped"]`` lists what the budget left out.

    Raises
    ------
    UdbenchError
        Fewer than two sizes, a size < 10, or a budget <= 0.
    """
    from udbench import __version__
    from udbench._cache import disable_compile_cache
    from udbench._threads import cell_threads

    disable_compile_cache()  # compile times are part of what is measured

    sizes = sorted({int(s) for s in sizes})
    if len(sizes) < 2 or sizes[0] < 10:
        raise param_error("calibrate", "sizes", "be two or more sizes >= 10", sizes)
    if budget_s is not None and not budget_s > 0:
        raise param_error("calibrate", "budget", "be > 0 seconds", budget_s)
    if methods is None:
        from udbench.methods.registry import registered_methods

        methods = list(registered_methods())
    if datasets is None:
        from udbench.data import list_datasets

        datasets = [s.key for s in list_datasets(include_ood=False) if s.kernel_family]
    base = base if base is not None else _read_table(_shipped_path(), "shipped")
    budget = _Budget(budget_s)
    machine = _machine()
    t0 = time.perf_counter()
    entries: dict[str, dict[str, Any]] = {}

    def done(key: str, entry: dict[str, Any] | None) -> None:
        if entry is not None:
            entries[key] = entry
        if on_entry is not None:
            on_entry(key, entry)

    with cell_threads():
        for fam in families:
            _check_family("calibrate", fam)
            fid = prior_capabilities(fam).calibration_fidelity
            done(f"generate:{fam}", _measure_generation(fam, fid, sizes, heldout, budget))
        for name in methods:
            done(f"method:{name}", _measure_method(name, sizes, heldout, budget))
        for ds in datasets:
            old = base.entries.get(f"prior-fit:{ds}") or {}
            done(f"prior-fit:{ds}", _measure_prior_fit(ds, old.get("n_evals"), 2, budget))
    machine["load_average_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    meta = {
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "udbench_version": __version__,
        "machine": machine,
        "settings": {
            "fit_sizes": sizes,
            "heldout_size": heldout,
            "eval_points": EVAL_POINTS,
            "n_features": N_FEATURES,
            "warm_n": WARM_N,
            "clock": "process CPU seconds, one compute thread",
            "budget_s": budget_s,
        },
        "wall_s": time.perf_counter() - t0,
        "cpu_s_spent": (math.inf if budget_s is None else budget_s) - budget.left
        if budget_s is not None
        else None,
        "skipped": budget.skipped,
    }
    return CalibrationTable(entries=entries, meta=meta, source="measured")
