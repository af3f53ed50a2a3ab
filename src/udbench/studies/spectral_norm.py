"""The spectral-normalisation ablation (paper, Appendix D.4): ``udbench study spectral-norm``.

Design. For each neural method on the shared backbone that has the spectral-normalisation
option (``spectral_norm``/``sn_coeff``, :mod:`udbench.methods.nn.spectral`), three *arms*:

- ``plain``: the method itself, tuned over its own search space (the benchmark's configuration);
- ``sn``: the same class with ``spectral_norm = True`` and ``sn_coeff`` searched log-uniformly
  in [0.5, 3] (:data:`udbench.methods.nn.ensemble.SN_SEARCH_SPACE`), every other
  hyperparameter re-tuned under the constraint;
- ``wd``: no SN, ``weight_decay`` searched log-uniformly in [1e-2, 1] instead of the
  benchmark's [1e-6, 1e-2] (:data:`WD_SEARCH_SPACE`), the rest re-tuned.

An arm is *only a search space*: :func:`arm_class` makes a minimal subclass of the method
that changes its ``name`` (``<method>+sn``, ``<method>+wd``), its ``search_space`` and, for
``sn``, the default of ``spectral_norm`` (as the registry's NN-Lap-SN row does,
:mod:`udbench.methods._variants`). Fitting and prediction are the method's own code. The
three arms of every method are tuned in one :func:`udbench.tuning.sweep.tune` call (one
Optuna sweep per arm and condition, all in ``OUT/tuning``) and evaluated in one
:func:`udbench.evaluation.runner.run_benchmark` call (``OUT/results``): both resumable and
parallel on the same Dask workers as ``udbench tune`` and ``udbench run``.

Instances: balanced coverage, smooth-monotone noise, the three oracle families, the datasets
and seeds asked for (default: the paper's 13 datasets, seeds 0-4: 195 instances).

Pairing. Every arm of a method is evaluated on the same task file and trained with the same
seed: the seed the benchmark gives the plain arm's tuned cell on that task
(:func:`udbench.evaluation.runner.method_seed` of the plain tuned configuration), set through
the runner's ``method_seed`` row field. :func:`paired_differences` checks this on the stored
rows (same ``task_sha256`` and ``method_seed`` in every arm) before forming a difference.

Per cell, besides the benchmark's metrics, the runner stores ``dist_preservation``: the
local distance preservation of the fitted network at the task's evaluation pool
(:func:`udbench.methods.nn.distance_preservation`, k = 10).

Analysis (:func:`analyse`): preservation per arm; the paired differences arm − plain of
ρ(EU, EU*_risk), ρ(EU, EU*_var), preservation and log NMSE, with 95 % percentile intervals
from a bootstrap that resamples *datasets* with replacement (2,000 replicates,
:func:`dataset_bootstrap`); the regression of Δρ on Δpreservation, Δlog NMSE, the SN
indicator and Δdepth with dataset fixed effects, and D.4's within-SN standardised regression
(:func:`regression_table`, weighted least squares with NumPy, formulas there); and the depth
association table (:func:`depth_table`).
"""

from __future__ import annotations

import html
import math
import os
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from udbench._seeding import make_rng
from udbench._validation import UdbenchError, param_error

__all__ = [
    "ARMS",
    "COVERAGE",
    "FAMILIES",
    "FULL_SEEDS",
    "NOISE",
    "PRESERVATION_K",
    "WD_SEARCH_SPACE",
    "StudyPlan",
    "analyse",
    "arm_class",
    "arm_configs",
    "dataset_bootstrap",
    "depth_table",
    "measure_preservation",
    "paired_differences",
    "paired_table",
    "plan_study",
    "preservation_table",
    "project_cost",
    "regression_table",
    "run_study",
    "study_methods",
    "study_specs",
]

COMPONENT = "udbench study spectral-norm"
#: The arms, plain first.
ARMS: tuple[str, ...] = ("plain", "sn", "wd")
#: The study's instances (paper D.4): one noise mode, one coverage, the three oracle families.
NOISE = "smooth-monotone"
COVERAGE = "balanced"
FAMILIES: tuple[str, ...] = ("gp", "hbart", "bnn")
#: Seeds of the full design (5 per condition: 13 datasets × 3 families × 5 = 195 instances).
FULL_SEEDS: tuple[int, ...] = (0, 1, 2, 3, 4)
#: Neighbours of the local distance-preservation measure (paper D.4).
PRESERVATION_K = 10
#: The WD arm's weight-decay range (paper D.4; the benchmark's is [1e-6, 1e-2]).
WD_SEARCH_SPACE: dict[str, dict[str, Any]] = {
    "weight_decay": {"type": "float", "low": 1e-2, "high": 1.0, "log": True},
}
#: Default ``weight_decay`` of the WD arm (geometric centre of its range).
WD_DEFAULT = 0.1
#: The four quantities whose paired differences are reported.
DELTAS: tuple[tuple[str, str], ...] = (
    ("rho_eu_risk", "Δρ(EU, EU*_risk)"),
    ("rho_eu_var", "Δρ(EU, EU*_var)"),
    ("dist_preservation", "Δ preservation"),
    ("log_nmse", "Δ log NMSE"),
)


# ------------------------------------------------------------------------------- arms
def _takes_sn(cls: type) -> bool:
    import inspect

    params = inspect.signature(cls).parameters
    needed = ("spectral_norm", "sn_coeff", "weight_decay", "n_blocks", "hidden_dim")
    return all(p in params for p in needed) and params["spectral_norm"].default is False


def study_methods() -> list[str]:
    """The registered neural methods the study applies to, in registry order.

    Those of family ``nn`` whose constructor takes ``spectral_norm`` (default False),
    ``sn_coeff``, ``weight_decay``, ``n_blocks`` and ``hidden_dim``: the backbone methods
    with the SN option, without the rows that are already spectrally normalised
    (``nn-lap-sn``, ``nn-fsp-sn``, ``sngp-het``: they *are* an SN arm).
    """
    from udbench.methods import get_method_class
    from udbench.methods.registry import registered_methods

    out = []
    for name in registered_methods():
        try:
            cls = get_method_class(name)
        except Exception:  # an unavailable method (missing optional dependency)
            continue
        if getattr(cls, "family", None) == "nn" and _takes_sn(cls):
            out.append(name)
    return out


_ARM_CLASSES: dict[tuple[type, str], type] = {}


def arm_class(base: type, arm: str) -> type:
    """The class of ``arm`` for the method class ``base`` (``plain`` is ``base`` itself).

    Parameters
    ----------
    base : type
        A neural method class with the SN option (see :func:`study_methods`).
    arm : {"plain", "sn", "wd"}

    Returns
    -------
    type
        ``plain``: ``base``. ``sn``: a subclass named ``<name>+sn`` with search space
        ``base.search_space`` + :data:`~udbench.methods.nn.ensemble.SN_SEARCH_SPACE` and
        ``spectral_norm=True`` by default. ``wd``: ``<name>+wd``, the search space with
        ``weight_decay`` replaced by :data:`WD_SEARCH_SPACE`, default
        ``weight_decay`` :data:`WD_DEFAULT`. Nothing else differs (made once per process).

    Raises
    ------
    UdbenchError
        Unknown arm, or a class without the SN option.
    """
    if arm not in ARMS:
        raise param_error(COMPONENT, "arm", f"be one of {list(ARMS)}", arm)
    if not _takes_sn(base):
        raise param_error(
            COMPONENT,
            "methods",
            "name neural methods with the spectral-normalisation option (constructor "
            "keywords spectral_norm=False, sn_coeff, weight_decay, n_blocks, hidden_dim); "
            f"these qualify: {', '.join(study_methods())}",
            getattr(base, "name", base.__name__),
        )
    if arm == "plain":
        return base
    hit = _ARM_CLASSES.get((base, arm))
    if hit is not None:
        return hit
    from udbench.methods._variants import init_with_defaults
    from udbench.methods.nn.ensemble import SN_SEARCH_SPACE

    space = dict(base.search_space)  # type: ignore[attr-defined]
    if arm == "sn":
        space.update(SN_SEARCH_SPACE)
        init = init_with_defaults(base.__init__, spectral_norm=True)  # type: ignore[misc]
        what = "spectral normalisation, sn_coeff in [0.5, 3] (log), the rest re-tuned"
    else:
        space.update(WD_SEARCH_SPACE)
        init = init_with_defaults(base.__init__, weight_decay=WD_DEFAULT)  # type: ignore[misc]
        what = "weight decay in [1e-2, 1] (log), the rest re-tuned"
    name = f"{base.name}+{arm}"  # type: ignore[attr-defined]
    cls = type(
        f"{base.__name__}_{arm.upper()}Arm",
        (base,),
        {
            "name": name,
            "description": f"{base.name}, D.4 {arm.upper()} arm: {what}",  # type: ignore[attr-defined]
            "search_space": space,
            "__init__": init,
            "__module__": base.__module__,
            "__doc__": f"{base.__name__} as the {arm.upper()} arm of the D.4 study ({what}).",
        },
    )
    _ARM_CLASSES[(base, arm)] = cls
    return cls


def arm_of(method: str) -> tuple[str, str]:
    """``(base method, arm)`` of a stored method name (``"nn-ens+sn"`` -> ``("nn-ens", "sn")``)."""
    for arm in ARMS[1:]:
        if method.endswith(f"+{arm}"):
            return method[: -len(arm) - 1], arm
    return method, "plain"


@dataclass(frozen=True)
class ArmConfig:
    """One arm of one method: its label, the unfitted estimator, the arm and the base name."""

    label: str
    estimator: Any
    arm: str
    base: str


def arm_configs(methods: Sequence[str]) -> list[ArmConfig]:
    """The three arms of every method spec (``"nn-ens"``, ``"nn-ens:n_epochs=100"``).

    Overrides fix the base configuration every arm starts from (as ``udbench tune -m``);
    the SN arm sets ``spectral_norm=True``; the WD arm moves a ``weight_decay`` outside
    [1e-2, 1] to :data:`WD_DEFAULT` (the tuner replaces both anyway).

    Raises
    ------
    UdbenchError
        No method, an unknown method or hyperparameter, a method without the SN option, a
        method named twice.
    """
    from udbench.methods import make_method
    from udbench.methods.registry import parse_method_spec

    if not methods:
        raise param_error(COMPONENT, "methods", "name at least one method", [])
    out: list[ArmConfig] = []
    seen: set[str] = set()
    for spec in methods:
        est = make_method(spec.strip(), random_state=0)
        base = type(est)
        name = str(base.name)  # type: ignore[attr-defined]
        if name in seen:
            raise param_error(COMPONENT, "methods", "name each method once", spec)
        seen.add(name)
        params = dict(est.get_params(deep=False))
        overrides = parse_method_spec(spec.strip())[1]
        label_tail = ":" + ",".join(f"{k}={v}" for k, v in overrides.items()) if overrides else ""
        for arm in ARMS:
            cls = arm_class(base, arm)
            p = dict(params)
            if arm == "sn":
                p["spectral_norm"] = True
            elif arm == "wd" and not 1e-2 <= float(p["weight_decay"]) <= 1.0:
                p["weight_decay"] = WD_DEFAULT
            arm_name = str(cls.name)  # type: ignore[attr-defined]
            out.append(ArmConfig(f"{arm_name}{label_tail}", cls(**p), arm, name))
    return out


# ---------------------------------------------------------------------------- instances
def study_specs(
    datasets: str | Sequence[str] = "all",
    seeds: Sequence[int] = FULL_SEEDS,
    families: Sequence[str] = FAMILIES,
    *,
    fidelity: Any = None,
    draws: int | None = None,
    data_dir: str | None = None,
) -> list[Any]:
    """The study's task specs: datasets × families × seeds, smooth-monotone, balanced.

    ``"all"`` datasets is the paper's suite (every dataset from UCI/OpenML, as
    ``udbench generate --datasets all``).

    Raises
    ------
    UdbenchError
        An unknown dataset or family, no seed.
    """
    from udbench.data import list_datasets
    from udbench.priors import DEFAULT_FIDELITY, PRIOR_FAMILIES, Fidelity
    from udbench.tasks import TaskSpec
    from udbench.tasks.spec import DEFAULT_DRAWS

    designed = list_datasets(include_ood=False, data_dir=data_dir)
    if isinstance(datasets, str) and datasets.strip().lower() == "all":
        ds = [s.key for s in designed if s.source in ("uci", "openml")]
    else:
        names = [datasets] if isinstance(datasets, str) else list(datasets)
        ds = [d.strip() for n in names for d in n.split(",") if d.strip()]
        keys = {s.key for s in designed}
        for d in ds:
            if d not in keys:
                raise param_error(COMPONENT, "datasets", f"be among {sorted(keys)}", d)
    for f in families:
        if f not in PRIOR_FAMILIES:
            raise param_error(COMPONENT, "families", f"be among {list(PRIOR_FAMILIES)}", f)
    if not ds or not families or not seeds:
        raise param_error(COMPONENT, "datasets/families/seeds", "select at least one", "none")
    fid = Fidelity.parse(COMPONENT, fidelity if fidelity is not None else DEFAULT_FIDELITY)
    n_draws = DEFAULT_DRAWS if draws is None else int(draws)
    return [
        TaskSpec(d, f, NOISE, COVERAGE, int(s), fidelity=fid, n_draws=n_draws)
        for d in ds
        for f in families
        for s in seeds
    ]


def generate_tasks(
    specs: Sequence[Any],
    out: str | os.PathLike[str],
    *,
    workers: int | None = None,
    data_dir: str | None = None,
    say: Callable[[str], None] = lambda _: None,
) -> list[Path]:
    """Generate the task files not yet in ``out`` (as ``udbench generate``); their paths.

    :func:`udbench.tasks.grid.generate_grid`: a file holding the same instance (settings
    and data) is reused; a damaged one is made again; one made with other settings or data
    is an error (use another ``--out``). ``workers``: 0 or 1 generate in this process, N > 1
    on N local Dask workers, None on one worker per usable core.

    Raises
    ------
    UdbenchError
        A clashing file, or instances whose generation failed (named).
    """
    from udbench.tasks.grid import GridPlan, GridProgress, generate_grid

    class Progress(GridProgress):
        def planned(self, plan: GridPlan, out: Path) -> None:
            say(f"tasks: {len(plan.specs)} instances, {plan.n_done} already in {out}")

        def fitting_prior(self, key: tuple[str, str, Any]) -> Any:
            say(f"prior {key[0]} on {key[1]} ({key[2]}): fitting, or reading the cache")
            return super().fitting_prior(key)

        def instance_done(self, spec: Any, error: str) -> None:
            if not error:
                say(f"generated {spec.task_id}")

    result = generate_grid(
        specs,
        out,
        data_dir=data_dir,
        workers=workers,
        component=COMPONENT,
        clash_advice="use another --out",
        progress=Progress(),
    )
    result.raise_failures(COMPONENT)
    return list(result.paths)


# ------------------------------------------------------------------------------ per cell
def measure_preservation(est: Any, task: Any) -> dict[str, Any]:
    """The runner's ``measure`` hook: local distance preservation at the evaluation pool.

    Returns
    -------
    dict
        ``{"dist_preservation": float}``:
        :func:`udbench.methods.nn.distance_preservation` of the fitted network at
        ``task.X_eval`` with k = :data:`PRESERVATION_K` (or n_eval − 1 if smaller).
    """
    from udbench.methods.nn import distance_preservation

    X = np.asarray(task.X_eval, dtype=np.float64)
    k = min(PRESERVATION_K, X.shape[0] - 1)
    return {"dist_preservation": distance_preservation(est, X, k=k)}


class PairedConfigurer:
    """The runner's ``configure`` hook: tuned arms, every arm seeded like the plain cell.

    Wraps :func:`udbench.tuning.records.tuned_configurer` (the tuned record of the arm and
    condition on top of the arm's configuration); adds the row fields ``sn_arm``,
    ``sn_base`` and ``method_seed`` = :func:`udbench.evaluation.runner.method_seed` of the
    task and the plain arm's tuned configuration. ``plain_tuned`` (default ``tuned``) gives
    the plain arms' configurations (``--plain-tuning``: the benchmark's own records).
    """

    def __init__(
        self,
        tuned: Any,
        arms: dict[str, tuple[str, str]],
        plain: dict[str, Any],
        plain_tuned: Any = None,
    ) -> None:
        self._tuned = tuned
        self._plain_tuned = tuned if plain_tuned is None else plain_tuned
        self._arms = arms  # method name -> (arm, base)
        self._plain = plain  # base name -> plain MethodConfig (as given)

    def __call__(self, spec: Any, mc: Any) -> tuple[Any, dict[str, Any]]:
        from udbench.evaluation.runner import method_seed

        arm, base = self._arms[mc.name]
        hook = self._plain_tuned if arm == "plain" else self._tuned
        tuned, extra = hook(spec, mc)
        plain_tuned, _ = self._plain_tuned(spec, self._plain[base])
        seed = method_seed(spec.task_id, plain_tuned.name, plain_tuned.config_hash)
        return tuned, {**extra, "sn_arm": arm, "sn_base": base, "method_seed": seed}


# ------------------------------------------------------------------------------ the study
@dataclass
class StudyPlan:
    """What a run of the study will do (before it starts)."""

    specs: list[Any]
    arms: list[ArmConfig]
    trials: int
    counts: dict[str, int]
    rows: list[Any]
    known_cpu_hours: float
    unknown: list[str] = field(default_factory=list)
    plain_tuning: Path | None = None


def project_cost(
    specs: Sequence[Any],
    arm_names: Sequence[str],
    trials: int,
    measured: Iterable[str | os.PathLike[str]],
) -> tuple[dict[str, int], list[Any], float, list[str]]:
    """Projected CPU-hours of the study, from ``udbench plan``'s machinery.

    :func:`udbench.tuning.plan.plan_grid` over the study's instances and its arm methods
    (``<method>``, ``<method>+sn``, ``<method>+wd``) with ``trials`` trials per sweep, times
    from the folders in ``measured`` (any that hold results, tuning records or task files;
    others are skipped). An arm not measured yet borrows its plain method's times (same
    network; SN adds one power iteration per step). ``generate gp`` is measured from the task
    folders' generation logs (:mod:`udbench.tasks.timelog`) where they exist; when it is not,
    it is left out of ``unknown`` (a GP instance takes seconds).

    Returns
    -------
    counts, rows, known_cpu_hours, unknown
        ``plan_grid``'s counts and rows, the sum of the measured CPU-hours, and the
        ``"stage method"`` figures that have no measurement.
    """
    from udbench.tuning.plan import Measurements, collect_measurements, plan_grid, unmeasured

    found = Measurements()
    for folder in measured:
        try:
            part = collect_measurements([folder])
        except UdbenchError:
            continue
        for key, vals in part.seconds.items():
            found.seconds.setdefault(key, []).extend(vals)
        for key, ds in part.datasets.items():
            found.datasets.setdefault(key, set()).update(ds)
    for name in arm_names:
        base, arm = arm_of(name)
        for stage in ("tune", "run"):
            if arm != "plain" and (stage, name) not in found.seconds:
                if (stage, base) in found.seconds:
                    found.seconds[(stage, name)] = list(found.seconds[(stage, base)])
    counts, rows = plan_grid(list(specs), list(arm_names), trials, found)
    known = float(sum(r.cpu_hours for r in rows if r.cpu_hours is not None))
    return counts, rows, known, unmeasured(rows)


def plan_study(
    specs: Sequence[Any],
    methods: Sequence[str],
    out: str | os.PathLike[str],
    *,
    trials: int = 30,
    measured: Sequence[str | os.PathLike[str]] = (),
    plain_tuning: str | os.PathLike[str] | None = None,
) -> StudyPlan:
    """Resolve the arms and project the cost (the study's own folders count as measured).

    With ``plain_tuning`` (a ``udbench tune`` folder holding the benchmark's records of the
    plain methods) the plain arms are not tuned again: their sweeps leave the projection.
    Work already in ``out`` (task files, finished sweeps, ok cells:
    :func:`udbench.tuning.plan.finished_work`) leaves it too, so a resumed study is projected
    (and gated by ``--yes``) on what is left; ``counts`` stay those of the whole selection.

    Raises
    ------
    UdbenchError
        Bad ``trials``, methods (:func:`arm_configs`), a ``plain_tuning`` that is not a
        folder, a ``measured`` folder that holds no results, tuning records or task files.
    """
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise param_error(COMPONENT, "trials", "be an integer >= 1", trials)
    if plain_tuning is not None and not Path(plain_tuning).is_dir():
        raise param_error(
            COMPONENT, "plain-tuning", "be a tuning folder (udbench tune --out)", plain_tuning
        )
    arms = arm_configs(methods)
    from udbench.tuning.plan import collect_measurements, finished_work, remaining_rows

    for folder in measured:  # a folder the user names must hold measurements (as plan)
        collect_measurements([folder])
    root = Path(out)
    folders = [*measured, root / "tasks", root / "tuning", root / "results"]
    if plain_tuning is not None:
        folders.append(Path(plain_tuning))
    counts, rows, known, unknown = project_cost(
        specs, [str(type(a.estimator).name) for a in arms], trials, folders
    )
    if plain_tuning is not None:  # the plain arms' sweeps are already done
        plain = {a.base for a in arms}
        dropped = [r for r in rows if r.stage == "tune" and r.key in plain]
        rows = [r for r in rows if r not in dropped]
        known -= sum(r.cpu_hours for r in dropped if r.cpu_hours is not None)
        unknown = [u for u in unknown if u not in {f"tune {r.key}" for r in dropped}]
        n_cond = counts["sweeps"] // max(1, counts["methods"])
        counts = {
            **counts,
            "sweeps": counts["sweeps"] - n_cond * len(plain),
            "trials": counts["trials"] - n_cond * len(plain) * trials,
        }
    # what a resumed study skips: task files, finished sweeps (records) and ok cells of
    # OUT; the projection (and the --yes gate) counts only what is left
    done = finished_work(root / "tasks", root / "results", root / "tuning")
    if done:
        rows = remaining_rows(rows, specs, trials, done)
        known = float(sum(r.cpu_hours for r in rows if r.cpu_hours is not None))
        unknown = [u for u in unknown if any(f"{r.stage} {r.key}" == u and r.count for r in rows)]
    plan = StudyPlan(list(specs), arms, trials, counts, rows, known, unknown)
    plan.plain_tuning = None if plain_tuning is None else Path(plain_tuning)
    return plan


def run_study(
    plan: StudyPlan,
    out: str | os.PathLike[str],
    *,
    workers: int | None = None,
    timeout: float | None = None,
    data_dir: str | None = None,
    n_resamples: int = 2000,
    say: Callable[[str], None] = lambda _: None,
    on_trial: Any = None,
    on_cell: Any = None,
) -> Analysis:
    """Generate, tune, run and analyse: ``OUT/{tasks,tuning,results,analysis}``.

    Every stage resumes: existing task files are reused, tuning journals continue, finished
    cells are skipped (:func:`udbench.tuning.sweep.tune`,
    :func:`udbench.evaluation.runner.run_benchmark`). Failed trials and cells are recorded
    and the study goes on; an arm and condition whose sweep has no complete trial stops the
    run before any cell (tune again with more trials or a longer ``timeout``).

    Returns
    -------
    Analysis
        :func:`analyse` of the results.
    """
    from udbench.evaluation.runner import run_benchmark
    from udbench.evaluation.store import read_results
    from udbench.methods.configs import resolve_methods
    from udbench.tuning.records import tuned_configurer
    from udbench.tuning.sweep import tune

    root = Path(out)
    paths = generate_tasks(plan.specs, root / "tasks", workers=workers, data_dir=data_dir, say=say)
    pairs = [(a.label, a.estimator) for a in plan.arms]
    plain_dir = plan.plain_tuning
    own = plain_dir is None
    to_tune = [(a.label, a.estimator) for a in plan.arms if own or a.arm != "plain"]
    say(f"tuning: {len(to_tune)} arm configurations, {plan.trials} trials per sweep")
    tune(
        paths,
        to_tune,
        root / "tuning",
        trials=plan.trials,
        timeout=timeout,
        workers=workers,
        on_trial=on_trial,
    )
    mcs = resolve_methods(pairs)
    arms = {str(type(a.estimator).name): (a.arm, a.base) for a in plan.arms}
    plain = {arms[mc.name][1]: mc for mc in mcs if arms[mc.name][0] == "plain"}
    specs = list(plan.specs)
    # the study has no --fallback: an arm must be tuned, so its remedy is tuning, not defaults
    why = {
        "command": "udbench study spectral-norm",
        "remedy": "run the study again with more --trials (or a longer --timeout) so that every "
        "sweep has a complete trial; the failed trials are in the tuning folder's journals",
    }
    if plain_dir is None:
        tuned = tuned_configurer(root / "tuning", mcs, specs, **why)
        plain_tuned = tuned
    else:
        own_mcs = [m for m in mcs if m.name not in plain]
        tuned = tuned_configurer(root / "tuning", own_mcs, specs, **why)
        plain_why = {
            "command": "udbench study spectral-norm --plain-tuning",
            "remedy": f"tune the plain methods on those conditions into {str(plain_dir)!r} "
            "(udbench tune), or leave out --plain-tuning so the study tunes them itself",
        }
        plain_tuned = tuned_configurer(plain_dir, list(plain.values()), specs, **plain_why)
    say(f"running: {len(paths)} tasks × {len(mcs)} arm configurations")
    run_benchmark(
        paths,
        pairs,
        root / "results",
        workers=workers,
        timeout=timeout,
        on_cell=on_cell,
        configure=PairedConfigurer(tuned, arms, plain, plain_tuned),
        measure=measure_preservation,
    )
    tuned.copy_to(root / "results" / "tuned")
    if not own:
        plain_tuned.copy_to(root / "results" / "tuned")
    results = read_results(root / "results")
    return analyse(results, root / "analysis", n_resamples=n_resamples)


# ------------------------------------------------------------------------------ analysis
def _config_value(config: str, key: str) -> float:
    import json

    try:
        value = json.loads(config)["params"][key]
    except (KeyError, TypeError, ValueError):
        return float("nan")
    return float(value) if isinstance(value, int | float) else float("nan")


def paired_differences(results: pd.DataFrame) -> pd.DataFrame:
    """One row per (task, method, arm ≠ plain): the arm's and the plain arm's values, Δ.

    Only ok rows of the study (``sn_arm`` set) enter. The pairing is checked on the stored
    rows: the arm and the plain row of a (task, method) must hold the same task file
    (``task_sha256``) and the same training seed (``method_seed``).

    Returns
    -------
    DataFrame
        ``task_id, dataset, family, seed, method, arm, method_seed, n_train``, for each
        quantity q of :data:`DELTAS` ``q_plain``, ``q_arm`` and ``delta_q``; the plain
        network's ``depth`` (``n_blocks``), ``width`` (``hidden_dim``), ``epochs``
        (``n_epochs``) and ``steps`` (epochs × ⌈n_train / min(batch, n_train)⌉), the arm's
        ``depth_arm`` and ``delta_depth``, and ``sn`` (1 for the SN arm).

    Raises
    ------
    UdbenchError
        No study rows, or a pair whose task or seed differ.
    """
    if "sn_arm" not in results.columns:
        raise UdbenchError(f"{COMPONENT}: the results hold no study rows (column sn_arm)")
    ok = results[(results["status"] == "ok") & results["sn_arm"].notna()].copy()
    if ok.empty:
        raise UdbenchError(f"{COMPONENT}: the results hold no ok study cell")
    nmse = ok["nmse"].astype(float).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        ok["log_nmse"] = np.where(nmse > 0, np.log(np.where(nmse > 0, nmse, 1.0)), np.nan)
    if "dist_preservation" not in ok.columns:
        ok["dist_preservation"] = np.nan
    for key, col in (("n_blocks", "depth"), ("hidden_dim", "width"), ("n_epochs", "epochs")):
        ok[col] = [_config_value(c, key) for c in ok["config"]]
    batch = np.array([_config_value(c, "batch_size") for c in ok["config"]])
    n = ok["n_train"].astype(float).to_numpy()
    ok["steps"] = ok["epochs"].to_numpy() * np.ceil(n / np.minimum(batch, n))
    plain = ok[ok["sn_arm"] == "plain"].set_index(["task_id", "sn_base"])
    if plain.index.duplicated().any():
        dup = plain.index[plain.index.duplicated()][0]
        raise UdbenchError(f"{COMPONENT}: two plain rows for task {dup[0]} and method {dup[1]}")
    rows = []
    for _, r in ok[ok["sn_arm"] != "plain"].iterrows():
        pair = (r["task_id"], r["sn_base"])
        if pair not in plain.index:
            continue
        p: Any = plain.loc[pair]
        if r["task_sha256"] != p["task_sha256"] or int(r["method_seed"]) != int(p["method_seed"]):
            raise UdbenchError(
                f"{COMPONENT}: arm {r['sn_arm']} of {r['sn_base']} on task {r['task_id']} is not "
                f"paired with its plain cell (task checksum {str(r['task_sha256'])[:12]} vs "
                f"{str(p['task_sha256'])[:12]}, training seed {r['method_seed']} vs "
                f"{p['method_seed']})"
            )
        row = {
            "task_id": r["task_id"],
            "dataset": r["dataset"],
            "family": r["family"],
            "seed": r["seed"],
            "method": r["sn_base"],
            "arm": r["sn_arm"],
            "method_seed": int(r["method_seed"]),
            "n_train": r["n_train"],
        }
        for q, _ in DELTAS:
            row[f"{q}_plain"] = float(p[q])
            row[f"{q}_arm"] = float(r[q])
            row[f"delta_{q}"] = float(r[q]) - float(p[q])
        for col in ("depth", "width", "epochs", "steps"):
            row[col] = float(p[col])
        row["depth_arm"] = float(r["depth"])
        row["delta_depth"] = row["depth_arm"] - row["depth"]
        row["sn"] = 1.0 if r["sn_arm"] == "sn" else 0.0
        rows.append(row)
    if not rows:
        raise UdbenchError(f"{COMPONENT}: no arm row has its plain row (nothing to pair)")
    return pd.DataFrame(rows).sort_values(["method", "arm", "task_id"]).reset_index(drop=True)


def dataset_bootstrap(
    datasets: Sequence[str], n_resamples: int = 2000, random_state: int | str = 0
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Resample whole datasets with replacement (paper D.4).

    Parameters
    ----------
    datasets : sequence of str, length n
        The dataset of every row.
    n_resamples : int, default 2000
        Replicates B.
    random_state : int or str
        Names the stream (:func:`udbench._seeding.make_rng`).

    Returns
    -------
    names : list of str
        The G datasets (sorted).
    codes : ndarray, shape (n,)
        Index of each row's dataset in ``names``.
    weights : ndarray, shape (B, n)
        How often each row is drawn in each replicate: the number of times its *dataset*
        was drawn (G draws per replicate, uniform), so all rows of a dataset share a weight.

    Raises
    ------
    UdbenchError
        ``n_resamples`` not an integer >= 1, or no row.
    """
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int | np.integer):
        raise param_error(COMPONENT, "n_resamples", "be an integer >= 1", n_resamples)
    if n_resamples < 1:
        raise param_error(COMPONENT, "n_resamples", "be an integer >= 1", n_resamples)
    if len(datasets) == 0:
        raise param_error(COMPONENT, "datasets", "hold at least one row", 0)
    names, codes = np.unique(np.asarray(datasets, dtype=str), return_inverse=True)
    g = len(names)
    rng = make_rng("study-spectral-norm-bootstrap", random_state)
    group = rng.multinomial(g, np.full(g, 1.0 / g), size=int(n_resamples))
    return [str(x) for x in names], codes, group[:, codes].astype(float)


def _mean_ci(
    values: np.ndarray, weights: np.ndarray, confidence: float = 0.95
) -> tuple[float, float, float, int]:
    """Mean of the finite values and the percentile interval of the weighted replicate means."""
    finite = np.isfinite(values)
    if not finite.any():
        return float("nan"), float("nan"), float("nan"), 0
    v = np.where(finite, values, 0.0)
    num = weights @ v
    den = weights @ finite.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    a = (1 - confidence) / 2
    lo, hi = np.nanquantile(reps, [a, 1 - a])
    return float(values[finite].mean()), float(lo), float(hi), int(finite.sum())


def preservation_table(
    results: pd.DataFrame, *, n_resamples: int = 2000, random_state: int | str = 0
) -> pd.DataFrame:
    """Mean local distance preservation per method and arm, dataset-bootstrap intervals."""
    ok = results[(results["status"] == "ok") & results.get("sn_arm", pd.Series()).notna()]
    if ok.empty or "dist_preservation" not in ok.columns:
        raise UdbenchError(f"{COMPONENT}: no ok study cell with a distance preservation")
    _, _, w = dataset_bootstrap(ok["dataset"].astype(str).tolist(), n_resamples, random_state)
    out = []
    groups: dict[Any, Any] = ok.groupby(["sn_base", "sn_arm"]).indices
    for (base, arm), idx in groups.items():
        vals = np.full(len(ok), np.nan)
        vals[idx] = ok["dist_preservation"].to_numpy(dtype=float)[idx]
        est, lo, hi, n = _mean_ci(vals, w)
        out.append(
            {
                "method": base,
                "arm": arm,
                "dist_preservation": est,
                "dist_preservation_low": lo,
                "dist_preservation_high": hi,
                "dist_preservation_n": n,
            }
        )
    t = pd.DataFrame(out)
    t["arm"] = pd.Categorical(t["arm"], ARMS)
    return t.sort_values(["method", "arm"]).reset_index(drop=True).astype({"arm": str})


def paired_table(
    pairs: pd.DataFrame, *, n_resamples: int = 2000, random_state: int | str = 0
) -> pd.DataFrame:
    """Mean paired differences arm − plain per method and arm (and over all methods).

    Point estimate: the mean over the (task, method) pairs; interval: 95 % percentile of the
    same mean over :func:`dataset_bootstrap` replicates.
    """
    _, _, w = dataset_bootstrap(pairs["dataset"].astype(str).tolist(), n_resamples, random_state)
    out = []
    groups = [(m, a) for m in sorted(pairs["method"].unique()) for a in ARMS[1:]]
    if pairs["method"].nunique() > 1:
        groups += [("all", a) for a in ARMS[1:]]
    for method, arm in groups:
        mask = (pairs["arm"] == arm).to_numpy().copy()
        if method != "all":
            mask &= (pairs["method"] == method).to_numpy()
        if not mask.any():
            continue
        row: dict[str, Any] = {"method": method, "arm": arm}
        for q, _ in DELTAS:
            vals = np.where(mask, pairs[f"delta_{q}"].to_numpy(dtype=float), np.nan)
            est, lo, hi, n = _mean_ci(vals, w)
            row.update(
                {f"delta_{q}": est, f"delta_{q}_low": lo, f"delta_{q}_high": hi, f"delta_{q}_n": n}
            )
        out.append(row)
    return pd.DataFrame(out)


def _wls(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted least squares β = argmin Σ wᵢ (yᵢ − xᵢᵀβ)²; NaN where β_j is not identified.

    Solved as ordinary least squares of (√w y) on (√w X) (``numpy.linalg.lstsq``). A
    coefficient is identified when the unit vector e_j lies in the row space of √w X, i.e.
    (X⁺X)_jj = 1 (X⁺ the pseudo-inverse); otherwise (a constant or collinear predictor)
    it is NaN.
    """
    keep = w > 0
    sw = np.sqrt(w[keep])[:, None]
    A = X[keep] * sw
    b = y[keep] * sw[:, 0]
    beta = np.linalg.lstsq(A, b, rcond=None)[0]
    proj = np.linalg.pinv(A) @ A
    ident = np.abs(np.diag(proj) - 1.0) < 1e-8
    return np.where(ident, beta, np.nan)


def regression_table(
    pairs: pd.DataFrame,
    *,
    n_resamples: int = 2000,
    random_state: int | str = 0,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """D.4's regressions of the gain in ρ, with dataset fixed effects.

    ``pooled`` (both arms, all methods), for each target t ∈ {risk, var}::

        Δρ_t = β_pres Δpres + β_fit Δlog NMSE + β_SN 1[SN] + β_depth Δdepth + α_dataset + ε

    ``sn_only`` (SN arm rows), standardised (every variable z-scored over those rows)::

        Δρ_t = β_pres Δpres + β_fit Δlog NMSE + α_dataset + ε

    Fitted by least squares with one indicator per dataset and no intercept
    (:func:`_wls`); rows with a missing value are left out. Intervals: percentile
    intervals of the coefficients refitted on :func:`dataset_bootstrap` replicates (row
    weights = how often the row's dataset was drawn; a dataset drawn twice counts twice,
    with one fixed effect). A coefficient that is not identified (e.g. Δdepth = 0 on every
    row, or a single dataset with one arm) is NaN with a note.

    Returns
    -------
    DataFrame
        ``model, target, term, coef, coef_low, coef_high, n, n_datasets, note``.
    """
    specs = [
        ("pooled", t, ["delta_dist_preservation", "delta_log_nmse", "sn", "delta_depth"], None)
        for t in ("risk", "var")
    ] + [
        ("sn_only", t, ["delta_dist_preservation", "delta_log_nmse"], "sn") for t in ("risk", "var")
    ]
    terms = {
        "delta_dist_preservation": "Δ preservation",
        "delta_log_nmse": "Δ log NMSE",
        "sn": "1[SN]",
        "delta_depth": "Δ depth",
    }
    a = (1 - confidence) / 2
    out = []
    for model, target, cols, only in specs:
        d = pairs if only is None else pairs[pairs["arm"] == only]
        ycol = f"delta_rho_eu_{target}"
        d = d[np.isfinite(d[[ycol, *cols]].to_numpy(dtype=float)).all(axis=1)]
        if d.empty:
            continue
        X = d[cols].to_numpy(dtype=float)
        y = d[ycol].to_numpy(dtype=float)
        if model == "sn_only":  # standardised
            sd = X.std(axis=0)
            X = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
            X[:, sd == 0] = 0.0
            y = (y - y.mean()) / (y.std() if y.std() > 0 else 1.0)
        names, codes, w = dataset_bootstrap(
            d["dataset"].astype(str).tolist(), n_resamples, random_state
        )
        D = np.eye(len(names))[codes]
        Z = np.hstack([X, D])
        beta = _wls(Z, y, np.ones(len(y)))[: len(cols)]
        reps = np.array([_wls(Z, y, wb)[: len(cols)] for wb in w])
        with warnings.catch_warnings():  # all-NaN replicates: NaN, said in the note
            warnings.simplefilter("ignore", RuntimeWarning)
            lo = np.nanquantile(reps, a, axis=0) if np.isfinite(reps).any() else reps[0] * np.nan
            hi = np.nanquantile(reps, 1 - a, axis=0) if np.isfinite(reps).any() else lo
        for j, c in enumerate(cols):
            note = (
                ""
                if np.isfinite(beta[j])
                else "not identified (no variation apart from the other terms)"
            )
            out.append(
                {
                    "model": model,
                    "target": target,
                    "term": terms[c],
                    "coef": float(beta[j]),
                    "coef_low": float(lo[j]),
                    "coef_high": float(hi[j]),
                    "n": len(y),
                    "n_datasets": len(names),
                    "note": note,
                }
            )
    return pd.DataFrame(out)


def within_dataset_spearman(
    x: np.ndarray, y: np.ndarray, codes: np.ndarray, weights: np.ndarray | None = None
) -> float:
    """Spearman's ρ within datasets: ranks with their dataset means removed, then Pearson.

    Both variables are ranked over all rows (average ranks for ties); from each rank the
    mean rank of its dataset is subtracted; ρ = Σ w e_x e_y / √(Σ w e_x² · Σ w e_y²) with row
    weights w (default 1; a bootstrap replicate's dataset counts). NaN when either centred
    rank is zero everywhere (no variation within datasets).
    """
    from scipy.stats import rankdata

    rx, ry = rankdata(x), rankdata(y)
    g = int(codes.max()) + 1
    cnt = np.bincount(codes, minlength=g).astype(float)
    ex = rx - (np.bincount(codes, rx, g) / cnt)[codes]
    ey = ry - (np.bincount(codes, ry, g) / cnt)[codes]
    w = np.ones(len(x)) if weights is None else weights
    den = math.sqrt(float(np.sum(w * ex * ex)) * float(np.sum(w * ey * ey)))
    return float(np.sum(w * ex * ey) / den) if den > 0 else float("nan")


def depth_table(
    pairs: pd.DataFrame,
    *,
    n_resamples: int = 2000,
    random_state: int | str = 0,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """D.4's depth associations (Table 14): within-dataset Spearman ρ, dataset bootstrap.

    The plain network's tuned depth, width, epochs and gradient steps against its
    preservation (one row per (task, method), from the pairs of the SN arm, or of the WD
    arm if there is no SN pair), and its depth against the SN gains Δρ(EU, EU*_risk) and
    Δρ(EU, EU*_var) (:func:`within_dataset_spearman`).
    """
    a = (1 - confidence) / 2
    arm = "sn" if (pairs["arm"] == "sn").any() else "wd"
    base = pairs[pairs["arm"] == arm]
    sn = pairs[pairs["arm"] == "sn"]
    specs = [
        (base, x, "dist_preservation_plain", f"plain {x} ↔ plain preservation")
        for x in ("depth", "width", "epochs", "steps")
    ] + [
        (sn, "depth", f"delta_rho_eu_{t}", f"plain depth ↔ SN gain Δρ(EU, EU*_{t})")
        for t in ("risk", "var")
    ]
    out = []
    for d, xc, yc, label in specs:
        d = d[np.isfinite(d[[xc, yc]].to_numpy(dtype=float)).all(axis=1)]
        if len(d) < 3:
            out.append(
                {
                    "association": label,
                    "spearman": float("nan"),
                    "spearman_low": float("nan"),
                    "spearman_high": float("nan"),
                    "n": len(d),
                }
            )
            continue
        _, codes, w = dataset_bootstrap(
            d["dataset"].astype(str).tolist(), n_resamples, random_state
        )
        x, y = d[xc].to_numpy(dtype=float), d[yc].to_numpy(dtype=float)
        est = within_dataset_spearman(x, y, codes)
        reps = np.array([within_dataset_spearman(x, y, codes, wb) for wb in w])
        with warnings.catch_warnings():  # all-NaN replicates: NaN, said in the note
            warnings.simplefilter("ignore", RuntimeWarning)
            lo, hi = (
                np.nanquantile(reps, [a, 1 - a]) if np.isfinite(reps).any() else (np.nan, np.nan)
            )
        out.append(
            {
                "association": label,
                "spearman": est,
                "spearman_low": float(lo),
                "spearman_high": float(hi),
                "n": len(d),
            }
        )
    return pd.DataFrame(out)


# --------------------------------------------------------------------------- written out
@dataclass
class Analysis:
    """The study's tables (name -> DataFrame) and every file written."""

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    html: Path | None = None


_TITLES: dict[str, str] = {
    "preservation": "Local distance preservation per arm",
    "paired": "Paired differences arm − plain",
    "regression": "Regression of Δρ (dataset fixed effects)",
    "depth": "Depth associations (within-dataset Spearman)",
    "pairs": "Paired differences per instance",
}


def _preservation_figure(t: pd.DataFrame) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.0, 0.6 + 0.45 * max(1, t["method"].nunique())), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    methods = sorted(t["method"].unique())
    for k, arm in enumerate(ARMS):
        s = t[t["arm"] == arm].set_index("method").reindex(methods)
        yv = np.arange(len(methods)) + (k - 1) * 0.22
        est = s["dist_preservation"].to_numpy(dtype=float)
        err = np.vstack(
            [
                est - s["dist_preservation_low"].to_numpy(dtype=float),
                s["dist_preservation_high"].to_numpy(dtype=float) - est,
            ]
        )
        ax.errorbar(est, yv, xerr=np.nan_to_num(err).clip(0), fmt="osD"[k], label=arm, capsize=2)
    ax.set_yticks(np.arange(len(methods)), methods)
    ax.set_xlabel("local distance preservation (mean Spearman ρ, k = 10)")
    fig.legend(loc="outside right upper")
    return fig


def _paired_figure(t: pd.DataFrame) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    methods = list(dict.fromkeys(t["method"]))
    fig = Figure(figsize=(11.0, 0.9 + 0.45 * len(methods)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(DELTAS), sharey=True)
    for ax, (q, label) in zip(axes, DELTAS, strict=True):
        for k, arm in enumerate(ARMS[1:]):
            s = t[t["arm"] == arm].set_index("method").reindex(methods)
            est = s[f"delta_{q}"].to_numpy(dtype=float)
            err = np.vstack(
                [
                    est - s[f"delta_{q}_low"].to_numpy(dtype=float),
                    s[f"delta_{q}_high"].to_numpy(dtype=float) - est,
                ]
            )
            yv = np.arange(len(methods)) + (k - 0.5) * 0.3
            ax.errorbar(est, yv, xerr=np.nan_to_num(err).clip(0), fmt="sD"[k], label=arm, capsize=2)
        ax.axvline(0.0, color="#777777", lw=0.8, ls="--")
        ax.set_xlabel(label)
    axes[0].set_yticks(np.arange(len(methods)), methods)
    fig.legend(*axes[-1].get_legend_handles_labels(), loc="outside right upper")
    return fig


def analyse(
    results: pd.DataFrame,
    out_dir: str | os.PathLike[str],
    *,
    n_resamples: int = 2000,
    random_state: int | str = 0,
) -> Analysis:
    """Every table of the study as CSV + LaTeX, two figures as PNG + SVG, ``study.html``.

    Tables: ``preservation`` (:func:`preservation_table`), ``paired`` (:func:`paired_table`),
    ``regression`` (:func:`regression_table`), ``depth`` (:func:`depth_table`) and ``pairs``
    (:func:`paired_differences`, CSV only). Figures: ``preservation`` and ``paired``.

    Raises
    ------
    UdbenchError
        No ok study rows, no pair, a broken pairing, bad ``n_resamples``.
    """
    from udbench.analyses import display_table, latex_table

    pairs = paired_differences(results)
    t = {
        "preservation": preservation_table(
            results, n_resamples=n_resamples, random_state=random_state
        ),
        "paired": paired_table(pairs, n_resamples=n_resamples, random_state=random_state),
        "regression": regression_table(pairs, n_resamples=n_resamples, random_state=random_state),
        "depth": depth_table(pairs, n_resamples=n_resamples, random_state=random_state),
    }
    out = Path(out_dir)
    (out / "tables").mkdir(parents=True, exist_ok=True)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    res = Analysis(tables={**t, "pairs": pairs})
    setting = (
        f"95% percentile intervals, {n_resamples} bootstrap replicates resampling datasets; "
        f"{pairs['task_id'].nunique()} instances, {pairs['dataset'].nunique()} datasets, "
        f"methods {', '.join(sorted(pairs['method'].unique()))}."
    )
    csv = out / "tables" / "pairs.csv"
    pairs.to_csv(csv, index=False)
    res.files.append(csv)
    body = [
        "<!doctype html><html><head><meta charset='utf-8'><title>udbench study spectral-norm"
        "</title></head><body><h1>Spectral-normalisation study (paper D.4)</h1>",
        f"<p>{html.escape(setting)}</p>",
    ]
    figures = {"preservation": _preservation_figure, "paired": _paired_figure}
    for name, table in t.items():
        path = out / "tables" / f"{name}.csv"
        table.to_csv(path, index=False)
        tex = out / "tables" / f"{name}.tex"
        tex.write_text(
            latex_table(table, caption=f"{_TITLES[name]}. {setting}", label=f"tab:sn-{name}"),
            encoding="utf-8",
        )
        res.files += [path, tex]
        body.append(f"<h2>{html.escape(_TITLES[name])}</h2>")
        if name in figures and not table.empty:
            fig = figures[name](table)
            for fmt in ("png", "svg"):
                fpath = out / "figures" / f"{name}.{fmt}"
                fig.savefig(fpath, format=fmt, dpi=150)
                res.files.append(fpath)
            body.append(f"<p><img src='figures/{name}.png' alt='{html.escape(_TITLES[name])}'></p>")
        body.append(display_table(table).to_html(index=False))
    body.append("</body></html>")
    page = out / "study.html"
    page.write_text("\n".join(body), encoding="utf-8")
    res.files.append(page)
    res.html = page
    return res
