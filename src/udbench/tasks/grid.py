"""A task grid: expanded from the generate options' text, and generated into a folder.

:func:`expand_grid` turns datasets, families, noise modes, coverages and seeds (``"all"``,
comma lists, seed ranges) into :class:`~udbench.tasks.TaskSpec`; every value is checked
there, before any data table or JAX is loaded, with the one error template (the command,
the option, the rule and the value received). Shared by the CLI (``udbench generate``,
``plan``, ``suite``) and the campaigns.

:func:`generate_grid` is the one generation pipeline: ``udbench generate`` (and so
``udbench suite``), the quickstart recipe and the studies of paper Appendix D all call it.
It checks which task files are already there (:func:`plan_grid`: a file of the same
instance, settings and data is kept, a damaged one is made again, one made otherwise is a
clash), makes each prior ready once (inline, or side by side on the workers), maps the
instances over the :class:`~udbench.execution.Executor`, records a failing instance while
the others go on, and logs every time to the folder's generation log
(:mod:`udbench.tasks.timelog`).
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from udbench._validation import UdbenchError, check_int, param_error
from udbench.priors import Fidelity
from udbench.tasks._grid_options import _parse_classes, parse_choice_list, parse_seeds

__all__ = [
    "GridPlan",
    "GridProgress",
    "GridResult",
    "expand_grid",
    "generate_grid",
    "parse_choice_list",
    "parse_seeds",
    "plan_grid",
    "task_path",
]


def expand_grid(
    datasets: str,
    families: str,
    noise: str,
    coverage: str,
    seeds: str,
    fidelity: Fidelity | str,
    draws: int,
    data_dir: str | None = None,
    *,
    classes: str | None = None,
    difficulty: str | None = None,
    command: str = "generate",
) -> list[Any]:
    """The list of :class:`~udbench.tasks.TaskSpec` selected by the CLI's options.

    ``all`` families means the regression families
    (:func:`udbench.priors.base.families_of_task_type`); a classification family (``gpc``)
    is generated when named, one spec per K of ``classes`` (comma list of integers from 2
    to :data:`~udbench.priors.base.MAX_N_CLASSES`; None: ``DEFAULT_N_CLASSES``, 3) and
    difficulty of ``difficulty`` (comma list or ``all``; None: ``"medium"``), its noise
    modes being the temperature modes (``student-t`` is refused: a noise law, not a shape).
    ``classes`` or ``difficulty`` given (not None) without a classification family among
    the families is an error: they would be ignored. Errors name ``command`` (``udbench
    plan``'s are its own).

    ``all`` noise modes means the four of SPEC §4 (``student-t`` only when named).
    ``all`` datasets means the paper's suite (SPEC §2: every dataset with a task design,
    except the embedded ``diabetes`` default and the user's datasets of ``data_dir``
    (default ``$UDBENCH_DATA_DIR``), which must be named).
    """
    from udbench.priors import (
        CLASSIFICATION_DIFFICULTIES,
        DEFAULT_DIFFICULTY,
        DEFAULT_N_CLASSES,
        MCMC_FAMILIES,
        PRIOR_FAMILIES,
        families_of_task_type,
        prior_capabilities,
    )
    from udbench.tasks.spec import MAX_DRAWS, MIN_DRAWS

    # the options that need no data tables first (pandas, SciPy), and never JAX
    seed_list = parse_seeds(seeds, command=command)
    if families.strip().lower() == "all":
        fams = families_of_task_type("regression")
    else:
        fams = parse_choice_list(command, "families", families, list(PRIOR_FAMILIES))
    classifiers = [f for f in fams if prior_capabilities(f).task_type == "classification"]
    for name, value in (("classes", classes), ("difficulty", difficulty)):
        if value is not None and not classifiers:
            raise param_error(
                command,
                name,
                "be left out unless --families names a classification family (gpc): the "
                f"families {fams} are regression families, which have no classes or "
                "difficulty",
                value,
            )
    settings: dict[str, list[tuple[int | None, str | None]]] = {}
    for family in fams:
        if family not in classifiers:
            settings[family] = [(None, None)]
            continue
        ks = _parse_classes(str(DEFAULT_N_CLASSES) if classes is None else classes)
        levels = parse_choice_list(
            command,
            "difficulty",
            DEFAULT_DIFFICULTY if difficulty is None else difficulty,
            list(CLASSIFICATION_DIFFICULTIES),
        )
        settings[family] = [(k, lv) for k in ks for lv in levels]
    fid = Fidelity.parse(command, fidelity)
    check_int(command, "--draws", draws, minimum=MIN_DRAWS, maximum=MAX_DRAWS)
    for family in fams:
        if family not in MCMC_FAMILIES:
            continue
        # D is chains × draws per chain: refused here, not by every instance after the
        # prior fit (the preset tables of the MCMC families import no JAX)
        presets = getattr(importlib.import_module(PRIOR_FAMILIES[family]), "FIDELITY_SETTINGS", {})
        chains = int((presets.get(fid.value) or {}).get("n_chains", 1))
        if draws % chains:
            raise param_error(
                command,
                "--draws",
                f"be a multiple of the {chains} chains of {family} at fidelity {fid.value}",
                draws,
            )
    from udbench.data import list_datasets
    from udbench.design import ALL_NOISE_MODES, COVERAGES, NOISE_MODES
    from udbench.tasks import TaskSpec

    designed = [s for s in list_datasets(include_ood=False, data_dir=data_dir)]
    keys = [s.key for s in designed]
    if datasets.strip().lower() == "all":
        ds = [s.key for s in designed if s.source in ("uci", "openml")]
    else:
        ds = parse_choice_list(command, "datasets", datasets, keys)
    # 'all' is the grid of SPEC §4; a mode outside it (student-t) is generated when named
    if noise.strip().lower() == "all":
        modes = list(NOISE_MODES)
    else:
        modes = parse_choice_list(command, "noise", noise, list(ALL_NOISE_MODES))
    covs = parse_choice_list(command, "coverage", coverage, list(COVERAGES))
    for family, fam_settings in settings.items():
        bad = [m for m in modes if m not in NOISE_MODES]
        if fam_settings[0][0] is not None and bad:
            raise param_error(
                command,
                "noise",
                f"be temperature modes {list(NOISE_MODES)} for the classification family "
                f"{family!r} (a noise law is no shape of τ)",
                bad[0],
            )
    return [
        TaskSpec(d, f, m, c, s, fidelity=fid, n_draws=draws, n_classes=k, difficulty=lv)
        for d in ds
        for f in fams
        for k, lv in settings[f]
        for m in modes
        for c in covs
        for s in seed_list
    ]


# ------------------------------------------------------------------ generating a grid
def task_path(folder: str | os.PathLike[str], spec: Any) -> Path:
    """Where the task file of ``spec`` lies in ``folder``: ``folder/<task id>.npz``."""
    return Path(folder) / f"{spec.task_id}.npz"


def _query_difference(path: Path, query: Any) -> str:
    """How the query points stored in the task file ``path`` differ from ``query`` ("" if not).

    Compared on the record :func:`~udbench.tasks.generate.make_task` stores
    (``diagnostics["query"]``: name, number of points, source).
    """
    from udbench.tasks.taskfile import read_task_meta

    stored = read_task_meta(path)["diagnostics"].get("query") or {}
    asked = {
        "name": query.name,
        "n_query": int(query.X.shape[0]),
        "source": query.info.get("source"),
    }
    return "; ".join(
        f"query {key} {stored.get(key)!r} (asked {value!r})"
        for key, value in asked.items()
        if stored.get(key) != value
    )


@dataclass(frozen=True)
class GridPlan:
    """What :func:`plan_grid` found in a task folder: the resume check of a grid.

    Attributes
    ----------
    specs : tuple of TaskSpec
        The grid, in the order given.
    todo : tuple of TaskSpec
        The instances to generate (missing, damaged or clashing files), in grid order.
    clashes : tuple of (Path, str)
        Files that hold the same instance made with other settings or from other data (or,
        with query points, other query points), with a short description of the difference.
    n_damaged : int
        Files that exist but cannot be read or fail their checksums (made again), or were
        written by an older task-file format.
    """

    specs: tuple[Any, ...]
    todo: tuple[Any, ...]
    clashes: tuple[tuple[Path, str], ...]
    n_damaged: int

    @property
    def n_done(self) -> int:
        """Instances whose file is already there and kept."""
        return len(self.specs) - len(self.todo)


def plan_grid(
    specs: Sequence[Any],
    out: str | os.PathLike[str],
    *,
    data_dir: str | None = None,
    query: Callable[[Any], Any] | None = None,
) -> GridPlan:
    """The resume check of :func:`generate_grid`: which task files of ``specs`` to (re)make.

    A file is kept when it holds this very instance: same spec, fidelity and D, made from
    the current covariate table (:func:`udbench.tasks.provenance.task_file_clash`) and, when
    ``query`` is given, with the same query points. A missing or damaged file is to be
    made; a file made otherwise is a clash (also to be made, if the caller allows it).

    Parameters
    ----------
    specs : sequence of TaskSpec
        The grid.
    out : str or Path
        The task folder (need not exist).
    data_dir : str, optional
        Folder of the user's datasets (default ``$UDBENCH_DATA_DIR``).
    query : callable, optional
        ``query(spec) -> QueryPoints``: the query points each instance is generated with
        (the wine OOD study); the stored ones must match.

    Returns
    -------
    GridPlan
    """
    from udbench.tasks.generate import get_covariates, task_file_clash

    todo: list[Any] = []
    clashes: list[tuple[Path, str]] = []
    n_damaged = 0
    for spec in specs:
        path = task_path(out, spec)
        if not path.exists():
            todo.append(spec)
            continue
        clash = task_file_clash(path, spec, get_covariates(spec.dataset, data_dir).fingerprint)
        if clash == "" and query is not None:
            clash = _query_difference(path, query(spec))
        if clash is None:
            n_damaged += 1
            todo.append(spec)
        elif clash:
            clashes.append((path, clash))
            todo.append(spec)
    return GridPlan(tuple(specs), tuple(todo), tuple(clashes), n_damaged)


class GridProgress:
    """What :func:`generate_grid` tells its caller as it goes; every hook does nothing here.

    Subclass it to print or draw (``udbench generate``'s progress bars, the quickstart's
    lines). The hooks are called in the submitting process, in this order: :meth:`planned`;
    then per prior :meth:`fitting_prior` and :meth:`prior_ready` (inline), or
    :meth:`priors_on_workers` then :meth:`prior_ready` as each fit ends (on workers); then
    :meth:`generating` and :meth:`instance_done` per instance as each finishes.
    """

    def planned(self, plan: GridPlan, out: Path) -> None:
        """The resume check is done (``plan.todo`` is what will be generated)."""

    def fitting_prior(self, key: tuple[str, str, Any]) -> AbstractContextManager[Any]:
        """A context around an inline prior fit of ``key`` = (family, dataset, fidelity)."""
        return nullcontext()

    def priors_on_workers(self, n: int) -> None:
        """``n`` priors are being made ready side by side on the workers."""

    def prior_ready(self, key: tuple[str, str, Any], seconds: float, on_worker: bool) -> None:
        """The prior ``key`` is fitted (or read from the disk cache) in ``seconds`` wall s."""

    def generating(self, n: int) -> None:
        """``n`` instances are submitted."""

    def instance_done(self, spec: Any, error: str) -> None:
        """The instance ``spec`` is saved (``error`` "") or failed (``error`` says why)."""


@dataclass(frozen=True)
class GridResult:
    """What :func:`generate_grid` did.

    Attributes
    ----------
    plan : GridPlan
        The resume check it started from.
    paths : tuple of Path
        The task file of every spec of the grid, in grid order (the failed ones absent).
    generated : tuple of str
        Task ids generated and saved, in the order they finished.
    failures : tuple of (str, str)
        ``(task id, error)`` of each instance that failed, in the order they finished.
    """

    plan: GridPlan
    paths: tuple[Path, ...]
    generated: tuple[str, ...]
    failures: tuple[tuple[str, str], ...]

    def raise_failures(self, component: str) -> None:
        """Raise if an instance failed.

        Raises
        ------
        UdbenchError
            ``"<component>: N of M instances failed: <first task id>: <error> …"``.
        """
        if self.failures:
            task_id, err = self.failures[0]
            raise UdbenchError(
                f"{component}: {len(self.failures)} of {len(self.plan.todo)} instances failed: "
                f"{task_id}: {err}" + (" …" if len(self.failures) > 1 else "")
            )


def _fit_prior(key: tuple[str, str, Any], data_dir: str | None) -> tuple[float, str]:
    """Worker: make the prior ``key`` = (family, dataset, fidelity) ready (fit it, or read the
    disk cache); returns (wall seconds, error or "")."""
    from udbench.tasks.generate import get_prior

    start = time.perf_counter()
    try:
        get_prior(*key, data_dir)
    except Exception as err:  # reported by the submitting process, with the others
        return time.perf_counter() - start, f"{type(err).__name__}: {err}"
    return time.perf_counter() - start, ""


def _generate_one(
    spec: Any,
    out: str,
    data_dir: str | None,
    max_replacements: int,
    draws_train: bool | None,
    query: Callable[[Any], Any] | None,
) -> tuple[str, str, float]:
    """Worker: generate and save one instance; returns (task_id, error or "", seconds).

    ``seconds`` is the wall time of generation and save in the worker (the prior is already
    fitted and cached), the figure ``udbench plan`` projects from.
    """
    import udbench.tasks as tasks  # looked up at call time (tests replace generate_task)

    start = time.perf_counter()
    try:
        task = tasks.generate_task(
            spec,
            data_dir=data_dir,
            max_replacements=max_replacements,
            query=None if query is None else query(spec),
            draws_train=draws_train,
        )
        task.save(task_path(out, spec))
    except Exception as err:  # one failing instance must not stop the others
        return spec.task_id, f"{type(err).__name__}: {err}", time.perf_counter() - start
    return spec.task_id, "", time.perf_counter() - start


def generate_grid(
    specs: Sequence[Any],
    out: str | os.PathLike[str],
    *,
    data_dir: str | None = None,
    workers: int | None = 0,
    scheduler: str | None = None,
    cluster_config: str | os.PathLike[str] | None = None,
    max_replacements: int | None = None,
    draws_train: bool | None = None,
    query: Callable[[Any], Any] | None = None,
    overwrite: bool = False,
    component: str = "generate",
    clash_advice: str = "pass --overwrite to replace them, or generate into another --out",
    progress: GridProgress | None = None,
) -> GridResult:
    """Generate the task files of ``specs`` not yet in ``out`` (SPEC §6); resumable.

    The one generation pipeline (``udbench generate`` and ``suite``, the quickstart, the
    studies):

    1. Resume check (:func:`plan_grid`): a file holding the same instance, settings and data
       is kept; a damaged one is made again; one made otherwise is a clash, an error before
       anything is generated unless ``overwrite``.
    2. Each prior the instances to make need is made ready once, timed: in this process
       when generating inline, else side by side on the workers (one thread each, the same
       fit), which write the disk cache the instances then read. A prior that cannot be
       made is an error, before any instance is generated.
    3. The instances are mapped over the :class:`~udbench.execution.Executor` (inline, a
       local Dask cluster, a scheduler or a cluster file). Each is made with one compute
       thread (:func:`~udbench.tasks.generate_task`), so its bytes do not depend on which
       process made it. A failing instance is recorded and the others go on.
    4. Every prior and instance time is appended to the folder's generation log
       (:func:`~udbench.tasks.timelog.log_generation_time`), which ``udbench plan`` reads.

    JAX's CPU thread pool of this process is fixed at one thread first
    (:func:`udbench._threads.fix_xla_threads`), so a prior fitted here is fitted as on a
    worker.

    Parameters
    ----------
    specs : sequence of TaskSpec
        The grid (e.g. :func:`expand_grid`).
    out : str or Path
        The task folder (created if missing); files are ``out/<task id>.npz``.
    data_dir : str, optional
        Folder of the user's datasets (default ``$UDBENCH_DATA_DIR``).
    workers : int or None, default 0
        0 or 1: generate in this process; N > 1: on N local Dask workers; None: one local
        worker per usable core. Ignored with ``scheduler`` or ``cluster_config``.
    scheduler : str, optional
        Address of a running Dask scheduler.
    cluster_config : str or Path, optional
        YAML/TOML file naming a cluster class (:mod:`udbench.execution.cluster`).
    max_replacements : int, optional
        Seed replacements tried for an instance rejected by the R̂ rule (SPEC §7); default
        :data:`udbench.tasks.replacement.MAX_REPLACEMENTS`.
    draws_train : bool, optional
        Also store the posterior draws at the training inputs (default: the family's).
    query : callable, optional
        ``query(spec) -> QueryPoints``: query points to store with each instance (called in
        the worker; must pickle for Dask, e.g. a :func:`functools.partial` of a module-level
        function). The resume check compares them too.
    overwrite : bool, default False
        Replace clashing files instead of raising.
    component : str, default "generate"
        Names the caller in error messages.
    clash_advice : str
        The remedy a clash error ends with.
    progress : GridProgress, optional
        Hooks told of each step (nothing is printed without it).

    Returns
    -------
    GridResult
        The plan, the paths, the task ids generated and the failures (call
        :meth:`GridResult.raise_failures` to make them an error).

    Raises
    ------
    UdbenchError
        A clashing file (without ``overwrite``); a prior that could not be made; a bad
        ``workers``, scheduler address or cluster file.
    """
    from udbench._threads import fix_xla_threads
    from udbench.execution import DASK_LOG_NAME, Executor, Failed
    from udbench.tasks.generate import get_prior
    from udbench.tasks.replacement import MAX_REPLACEMENTS
    from udbench.tasks.timelog import log_generation_time

    hooks = progress if progress is not None else GridProgress()
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    # one XLA thread before JAX is first used (the prior fit below): instances made in this
    # process then run as on a worker, and the fit does not depend on ``workers``
    fix_xla_threads()
    plan = plan_grid(specs, folder, data_dir=data_dir, query=query)
    if plan.clashes and not overwrite:
        path, why = plan.clashes[0]
        raise UdbenchError(
            f"{component}: {len(plan.clashes)} task file(s) in {str(folder)!r} hold the same "
            f"instance made with other settings or data (e.g. {path.name}: {why}); "
            f"{clash_advice}"
        )
    hooks.planned(plan, folder)
    todo = list(plan.todo)
    keys = sorted({(s.family, s.dataset, s.fidelity) for s in todo})
    local = scheduler is None and cluster_config is None
    inline = local and workers is not None and workers <= 1

    def prior_ready(key: tuple[str, str, Any], seconds: float, on_worker: bool) -> None:
        log_generation_time(folder, None, seconds, prior=key)
        hooks.prior_ready(key, seconds, on_worker)

    if inline:  # fit each prior once here (cached on disk): the instances then read it
        for key in keys:
            start = time.perf_counter()
            with hooks.fitting_prior(key):
                get_prior(*key, data_dir)
            prior_ready(key, time.perf_counter() - start, False)
    generated: list[str] = []
    failures: list[tuple[str, str]] = []
    if todo:
        executor = Executor(
            workers=0 if inline else workers,
            scheduler=scheduler,
            cluster_config=cluster_config,
            pin=False if local else None,
            log_file=folder / DASK_LOG_NAME,
        )
        with executor:
            if not inline and keys:
                hooks.priors_on_workers(len(keys))
                bad: list[str] = []
                for key, result in executor.map_unordered(
                    _fit_prior, keys, name="udbench-prior", data_dir=data_dir
                ):
                    err = (
                        f"worker failed: {result.error}"
                        if isinstance(result, Failed)
                        else result[1]
                    )
                    if err:
                        bad.append(f"prior {key[0]} on {key[1]} ({key[2]}): {err}")
                    else:
                        prior_ready(key, float(result[0]), True)
                if bad:
                    raise UdbenchError(
                        f"{component}: {len(bad)} prior(s) could not be made, nothing was "
                        "generated: " + "; ".join(bad)
                    )
            hooks.generating(len(todo))
            stream = executor.map_unordered(
                _generate_one,
                todo,
                name="udbench-generate",
                out=str(folder),
                data_dir=data_dir,
                max_replacements=MAX_REPLACEMENTS if max_replacements is None else max_replacements,
                draws_train=draws_train,
                query=query,
            )
            for spec, result in stream:
                err = f"worker failed: {result.error}" if isinstance(result, Failed) else result[1]
                if err:
                    failures.append((spec.task_id, err))
                else:
                    generated.append(spec.task_id)
                    log_generation_time(folder, spec, float(result[2]))
                hooks.instance_done(spec, err)
    failed = {task_id for task_id, _ in failures}
    paths = tuple(task_path(folder, s) for s in plan.specs if s.task_id not in failed)
    return GridResult(plan, paths, tuple(generated), tuple(failures))
