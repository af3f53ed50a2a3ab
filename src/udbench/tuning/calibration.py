"""Calibration table of the cost model: measured seconds and a power law in n per entry.

``udbench plan`` projects the CPU time of a grid without any earlier run from this table
(:mod:`udbench.tuning.plan`). Each entry is one unit of work measured on synthetic data at a
few training-set sizes n, with a fitted scaling law

    t(n) = c · n^b            (least squares on log t against log n)

per entry (a power law: GP-type costs come out near cubic, boosting near linear). Entries:

- ``method:<name>``: one method at its default configuration, on d = :data:`N_FEATURES`
  uniform inputs and a smooth target with noise. Measured per size: the CPU seconds of
  ``fit(X, y)`` with n rows and of ``predict`` at :data:`EVAL_POINTS` rows (its second call:
  the first at a new shape may compile). Before the sizes,
  three fits at n = :data:`WARM_N` give the method's *first-call* overhead (imports, JAX
  compilation: a first fit minus a second of the same configuration) and its *new
  configuration* overhead (a fit with one tuned float hyperparameter nudged by 1 %, minus a
  repeat of the default: what every tuning trial pays again when the method compiles its
  configuration into the program, as the JAX methods do). Each size is a new shape, so the
  fit there pays the new-configuration overhead once; it is subtracted, and the law is the
  steady-state ("warm") cost. Laws: ``fit`` (seconds at n) and ``predict`` (seconds at n for
  :data:`EVAL_POINTS` points; linear in the number of points predicted).
- ``generate:<family>``: one task instance (f* and y drawn, reference posterior, checks) on
  uniform synthetic inputs and D = 1000 draws: for the GP with n evaluation points and a law
  in n + n_eval (its joint factorisation), for HBART and the BNN with :data:`EVAL_POINTS`
  evaluation points and a law in n (the sampler's cost is on the training inputs),
  made twice per size: the second (warm) is the law's, the first pays the compilation of the
  new shape (``first_call_s``, paid once per worker and dataset),
  at the fidelity named in the entry (``standard`` for the GP, whose fidelity does not
  change the instance; ``smoke`` for the MCMC families, whose other fidelities are scaled by
  :func:`work_ratio`: chain iterations, and for the BNN leapfrog steps at the maximum tree
  depth).
- ``prior-fit:<dataset>``: the GP prior's kernel fit of one dataset (SPEC §5; once per
  dataset, before its instances). Seconds of one marginal-likelihood evaluation (value and
  gradient) at the dataset's fit size, kernel family and d, times the number of evaluations
  a full fit made (``n_evals``, counted in a full fit on this machine).

Held-out check: the law of every entry is fitted on the sizes of :data:`FIT_SIZES`; one
more size, :data:`HELDOUT_SIZE` (not used for that fit), is measured and its relative error
``predicted / measured - 1`` is stored with the entry (``heldout``). The shipped law
(``law``) is then refitted on every measured size.

CPU seconds are the process's CPU time (``time.process_time``: robust to other jobs on the
machine, which a wall clock is not), with one compute thread as in a cell
(:mod:`udbench._threads`). The table shipped with udbench (``calibration.json`` beside this
module) was measured on the project's 2-core machine; ``udbench plan --calibrate`` measures
it on yours (:func:`calibrate`, in a stated budget of seconds) and writes it to
``$UDBENCH_CACHE_DIR/calibration.json``, which ``udbench plan`` then prefers.

An entry that was not measured is absent, never zero: the plan reports it as unknown.
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from udbench._validation import UdbenchError, param_error
from udbench.priors.base import prior_capabilities, prior_class

__all__ = [
    "CALIBRATION_FILE",
    "CALIBRATION_FORMAT",
    "EVAL_POINTS",
    "FIT_SIZES",
    "HELDOUT_SIZE",
    "N_FEATURES",
    "CalibrationTable",
    "PowerLaw",
    "calibrate",
    "default_calibration_path",
    "load_calibration",
    "work_ratio",
]

CALIBRATION_FORMAT = "udbench-cost-calibration"
#: Name of the table file, shipped beside this module and written to the cache folder.
CALIBRATION_FILE = "calibration.json"
#: Training-set sizes the laws are fitted on.
FIT_SIZES: tuple[int, ...] = (300, 600, 1000)
#: The size measured to check each law (not used for that fit).
HELDOUT_SIZE = 2000
#: Points predicted per measurement (SPEC §2's largest evaluation pool).
EVAL_POINTS = 1500
#: Covariates of the synthetic data.
N_FEATURES = 8
#: Rows of the warm-up fits (first-call and new-configuration overheads).
WARM_N = 100
#: Floor of a measured time before taking logs (a fit of a few microseconds).
_MIN_SECONDS = 1e-4


@dataclass(frozen=True)
class PowerLaw:
    """``t(n) = coef · n**exponent`` seconds (a scaling law in the training-set size n)."""

    coef: float
    exponent: float

    def __call__(self, n: float) -> float:
        return float(self.coef * float(n) ** self.exponent)

    @classmethod
    def fit(cls, sizes: Sequence[float], seconds: Sequence[float]) -> PowerLaw:
        """Least-squares fit of log t = log c + b log n; one point gives b = 1 (linear).

        Raises
        ------
        UdbenchError
            No point, or sizes that are not all > 0.
        """
        n = np.asarray(sizes, dtype=np.float64)
        t = np.maximum(np.asarray(seconds, dtype=np.float64), _MIN_SECONDS)
        if n.size == 0 or not np.all(n > 0) or n.shape != t.shape:
            raise param_error("PowerLaw.fit", "sizes", "be one or more sizes > 0", list(n))
        if n.size == 1 or np.ptp(np.log(n)) == 0:
            return cls(float(np.mean(t) / np.mean(n)), 1.0)
        b, a = np.polyfit(np.log(n), np.log(t), 1)
        return cls(float(np.exp(a)), float(b))

    def as_dict(self) -> dict[str, float]:
        return {"coef": self.coef, "exponent": self.exponent}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PowerLaw:
        return cls(float(d["coef"]), float(d["exponent"]))


def _check_family(component: str, family: str) -> None:
    """``family`` is a registered prior family (message: "be gp, hbart or bnn")."""
    from udbench.priors.base import PRIOR_FAMILIES

    if family not in PRIOR_FAMILIES:
        names = list(PRIOR_FAMILIES)
        rule = "be " + (f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0])
        raise param_error(component, "family", rule, family)


def work_ratio(family: str, fidelity: str, measured_fidelity: str) -> float:
    """Work of one ``family`` instance at ``fidelity`` relative to ``measured_fidelity``.

    The ratio of the family class's ``instance_work`` at the two fidelities, or 1 for a
    family whose ``PriorCapabilities.work_depends_on_fidelity`` is False:

    - GP: 1 (the fidelity changes only the kernel-fit rows of ``smoke``, not the instance).
    - HBART: the ratio of chain iterations, n_chains × (n_warmup + (D / n_chains) × thin),
      D = 1000 (bartz's cost per chain iteration is about constant at a given n,
      docs/priors-mcmc.md; :meth:`udbench.priors.hbart.HBARTPrior.instance_work`).
    - BNN: the ratio of NUTS iterations, n_chains × (n_warmup + D / n_chains), times
      2^(max_tree_depth difference): the leapfrog steps of trajectories that reach the
      maximum depth, as they mostly do at the suite's sizes (docs/priors-mcmc.md); an upper
      bound where trajectories stop earlier (:meth:`udbench.priors.bnn.BNNPrior.instance_work`).

    Raises
    ------
    UdbenchError
        An unknown family or fidelity.
    """
    from udbench.priors.base import Fidelity

    fid = Fidelity.parse("work_ratio", fidelity).value
    base = Fidelity.parse("work_ratio", measured_fidelity).value
    _check_family("work_ratio", family)
    if not prior_capabilities(family).work_depends_on_fidelity:
        return 1.0
    cls = prior_class(family)  # imports the family's module (the MCMC families: no GPJax)
    return float(cls.instance_work(fid) / cls.instance_work(base))


@dataclass
class CalibrationTable:
    """The measured cost entries (module docstring) and where they were measured.

    Attributes
    ----------
    entries : dict of str to dict
        By key (``"method:gp"``, ``"generate:hbart"``, ``"prior-fit:concrete"``).
    meta : dict
        ``created_at``, ``udbench_version``, ``machine`` (CPU, cores, load averages before
        and after), ``settings`` (sizes, points, features, clock).
    source : str
        Where the table was read from (a path, or ``"shipped"``).
    """

    entries: dict[str, dict[str, Any]]
    meta: dict[str, Any]
    source: str = "shipped"

    # -- the laws --------------------------------------------------------------------
    def method_seconds(self, method: str, n: float, points: float) -> float | None:
        """Warm fit at n rows + predict at ``points`` rows, CPU seconds (None: no entry)."""
        e = self.entries.get(f"method:{method}")
        if e is None:
            return None
        fit = PowerLaw.from_dict(e["law"]["fit"])(n)
        pred = PowerLaw.from_dict(e["law"]["predict"])(n) * float(points) / EVAL_POINTS
        return fit + pred

    def method_overheads(self, method: str) -> tuple[float, float] | None:
        """``(first_call_s, new_config_s)`` of a method (None: no entry)."""
        e = self.entries.get(f"method:{method}")
        if e is None:
            return None
        return float(e["first_call_s"]), float(e["new_config_s"])

    def generate_seconds(self, family: str, fidelity: str, n: float, n_eval: float) -> float | None:
        """One instance of ``family`` at ``fidelity`` with n training inputs and n_eval
        evaluation points (None: no entry). The GP's law is in n + n_eval, the MCMC
        families' in n (their cost is the sampler's, on the training inputs)."""
        e = self.entries.get(f"generate:{family}")
        if e is None:
            return None
        law = PowerLaw.from_dict(e["law"]["instance"])
        size = n + n_eval if e.get("size") == "n + n_eval" else n
        return law(size) * work_ratio(family, fidelity, e["fidelity"])

    def pruning_ratio(self, method: str) -> float | None:
        """Measured CPU of a pruned sweep over an unpruned one (``tune-pruning:<method>``,
        :mod:`udbench.tuning.sweep`), or None where not measured."""
        e = self.entries.get(f"tune-pruning:{method}")
        return None if e is None else float(e["cpu_ratio"])

    def generate_overhead(self, family: str) -> float:
        """Seconds the first instance of a new shape adds (compilation), 0 if unknown."""
        e = self.entries.get(f"generate:{family}")
        return 0.0 if e is None else float(e.get("first_call_s", 0.0))

    def prior_fit_seconds(self, dataset: str) -> float | None:
        """The GP kernel fit of ``dataset`` (None: no entry)."""
        e = self.entries.get(f"prior-fit:{dataset}")
        return None if e is None else float(e["seconds"])

    # -- files -----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"format": CALIBRATION_FORMAT, "version": 1, **self.meta, "entries": self.entries}

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the table as JSON (atomically); return the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n")
        os.replace(tmp, path)
        return path


def default_calibration_path() -> Path:
    """``$UDBENCH_CACHE_DIR/calibration.json``: where ``udbench plan --calibrate`` writes."""
    from udbench._cache import cache_dir

    return cache_dir() / CALIBRATION_FILE


def _shipped_path() -> Path:
    return Path(__file__).with_name(CALIBRATION_FILE)


def load_calibration(path: str | os.PathLike[str] | None = None) -> CalibrationTable:
    """The calibration table: ``path``, else the user's (:func:`default_calibration_path`)
    if it exists, else the one shipped with udbench.

    Entries the user's table lacks (a ``--calibrate`` that ran out of budget) are taken from
    the shipped table and marked ``"from": "shipped"``. A table named by ``path`` (``udbench
    plan --calibration FILE``, other than the user's own) is used as it is: what it lacks is
    unknown.

    Raises
    ------
    UdbenchError
        A file that is not a calibration table.
    """
    shipped = _read_table(_shipped_path(), "shipped")
    user = default_calibration_path()
    if path is None:
        if not user.is_file():
            return shipped
        path = user
    table = _read_table(Path(path), str(path))
    if Path(path).resolve() != user.resolve():
        return table
    for key, entry in shipped.entries.items():
        if key not in table.entries:
            table.entries[key] = {**entry, "from": "shipped"}
    return table


def _read_table(path: Path, source: str) -> CalibrationTable:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise UdbenchError(
            f"udbench plan: cannot read the calibration table {str(path)!r}: {err}"
        ) from None
    if not isinstance(raw, dict) or raw.get("format") != CALIBRATION_FORMAT:
        raise param_error("udbench plan", "calibration", "be a udbench calibration table", path)
    entries = dict(raw.pop("entries", {}))
    raw.pop("format", None)
    raw.pop("version", None)
    return CalibrationTable(entries=entries, meta=raw, source=source)


# ----------------------------------------------------------------------------------------
# Measurement
# ----------------------------------------------------------------------------------------
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
        A size measured to check each law, not used for its fit (:data:`HELDOUT_SIZE` for
        the shipped table).
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
