"""Running the spectral-normalisation study: its instances, the runner's hooks, the cost
projection and the whole run (generate, tune, run, analyse)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from udbench._resampling import DEFAULT_N_RESAMPLES
from udbench._validation import UdbenchError, param_error
from udbench.studies.spectral_norm._arms import (
    COMPONENT,
    COVERAGE,
    FAMILIES,
    FULL_SEEDS,
    NOISE,
    PRESERVATION_K,
    ArmConfig,
    arm_configs,
    arm_of,
)
from udbench.studies.spectral_norm._output import Analysis, analyse


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
    """What a run of the study will do (before it starts).

    ``known_cpu_hours`` sums the rows measured in CPU seconds, ``known_wall_hours`` the rows
    measured in wall-clock seconds (a results folder's cells, a ``udbench tune`` folder's
    trials): kept apart as ``udbench plan`` keeps them (:mod:`udbench.tuning.clocks`).
    """

    specs: list[Any]
    arms: list[ArmConfig]
    trials: int
    counts: dict[str, int]
    rows: list[Any]
    known_cpu_hours: float
    unknown: list[str] = field(default_factory=list)
    plain_tuning: Path | None = None
    known_wall_hours: float = 0.0


def project_cost(
    specs: Sequence[Any],
    arm_names: Sequence[str],
    trials: int,
    measured: Iterable[str | os.PathLike[str]],
) -> tuple[dict[str, int], list[Any], tuple[float, float], list[str]]:
    """Projected hours of the study, from ``udbench plan``'s machinery.

    :func:`udbench.tuning.plan.plan_grid` over the study's instances and its arm methods
    (``<method>``, ``<method>+sn``, ``<method>+wd``) with ``trials`` trials per sweep, times
    from the folders in ``measured`` (any that hold results, tuning records or task files;
    others are skipped). An arm not measured yet borrows its plain method's times (same
    network; SN adds one power iteration per step). ``generate gp`` is measured from the task
    folders' generation logs (:mod:`udbench.tasks.timelog`) where they exist; when it is not,
    it is left out of ``unknown`` (a GP instance takes seconds).

    Returns
    -------
    counts, rows, known_hours, unknown
        ``plan_grid``'s counts and rows, ``(cpu_hours, wall_hours)``: the sums of the rows
        measured in CPU seconds and of those measured in wall-clock seconds
        (:func:`udbench.tuning.clocks.split_hours`), and the ``"stage method"`` figures that
        have no measurement.
    """
    from udbench.tuning.clocks import split_hours
    from udbench.tuning.plan import Measurements, collect_measurements, plan_grid, unmeasured

    found = Measurements()
    for folder in measured:
        try:
            part = collect_measurements([folder])
        except UdbenchError:
            continue
        found.merge(part)
    for name in arm_names:
        base, arm = arm_of(name)
        for stage in ("tune", "run"):
            if arm != "plain" and not found.measured(stage, name):
                for clock in (found.seconds, found.cpu_seconds):
                    if (stage, base) in clock:
                        clock[(stage, name)] = list(clock[(stage, base)])
    counts, rows = plan_grid(list(specs), list(arm_names), trials, found)
    return counts, rows, split_hours(rows), unmeasured(rows)


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
    from udbench.tuning.clocks import split_hours
    from udbench.tuning.plan import collect_measurements, finished_work, remaining_rows

    for folder in measured:  # a folder the user names must hold measurements (as plan)
        collect_measurements([folder])
    root = Path(out)
    folders = [*measured, root / "tasks", root / "tuning", root / "results"]
    if plain_tuning is not None:
        folders.append(Path(plain_tuning))
    counts, rows, _, unknown = project_cost(
        specs, [str(type(a.estimator).name) for a in arms], trials, folders
    )
    if plain_tuning is not None:  # the plain arms' sweeps are already done
        plain = {a.base for a in arms}
        dropped = [r for r in rows if r.stage == "tune" and r.key in plain]
        rows = [r for r in rows if r not in dropped]
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
        unknown = [u for u in unknown if any(f"{r.stage} {r.key}" == u and r.count for r in rows)]
    cpu_h, wall_h = split_hours(rows)
    plan = StudyPlan(
        list(specs), arms, trials, counts, rows, cpu_h, unknown, known_wall_hours=wall_h
    )
    plan.plain_tuning = None if plain_tuning is None else Path(plain_tuning)
    return plan


def run_study(
    plan: StudyPlan,
    out: str | os.PathLike[str],
    *,
    workers: int | None = None,
    timeout: float | None = None,
    data_dir: str | None = None,
    n_resamples: int = DEFAULT_N_RESAMPLES,
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
