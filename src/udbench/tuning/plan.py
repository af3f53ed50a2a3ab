"""``udbench plan``: how much work a grid is, its projected CPU-hours and wall time.

For a grid of task instances (the flags of ``udbench generate``), a list of methods and a
number of trials per sweep, the plan counts

- **prior fits** (stage ``prior-fit``, with a calibration table only): one GP kernel fit per
  dataset with GP instances (SPEC §5; cached, before the dataset's instances);
- **instances** (stage ``generate``): one per (dataset, family, noise, coverage, seed);
- **trials** (stage ``tune``; none when ``trials`` is 0, a grid run at given configurations
  as ``udbench suite`` runs it): conditions × methods × trials, one sweep per (method,
  condition) (SPEC §9), each method's trials with the pruner ``udbench tune --pruner`` would
  use (default ``auto``: :func:`udbench.tuning.pruning.resolve_pruner`): a calibrated row of
  a pruned method is the unpruned one times the measured pruned/unpruned CPU ratio of its
  pruner (``tune-pruning:<method>`` entries; the unpruned figure where none is measured);
- **fits** (stage ``run``): instances × methods,

and projects CPU-hours per stage and method. Each row's figure comes from the first of:

1. **measured** times, from folders you name (``--measured``, any number of each kind),
   as count × the median measured seconds per unit, in the row's clock
   (:attr:`PlanRow.clock`): CPU seconds where a record has them, else wall-clock seconds
   (the figure is then wall-clock hours of one worker, never reported as CPU-hours):

   - a results folder of ``udbench run``: per ok cell, ``fit_time_s + predict_time_s``
     (wall; the method's compute; the first cell on a worker also pays imports and JAX
     compilation, so the median is used). The plan counts each method at its default
     configuration; cells run with other settings (``nn-ens:n_members=5`` against the
     default 10 members, the quickstart's smoke settings) are counted all the same, and
     :meth:`PlanRow.config_note` says which settings and how many cells;
   - a tuning campaign's folder (``tuning/shipped/<suite>``): per sweep, the record's
     ``cpu_seconds`` (CPU; the whole sweep, overheads included) over its finished trials;
   - a runs campaign's records folder (``docs/validation/runs/<suite>``, or a part of it):
     per done cell record, its ``cpu_seconds`` (CPU), a ``run`` measurement of its method;
   - a tuning folder of ``udbench tune``: per finished trial, its fit + predict seconds
     (wall; fitted on 80 % of the training sample);
   - a folder of task files (wall): per instance, the seconds ``udbench generate`` logged
     (the hidden ``.udbench-generate-times.jsonl`` beside the tasks: generation,
     replacements, checks and save, in the worker), else the MCMC sampler's
     ``wall_seconds`` stored in the task (HBART, BNN). GP task files store no timing, so GP
     tasks made before the log existed (or copied without it) are unknown.

   No scaling by data size: the median is over whatever was measured (the plan lists how
   many, and on which datasets).
2. the **calibration table** (:mod:`udbench.tuning.calibration`: seconds measured at a few
   training-set sizes with a power law in n per entry), evaluated at each dataset's own n,
   n_eval and (for the kernel fit) fit size, summed over the units;
3. otherwise **unknown**, never guessed (and never zero).

Wall time on W workers (:class:`Projection`): at least the total work (CPU-hours plus the
wall rows' hours) over W and at least the longest chain of dependent work, ``prior fit →
instance → one tuning trial → one cell`` of one (dataset, family); a greedy scheduler needs
at most their sum (Graham's bound for list scheduling of dependent jobs, Graham 1969).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from udbench.tuning._measured import Measurements, collect_measurements
from udbench.tuning._resume import FinishedWork, finished_work
from udbench.tuning.clocks import unmeasured

__all__ = [
    "FinishedWork",
    "Measurements",
    "PlanRow",
    "Projection",
    "collect_measurements",
    "finished_work",
    "plan_grid",
    "project",
    "remaining_rows",
    "unmeasured",
]

#: ``PAPER_METHODS``: the paper's 19 methods (SPEC §8), by registry name, in the paper's order:
#: :func:`udbench.methods.registry.paper_methods` (read on first use, from the method sources).


def __getattr__(name: str) -> Any:
    if name == "PAPER_METHODS":
        from udbench.methods.registry import paper_methods

        return paper_methods()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class PlanRow:
    """One line of the plan: a stage and a method (or prior family, or dataset).

    Attributes
    ----------
    stage : str
        ``"prior-fit"``, ``"generate"``, ``"tune"`` or ``"run"``.
    key : str
        Dataset (``prior-fit``), prior family (``generate``) or method.
    count : int
        Units of work (fits, instances, trials, cells).
    n_measured : int
        Measurements behind a measured figure (0 otherwise).
    median_s : float or None
        Median measured seconds per unit (measured rows only).
    cpu_hours : float or None
        Projected hours of work: CPU-hours, or wall-clock hours of one worker where
        ``clock`` is ``"wall"``; None where neither a measurement nor a calibration entry
        exists. (``as_dict`` writes it under ``cpu_hours`` or ``wall_hours`` by clock.)
    datasets : list of str
        Datasets the measurements were made on.
    basis : str or None
        ``"measured"``, ``"calibrated"`` or None (unknown).
    per_dataset : dict
        Calibrated rows: dataset -> ``[units, seconds per unit]`` (what :func:`remaining_rows`
        rescales).
    overhead_s : float
        Calibrated rows: seconds not proportional to the units (the first call of a method
        on each worker), included in ``cpu_hours``.
    unit_max_s : float or None
        The largest seconds of one unit (a step of the longest chain).
    pruner : str or None
        ``tune`` rows: the method's resolved pruner (``"none"``, ``"sha"``, ...).
    pruning_ratio : float or None
        Calibrated ``tune`` rows: the measured pruned/unpruned CPU ratio applied to every
        trial (None: unpruned, or no ratio measured for the pruner).
    clock : str or None
        ``"cpu"`` (calibrated rows; measured CPU seconds) or ``"wall"`` (measured wall-clock
        seconds); None where unknown.
    """

    stage: str
    key: str
    count: int
    n_measured: int
    median_s: float | None
    cpu_hours: float | None
    datasets: list[str]
    #: Settings of measured cells that are not the method's defaults -> how many cells.
    measured_configs: dict[str, int] = field(default_factory=dict)
    basis: str | None = None
    per_dataset: dict[str, list[float]] = field(default_factory=dict)
    overhead_s: float = 0.0
    unit_max_s: float | None = None
    pruner: str | None = None
    pruning_ratio: float | None = None
    clock: str | None = None

    @property
    def seconds_per_unit(self) -> float | None:
        """Mean seconds per unit (None: unknown or no unit)."""
        if self.cpu_hours is None or not self.count:
            return None
        return 3600.0 * self.cpu_hours / self.count

    def as_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "key": self.key,
            "count": self.count,
            "n_measured": self.n_measured,
            "median_s": self.median_s,
            "cpu_hours": None if self.clock == "wall" else self.cpu_hours,
            "wall_hours": self.cpu_hours if self.clock == "wall" else None,
            "clock": self.clock,
            "measured_on": self.datasets,
            "measured_non_default": self.measured_configs,
            "basis": self.basis,
            "seconds_per_unit": self.seconds_per_unit,
            "unit_max_s": self.unit_max_s,
            "pruner": self.pruner,
            "pruning_ratio": self.pruning_ratio,
        }

    def config_note(self) -> str | None:
        """One line when the measured cells ran other settings than the defaults planned."""
        if not self.measured_configs:
            return None
        n = sum(self.measured_configs.values())
        shown = "; ".join(list(self.measured_configs)[:2]) + (
            "; …" if len(self.measured_configs) > 2 else ""
        )
        return (
            f"{self.stage} {self.key}: {n} of the {self.n_measured} measured cells ran other "
            f"settings than the method's defaults ({shown}); the projection applies their "
            "time to the default configuration the plan counts, so scale it by hand (e.g. by "
            "the ensemble size) or measure the defaults"
        )


@dataclass
class Projection:
    """A grid's projected cost: rows, totals and wall time on ``workers`` workers.

    Attributes
    ----------
    counts : dict
        As :func:`plan_grid`.
    rows : list of PlanRow
    workers : int
    cpu_hours : float
        Sum of the known rows measured or calibrated in CPU time.
    unknown : list of str
        ``"stage key"`` of rows with work and no figure (their CPU time is not in the sum).
    chain_hours : float or None
        The longest chain of dependent work (prior fit → instance → one trial → one cell of
        one dataset and family); None when a step of every chain is unknown.
    chain : str
        Which (dataset, family) it is.
    wall_hours_low, wall_hours_high : float or None
        ``max(work / W, chain)`` and ``work / W + chain`` (list scheduling, Graham 1969),
        ``work`` being ``cpu_hours + wall_clock_hours``.
    wall_clock_hours : float
        Sum of the known rows measured in wall-clock time (``clock == "wall"``), kept out
        of ``cpu_hours``.
    """

    counts: dict[str, int]
    rows: list[PlanRow]
    workers: int
    cpu_hours: float
    unknown: list[str]
    chain_hours: float | None
    chain: str
    wall_hours_low: float | None
    wall_hours_high: float | None
    wall_clock_hours: float = 0.0

    def top(self, k: int = 5) -> list[PlanRow]:
        """The ``k`` rows with the most hours (CPU or, for wall rows, wall-clock)."""
        known = [r for r in self.rows if r.cpu_hours is not None]
        return sorted(known, key=lambda r: -float(r.cpu_hours or 0.0))[:k]

    def as_dict(self) -> dict[str, Any]:
        return {
            "counts": self.counts,
            "rows": [r.as_dict() for r in self.rows],
            "workers": self.workers,
            "cpu_hours": self.cpu_hours,
            "wall_clock_hours": self.wall_clock_hours,
            "unknown": self.unknown,
            "chain_hours": self.chain_hours,
            "chain": self.chain,
            "wall_hours_low": self.wall_hours_low,
            "wall_hours_high": self.wall_hours_high,
        }


def _sizes(dataset: str) -> tuple[int, int]:
    """(n_train, n_eval) of a dataset (SPEC §2), from the registry."""
    from udbench.data import get_dataset_spec

    spec = get_dataset_spec(dataset)
    return int(spec.n_train or 0), int(spec.n_eval or 0)


def plan_grid(
    specs: Sequence[Any],
    methods: Sequence[str],
    trials: int,
    measured: Measurements,
    calibration: Any = None,
    *,
    workers: int = 1,
    pruner: str = "auto",
) -> tuple[dict[str, int], list[PlanRow]]:
    """Counts of a grid and its projected CPU-hours per stage and method.

    Parameters
    ----------
    specs : sequence of TaskSpec
        The instances (``udbench generate``'s grid).
    methods : sequence of str
        Method names.
    trials : int
        Trials per sweep; 0: no tune stage (no ``tune`` rows, no sweeps).
    measured : Measurements
        From :func:`collect_measurements`; a measured row wins over the calibration (its
        CPU seconds where measured, else its wall-clock seconds: :attr:`PlanRow.clock`).
    calibration : CalibrationTable, optional
        :func:`udbench.tuning.calibration.load_calibration`; without it only measured
        figures are shown (and no ``prior-fit`` rows), as before calibration existed.
    workers : int, default 1
        Workers the grid runs on: a method's first call (imports, compilation) is paid once
        per worker and per dataset shape.
    pruner : {"auto", "none", "sha", "hyperband", "median"}, default "auto"
        The pruner of the sweeps, as ``udbench tune --pruner`` (``"auto"``: per method,
        :func:`udbench.tuning.pruning.resolve_pruner`). A calibrated trial of a method whose
        resolved pruner is not ``"none"`` costs the unpruned trial times the table's measured
        pruned/unpruned CPU ratio for that pruner (``tune-pruning:<method>``), where it has
        one.

    Raises
    ------
    UdbenchError
        An unknown ``pruner``.

    Returns
    -------
    counts : dict
        ``instances, conditions, methods, sweeps, trials, fits``.
    rows : list of PlanRow
        Per dataset (``prior-fit``), per prior family (``generate``), then per method for
        ``tune`` and ``run``; ``cpu_hours`` is None where nothing was measured or calibrated.
    """
    import numpy as np

    from udbench.tuning.pruning import resolve_pruner

    kinds = {m: resolve_pruner(pruner, m) for m in methods}  # checks pruner, even for none
    conditions = {(s.dataset, s.family, s.noise, s.coverage) for s in specs}
    counts = {
        "instances": len(specs),
        "conditions": len(conditions),
        "methods": len(methods),
        "sweeps": len(conditions) * len(methods) if trials else 0,
        "trials": len(conditions) * len(methods) * trials,
        "fits": len(specs) * len(methods),
    }
    workers = max(1, int(workers))

    def measured_row(stage: str, key: str, count: int) -> PlanRow | None:
        secs, clock, where, configs = measured.values(stage, key)
        if not secs:
            return None
        med = float(np.median(secs))
        return PlanRow(
            stage,
            key,
            count,
            len(secs),
            med,
            count * med / 3600.0,
            sorted(where),
            dict(configs),
            basis="measured",
            unit_max_s=med,
            clock=clock,
        )

    def calibrated_row(
        stage: str, key: str, units: dict[str, int], per_unit: Any, overhead: float = 0.0
    ) -> PlanRow:
        total = sum(units.values())
        per: dict[str, list[float]] = {}
        for ds, k in sorted(units.items()):
            sec = per_unit(ds)
            if sec is None:
                return PlanRow(stage, key, total, 0, None, None, [])
            per[ds] = [float(k), float(sec)]
        cpu = sum(k * sec for k, sec in per.values()) + (overhead if total else 0.0)
        return PlanRow(
            stage,
            key,
            total,
            0,
            None,
            cpu / 3600.0,
            [],
            basis="calibrated",
            clock="cpu",
            per_dataset=per,
            overhead_s=overhead if total else 0.0,
            unit_max_s=max((sec for _, sec in per.values()), default=None),
        )

    def row(stage: str, key: str, units: dict[str, int], per_unit: Any, overhead: Any) -> PlanRow:
        count = sum(units.values())
        found = measured_row(stage, key, count)
        if found is not None:
            return found
        if calibration is None:
            return PlanRow(stage, key, count, 0, None, None, [])
        return calibrated_row(stage, key, units, per_unit, overhead() if count else 0.0)

    sizes = {ds: _sizes(ds) for ds in {s.dataset for s in specs}}

    def spread(units: dict[str, int]) -> int:
        """Worker-dataset pairs that meet: each pays a new shape's compilation once."""
        return sum(min(workers, k) for k in units.values())

    rows: list[PlanRow] = []
    if calibration is not None:
        from udbench.priors.base import prior_capabilities

        # a family fitted per dataset (the GP's kernel fit) has a prior-fit row per dataset
        fitted = sorted(
            {
                s.dataset
                for s in specs
                if prior_capabilities(s.family, strict=False).fitted_per_dataset
            }
        )
        for ds in fitted:
            rows.append(
                calibrated_row("prior-fit", ds, {ds: 1}, lambda d: calibration.prior_fit_seconds(d))
            )
    families: dict[str, dict[str, int]] = {}
    fidelity: dict[str, str] = {}
    for s in specs:
        by = families.setdefault(s.family, {})
        by[s.dataset] = by.get(s.dataset, 0) + 1
        fidelity[s.family] = str(s.fidelity)
    for fam, units in sorted(families.items()):
        rows.append(
            row(
                "generate",
                fam,
                units,
                lambda d, f=fam: calibration.generate_seconds(f, fidelity[f], *sizes[d]),
                lambda f=fam, u=units: spread(u) * calibration.generate_overhead(f),
            )
        )
    cond_units: dict[str, int] = {}
    cell_units: dict[str, int] = {}
    for c in conditions:
        cond_units[c[0]] = cond_units.get(c[0], 0) + trials
    for s in specs:
        cell_units[s.dataset] = cell_units.get(s.dataset, 0) + 1

    def ratio_of(m: str) -> float | None:
        if calibration is None or kinds[m] == "none":
            return None
        return calibration.pruning_ratio(m, kinds[m])

    def trial_s(m: str, d: str) -> float | None:
        n = sizes[d][0]
        base = calibration.method_seconds(m, 0.8 * n, max(1.0, 0.2 * n))
        over = calibration.method_overheads(m)
        if base is None or over is None:
            return None
        ratio = ratio_of(m)
        return (base + over[1]) * (1.0 if ratio is None else ratio)

    def overhead(m: str, per_shape: bool) -> Callable[[], float]:
        def f() -> float:
            over = calibration.method_overheads(m)
            if over is None:
                return 0.0
            first, new = over
            return workers * first + (spread(cell_units) * new if per_shape else 0.0)

        return f

    for m in methods if trials else ():  # trials = 0: no tune stage
        tune_row = row(
            "tune", m, dict(cond_units), lambda d, m=m: trial_s(m, d), overhead(m, False)
        )
        tune_row.pruner = kinds[m]
        if tune_row.basis == "calibrated":
            tune_row.pruning_ratio = ratio_of(m)
        rows.append(tune_row)
    for m in methods:
        rows.append(
            row(
                "run",
                m,
                dict(cell_units),
                lambda d, m=m: calibration.method_seconds(m, sizes[d][0], sizes[d][1]),
                overhead(m, True),
            )
        )
    return counts, rows


def project(
    specs: Sequence[Any],
    methods: Sequence[str],
    trials: int,
    measured: Measurements,
    calibration: Any,
    *,
    workers: int = 1,
    pruner: str = "auto",
) -> Projection:
    """:func:`plan_grid` plus totals and the wall time on ``workers`` workers.

    The longest chain is taken over every (dataset, family) of the grid as prior fit (a
    family fitted per dataset: the GP) + one instance + the longest tuning trial of any
    method (if ``trials`` > 0; the trials of a sweep can run side by side) + the longest
    cell of any method, each at that dataset's size; a step without a figure makes that
    chain unknown.
    """
    from udbench.priors.base import prior_capabilities

    counts, rows = plan_grid(
        specs, methods, trials, measured, calibration, workers=workers, pruner=pruner
    )
    known = [r for r in rows if r.cpu_hours is not None]
    cpu_h = float(sum(r.cpu_hours or 0.0 for r in known if r.clock != "wall"))
    wall_clock_h = float(sum(r.cpu_hours or 0.0 for r in known if r.clock == "wall"))
    unknown = [f"{r.stage} {r.key}" for r in rows if r.cpu_hours is None and r.count]
    by = {(r.stage, r.key): r for r in rows}

    def unit(stage: str, key: str, ds: str) -> float | None:
        r = by.get((stage, key))
        if r is None or r.cpu_hours is None:
            return None
        if r.basis == "measured":
            return r.median_s
        got = r.per_dataset.get(ds)
        return None if got is None else got[1]

    best: tuple[float, str] | None = None
    for ds, fam in sorted({(s.dataset, s.family) for s in specs}):
        steps: list[float | None] = [unit("generate", fam, ds)]
        if calibration is not None and prior_capabilities(fam, strict=False).fitted_per_dataset:
            steps.append(unit("prior-fit", ds, ds))
        if trials > 0 and methods:
            tunes = [unit("tune", m, ds) for m in methods]
            steps.append(None if any(t is None for t in tunes) else max(tunes))  # type: ignore[type-var]
        if methods:
            runs = [unit("run", m, ds) for m in methods]
            steps.append(None if any(t is None for t in runs) else max(runs))  # type: ignore[type-var]
        if any(s is None for s in steps):
            continue
        total = float(sum(s for s in steps if s is not None))
        if best is None or total > best[0]:
            best = (total, f"{ds} × {fam}")
    chain_h = None if best is None else best[0] / 3600.0
    w = max(1, int(workers))
    work = cpu_h + wall_clock_h
    low = None if chain_h is None else max(work / w, chain_h)
    high = None if chain_h is None else work / w + chain_h
    chain = "" if best is None else best[1]
    return Projection(counts, rows, w, cpu_h, unknown, chain_h, chain, low, high, wall_clock_h)


def remaining_rows(
    rows: Sequence[PlanRow], specs: Sequence[Any], trials: int, done: FinishedWork
) -> list[PlanRow]:
    """:func:`plan_grid`'s rows for what is still to do: counts and CPU-hours without the
    instances, sweeps and cells in ``done`` (the median seconds are unchanged).

    Parameters
    ----------
    rows : sequence of PlanRow
        From :func:`plan_grid` over ``specs``.
    specs : sequence of TaskSpec
        The grid the rows were made for.
    trials : int
        Trials per sweep (as given to :func:`plan_grid`).
    done : FinishedWork
    """
    from dataclasses import replace

    from udbench.tuning.records import Condition

    conds = {Condition.of(s).key: s.dataset for s in specs}
    out = []
    for r in rows:
        left: dict[str, int] = {}
        if r.stage == "prior-fit":  # cached once made; counted as left when no task is
            left = {
                r.key: int(not any(s.dataset == r.key and s.task_id in done.tasks for s in specs))
            }
        elif r.stage == "generate":
            for s in specs:
                if s.family == r.key and s.task_id not in done.tasks:
                    left[s.dataset] = left.get(s.dataset, 0) + 1
        elif r.stage == "tune":
            for c, ds in conds.items():
                if (r.key, c) not in done.sweeps:
                    left[ds] = left.get(ds, 0) + trials
        else:
            for s in specs:
                if (s.task_id, r.key) not in done.cells:
                    left[s.dataset] = left.get(s.dataset, 0) + 1
        n = sum(left.values())
        if r.basis == "calibrated":
            per = {ds: [float(k), r.per_dataset[ds][1]] for ds, k in left.items() if k}
            secs = sum(k * sec for k, sec in per.values()) + (r.overhead_s if n else 0.0)
            out.append(replace(r, count=n, cpu_hours=secs / 3600.0, per_dataset=per))
            continue
        hours = None if r.median_s is None else n * r.median_s / 3600.0
        out.append(replace(r, count=n, cpu_hours=hours))
    return out
