"""``udbench quickstart``: the whole job, offline, in a few minutes on a laptop.

On the embedded default dataset ``diabetes`` (scikit-learn's bundled table, no download) it
generates a small GP task grid, runs the registered methods with their smoke configurations
on a local Dask cluster, prints the leaderboard and writes the HTML report:

- tasks: family ``gp`` × noise ``homoscedastic`` and ``smooth-monotone`` × coverage
  ``balanced`` and ``ood`` × seed 0, fidelity ``smoke``, D = :data:`QUICKSTART_DRAWS` draws;
- methods: :data:`QUICKSTART_METHODS`, each with its class's ``smoke_params``.

Everything is written under one folder: ``tasks/``, ``results/`` and ``report/``. Re-running
reuses finished tasks and cells (tasks: :func:`udbench.tasks.grid.generate_grid`).

``udbench quickstart --task classification`` (:func:`quickstart_classification`) does the
same for classification (docs/classification.md): family ``gpc`` (K = 3, difficulty
``medium``) × temperature ``homoscedastic`` and ``u-shaped`` × both coverages × seed 0 at
``smoke``, the classifiers of :data:`QUICKSTART_CLASSIFIERS` with their smoke
configurations, and the leaderboard (no HTML report yet), under ``classification/tasks/``
and ``classification/results/`` of the same folder, so that the two quickstarts can share
one ``--out`` without either running its methods on the other's tasks or mixing the two
kinds of results (which ``udbench leaderboard`` refuses to rank together).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from udbench._validation import param_error
from udbench.methods.registry import REGISTRY

if TYPE_CHECKING:
    from udbench.evaluation.runner import CellCallback

__all__ = [
    "QUICKSTART_CLASSIFIERS",
    "QUICKSTART_DATASET",
    "QUICKSTART_DRAWS",
    "QUICKSTART_METHODS",
    "QUICKSTART_NOISE",
    "quickstart",
    "quickstart_classification",
    "quickstart_classification_specs",
    "quickstart_specs",
]

#: The embedded dataset (no download needed).
QUICKSTART_DATASET = "diabetes"
#: Noise modes of the quickstart grid (one homoscedastic, one heteroscedastic).
QUICKSTART_NOISE: tuple[str, ...] = ("homoscedastic", "smooth-monotone")
#: Posterior draws stored per quickstart task.
QUICKSTART_DRAWS = 200
#: Methods run by the quickstart, with their smoke configurations: every method udbench
#: registers (:data:`udbench.methods.registry.REGISTRY`, in its order; not the user's).
QUICKSTART_METHODS: tuple[str, ...] = tuple(REGISTRY)
#: Classifiers run by ``udbench quickstart --task classification`` (fast ones, smoke
#: configurations; :data:`udbench.methods.classifiers.CLASSIFIERS` has them all).
QUICKSTART_CLASSIFIERS: tuple[str, ...] = (
    "logreg-lap",
    "gpc-lap",
    "catboost-ve",
    "nn-drop-softmax",
)
#: Temperature modes of the classification quickstart grid.
QUICKSTART_TEMPERATURES: tuple[str, ...] = ("homoscedastic", "u-shaped")


def quickstart_specs() -> list[Any]:
    """The quickstart's task specs (both coverages × :data:`QUICKSTART_NOISE`, seed 0)."""
    from udbench.design import COVERAGES
    from udbench.priors import Fidelity
    from udbench.tasks import TaskSpec

    return [
        TaskSpec(
            QUICKSTART_DATASET,
            "gp",
            noise,
            coverage,
            0,
            fidelity=Fidelity.SMOKE,
            n_draws=QUICKSTART_DRAWS,
        )
        for noise in QUICKSTART_NOISE
        for coverage in COVERAGES
    ]


def quickstart(
    out: str | os.PathLike[str] = "quickstart-out",
    *,
    workers: int | None = None,
    methods: tuple[str, ...] = QUICKSTART_METHODS,
    console: Any = None,
    on_cell: CellCallback | None = None,
) -> tuple[pd.DataFrame, Path]:
    """Generate the quickstart tasks, run the methods, and write the report.

    Parameters
    ----------
    out : str or Path, default "quickstart-out"
        Output folder (``tasks/``, ``results/``, ``report/`` inside).
    workers : int, optional
        Local Dask workers (default: number of usable cores; 0 runs in this process).
    methods : tuple of str, default QUICKSTART_METHODS
        Registry names; each runs with its class's ``smoke_params``.
    console : rich.console.Console, optional
        Where to print progress messages (nothing printed when None).
    on_cell : callable, optional
        Progress callback of :func:`udbench.evaluation.runner.run_benchmark`
        (``udbench quickstart`` draws a progress bar with it).

    Returns
    -------
    leaderboard : DataFrame
        :func:`udbench.evaluation.leaderboard.leaderboard` of the results.
    report : Path
        The written ``report.html``.

    Raises
    ------
    UdbenchError
        If ``methods`` is empty or names a method that is not registered (before any task is
        generated).
    """
    from udbench.evaluation.leaderboard import leaderboard
    from udbench.evaluation.runner import run_benchmark
    from udbench.evaluation.store import read_results
    from udbench.methods import get_method_class, make_method
    from udbench.report.html import write_report
    from udbench.tasks.grid import GridPlan, GridProgress, generate_grid, task_path

    if not methods:
        raise param_error("quickstart", "methods", "name at least one method", methods)
    # an unknown name is an error before any task is generated
    estimators = [
        (name, make_method(name, **dict(get_method_class(name).smoke_params))) for name in methods
    ]
    root = Path(out)
    task_dir = root / "tasks"
    say = console.print if console is not None else (lambda *a, **k: None)

    class Progress(GridProgress):
        def planned(self, plan: GridPlan, out: Path) -> None:
            for path, why in plan.clashes:
                say(f"replacing task {path.stem} made otherwise ({why})", highlight=False)
            for spec in plan.todo:
                say(f"generating task {spec.task_id}", highlight=False)

    # the grid pipeline of ``udbench generate``, in this process: a task file is reused only
    # if it holds this very instance (settings and data); the folder is the recipe's own, so
    # another one is replaced, with a line that says so
    generate_grid(
        quickstart_specs(), task_dir, workers=0, overwrite=True, progress=Progress()
    ).raise_failures("quickstart")
    say(f"running {len(estimators)} methods on {len(quickstart_specs())} tasks", highlight=False)
    run_benchmark(
        # its own four files, not the folder: other task files left there (an older
        # udbench's, a user's) are not run
        [task_path(task_dir, spec) for spec in quickstart_specs()],
        estimators,
        root / "results",
        workers=workers,
        on_cell=on_cell,
        keep_predictions=True,  # the report's EU-against-oracle figure reads them
    )
    results = read_results(root / "results")
    board = leaderboard(results)
    report = write_report(
        results,
        root / "report",
        title="udbench quickstart (diabetes, GP)",
        results_dir=root / "results",
    )
    return board, report


def quickstart_classification_specs() -> list[Any]:
    """The classification quickstart's task specs (``gpc``, K = 3, both coverages, seed 0)."""
    from udbench.design import COVERAGES
    from udbench.priors import Fidelity
    from udbench.tasks import TaskSpec

    return [
        TaskSpec(
            QUICKSTART_DATASET,
            "gpc",
            mode,
            coverage,
            0,
            fidelity=Fidelity.SMOKE,
            n_draws=QUICKSTART_DRAWS,
            n_classes=3,
        )
        for mode in QUICKSTART_TEMPERATURES
        for coverage in COVERAGES
    ]


def quickstart_classification(
    out: str | os.PathLike[str] = "quickstart-out",
    *,
    workers: int | None = None,
    methods: tuple[str, ...] = QUICKSTART_CLASSIFIERS,
    console: Any = None,
    on_cell: CellCallback | None = None,
) -> pd.DataFrame:
    """Generate the classification quickstart tasks, run the classifiers, rank them.

    Parameters
    ----------
    out : str or Path, default "quickstart-out"
        Output folder (``classification/tasks/`` and ``classification/results/`` inside,
        apart from the regression quickstart's ``tasks/`` and ``results/``).
    workers : int, optional
        Local Dask workers (default: number of usable cores; 0 runs in this process).
    methods : tuple of str, default QUICKSTART_CLASSIFIERS
        Classifier names (:data:`udbench.methods.classifiers.CLASSIFIERS`); each runs with
        its class's ``smoke_params``.
    console, on_cell
        As for :func:`quickstart`.

    Returns
    -------
    DataFrame
        :func:`udbench.evaluation.leaderboard.leaderboard` of the results (classification
        metrics).

    Raises
    ------
    UdbenchError
        ``methods`` is empty or names something that is not a classifier (before any task
        is generated).
    """
    from udbench.evaluation.leaderboard import leaderboard
    from udbench.evaluation.runner import run_benchmark
    from udbench.evaluation.store import read_results
    from udbench.methods.classifiers import make_classifier
    from udbench.tasks.grid import generate_grid

    if not methods:
        raise param_error("quickstart", "methods", "name at least one classifier", methods)
    estimators = [(name, make_classifier(name, smoke=True)) for name in methods]
    # a folder of its own: the regression quickstart's tasks/ and results/ may share ``out``
    root = Path(out) / "classification"
    say = console.print if console is not None else (lambda *a, **k: None)
    specs = quickstart_classification_specs()
    say(f"generating {len(specs)} classification tasks (or reusing them)", highlight=False)
    generate_grid(specs, root / "tasks", workers=0, overwrite=True).raise_failures("quickstart")
    say(f"running {len(estimators)} classifiers on {len(specs)} tasks", highlight=False)
    run_benchmark([root / "tasks"], estimators, root / "results", workers=workers, on_cell=on_cell)
    return leaderboard(read_results(root / "results"))
