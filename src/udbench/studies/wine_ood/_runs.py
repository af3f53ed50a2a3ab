"""Running the wine OOD study: generating its instances and running its cells."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from udbench.studies.wine_ood._design import _COMPONENT, WineOODDesign, red_query_points
from udbench.tasks import Task, TaskSpec
from udbench.tasks.generate import QueryPoints


def _design_query(
    spec: TaskSpec, ood_dataset: str, n_query: int, data_dir: str | None
) -> QueryPoints:
    """The red query points of one instance (a module-level function: it pickles for Dask)."""
    return red_query_points(spec.dataset, ood_dataset, n_query, data_dir)


def generate_tasks(
    design: WineOODDesign,
    out: str | os.PathLike[str],
    *,
    data_dir: str | None = None,
    workers: int | None = 0,
    scheduler: str | None = None,
    cluster_config: str | os.PathLike[str] | None = None,
    on_task: Callable[[str, str], None] | None = None,
) -> tuple[int, list[tuple[str, str]]]:
    """Generate the design's instances (with their red query points) into ``out``.

    :func:`udbench.tasks.grid.generate_grid`, the pipeline of ``udbench generate``, with
    the query points: a file already holding the instance, made from the same data with the
    same query points, is kept (a re-run resumes); any other is made again (the folder is
    the study's own). A failed instance is reported and the others go on. ``workers``: 0 or
    1 generate in this process, N > 1 on N local Dask workers, None on one worker per
    usable core.

    Returns
    -------
    n_generated : int
    failures : list of (task id, error)
    """
    import functools

    from udbench.tasks.grid import GridProgress, generate_grid

    class Progress(GridProgress):
        def instance_done(self, spec: Any, error: str) -> None:
            if on_task is not None:
                on_task(spec.task_id, error)

    result = generate_grid(
        design.specs(),
        out,
        data_dir=data_dir,
        workers=workers,
        scheduler=scheduler,
        cluster_config=cluster_config,
        query=functools.partial(
            _design_query,
            ood_dataset=design.ood_dataset,
            n_query=design.n_query,
            data_dir=data_dir,
        ),
        overwrite=True,
        component=_COMPONENT,
        progress=Progress(),
    )
    return len(result.generated), list(result.failures)


def run_cells(
    tasks: str | os.PathLike[str],
    methods: Sequence[str],
    out: str | os.PathLike[str],
    *,
    tuned: str | os.PathLike[str] | None = None,
    **run_kwargs: Any,
) -> Any:
    """Run every method on the study's instances through :func:`run_benchmark`.

    Cells are the benchmark's (same key, same method seed for the same task id and
    configuration); predictions are kept (``keep_predictions=True``), including those at the
    query points. With ``tuned`` (a ``udbench tune --out`` folder), each method gets its
    condition's tuned record where one exists and its configuration as given elsewhere
    (``fallback="default"``); the records used are copied into ``out/tuned``.

    Returns
    -------
    udbench.evaluation.runner.RunSummary
    """
    from udbench.evaluation.runner import run_benchmark
    from udbench.methods.configs import resolve_methods
    from udbench.tasks.discovery import find_task_files
    from udbench.tuning.records import tuned_configurer

    configure = None
    if tuned is not None:
        specs = [Task.load(p).spec for p in find_task_files([tasks])]
        configure = tuned_configurer(
            tuned, resolve_methods(list(methods)), specs, fallback="default"
        )
        configure.copy_to(Path(out) / "tuned")
        configure.warn_fallback()  # the cells run untuned are named, as udbench run does
    return run_benchmark(
        [str(tasks)], list(methods), out, keep_predictions=True, configure=configure, **run_kwargs
    )
