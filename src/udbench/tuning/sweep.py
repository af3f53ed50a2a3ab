"""Tuning sweeps (SPEC §9): one Optuna study per (method, condition), trials on Dask.

A *condition* is (dataset, prior family, noise mode, coverage). Its sweep uses the training
sample of the condition's lowest seed present among the given task files (seed 0 in the
paper's grid), split 80/20 at random (:func:`udbench.tuning.objective.holdout_split`, one split
per condition, shared by every method), and scores a configuration by the held-out Gaussian
NLL under N(â, AU + EU) (:mod:`udbench.tuning.objective`).

Classifiers (:data:`udbench.methods.classifiers.CLASSIFIERS`) are tuned the same way on
classification task files (family ``gpc``), scored by the held-out categorical NLL; a
condition there is (dataset, family coordinate ``gpc-k<K>-<difficulty>``, temperature mode,
coverage). A regression method on a classification task, or a classifier on a regression
task, is refused before any trial. Classifiers report no intermediate values, so ``pruner``
is off for their sweeps. The default ``pruner="auto"`` is resolved per method
(:func:`udbench.tuning.pruning.resolve_pruner`: successive halving for the boosting methods
whose pruned sweeps were measured to lose no more than the seed-to-seed spread, none for the
others); each :class:`SweepPlan`, and so each journal and record, holds the resolved pruner.

The driver (:func:`tune`) runs every sweep at once. It asks Optuna for a trial only when a
worker is free (``study.ask()``, then :func:`udbench.tuning.space.suggest`), evaluates it on
the :class:`~udbench.execution.executor.Executor` (each trial in a child process of its Dask
worker, as a cell of ``udbench run``) and reports the score back (``study.tell``). Sweeps take
turns for free workers; within a sweep at most ``in_flight`` trials run at once, and Optuna's
TPE sampler with ``constant_liar=True`` treats trials still running as if they had the worst
score seen so far, so parallel trials spread out instead of sampling the same point.
``in_flight=1`` samples sequentially: a seeded sweep then gives the same trials whatever the
number of workers.

Persistence and resume: each sweep is an Optuna study in its own journal file
(``JournalStorage`` + ``JournalFileBackend``: an append-only log, written as each trial is
asked and told), ``OUT/<method>/<condition>.journal``. A re-run loads it: finished trials are
kept; trials that were running when the previous driver died are marked failed with
``interrupted = True`` and do not count; new trials are asked until ``trials`` trials have
finished (complete or failed). A last line cut short is dropped, and the resumed sampler is
moved past the draws of the journal's trials, so no configuration is asked twice (issue 68;
its random draws are replayed: a sweep resumed in its random phase asks what an unbroken one
would have). A trial that raises, times out, returns an invalid prediction
or kills its process is told as failed with its reason and the sweep goes on (the driver
writes one user attribute per trial, ``outcome``: the ``error`` text, fit and predict seconds,
``running_at_ask``, how many trials of the sweep were in flight when it was asked (what the
constant liar stood in for), and ``finish_index``, the order its results came back). When a
sweep has all its trials it writes its record (:mod:`udbench.tuning.records`).

One ``udbench tune`` per ``OUT`` at a time (two drivers would both resume the same journals).
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from udbench._validation import (
    UdbenchError,
    check_int,
    check_seed,
    check_timeout,
    check_workers,
    param_error,
)
from udbench.execution.executor import DASK_LOG_NAME, Executor, Failed
from udbench.methods.base import BaseMethod
from udbench.methods.classifiers import classifier_spec_name, resolve_classifier
from udbench.methods.configs import MethodConfig, resolve_methods
from udbench.tasks import Task
from udbench.tasks.discovery import find_task_files
from udbench.tuning._study import SweepPlan, _Sweep, sweep_record
from udbench.tuning.objective import (
    TrialJob,
    TrialOutcome,
    evaluate_trial,
    train_sha256,
    trial_seed,
)
from udbench.tuning.pruning import PruningContext, snapshot
from udbench.tuning.records import Condition, write_record
from udbench.tuning.space import check_search_space, suggest

__all__ = ["SAMPLERS", "SweepPlan", "TuneSummary", "find_conditions", "plan_sweeps", "tune"]

#: Samplers ``udbench tune --sampler`` accepts (``random`` for ablations and tests).
SAMPLERS: tuple[str, ...] = ("tpe", "random")

#: Called after each finished trial as ``on_trial(done, total, sweep_key, outcome_text)``.
TrialCallback = Callable[[int, int, str, str], None]


@dataclass
class TuneSummary:
    """Counts of a tuning run.

    ``n_resumed_trials`` trials were finished by an earlier run of the same journals;
    ``resumed_cpu_s`` is their CPU seconds as each trial measured them (None when a journal
    predates the per-trial CPU clock, or one of those trials has no clock: a trial whose
    worker died or overran its timeout in a child process). ``driver_s`` and ``wall_s`` are
    wall-clock seconds.
    """

    out: Path
    n_sweeps: int
    n_trials_run: int = 0
    n_trials_failed: int = 0
    n_trials_pruned: int = 0
    n_resumed_trials: int = 0
    resumed_cpu_s: float | None = 0.0
    n_interrupted: int = 0
    records: list[Path] = field(default_factory=list)
    driver_s: float = 0.0
    wall_s: float = 0.0


def find_conditions(task_paths: Sequence[str | os.PathLike[str]]) -> dict[Condition, Task]:
    """The task of each condition's lowest seed among ``task_paths`` (metadata read only).

    Raises
    ------
    UdbenchError
        A task file cannot be read, or two files hold the condition's lowest seed with
        different training samples.
    """
    best: dict[Condition, Task] = {}
    for path in task_paths:
        try:
            task = Task.load(Path(path))
        except UdbenchError as err:
            raise UdbenchError(f"udbench tune: {err}") from None
        spec = task.spec
        cond = Condition.of(spec)
        old = best.get(cond)
        if old is None or spec.seed < old.spec.seed:
            best[cond] = task
        elif spec.seed == old.spec.seed and train_sha256(task) != train_sha256(old):
            raise UdbenchError(
                f"udbench tune: condition {cond.key} seed {spec.seed} is held by two task files "
                f"with different training samples, {str(old._path)!r} and {str(path)!r}; "
                "pass only one"
            )
    return dict(sorted(best.items(), key=lambda kv: kv[0].key))


def _resolve(methods: Sequence[Any]) -> list[MethodConfig]:
    """Method specs as configurations: classifiers by their registry, the rest as for
    ``udbench run`` (identical configurations kept once, in the order given)."""
    if isinstance(methods, str | BaseMethod) or classifier_spec_name(methods) is not None:
        methods = [methods]
    out: dict[tuple[str, str], MethodConfig] = {}
    for spec in methods:
        label, target = spec if isinstance(spec, tuple) and len(spec) == 2 else (None, spec)
        if classifier_spec_name(target) is not None:
            mc = resolve_classifier(target, label=label)
        else:
            (mc,) = resolve_methods([spec])
        out.setdefault((mc.name, mc.config_hash), mc)
    if not out:
        raise param_error("udbench tune", "methods", "name at least one method", [])
    return list(out.values())


def _check_task_types(mcs: Sequence[MethodConfig], conditions: dict[Condition, Task]) -> None:
    """Refuse a method whose task type (regression or classification) is not a task's."""
    for mc in mcs:
        kind = str(getattr(type(mc.estimator), "task_type", "regression"))
        for task in conditions.values():
            if task.spec.task_type != kind:
                what = "a classifier" if kind == "classification" else "a regression method"
                raise UdbenchError(
                    f"udbench tune: {mc.name!r} is {what} and task {task.spec.task_id!r} is a "
                    f"{task.spec.task_type} task; tune classifiers on classification task files "
                    "(family gpc) and regression methods on regression task files"
                )


def plan_sweeps(
    tasks: Sequence[str | os.PathLike[str]],
    methods: Sequence[str | BaseMethod | tuple[str, str | BaseMethod]],
    *,
    trials: int = 30,
    sampler: str = "tpe",
    seed: int = 0,
    pruner: str = "auto",
) -> list[SweepPlan]:
    """Every (method, condition) sweep of a tuning run, method-major.

    ``pruner`` as for :func:`tune`; each plan holds the method's resolved pruner
    (:func:`udbench.tuning.pruning.resolve_pruner`: ``"auto"`` is never stored).

    Raises
    ------
    UdbenchError
        Bad ``trials``/``sampler``/``seed``/``pruner``, no task file, an unknown method, a
        method named twice (two base configurations), a method whose search space is empty
        or cannot be sampled (:func:`check_search_space`), a method of one task type
        (regression, classification) given a task of the other.
    """
    from udbench.tuning.pruning import PRUNERS, resolve_pruner

    if pruner not in PRUNERS:
        raise param_error("udbench tune", "pruner", f"be one of {list(PRUNERS)}", pruner)
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise param_error("udbench tune", "trials", "be an integer >= 1", trials)
    if sampler not in SAMPLERS:
        raise param_error("udbench tune", "sampler", f"be one of {list(SAMPLERS)}", sampler)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise param_error("udbench tune", "seed", "be an integer >= 0", seed)
    mcs = _resolve(methods)
    names = [mc.name for mc in mcs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise param_error(
            "udbench tune",
            "methods",
            "name each method once (a tuning folder holds one record per method and "
            "condition; tune another base configuration into another --out)",
            ", ".join(twice),
        )
    for mc in mcs:
        check_search_space(mc.name, type(mc.estimator).search_space)
    conditions = find_conditions(find_task_files(tasks))
    _check_task_types(mcs, conditions)
    return [
        SweepPlan(
            method=mc,
            condition=cond,
            task_path=str(task._path),
            task_id=task.spec.task_id,
            train_sha256=train_sha256(task),
            n_trials=trials,
            sampler=sampler,
            seed=seed,
            pruner=resolve_pruner(pruner, mc.name),
            pruner_auto=pruner == "auto",
        )
        for mc in mcs
        for cond, task in conditions.items()
    ]


def _outcome(result: Any, timeout: float | None) -> TrialOutcome:
    """A :class:`TrialOutcome` from what the executor returned for a trial."""
    if isinstance(result, TrialOutcome):
        return result
    if isinstance(result, Failed):
        return TrialOutcome(error=f"worker failed: {type(result.error).__name__}: {result.error}")
    if result.timed_out:  # a ChildResult
        return TrialOutcome(error=f"timeout: fit + predict exceeded {timeout:g} s")
    if result.died is not None:
        return TrialOutcome(error=f"the trial's process died: {result.died}")
    try:
        value = result.result()
    except Exception as err:
        return TrialOutcome(error=f"raised {type(err).__name__}: {err}")
    return value if isinstance(value, TrialOutcome) else TrialOutcome(error=f"bad result {value!r}")


def _ask(s: _Sweep) -> TrialJob:
    """Ask sweep ``s`` for its next trial, suggest its parameters: the job to submit."""
    trial = s.study.ask()
    params = suggest(trial, s.space)
    s.running[trial.number] = (trial, len(s.running))
    s.to_ask -= 1
    return TrialJob(
        sweep=s.plan.key,
        number=trial.number,
        task_path=s.plan.task_path,
        estimator=s.plan.method.estimator,
        params=params,
        seed=trial_seed(s.plan.method.name, s.plan.condition.key, trial.number),
        split_seed=s.plan.split_seed,
        train_sha256=s.plan.train_sha256,
        pruning=None
        if s.pruner is None
        else PruningContext(s.pruner, trial.number, snapshot(s.study, trial.number)),
    )


def _tell(s: _Sweep, number: int, outcome: TrialOutcome, summary: TuneSummary) -> str:
    """Tell sweep ``s`` the outcome of its trial ``number``; count it; the progress text."""
    from optuna.trial import TrialState

    trial, running_at_ask = s.running.pop(number)
    # one journal write for everything the driver learnt about the trial
    trial.set_user_attr(
        "outcome",
        {
            "running_at_ask": running_at_ask,
            "finish_index": s.n_finished,
            "fit_time_s": float(outcome.fit_time_s),
            "predict_time_s": float(outcome.predict_time_s),
            "cpu_time_s": float(outcome.cpu_time_s),
            "error": outcome.error,
        },
    )
    s.n_finished += 1
    for step, value in sorted(outcome.intermediate.items()):
        trial.report(value, step)  # what the trial reported, for later snapshots
    for key, value in outcome.rung_attrs.items():
        s.study._storage.set_trial_system_attr(trial._trial_id, key, value)
    if outcome.pruned_at is not None:
        s.study.tell(trial, state=TrialState.PRUNED)
        summary.n_trials_pruned += 1
        text = f"pruned at {outcome.pruned_at}: nll {outcome.value:.4g}"
    elif outcome.value is not None:
        s.study.tell(trial, outcome.value)
        text = f"nll {outcome.value:.4g}"
    else:
        s.study.tell(trial, state=TrialState.FAIL)
        summary.n_trials_failed += 1
        text = f"failed: {outcome.error}"
    summary.n_trials_run += 1
    return text


def tune(
    tasks: Sequence[str | os.PathLike[str]],
    methods: Sequence[str | BaseMethod | tuple[str, str | BaseMethod]],
    out: str | os.PathLike[str],
    *,
    trials: int = 30,
    sampler: str = "tpe",
    seed: int = 0,
    in_flight: int | None = None,
    timeout: float | None = None,
    pruner: str = "auto",
    workers: int | None = None,
    scheduler: str | None = None,
    cluster_config: str | os.PathLike[str] | None = None,
    pin: bool | None = None,
    client: Any = None,
    on_trial: TrialCallback | None = None,
) -> TuneSummary:
    """Run (or resume) one sweep per (method, condition); write a record per finished sweep.

    Parameters
    ----------
    tasks : sequence of str or Path
        Task files, folders or globs; each condition's lowest seed is used.
    methods : sequence
        Method specs as for ``udbench run`` (:func:`udbench.methods.configs.resolve_methods`),
        or classifiers' (:func:`udbench.methods.classifiers.resolve_classifier`) for
        classification tasks; overrides (``"nn-ens:n_epochs=50"``) fix the base
        configuration the sweep starts from.
    out : str or Path
        Tuning folder: journals and records (``OUT/<method>/<condition>.{journal,json}``).
    trials : int, default 30
        Finished trials per sweep (SPEC §9).
    sampler : {"tpe", "random"}, default "tpe"
        Optuna's ``TPESampler(constant_liar=True)`` or ``RandomSampler``, seeded per sweep.
    seed : int, default 0
        Seeds every sweep's sampler (with the method and condition).
    in_flight : int, optional
        Most trials of one sweep running at once (default: every worker); 1 samples
        sequentially (results independent of the number of workers).
    timeout : float, optional
        Per-trial wall-clock limit of fit + predict, seconds.
    pruner : {"auto", "none", "sha", "hyperband", "median"}, default "auto"
        Stop unpromising trials of iterative methods early (Optuna's successive-halving or
        Hyperband pruner, or the median stopping rule, on the held-out NLL at intermediate
        steps, :mod:`udbench.tuning.pruning`); a pruned trial counts as one of ``trials`` and
        is never the best. ``"auto"``: ``"sha"`` for the methods of
        :data:`udbench.tuning.pruning.AUTO_SHA_METHODS` (catboost-ps, dkl, ngboost-bag and
        ngboost-nig: measured to lose no more than the seed-to-seed spread), ``"none"`` for
        every other method; journals and records hold the resolved pruner, and under
        ``"auto"`` an existing journal resumes with the pruner it was made with (an unpruned
        journal of ngboost-nig stays unpruned; its record says so). Methods with no
        intermediate values (every classifier among them) are not pruned.
    workers, scheduler, cluster_config, pin, client
        Where trials run, as for :func:`udbench.evaluation.runner.run_benchmark`.
    on_trial : callable, optional
        ``on_trial(done, total, sweep_key, text)`` after each finished trial (and once with
        ``done = 0`` when planned).

    Returns
    -------
    TuneSummary
        ``driver_s`` is the time the driver spent asking, suggesting, submitting and telling
        (its overhead), ``wall_s`` the whole run.

    Raises
    ------
    UdbenchError
        Bad settings (before any trial), or a journal made with other settings.
    """
    import optuna

    comp = "tune"
    check_int(comp, "in_flight", in_flight, minimum=1, allow_none=True)
    timeout = check_timeout(comp, "timeout", timeout)
    workers = check_workers(comp, "workers", workers)
    check_seed(comp, "seed", seed)
    if not isinstance(out, (str, os.PathLike)):
        raise param_error(comp, "out", "be a folder (str or Path)", out)
    t_start = time.perf_counter()
    plans = plan_sweeps(tasks, methods, trials=trials, sampler=sampler, seed=seed, pruner=pruner)
    out = Path(out)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    summary = TuneSummary(out=out, n_sweeps=len(plans))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sweeps = [_Sweep(p, out) for p in plans]
    summary.n_resumed_trials = sum(s.n_resumed for s in sweeps)
    earlier = [s.resumed_cpu_s for s in sweeps]
    summary.resumed_cpu_s = None if None in earlier else sum(c for c in earlier if c is not None)
    summary.n_interrupted = sum(s.n_interrupted for s in sweeps)
    total = sum(s.to_ask for s in sweeps)
    for s in sweeps:
        if s.complete:
            summary.records.append(write_record(out, sweep_record(s.study, s.plan)))
    if on_trial is not None:
        on_trial(0, total, "", "")
    if total == 0:
        summary.wall_s = time.perf_counter() - t_start
        return summary
    executor = Executor(
        workers=workers,
        scheduler=scheduler,
        cluster_config=cluster_config,
        pin=pin,
        client=client,
        log_file=Path(out) / DASK_LOG_NAME,
    )
    driver = 0.0
    with (
        executor,
        executor.pool(evaluate_trial, isolate=True, name="udbench-trial", timeout=timeout) as pool,
    ):
        cap = executor.capacity()
        per_sweep = in_flight or cap
        by_key = {s.plan.key: s for s in sweeps}
        turn = 0
        n_done = 0
        while True:
            t0 = time.perf_counter()
            # fill free workers, sweeps taking turns
            while len(pool) < cap:
                eligible = [s for s in sweeps if s.to_ask > 0 and len(s.running) < per_sweep]
                if not eligible:
                    break
                s = min(eligible, key=lambda x: (sweeps.index(x) - turn) % len(sweeps))
                turn = (sweeps.index(s) + 1) % len(sweeps)
                pool.submit(_ask(s))
            driver += time.perf_counter() - t0
            if len(pool) == 0:
                break
            job, result = pool.next_done()
            t0 = time.perf_counter()
            s = by_key[job.sweep]
            text = _tell(s, job.number, _outcome(result, timeout), summary)
            n_done += 1
            if s.complete:
                summary.records.append(write_record(out, sweep_record(s.study, s.plan)))
            driver += time.perf_counter() - t0
            if on_trial is not None:
                on_trial(n_done, total, s.plan.key, text)
    summary.driver_s = driver
    summary.wall_s = time.perf_counter() - t_start
    return summary
