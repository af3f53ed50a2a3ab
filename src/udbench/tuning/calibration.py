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
it on yours (:func:`udbench.tuning.calibrating.calibrate`, in a stated budget of seconds) and
writes it to ``$UDBENCH_CACHE_DIR/calibration.json``, which ``udbench plan`` then prefers.

An entry that was not measured is absent, never zero: the plan reports it as unknown.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
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
      bound where trajectories stop earlier; times the step's relative cost in the preset's
      dtype, float32 0.51 of float64 (:meth:`udbench.priors.bnn.BNNPrior.instance_work`).

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

    def pruning_ratio(self, method: str, pruner: str | None = None) -> float | None:
        """Measured CPU of a pruned sweep over an unpruned one (``tune-pruning:<method>``,
        :mod:`udbench.tuning.sweep`), or None where not measured (or, with ``pruner``,
        measured with another pruner than ``pruner``; an entry naming no pruner counts as
        any)."""
        e = self.entries.get(f"tune-pruning:{method}")
        if e is None or (pruner is not None and e.get("pruner", pruner) != pruner):
            return None
        return float(e["cpu_ratio"])

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
