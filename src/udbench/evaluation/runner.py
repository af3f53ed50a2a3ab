"""The benchmark runner: every (task, method, configuration) cell, scored and stored.

For each cell (:func:`udbench.evaluation.cell.evaluate_cell`) the task file is loaded, the
method fitted on the training sample (``X_train``, ``y_train``) and its prediction at the
evaluation pool ``X_eval`` validated (shape, finiteness, non-negative variances) and scored
(the oracle targets of SPEC §1, the per-instance metrics of SPEC §10, the Spearman ρ of EU with
EU*_risk and EU*_var inside each coverage shell, SPEC §3); the runner writes its long-format
row to the :class:`~udbench.evaluation.store.ResultsStore`.

Cells are keyed by (task id, method, configuration hash, task content checksum); a re-run
skips finished cells, and a task file whose content changed is a new cell. Two different task
files with the same task id in one run are an error (the same content given twice runs once).
A cell that raises, returns invalid output or exceeds the time limit is stored as a failed
row with its reason and the run goes on. Cells run through the
:class:`~udbench.execution.executor.Executor`: on Dask distributed, each in a child process
of its worker (:mod:`udbench.execution.cluster`, :mod:`udbench.execution.isolation`), or,
with ``workers=0``, in the calling process.

This module only plans and loops; the other jobs live beside it: one cell's evaluation in
:mod:`udbench.evaluation.cell`, method specs and their hashes in
:mod:`udbench.methods.configs`, task-file discovery in :mod:`udbench.tasks.discovery`, scoring
in :mod:`udbench.evaluation.scoring`, execution and time limits in
:mod:`udbench.execution.executor`, the progress bar in the command layer
(the ``on_cell`` callback of :func:`run_benchmark`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from udbench._seeding import derive_seed
from udbench._validation import (
    UdbenchError,
    as_list,
    check_choice,
    check_timeout,
    check_workers,
    param_error,
)
from udbench.data import N_SHELLS
from udbench.evaluation.cell import (
    Cell,
    CellMeasure,
    CellOutcome,
    _base_row,
    _now,
    _one_line,
    evaluate_cell,
)
from udbench.evaluation.scoring import METRIC_KEYS, score_prediction
from udbench.evaluation.store import ResultsStore
from udbench.execution.executor import DASK_LOG_NAME, Executor, Failed
from udbench.methods.base import BaseMethod
from udbench.methods.configs import MethodConfig, resolve_method, resolve_methods
from udbench.tasks import Task, TaskSpec
from udbench.tasks.discovery import TASK_SUFFIXES, find_task_files, task_identity

if TYPE_CHECKING:
    from udbench.execution.isolation import ChildResult
    from udbench.methods.classification import BaseClassifier

__all__ = [
    "METRIC_KEYS",
    "N_SHELLS",
    "TASK_SUFFIXES",
    "Cell",
    "CellCallback",
    "CellMeasure",
    "CellOutcome",
    "MethodConfig",
    "RunSummary",
    "classifiers_as_instances",
    "find_task_files",
    "method_seed",
    "plan_cells",
    "resolve_method",
    "resolve_methods",
    "run_benchmark",
    "score_prediction",
]

#: Called by :func:`run_benchmark` once the cells are planned, as ``on_cell(0, total, None)``,
#: then after each stored cell as ``on_cell(done, total, row)``: the cells stored so far in
#: this run, the cells to run, and the stored row (``row["status"]`` is ``"ok"`` or
#: ``"failed"``). The command layer draws its progress bar with it
#: (:func:`udbench.commands._progress.cell_progress`).
CellCallback = Callable[[int, int, "dict[str, Any] | None"], None]

#: ``configure(task spec, method) -> (configuration for this task, extra row fields)``: lets a
#: caller give each task its own configuration of a method (``udbench run --tuned``:
#: :func:`udbench.tuning.records.tuned_configurer`); the extra fields are stored in the row.
#: An extra field ``method_seed`` (an int) sets the cell's seed instead of :func:`method_seed`:
#: a paired design (``udbench study spectral-norm``) trains every arm of a method with the
#: same seed on the same task.
TaskConfigurer = Callable[["TaskSpec", MethodConfig], "tuple[MethodConfig, dict[str, Any]]"]


def classifiers_as_instances(methods: Any) -> Any:
    """Method specs with every classifier spec string replaced by ``(label, instance)``.

    :func:`udbench.methods.configs.resolve_methods` takes a classifier as an unfitted
    instance; a classifier's name with overrides (``"logreg-lap:n_samples=50"``) is built
    here by :func:`udbench.methods.classifiers.resolve_classifier` and labelled as given.
    Anything else (one string or instance, a sequence, bad input) passes through unchanged.
    """
    from udbench.methods.classifiers import classifier_spec_name, resolve_classifier

    def one(spec: Any) -> Any:
        label = None
        if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
            label, spec = spec
        if isinstance(spec, str) and classifier_spec_name(spec.strip()) is not None:
            mc = resolve_classifier(spec.strip(), label=label)
            return (mc.label, mc.estimator)
        return spec if label is None else (label, spec)

    if isinstance(methods, str):
        return [one(methods)] if classifier_spec_name(methods.strip()) is not None else methods
    if isinstance(methods, list | tuple) and not (
        isinstance(methods, tuple) and len(methods) == 2 and isinstance(methods[0], str)
    ):
        return [one(m) for m in methods]
    return methods


def method_seed(task_id: str, method: str, chash: str) -> int:
    """Seed of a method in one cell: derived from (task id, method, config hash), 32 bits."""
    return derive_seed("method", task_id, method, chash, bits=32)


@dataclass
class RunSummary:
    """Counts of a run: cells planned, skipped as already finished, ok and failed."""

    out: Path
    n_cells: int
    n_skipped: int
    n_ok: int = 0
    n_failed: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)


def plan_cells(
    task_paths: Sequence[Path],
    methods: Sequence[MethodConfig],
    *,
    finished: set[str] | None = None,
    configure: TaskConfigurer | None = None,
) -> tuple[list[Cell], int]:
    """Return the cells still to run (task-major order) and how many were skipped as finished.

    A task file whose content (checksum) equals one already listed is run once. Two files
    with the same task id and different content cannot both be stored under that id.
    With ``configure``, each readable task's method configurations come from
    ``configure(task spec, method)`` (an unreadable file keeps the configuration as given: its
    cells fail anyway).

    Raises
    ------
    UdbenchError
        Two task files hold the same task id with different content; a file's name is a
        task id other than the one it holds (:class:`udbench.tasks.taskfile.TaskFileMisnamed`).
    """
    done = finished or set()
    todo: list[Cell] = []
    skipped = 0
    seen: dict[str, tuple[str | None, Path]] = {}
    for path in task_paths:
        tid, sha = task_identity(path)
        if tid in seen:
            first_sha, first = seen[tid]
            if sha is not None and sha == first_sha:
                continue  # the same task given twice (a copy, or two folders): run it once
            raise UdbenchError(
                f"udbench run: task id {tid!r} is held by two different task files, "
                f"{str(first)!r} and {str(path)!r} (content checksums "
                f"{(first_sha or 'unreadable')[:12]}, {(sha or 'unreadable')[:12]}); run them "
                "into separate --out folders, or pass only one"
            )
        seen[tid] = (sha, Path(path))
        spec = None
        if configure is not None and sha is not None:
            spec = Task.load(path).spec
        for given in methods:
            mc, extra = given, dict[str, Any]()
            if configure is not None and spec is not None:
                mc, extra = configure(spec, given)
            seed = extra.get("method_seed")
            cell = Cell(
                task_path=os.path.abspath(path),  # stored: commands work from any folder
                task_id=tid,
                method=mc,
                seed=method_seed(tid, mc.name, mc.config_hash) if seed is None else int(seed),
                task_sha256=sha,
                extra=tuple(extra.items()),
            )
            if cell.key in done:
                skipped += 1
            else:
                todo.append(cell)
    return todo, skipped


def _crashed(cell: Cell, err: BaseException, log_file: str | None = None) -> CellOutcome:
    """Outcome of a cell whose worker died or whose task errored outside ``evaluate_cell``."""
    row = _base_row(cell)
    row["error"] = f"worker failed: {_one_line(err)}" + (
        f" (Dask's log: {log_file})" if log_file else ""
    )
    row["finished_at"] = _now()
    return CellOutcome(row=row)


# ------------------------------------------------------------------------------ running
def _isolated_outcome(cell: Cell, res: ChildResult, timeout: float | None) -> CellOutcome:
    """The outcome of a cell run by :func:`udbench.execution.isolation.run_in_child`.

    A cell over its time limit (its process was killed at the deadline) or whose process died
    (``os._exit``, a segfault, the out-of-memory killer) is one failed row, with the task
    coordinates when the task had been read.
    """
    if not res.timed_out and res.died is None:
        try:
            return res.result()  # type: ignore[no-any-return]
        except Exception as err:  # raised outside evaluate_cell's own handling
            return _crashed(cell, err)
    context = res.context_value()
    row = dict(context) if isinstance(context, dict) else _base_row(cell)
    row["status"] = "failed"
    if res.timed_out:
        row["error"] = f"timeout: fit + predict exceeded {timeout:g} s"
    else:
        stage = " during fit + predict" if res.in_deadline else ""
        row["error"] = f"the cell's process died{stage}: {res.died}"
    row["finished_at"] = _now()
    return CellOutcome(row=row, timed_out=res.timed_out)


def _outcome(
    cell: Cell,
    result: CellOutcome | Failed | ChildResult,
    timeout: float | None,
    log_file: str | None = None,
) -> CellOutcome:
    """The outcome of a cell from what the :class:`~udbench.execution.executor.Executor` gave.

    A job that failed on Dask (its worker lost) names Dask's log file, where the worker's own
    account is.
    """
    if isinstance(result, CellOutcome):
        return result
    if isinstance(result, Failed):
        return _crashed(cell, result.error, log_file)
    return _isolated_outcome(cell, result, timeout)


def run_benchmark(
    tasks: Sequence[str | os.PathLike[str]],
    methods: Sequence[
        str | BaseMethod | BaseClassifier | tuple[str, str | BaseMethod | BaseClassifier]
    ],
    out: str | os.PathLike[str],
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    cluster_config: str | os.PathLike[str] | None = None,
    pin: bool | None = None,
    timeout: float | None = None,
    keep_predictions: bool = False,
    retry_failed: bool = False,
    on_cell: CellCallback | None = None,
    client: Any = None,
    configure: TaskConfigurer | None = None,
    losses: tuple[str, ...] | list[str] = (),
    measure: CellMeasure | None = None,
) -> RunSummary:
    """Run every (task, method) cell not yet finished and store one row per cell.

    Parameters
    ----------
    tasks : str, Path or sequence of them
        Task files, folders or globs (see :func:`udbench.tasks.discovery.find_task_files`);
        one string or path is one argument, not a sequence of characters.
    methods : str, BaseMethod or sequence of str, BaseMethod or (label, spec)
        Method specs (``"gp"``, ``"nn-ens:n_members=5"``, an import path ``"pkg.mod:Cls"``),
        unfitted instances, or ``(label, spec)`` pairs to name them in the results
        (:func:`udbench.methods.configs.resolve_methods`); one string is one method. A
        classifier (``"logreg-lap"``, docs/classification.md) is scored on classification
        tasks; a method of the other task type than its task's gives a failed row.
    out : str or Path
        Results directory (:class:`~udbench.evaluation.store.ResultsStore`).
    workers : int, optional
        Local Dask workers (default: the number of usable cores); ``0`` runs in this process;
        at most :data:`udbench._validation.MAX_WORKERS_PER_CORE` (4) × the usable cores.
    scheduler : str, optional
        Address of a running Dask scheduler to use instead of a local cluster.
    cluster_config : str or Path, optional
        YAML/TOML file describing a cluster object (see :mod:`udbench.execution.cluster`).
    pin : bool, optional
        Pin each worker to its own core(s) and cap BLAS/OpenMP threads. Default: on for a
        local cluster, off for a scheduler address or a cluster file.
    timeout : float, optional
        Per-cell wall-clock limit in seconds for fit + predict, in (0, 30 days].
    keep_predictions : bool, default False
        Store per-point predictions under ``out/predictions/``.
    retry_failed : bool, default False
        Re-run cells stored as failed (the new row replaces the old).
    on_cell : callable, optional
        ``on_cell(0, total, None)`` once the cells are planned, then ``on_cell(done, total,
        row)`` after each stored cell (:data:`CellCallback`); the command layer draws its
        progress bar with it.
    client : distributed.Client, optional
        An existing client to submit to (overrides ``workers``/``scheduler``/``cluster_config``).
    configure : callable, optional
        Per-task method configurations (:data:`TaskConfigurer`), e.g. tuned ones.
    losses : str or sequence of {"squared", "crps", "log"}, default ()
        Also score every cell under these losses (:mod:`udbench.evaluation.losses`;
        ``udbench run --loss``); squared loss is always scored. Cells already finished are
        skipped as usual: score them with :func:`udbench.evaluation.loss_rescoring.score_results`.
    measure : callable, optional
        Extra row fields of every ok cell from its fitted estimator (:data:`CellMeasure`);
        a module-level function (it is pickled to the workers).

    Returns
    -------
    RunSummary

    Raises
    ------
    UdbenchError
        Bad task arguments (empty glob, missing file, not a string, path or sequence of
        them), unknown method, unknown hyperparameter, bad timeout, worker count or loss.
    """
    comp = "run_benchmark"
    timeout = check_timeout(comp, "timeout", timeout)
    workers = check_workers(comp, "workers", workers)
    if not isinstance(out, (str, os.PathLike)):
        raise param_error(comp, "out", "be a folder (str or Path)", out)
    losses = as_list(comp, "losses", losses, (str,), what="loss names (squared, crps, log)")
    tasks = as_list(comp, "tasks", tasks, (str, os.PathLike), what="task files, folders or globs")
    from udbench._losses import LOSS_TABLE, loss_names

    extra_losses: tuple[str, ...] = ()
    for loss in losses:
        check_choice("udbench run", "loss", loss, loss_names("regression"))
        if LOSS_TABLE[loss].scored and loss not in extra_losses:
            extra_losses += (loss,)
    mcs = resolve_methods(classifiers_as_instances(methods))
    paths = find_task_files(tasks)
    store = ResultsStore(out)
    done = store.finished(include_failed=not retry_failed)
    cells, skipped = plan_cells(paths, mcs, finished=done, configure=configure)
    summary = RunSummary(out=Path(out), n_cells=len(cells) + skipped, n_skipped=skipped)
    if not cells:
        if store.root.is_dir():  # unusable part files go to quarantine, as the warning said
            store.compact()
        return summary
    executor = Executor(
        workers=workers,
        scheduler=scheduler,
        cluster_config=cluster_config,
        pin=pin,
        client=client,
        log_file=Path(out) / DASK_LOG_NAME,
    )
    with executor:
        if on_cell is not None:
            on_cell(0, len(cells), None)
        stream = executor.map_unordered(
            evaluate_cell,
            cells,
            isolate=True,
            name="udbench-cell",
            keep_predictions=keep_predictions,
            timeout=timeout,
            **({"losses": extra_losses} if extra_losses else {}),
            measure=measure,
        )
        # closed before the executor: an interrupt cancels the pending cells while the Dask
        # client still lives (not later, at garbage collection, with a traceback)
        with contextlib.closing(stream):
            for n_done, (cell, result) in enumerate(stream, start=1):
                outcome = _outcome(cell, result, timeout, executor.log_file)
                store.write_cell(outcome.row, outcome.predictions)
                if outcome.row["status"] == "ok":
                    summary.n_ok += 1
                else:
                    summary.n_failed += 1
                    summary.failures.append((cell.key, str(outcome.row["error"])))
                if on_cell is not None:
                    on_cell(n_done, len(cells), outcome.row)
    store.compact()
    return summary
