"""The benchmark runner: every (task, method, configuration) cell, scored and stored.

For each cell the runner loads the task file, fits the method on the training sample
(``X_train``, ``y_train``), predicts at the evaluation pool ``X_eval``, validates the
prediction (shape, finiteness, non-negative variances), computes the oracle targets of
SPEC §1 and the per-instance metrics of SPEC §10 (plus the Spearman ρ of EU with EU*_risk and
EU*_var inside each coverage shell, SPEC §3), and writes one long-format row to the
:class:`~udbench.evaluation.store.ResultsStore`.

Cells are keyed by (task id, method, configuration hash, task content checksum); a re-run
skips finished cells, and a task file whose content changed is a new cell. Two different task
files with the same task id in one run are an error (the same content given twice runs once).
A cell that raises, returns invalid output or exceeds the time limit is stored as a failed
row with its reason and the run goes on. Cells run on Dask distributed
(:mod:`udbench.evaluation.cluster`) or, with ``workers=0``, in the calling process.
"""

from __future__ import annotations

import glob
import hashlib
import os
import platform
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from udbench import __version__
from udbench._seeding import derive_seed
from udbench._threads import single_threaded
from udbench._validation import UdbenchError, param_error
from udbench.evaluation.store import ResultsStore, canonical_config, cell_key, config_hash
from udbench.methods.base import BaseMethod, Prediction

__all__ = [
    "METRIC_KEYS",
    "N_SHELLS",
    "TASK_SUFFIXES",
    "Cell",
    "CellOutcome",
    "MethodConfig",
    "RunSummary",
    "evaluate_cell",
    "find_task_files",
    "method_seed",
    "plan_cells",
    "resolve_method",
    "resolve_methods",
    "run_benchmark",
    "score_prediction",
]

#: Suffixes of task files picked up when a task argument is a directory.
TASK_SUFFIXES: tuple[str, ...] = (".npz",)

#: Number of coverage shells (SPEC §3): 0 (inner) … 4 (outermost).
N_SHELLS = 5

#: Per-instance metrics stored in every row (SPEC §10; ``instance_metrics`` keys).
METRIC_KEYS: tuple[str, ...] = (
    "rho_eu_risk",
    "rho_eu_var",
    "rho_eu_point",
    "rho_au",
    "delta_ent_risk",
    "delta_ent_var",
    "delta_ent_point",
    "rmse",
    "nmse",
)

#: Loader of a task file: path -> task object with the arrays of ``docs/interfaces.md``.
TaskLoader = Callable[[Path], Any]


def _default_loader(path: Path) -> Any:
    from udbench.tasks import Task

    return Task.load(path)


# ----------------------------------------------------------------------------- methods
@dataclass(frozen=True)
class MethodConfig:
    """A method with one configuration, resolved once before a run.

    Attributes
    ----------
    label : str
        How the configuration is shown in results and leaderboards (the spec as given,
        e.g. ``"nn-ens:n_members=5"``).
    name : str
        Registry name (or import path) of the method.
    estimator : BaseMethod
        The unfitted estimator; each cell gets a clone with its own ``random_state``.
    params : dict
        All hyperparameters (``get_params(deep=False)``), defaults included.
    config_hash : str
        :func:`udbench.evaluation.store.config_hash` of ``name`` and ``params``.
    """

    label: str
    name: str
    estimator: BaseMethod
    params: dict[str, Any]
    config_hash: str

    @property
    def config(self) -> str:
        """Canonical JSON text of the configuration (stored with every row)."""
        return canonical_config(self.name, self.params)

    @property
    def constant_aleatoric(self) -> bool:
        """Whether the method's AU is constant in x (SPEC §8)."""
        return bool(getattr(type(self.estimator), "constant_aleatoric", False))


def _override_text(est: BaseMethod) -> str:
    """``"k=v,..."`` for the hyperparameters that differ from the class defaults."""
    try:
        defaults = type(est)().get_params(deep=False)
    except Exception:
        return ""
    items = []
    for k, v in sorted(est.get_params(deep=False).items()):
        if k == "random_state":
            continue
        if k not in defaults or repr(defaults[k]) != repr(v):
            items.append(f"{k}={v}")
    return ",".join(items)


def resolve_method(spec: str | BaseMethod, label: str | None = None) -> MethodConfig:
    """Resolve a method spec (``"name"``, ``"name:k=v,k2=v2"``, an import path, or an instance).

    Parameters
    ----------
    spec : str or BaseMethod
        A registry name or import path with optional hyperparameter overrides (parsed by
        :func:`udbench.methods.make_method`), or an unfitted estimator instance.
    label : str, optional
        How to show it in results; default the spec as given (for an instance: its name
        plus the hyperparameters that differ from the class defaults).

    Returns
    -------
    MethodConfig

    Raises
    ------
    UdbenchError
        Unknown method, override of a hyperparameter the method does not have, a value of
        the wrong type, or an object that is not a :class:`BaseMethod`.
    """
    if isinstance(spec, BaseMethod):
        est = spec
        extra = _override_text(est)
    elif isinstance(spec, str):
        text = spec.strip()
        if not text:
            raise param_error("udbench run", "methods", "be a non-empty method spec", spec)
        from udbench.methods import make_method

        est = make_method(text, random_state=0)
        extra = None
    else:
        raise param_error("udbench run", "methods", "be a method spec string or a BaseMethod", spec)
    cls_name = str(getattr(type(est), "name", "") or "")
    if cls_name and cls_name != "base":
        name = cls_name
    else:
        name = f"{type(est).__module__}:{type(est).__qualname__}"
    if label is None:
        label = (f"{name}:{extra}" if extra else name) if extra is not None else str(spec).strip()
        label = label.replace(" ", "")
    params = dict(est.get_params(deep=False))
    params.pop("random_state", None)
    return MethodConfig(
        label=label, name=name, estimator=est, params=params, config_hash=config_hash(name, params)
    )


def resolve_methods(
    specs: Iterable[str | BaseMethod | tuple[str, str | BaseMethod]],
) -> list[MethodConfig]:
    """Resolve several method specs; identical configurations are kept once.

    Parameters
    ----------
    specs : iterable
        Each a spec string, an instance, or a ``(label, spec)`` pair.

    Returns
    -------
    list of MethodConfig
        Labels are unique: a label shared by two configurations gets ``#<config hash>``.

    Raises
    ------
    UdbenchError
        If no method is given or one cannot be resolved (see :func:`resolve_method`).
    """
    out: dict[tuple[str, str], MethodConfig] = {}
    for spec in specs:
        if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
            mc = resolve_method(spec[1], label=spec[0])
        else:
            mc = resolve_method(spec)  # type: ignore[arg-type]
        out.setdefault((mc.name, mc.config_hash), mc)
    if not out:
        raise param_error("udbench run", "methods", "name at least one method", [])
    resolved = list(out.values())
    counts: dict[str, int] = {}
    for mc in resolved:
        counts[mc.label] = counts.get(mc.label, 0) + 1
    return [
        mc
        if counts[mc.label] == 1
        else MethodConfig(
            f"{mc.label}#{mc.config_hash[:6]}", mc.name, mc.estimator, mc.params, mc.config_hash
        )
        for mc in resolved
    ]


def method_seed(task_id: str, method: str, chash: str) -> int:
    """Seed of a method in one cell: derived from (task id, method, config hash), 32 bits."""
    return derive_seed("method", task_id, method, chash, bits=32)


# ------------------------------------------------------------------------------- tasks
def find_task_files(patterns: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Expand task arguments (files, directories, globs) into a sorted list of task files.

    Parameters
    ----------
    patterns : sequence of str or Path
        Each one a task file, a directory (its files ending in :data:`TASK_SUFFIXES`,
        searched recursively) or a glob pattern (``**`` allowed).

    Returns
    -------
    list of Path
        Unique files, sorted.

    Raises
    ------
    UdbenchError
        If no pattern is given, or one matches no file.
    """
    if not patterns:
        raise param_error("udbench run", "tasks", "name at least one task file or folder", [])
    found: dict[str, Path] = {}
    for pat in patterns:
        text = os.fspath(pat)
        p = Path(text)
        matches: list[Path]
        if p.is_dir():
            matches = [
                q
                for q in sorted(p.rglob("*"))
                if q.is_file() and q.suffix in TASK_SUFFIXES and not q.name.startswith(".")
            ]
            if not matches:
                raise param_error(
                    "udbench run",
                    "tasks",
                    f"be a folder holding task files ({', '.join(TASK_SUFFIXES)})",
                    text,
                )
        elif p.is_file():
            matches = [p]
        elif glob.has_magic(text):
            matches = [
                Path(q) for q in sorted(glob.glob(text, recursive=True)) if Path(q).is_file()
            ]
            if not matches:
                raise param_error("udbench run", "tasks", "be a glob matching task files", text)
        else:
            raise param_error(
                "udbench run", "tasks", "be an existing task file, folder or glob", text
            )
        for q in matches:
            found.setdefault(str(q.resolve()), q)
    return sorted(found.values(), key=lambda q: str(q))


def _content_sha256(task: Any, path: Path) -> str:
    """What a task file holds: its metadata checksum (``Task.content_sha256``, which covers
    every array) or, for a loader whose tasks carry none, the SHA-256 of the file's bytes."""
    sha = getattr(task, "content_sha256", None)
    if isinstance(sha, str) and sha:
        return sha
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _task_identity(path: Path, loader: TaskLoader) -> tuple[str, str | None]:
    """(task id, content checksum) of a file, read lazily; (file stem, None) if unreadable."""
    try:
        task = loader(path)
        return str(task.spec.task_id), _content_sha256(task, path)
    except Exception:
        return path.name.split(".")[0], None


# ------------------------------------------------------------------------------- cells
@dataclass(frozen=True)
class Cell:
    """One unit of work: a task file and a method configuration.

    Attributes
    ----------
    task_path : str
        Path of the task file.
    task_id : str
        Its id (file stem if unreadable).
    method : MethodConfig
        The method configuration.
    seed : int
        The method's ``random_state`` in this cell (:func:`method_seed`).
    task_sha256 : str or None
        The task file's content checksum when planned (None if it could not be read).
    """

    task_path: str
    task_id: str
    method: MethodConfig
    seed: int
    task_sha256: str | None = None

    @property
    def key(self) -> str:
        """The cell key ``"<task_id>|<method>|<config_hash>|<task checksum[:16]>"``."""
        return cell_key(self.task_id, self.method.name, self.method.config_hash, self.task_sha256)


@dataclass
class CellOutcome:
    """What a cell produced: its row and, on request, its per-point predictions."""

    row: dict[str, Any]
    predictions: pd.DataFrame | None = None
    timed_out: bool = False
    worker: str | None = None


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
    loader: TaskLoader | None = None,
) -> tuple[list[Cell], int]:
    """Return the cells still to run (task-major order) and how many were skipped as finished.

    A task file whose content (checksum) equals one already listed is run once. Two files
    with the same task id and different content cannot both be stored under that id.

    Raises
    ------
    UdbenchError
        Two task files hold the same task id with different content.
    """
    loader = loader or _default_loader
    done = finished or set()
    todo: list[Cell] = []
    skipped = 0
    seen: dict[str, tuple[str | None, Path]] = {}
    for path in task_paths:
        tid, sha = _task_identity(Path(path), loader)
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
        for mc in methods:
            cell = Cell(
                task_path=str(path),
                task_id=tid,
                method=mc,
                seed=method_seed(tid, mc.name, mc.config_hash),
                task_sha256=sha,
            )
            if cell.key in done:
                skipped += 1
            else:
                todo.append(cell)
    return todo, skipped


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _base_row(cell: Cell) -> dict[str, Any]:
    mc = cell.method
    row: dict[str, Any] = {
        "cell_key": cell.key,
        "task_id": cell.task_id,
        "dataset": None,
        "family": None,
        "noise": None,
        "coverage": None,
        "seed": None,
        "fidelity": None,
        "n_draws": None,
        "n_train": None,
        "n_eval": None,
        "n_features": None,
        "task_path": cell.task_path,
        "task_sha256": cell.task_sha256,
        "task_version": None,
        "method": mc.name,
        "method_label": mc.label,
        "config": mc.config,
        "config_hash": mc.config_hash,
        "method_seed": cell.seed,
        "constant_aleatoric": mc.constant_aleatoric,
        "status": "failed",
        "error": None,
        "traceback": None,
        "fit_time_s": float("nan"),
        "predict_time_s": float("nan"),
        "udbench_version": __version__,
        "host": platform.node(),
        "started_at": _now(),
        "finished_at": None,
    }
    for k in METRIC_KEYS:
        row[k] = float("nan")
    for s in range(N_SHELLS):
        row[f"rho_eu_risk_shell{s}"] = float("nan")
        row[f"rho_eu_var_shell{s}"] = float("nan")
    row["metric_notes"] = None
    return row


def _task_coordinates(task: Any) -> dict[str, Any]:
    spec = getattr(task, "spec", None)
    out: dict[str, Any] = {}
    for name in ("dataset", "family", "noise", "coverage", "seed", "fidelity", "n_draws"):
        value = getattr(spec, name, None)
        if isinstance(value, np.generic):
            value = value.item()
        elif isinstance(value, str):
            value = str(value)  # a Fidelity (string enum) is stored as its plain name
        out[name] = value
    out["seed"] = None if out["seed"] is None else int(out["seed"])
    out["n_draws"] = None if out["n_draws"] is None else int(out["n_draws"])
    out["task_version"] = str(getattr(task, "version", "")) or None
    return out


def _one_line(err: BaseException, *, with_type: bool = True) -> str:
    text = " ".join(str(err).split())
    if not with_type:
        return text or type(err).__name__
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _is_output_error(err: BaseException) -> bool:
    """Whether ``err`` is the method contract's invalid-output error (shape, NaN, variance)."""
    from udbench.methods import base

    cls = getattr(base, "MethodOutputError", None)
    return cls is not None and isinstance(err, cls)


def _per_shell(
    epistemic: np.ndarray, eu_risk: np.ndarray, eu_var: np.ndarray, shell: np.ndarray
) -> dict[str, float]:
    from udbench.evaluation.metrics import spearman

    out: dict[str, float] = {}
    for s in range(N_SHELLS):
        m = shell == s
        risk = var = float("nan")
        if int(m.sum()) >= 3:
            risk = float(spearman(epistemic[m], eu_risk[m]).value)
            var = float(spearman(epistemic[m], eu_var[m]).value)
        out[f"rho_eu_risk_shell{s}"] = risk
        out[f"rho_eu_var_shell{s}"] = var
    return out


def score_prediction(
    task: Any, pred: Prediction, *, constant_aleatoric: bool = False
) -> tuple[dict[str, float], str | None]:
    """Oracle targets and per-instance metrics of one prediction on one task.

    Parameters
    ----------
    task : Task
        With ``post_mean``, ``post_var``, ``noise_var_eval``, ``f_eval``, ``shell_eval``
        (each shape (n_eval,)).
    pred : Prediction
        The method's validated prediction at ``task.X_eval``.
    constant_aleatoric : bool, default False
        The method's AU is constant in x by construction (SPEC §8): its AU correlations and
        Δ_ent are NaN with that reason.

    Returns
    -------
    metrics : dict
        :data:`METRIC_KEYS` (from :func:`udbench.evaluation.metrics.instance_metrics`,
        SPEC §10) plus ``rho_eu_risk_shell{s}`` and ``rho_eu_var_shell{s}`` for s = 0…4.
    notes : str or None
        Reasons for undefined metrics, if ``instance_metrics`` gave any.
    """
    from udbench.evaluation.metrics import instance_metrics
    from udbench.risk import oracle_targets

    targets = oracle_targets(
        np.asarray(pred.mean, dtype=np.float64),
        np.asarray(task.post_mean, dtype=np.float64),
        np.asarray(task.post_var, dtype=np.float64),
        np.asarray(task.noise_var_eval, dtype=np.float64),
        np.asarray(task.f_eval, dtype=np.float64),
    )
    raw = instance_metrics(pred, targets, constant_aleatoric=constant_aleatoric)
    metrics: dict[str, float] = {}
    notes: list[str] = []
    for k, v in dict(raw).items():
        if isinstance(v, int | float | np.floating | np.integer) and not isinstance(v, bool):
            metrics[str(k)] = float(v)
        elif k == "nan_reasons":
            if v:
                notes.append(str(v))
        elif v is not None:
            notes.append(f"{k}: {v}")
    metrics.update(
        _per_shell(
            np.asarray(pred.epistemic, dtype=np.float64),
            np.asarray(targets.eu_risk, dtype=np.float64),
            np.asarray(targets.eu_var, dtype=np.float64),
            np.asarray(task.shell_eval),
        )
    )
    return metrics, ("; ".join(notes) if notes else None)


def _fit_predict(est: BaseMethod, task: Any) -> tuple[Prediction, float, float]:
    t0 = time.perf_counter()
    try:
        est.fit(np.asarray(task.X_train), np.asarray(task.y_train))
    except Exception as err:
        raise _Stage("fit", err) from err
    t1 = time.perf_counter()
    try:
        pred = est.predict(np.asarray(task.X_eval))
    except Exception as err:
        raise _Stage("predict", err) from err
    t2 = time.perf_counter()
    return pred, t1 - t0, t2 - t1


class _Stage(Exception):
    """Wraps an error with the stage (fit/predict) it came from."""

    def __init__(self, stage: str, err: BaseException) -> None:
        super().__init__(stage)
        self.stage = stage
        self.err = err


def _with_timeout(
    fn: Callable[[], Any], timeout: float | None, context: Any = None
) -> tuple[bool, Any]:
    """Run ``fn`` under ``timeout``; return (finished, result-or-exception).

    In a child process of :func:`udbench.evaluation.isolation.run_in_child` (cells on Dask)
    ``fn`` runs directly and the parent kills the child at the deadline (``context``, the
    partial row, goes back to the parent for the timed-out row); elsewhere it runs in a daemon
    thread that is abandoned (not stopped) at the deadline.
    """
    from udbench.evaluation import isolation

    if timeout is not None and isolation.in_child():
        with isolation.deadline(timeout, context):
            try:
                return True, fn()
            except Exception as err:
                return True, err
    if timeout is None:
        try:
            return True, fn()
        except Exception as err:  # KeyboardInterrupt / SystemExit stop the run
            return True, err
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as err:
            box["value"] = err

    thread = threading.Thread(target=target, daemon=True, name="udbench-cell")
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        return False, None
    return True, box["value"]


def _worker_address() -> str | None:
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except Exception:
        return None


@single_threaded
def evaluate_cell(
    cell: Cell,
    *,
    keep_predictions: bool = False,
    timeout: float | None = None,
    loader: TaskLoader | None = None,
) -> CellOutcome:
    """Run one cell: load the task, fit, predict, validate, score; never raises for cell errors.

    Parameters
    ----------
    cell : Cell
        The task file and method configuration.
    keep_predictions : bool, default False
        Also return the per-point predictions (columns ``eval_idx, shell, mean, aleatoric,
        epistemic``, variances in target units squared).
    timeout : float, optional
        Wall-clock limit in seconds for fit + predict; a cell over it is a failed row with
        ``error = "timeout: ..."``.
    loader : callable, optional
        Task loader (default :meth:`udbench.tasks.Task.load`).

    Returns
    -------
    CellOutcome
        ``row["status"]`` is ``"ok"`` or ``"failed"`` (with ``row["error"]``, one line).

    Notes
    -----
    The cell runs with one compute thread (XLA and BLAS pools,
    :func:`udbench._threads.cell_threads`), so its result does not depend on the
    worker, the number of workers or core pinning.
    """
    loader = loader or _default_loader
    row = _base_row(cell)
    outcome = CellOutcome(row=row, worker=_worker_address())
    try:
        task = loader(Path(cell.task_path))
        row.update(_task_coordinates(task))
        n_eval = int(np.shape(task.X_eval)[0])
        row["n_eval"] = n_eval
        row["n_train"] = int(np.shape(task.X_train)[0])
        row["n_features"] = int(np.shape(task.X_train)[1])
        if cell.task_sha256 is not None:
            sha = _content_sha256(task, Path(cell.task_path))
            if sha != cell.task_sha256:
                raise UdbenchError(
                    f"the file changed since the run was planned (content checksum "
                    f"{sha[:12]}, planned {cell.task_sha256[:12]})"
                )
    except Exception as err:
        row["error"] = f"task file could not be read: {_one_line(err)}"
        row["traceback"] = traceback.format_exc(limit=8)
        row["finished_at"] = _now()
        return outcome

    from sklearn.base import clone

    est = clone(cell.method.estimator)
    if "random_state" in est.get_params(deep=False):
        est.set_params(random_state=cell.seed)

    finished, result = _with_timeout(lambda: _fit_predict(est, task), timeout, dict(row))
    if not finished:
        row["error"] = f"timeout: fit + predict exceeded {timeout:g} s"
        row["finished_at"] = _now()
        outcome.timed_out = True
        return outcome
    if isinstance(result, BaseException):
        if isinstance(result, _Stage) and _is_output_error(result.err):
            row["error"] = f"invalid prediction: {_one_line(result.err, with_type=False)}"
            tb = traceback.format_exception(result.err)
        elif isinstance(result, _Stage):
            row["error"] = f"{result.stage} raised {_one_line(result.err)}"
            tb = traceback.format_exception(result.err)
        else:
            row["error"] = f"raised {_one_line(result)}"
            tb = traceback.format_exception(result)
        row["traceback"] = "".join(tb[-12:])
        row["finished_at"] = _now()
        return outcome
    pred, fit_s, pred_s = result
    row["fit_time_s"] = float(fit_s)
    row["predict_time_s"] = float(pred_s)
    try:
        if not isinstance(pred, Prediction):
            raise param_error(
                f"{cell.method.name}.predict", "return value", "be a Prediction", type(pred)
            )
        pred.validate(n_eval, component=f"{cell.method.name}.predict")
    except UdbenchError as err:
        row["error"] = f"invalid prediction: {err}"
        row["finished_at"] = _now()
        return outcome
    try:
        metrics, notes = score_prediction(
            task, pred, constant_aleatoric=cell.method.constant_aleatoric
        )
    except Exception as err:
        row["error"] = f"scoring raised {_one_line(err)}"
        row["traceback"] = traceback.format_exc(limit=8)
        row["finished_at"] = _now()
        return outcome
    row.update(metrics)
    row["metric_notes"] = notes
    row["status"] = "ok"
    row["finished_at"] = _now()
    if keep_predictions:
        outcome.predictions = pd.DataFrame(
            {
                "eval_idx": np.asarray(getattr(task, "eval_idx", np.arange(n_eval))),
                "shell": np.asarray(task.shell_eval),
                "mean": np.asarray(pred.mean, dtype=np.float64),
                "aleatoric": np.asarray(pred.aleatoric, dtype=np.float64),
                "epistemic": np.asarray(pred.epistemic, dtype=np.float64),
            }
        )
    return outcome


def _crashed(cell: Cell, err: BaseException) -> CellOutcome:
    """Outcome of a cell whose worker died or whose task errored outside ``evaluate_cell``."""
    row = _base_row(cell)
    row["error"] = f"worker failed: {_one_line(err)}"
    row["finished_at"] = _now()
    return CellOutcome(row=row)


# ------------------------------------------------------------------------------ running
def _iter_inline(
    cells: Sequence[Cell], kwargs: dict[str, Any]
) -> Iterator[tuple[Cell, CellOutcome]]:
    for cell in cells:
        yield cell, evaluate_cell(cell, **kwargs)


def _isolated_outcome(cell: Cell, res: Any, timeout: float | None) -> CellOutcome:
    """The outcome of a cell run by :func:`udbench.evaluation.isolation.run_in_child`.

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


def _iter_dask(
    client: Any, cells: Sequence[Cell], kwargs: dict[str, Any]
) -> Iterator[tuple[Cell, CellOutcome]]:
    """Run the cells on Dask, each in a child process of its worker.

    The worker thread waits for the child (:func:`udbench.evaluation.isolation.run_in_child`)
    and only passes bytes through; a cell that overruns ``timeout`` or ends its process costs
    that cell, never the worker, so Dask neither restarts a worker nor runs a cell again.
    """
    from distributed import as_completed

    from udbench.evaluation.isolation import dumps_call, run_in_child

    futures = {}
    run_token = uuid.uuid4().hex[:12]  # a fresh Dask key per run: never reuse a stale result
    for i, cell in enumerate(cells):
        fut = client.submit(
            run_in_child,
            dumps_call(evaluate_cell, cell, **kwargs),
            pure=False,
            retries=0,
            key=f"udbench-cell-{run_token}-{i}",
        )
        futures[fut] = cell
    try:
        for fut in as_completed(list(futures)):
            cell = futures.pop(fut)
            try:
                outcome = _isolated_outcome(cell, fut.result(), kwargs.get("timeout"))
            except Exception as err:
                outcome = _crashed(cell, err)
            # the row is here now: a worker lost later must not make Dask recompute the cell
            fut.release()
            del fut
            yield cell, outcome
    finally:
        for fut in futures:
            fut.cancel()


def run_benchmark(
    tasks: Sequence[str | os.PathLike[str]],
    methods: Sequence[str | BaseMethod | tuple[str, str | BaseMethod]],
    out: str | os.PathLike[str],
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    cluster_config: str | os.PathLike[str] | None = None,
    pin: bool | None = None,
    timeout: float | None = None,
    keep_predictions: bool = False,
    retry_failed: bool = False,
    progress: bool = True,
    loader: TaskLoader | None = None,
    client: Any = None,
) -> RunSummary:
    """Run every (task, method) cell not yet finished and store one row per cell.

    Parameters
    ----------
    tasks : sequence of str or Path
        Task files, folders or globs (see :func:`find_task_files`).
    methods : sequence of str, BaseMethod or (label, spec)
        Method specs (``"gp"``, ``"nn-ens:n_members=5"``, an import path ``"pkg.mod:Cls"``),
        unfitted instances, or ``(label, spec)`` pairs to name them in the results.
    out : str or Path
        Results directory (:class:`~udbench.evaluation.store.ResultsStore`).
    workers : int, optional
        Local Dask workers (default: the number of usable cores); ``0`` runs in this process.
    scheduler : str, optional
        Address of a running Dask scheduler to use instead of a local cluster.
    cluster_config : str or Path, optional
        YAML/TOML file describing a cluster object (see :mod:`udbench.evaluation.cluster`).
    pin : bool, optional
        Pin each worker to its own core(s) and cap BLAS/OpenMP threads. Default: on for a
        local cluster, off for a scheduler address or a cluster file.
    timeout : float, optional
        Per-cell wall-clock limit in seconds for fit + predict.
    keep_predictions : bool, default False
        Store per-point predictions under ``out/predictions/``.
    retry_failed : bool, default False
        Re-run cells stored as failed (the new row replaces the old).
    progress : bool, default True
        Show a rich progress bar.
    loader : callable, optional
        Task loader (default :meth:`udbench.tasks.Task.load`).
    client : distributed.Client, optional
        An existing client to submit to (overrides ``workers``/``scheduler``/``cluster_config``).

    Returns
    -------
    RunSummary

    Raises
    ------
    UdbenchError
        Bad task arguments (empty glob, missing file), unknown method, unknown
        hyperparameter, bad timeout or worker count.
    """
    if timeout is not None and not (np.isfinite(timeout) and timeout > 0):
        raise param_error("udbench run", "timeout", "be > 0 seconds", timeout)
    if workers is not None and workers < 0:
        raise param_error("udbench run", "workers", "be >= 0", workers)
    mcs = resolve_methods(methods)
    paths = find_task_files(tasks)
    loader = loader or _default_loader
    store = ResultsStore(out)
    done = store.finished(include_failed=not retry_failed)
    cells, skipped = plan_cells(paths, mcs, finished=done, loader=loader)
    summary = RunSummary(out=Path(out), n_cells=len(cells) + skipped, n_skipped=skipped)
    if not cells:
        return summary
    kwargs: dict[str, Any] = {
        "keep_predictions": keep_predictions,
        "timeout": timeout,
        "loader": None if loader is _default_loader else loader,
    }

    from contextlib import ExitStack

    with ExitStack() as stack:
        if client is not None:
            stream = _iter_dask(client, cells, kwargs)
        elif workers == 0 and scheduler is None and cluster_config is None:
            stream = _iter_inline(cells, kwargs)
        else:
            from udbench.evaluation.cluster import dask_client

            cl = stack.enter_context(
                dask_client(
                    workers=workers, scheduler=scheduler, cluster_config=cluster_config, pin=pin
                )
            )
            stream = _iter_dask(cl, cells, kwargs)
        bar = None
        if progress:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            bar = stack.enter_context(
                Progress(
                    TextColumn("[bold]{task.description}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TextColumn("ok {task.fields[ok]} · failed {task.fields[failed]}"),
                    TimeElapsedColumn(),
                    TimeRemainingColumn(),
                    transient=False,
                )
            )
            bar_id = bar.add_task("cells", total=len(cells), ok=0, failed=0)
        for cell, outcome in stream:
            store.write_cell(outcome.row, outcome.predictions)
            if outcome.row["status"] == "ok":
                summary.n_ok += 1
            else:
                summary.n_failed += 1
                summary.failures.append((cell.key, str(outcome.row["error"])))
            if bar is not None:
                bar.update(bar_id, advance=1, ok=summary.n_ok, failed=summary.n_failed)
    store.compact()
    return summary
