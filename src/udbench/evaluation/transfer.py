"""Alternative oracles for stored predictions: rescoring under another reference posterior.

``udbench transfer`` (docs/transfer.md) asks whether a method ranking measured against the
benchmark's oracle — correct by construction — survives an analyst's *misspecified* oracle.
For every stored (task, method) prediction (``udbench run --keep-predictions``) this module
recomputes the oracle targets EU*_risk and EU*_var (SPEC §1) under a different reference
posterior, conditioned on the *same* training sample with the *same* known noise variances,
and scores the prediction again with the very code of ``udbench run``
(:func:`udbench.evaluation.scoring.score_prediction`). AU* = σ²(x) and EU*_point =
(â − f*)² do not depend on the posterior, so they and the accuracy and proxy metrics are
unchanged; ρ(EU, EU*_risk), ρ(EU, EU*_var), their per-shell values and Δ_ent move.

Alternative oracles (:func:`parse_oracle`):

- ``gp:KERNEL`` — an exact GP with kernel family ``KERNEL`` (a ``+``-sum of the parts of
  :data:`udbench.priors.gp.KERNEL_PARTS`, e.g. ``rbf``, ``matern12``, ``rq+linear``), its
  hyperparameters *and* its variance a² refitted by marginal likelihood on the task's own
  training sample with the noise variances known (:func:`udbench.priors.gp.fit_kernel` with
  ``noise_var``; at most :data:`TRANSFER_FIT_SETTINGS` rows, restarts and iterations), then
  conditioned exactly on the whole sample. Works for a task of any prior family.
- ``gp:prior`` — the dataset's GP reference prior of SPEC §5 (its kernel family, fitted to
  the real target, scale a); for a GP task this is the task's own prior (its kernel and
  hyperparameters are read from the task file), so it reproduces the stored metrics.
- ``family:FAMILY`` — the training sample conditioned under the prior family ``FAMILY``
  (``gp``, ``hbart``, ``bnn``) bound to the task's dataset at the task's fidelity, with the
  family's own sampler (MCMC for HBART and BNN, exact for the GP); D = the task's number of
  draws. The draws use a stream of their own (``"transfer-posterior"``), so ``family:`` of
  the task's own MCMC family is an independent re-run: its τ is the Monte Carlo floor.

Other losses (``loss="crps"`` or ``"log"``; ``udbench transfer --loss``): the oracles give
posterior moments, so the loss-specific targets of :mod:`udbench.evaluation.losses` are taken
in closed form for a Gaussian posterior with those moments
(:func:`udbench.evaluation.losses.gaussian_loss_oracle_targets`; exact for the GP oracles,
the Gaussian approximation for ``family:hbart`` / ``family:bnn``). The comparison must not
mix that with the draw-based targets of ``udbench score --loss``, whose Monte Carlo error
would show as rank shifts: each row therefore also gets the same metrics against the task's
*own* posterior moments by the same closed form (columns ``own_<key>_<loss>``), and the
tables compare those two (:func:`udbench.analyses.transfer.run_transfer`).

Per task the alternative moments are computed once and cached under the output folder
(``oracles/<task id>__<checksum[:16]>.npz``), so an interrupted ``udbench transfer`` resumes;
a task whose oracle fails gives failed rows with the reason and the others go on.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from udbench._losses import LOSS_TABLE, loss_names
from udbench._seeding import derive_seed, make_rng
from udbench._validation import UdbenchError, check_choice, param_error
from udbench.data import N_SHELLS
from udbench.evaluation.scoring import METRIC_KEYS, PROXY_KEYS, score_prediction
from udbench.evaluation.store import ResultsStore
from udbench.methods.base import Prediction
from udbench.tasks import Task
from udbench.tasks.taskfile import ARRAY_NAMES

__all__ = [
    "FAMILY_ORACLE",
    "GP_ORACLE",
    "LOSSES",
    "ORACLE_KINDS",
    "ORACLE_MOMENTS_VERSION",
    "OWN_PREFIX",
    "SCORED_KEYS",
    "TRANSFER_FIT_SETTINGS",
    "OracleMoments",
    "OracleSpec",
    "alternative_moments",
    "fit_settings_for",
    "parse_oracle",
    "rescore_cells",
    "task_with_moments",
    "transfer_losses",
]

#: Kind of the exact-GP oracles, ``gp:KERNEL`` and ``gp:prior`` (an oracle kind, the CLI's
#: word, not a prior family's name).
GP_ORACLE: str = "gp"
#: Kind of the ``family:FAMILY`` oracles.
FAMILY_ORACLE: str = "family"
#: The kinds of alternative oracle (``KIND:NAME``).
ORACLE_KINDS: tuple[str, ...] = (GP_ORACLE, FAMILY_ORACLE)


def transfer_losses() -> tuple[str, ...]:
    """The losses the rescoring supports: the regression losses of
    :data:`udbench._losses.LOSS_TABLE` with a Gaussian closed form (module docstring)."""
    return loss_names("regression", closed_form=True)


#: Losses the rescoring supports (CRPS and log score in closed form): :func:`transfer_losses`
#: at import.
LOSSES: tuple[str, ...] = transfer_losses()
#: Prefix of a rescored row's metric under another loss against the task's own posterior
#: moments (the same closed form as the oracle's, so the two compare without MC error).
OWN_PREFIX: str = "own_"
#: Marginal-likelihood fit of a ``gp:KERNEL`` oracle, per fidelity: at most ``max_rows``
#: training points (a random subset, stream ``"transfer-fit-rows"`` of the task id),
#: ``restarts`` starts of at most ``maxiter`` L-BFGS-B iterations. Lighter than the prior's
#: own fit (one fit per task, not per dataset); conditioning always uses the whole sample.
TRANSFER_FIT_SETTINGS: dict[str, dict[str, int]] = {
    "paper": {"max_rows": 500, "restarts": 2, "maxiter": 100},
    "standard": {"max_rows": 500, "restarts": 2, "maxiter": 100},
    "smoke": {"max_rows": 200, "restarts": 1, "maxiter": 50},
}
#: Version of the oracle moments, part of the cache key: a cached oracle of another version
#: is computed again (2: the GP moments include the prior's nugget, docs/tasks.md).
ORACLE_MOMENTS_VERSION: int = 2
#: Metric columns of a results row that rescoring recomputes.
SCORED_KEYS: tuple[str, ...] = (
    *METRIC_KEYS,
    *PROXY_KEYS,
    *(f"rho_eu_{t}_shell{s}" for s in range(N_SHELLS) for t in ("risk", "var")),
)


@dataclass(frozen=True)
class OracleSpec:
    """An alternative oracle, ``KIND:NAME`` (see the module notes).

    Attributes
    ----------
    kind : {"gp", "family"}
    name : str
        A kernel family or ``"prior"`` (kind ``gp``); a prior family (kind ``family``).
    """

    kind: str
    name: str

    @property
    def text(self) -> str:
        """The spec as written: ``"gp:rbf"``."""
        return f"{self.kind}:{self.name}"

    @property
    def slug(self) -> str:
        """A file-name-safe form: ``"gp-rq_linear"`` for ``gp:rq+linear``."""
        return f"{self.kind}-{self.name.replace('+', '_')}"


def parse_oracle(text: str, component: str = "udbench transfer") -> OracleSpec:
    """Parse ``gp:KERNEL``, ``gp:prior`` or ``family:FAMILY``.

    Raises
    ------
    UdbenchError
        No ``:``, an unknown kind, an unknown kernel part or prior family.
    """
    from udbench.priors import list_prior_families
    from udbench.priors.gp import parse_kernel_family

    kind, sep, name = str(text).strip().partition(":")
    kind, name = kind.strip().lower(), name.strip().lower()
    if not sep or not name:
        raise param_error(
            component, "--oracle", "be KIND:NAME (gp:KERNEL, gp:prior or family:FAMILY)", text
        )
    check_choice(component, "--oracle kind", kind, list(ORACLE_KINDS))
    if kind == GP_ORACLE:
        if name != "prior":
            name = "+".join(parse_kernel_family(name))
    else:
        check_choice(component, "--oracle family", name, list_prior_families())
    return OracleSpec(kind, name)


@dataclass
class OracleMoments:
    """Posterior mean and variance of f at a task's evaluation pool under an oracle.

    Attributes
    ----------
    mean, var : ndarray, shape (n_eval,)
        m_S(x) and σ_f²(x), target units and squared.
    seconds : float
        Wall-clock time of the computation (fit + conditioning).
    info : dict
        JSON-serialisable description (kernel hyperparameters and a, fit summary, sampler).
    """

    mean: np.ndarray
    var: np.ndarray
    seconds: float
    info: dict[str, Any] = field(default_factory=dict)


def _exact_moments(prior: Any, task: Task, own: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Exact moments of ``prior`` (a family with ``PriorCapabilities.exact_moments``, the GP)
    given the task's training sample. ``own``: the prior is the task's own, so its recorded
    nugget ``sampler.nugget`` is used (0 for a file made before the nugget: its stored moments
    have none), which reproduces the stored moments; otherwise the prior's default nugget
    (:meth:`udbench.priors.gp.GPPrior.nugget`). A family without a nugget gets none."""
    extra: dict[str, Any] = {}
    from udbench.priors import prior_capabilities

    if prior_capabilities(prior).nugget:
        nugget = None
        if own:
            nugget = float(((task.diagnostics or {}).get("sampler") or {}).get("nugget", 0.0))
        extra["nugget"] = nugget
    return prior.moments(  # type: ignore[no-any-return]
        np.asarray(task.X_train),
        np.asarray(task.y_train),
        np.asarray(task.noise_var_train),
        np.asarray(task.X_eval),
        **extra,
    )


def fit_settings_for(
    fidelity: str, overrides: dict[str, int] | None = None, component: str = "udbench transfer"
) -> dict[str, int]:
    """The ``gp:KERNEL`` fit settings: :data:`TRANSFER_FIT_SETTINGS` of ``fidelity``, with
    ``overrides`` (``max_rows``, ``restarts``, ``maxiter``; each an integer >= 1).

    Raises
    ------
    UdbenchError
        An unknown key or a value that is not an integer >= 1.
    """
    out = dict(TRANSFER_FIT_SETTINGS[str(fidelity)])
    for k, v in (overrides or {}).items():
        check_choice(component, "fit setting", k, list(out))
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
            raise param_error(component, k, "be an integer >= 1", v)
        out[k] = int(v)
    return out


def alternative_moments(
    task: Task,
    oracle: OracleSpec,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    fit_settings: dict[str, int] | None = None,
) -> OracleMoments:
    """The posterior moments of ``task``'s training sample under ``oracle``.

    Conditioned on the task's ``X_train``, ``y_train`` with its known ``noise_var_train``,
    at ``X_eval`` (see the module notes for each kind). Runs with one compute thread, as
    task generation does.

    Parameters
    ----------
    task : Task
    oracle : OracleSpec
    data_dir : str or Path, optional
        Raw-data folder for kinds that bind a prior to the dataset (``gp:prior`` on a
        non-GP task, ``family:``); default ``$UDBENCH_DATA_DIR``.
    fit_settings : dict, optional
        Overrides of the ``gp:KERNEL`` fit settings (:func:`fit_settings_for`).

    Returns
    -------
    OracleMoments

    Raises
    ------
    UdbenchError
        Unknown dataset or data not found, a fit that does not converge.
    """
    from udbench._threads import cell_threads
    from udbench.priors import prior_capabilities
    from udbench.priors.gp import GPPrior, fit_kernel
    from udbench.tasks.generate import get_prior

    spec = task.spec
    dd = None if data_dir is None else str(data_dir)
    t0 = time.perf_counter()
    info: dict[str, Any] = {"oracle": oracle.text}
    with cell_threads():
        if oracle.kind == GP_ORACLE and oracle.name == "prior":
            # a task of the GP family holds its own prior's kernel: read, not refitted
            if spec.family == GPPrior.family and isinstance(task.prior.get("kernel"), dict):
                prior: Any = GPPrior(task.prior["kernel"], float(task.prior["scale"]))
                info["source"] = "task file"
            else:
                prior = get_prior(GPPrior.family, spec.dataset, spec.fidelity, dd)
                info["source"] = "dataset GP prior"
            info.update(kernel=prior.hyper, scale=prior.scale)
            mean, var = _exact_moments(prior, task, own=info["source"] == "task file")
        elif oracle.kind == GP_ORACLE:
            settings = fit_settings_for(str(spec.fidelity), fit_settings)
            X, y = np.asarray(task.X_train), np.asarray(task.y_train)
            nv = np.asarray(task.noise_var_train)
            rows = np.arange(X.shape[0])
            if rows.size > settings["max_rows"]:
                rng = make_rng("transfer-fit-rows", spec.task_id)
                rows = np.sort(rng.choice(rows, size=settings["max_rows"], replace=False))
            fit = fit_kernel(
                X[rows],
                y[rows],
                oracle.name,
                seed=derive_seed("transfer-fit", spec.task_id, oracle.name),
                restarts=settings["restarts"],
                maxiter=settings["maxiter"],
                noise_var=nv[rows],
            )
            if not fit.total_variance > 0:
                raise UdbenchError(
                    f"the {oracle.text} fit gave a prior variance {fit.total_variance!r}"
                )
            prior = GPPrior(fit.hyper, float(np.sqrt(fit.total_variance)))
            info.update(
                kernel=fit.hyper,
                scale=prior.scale,
                lml_initial=fit.lml_initial,
                lml_final=fit.lml_final,
                fit_settings=fit.settings,
            )
            mean, var = _exact_moments(prior, task)
        else:
            prior = get_prior(oracle.name, spec.dataset, spec.fidelity, dd)
            info["settings"] = prior.settings
            if prior_capabilities(prior).exact_moments:  # the GP: the moments need no draws
                mean, var = _exact_moments(prior, task, own=spec.family == oracle.name)
            else:
                post = prior.condition(
                    np.asarray(task.X_train),
                    np.asarray(task.y_train),
                    np.asarray(task.noise_var_train),
                    np.asarray(task.X_eval),
                    derive_seed("transfer-posterior", spec.task_id, oracle.name),
                    int(spec.n_draws),
                )
                draws = np.asarray(post.draws_eval)
                mean = post.mean if post.mean is not None else draws.mean(axis=0)
                var = post.var if post.var is not None else draws.var(axis=0, ddof=1)
                info["sampler"] = post.diagnostics
    seconds = time.perf_counter() - t0
    return OracleMoments(
        np.asarray(mean, dtype=np.float64), np.asarray(var, dtype=np.float64), seconds, info
    )


def task_with_moments(task: Task, mean: np.ndarray, var: np.ndarray) -> Task:
    """A copy of ``task`` (in memory) whose reference posterior moments are ``mean``, ``var``.

    Holds only what scoring reads (``f_eval``, ``noise_var_eval``, ``shell_eval``,
    ``eval_idx``, the training sample); the draws are left out.
    """
    keep = ("train_idx", "X_train", "y_train", "noise_var_train", "eval_idx", "X_eval")
    arrays: dict[str, np.ndarray | None] = {k: None for k in ARRAY_NAMES}
    for k in (*keep, "f_eval", "noise_var_eval", "shell_eval"):
        arrays[k] = getattr(task, k)
    arrays["post_mean"] = np.asarray(mean, dtype=np.float64)
    arrays["post_var"] = np.asarray(var, dtype=np.float64)
    return Task(task.spec, arrays, {}, dict(task.prior), version=task.version)


# ------------------------------------------------------------------------------ rescoring
def _cache_path(cache_dir: Path, task_id: str, sha: str | None, request: dict[str, Any]) -> Path:
    """``<task id>__<checksum[:16]>__<request hash>.npz``: the request is the oracle, its
    fit settings and :data:`ORACLE_MOMENTS_VERSION`, so other settings or an older version
    never reuse a cached oracle."""
    import hashlib

    tag = hashlib.blake2b(json.dumps(request, sort_keys=True).encode(), digest_size=4).hexdigest()
    return cache_dir / f"{task_id}__{(sha or 'unknown')[:16]}__{tag}.npz"


def _load_cached(path: Path, oracle: OracleSpec) -> OracleMoments | None:
    try:
        with np.load(path, allow_pickle=False) as z:
            info = json.loads(str(z["info"]))
            if info.get("oracle") != oracle.text:
                return None
            return OracleMoments(
                np.asarray(z["mean"]), np.asarray(z["var"]), float(z["seconds"]), info
            )
    except (OSError, ValueError, KeyError):
        return None  # damaged or foreign: recomputed


def _save_cached(path: Path, m: OracleMoments) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as fh:
        np.savez(
            fh,
            mean=m.mean,
            var=m.var,
            seconds=np.float64(m.seconds),
            info=np.asarray(json.dumps(m.info, default=str)),
        )
    os.replace(tmp, path)


def _locate(row: pd.Series, by_id: dict[str, list[Path]]) -> Path | None:
    path = row.get("task_path")
    if isinstance(path, str) and path and Path(path).is_file():
        return Path(path)
    found = by_id.get(str(row["task_id"]), [])
    return found[0] if found else None


def _task_index(task_dirs: Iterable[str | os.PathLike[str]]) -> dict[str, list[Path]]:
    from udbench.tasks.discovery import task_files_by_id

    return task_files_by_id([str(d) for d in task_dirs], command="udbench transfer")


#: Called after each task as ``on_task(done, total, task_id)``.
TaskCallback = Callable[[int, int, str], None]


def rescore_cells(
    results: pd.DataFrame,
    results_dir: str | os.PathLike[str],
    oracle: OracleSpec,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    task_dirs: Sequence[str | os.PathLike[str]] = (),
    data_dir: str | os.PathLike[str] | None = None,
    loss: str = "squared",
    on_task: TaskCallback | None = None,
    fit_settings: dict[str, int] | None = None,
) -> pd.DataFrame:
    """Score every stored prediction of ``results`` against the alternative ``oracle``.

    Parameters
    ----------
    results : DataFrame
        ``ok`` rows of one version per task (:func:`udbench.evaluation.leaderboard.
        select_task_versions`), with ``cell_key``, ``task_id``, ``task_sha256``,
        ``task_path``, ``constant_aleatoric``.
    results_dir : str or Path
        The results folder holding ``predictions/<cell>.parquet``.
    oracle : OracleSpec
    cache_dir : str or Path, optional
        Where the per-task moments are cached (none if None).
    task_dirs : sequence of str or Path
        Folders searched for a task file (by task id) when a row's ``task_path`` is gone.
    data_dir : str or Path, optional
        Raw-data folder (see :func:`alternative_moments`).
    loss : {"squared", "crps", "log"}
        ``crps`` / ``log`` also add that loss's metric columns (``<key>_<loss>``,
        :func:`udbench.evaluation.losses.loss_columns`) under ``oracle`` and, prefixed
        :data:`OWN_PREFIX`, under the task's own posterior moments, both by the Gaussian
        closed form (module docstring). The squared-loss columns are always recomputed.
    on_task : callable, optional
        Progress callback (:data:`TaskCallback`).
    fit_settings : dict, optional
        Overrides of the ``gp:KERNEL`` fit settings (:func:`fit_settings_for`).

    Returns
    -------
    DataFrame
        One row per input row, keyed like it (every column of ``results`` kept), with the
        metric columns :data:`SCORED_KEYS` recomputed under ``oracle``, and ``oracle``,
        ``oracle_status`` (``"ok"``, ``"failed"``: the task's oracle or this cell's
        rescoring failed, ``"no-predictions"``: the cell was run without
        ``--keep-predictions``), ``oracle_error``, ``oracle_seconds`` (the task's oracle
        computation, fit included; also for a cached one) and ``oracle_info`` (JSON).
        ``status`` is ``"ok"`` only where ``oracle_status`` is.
    """
    check_choice("rescore_cells", "loss", loss, transfer_losses())
    store = ResultsStore(results_dir)
    cache = None if cache_dir is None else Path(cache_dir)
    by_id = _task_index(task_dirs)
    stale = _stale_columns(results, loss)
    out_rows: list[dict[str, Any]] = []
    groups = list(results.groupby("task_id", sort=True))
    for done, (task_id, rows) in enumerate(groups, start=1):
        first = rows.iloc[0]
        sha = first.get("task_sha256")
        sha = str(sha) if isinstance(sha, str) and sha else None
        moments: OracleMoments | None = None
        task: Task | None = None
        error: str | None = None
        try:
            path = _locate(first, by_id)
            if path is None:
                raise UdbenchError(
                    f"task file {first.get('task_path')!r} not found (pass its folder with --tasks)"
                )
            task = Task.load(path)
            if sha is not None and task.content_sha256 != sha:
                raise UdbenchError(
                    f"task file {str(path)!r} holds another version of the task (checksum "
                    f"{str(task.content_sha256)[:12]}, results {sha[:12]})"
                )
            request = {
                "oracle": oracle.text,
                "moments": ORACLE_MOMENTS_VERSION,
                "fit": fit_settings_for(str(task.spec.fidelity), fit_settings)
                if oracle.kind == GP_ORACLE and oracle.name != "prior"
                else None,
            }
            cpath = None if cache is None else _cache_path(cache, str(task_id), sha, request)
            if cpath is not None and cpath.is_file():
                moments = _load_cached(cpath, oracle)
            if moments is None:
                moments = alternative_moments(
                    task, oracle, data_dir=data_dir, fit_settings=fit_settings
                )
                if cpath is not None:
                    _save_cached(cpath, moments)
        except Exception as err:  # recorded: the other tasks go on
            error = f"oracle failed: {type(err).__name__}: {' '.join(str(err).split())}"
        view = None if task is None or moments is None else task_with_moments(task, *_mv(moments))
        # the task itself holds its own moments (the closed-form "own" side of another loss)
        own = task if view is not None and LOSS_TABLE[loss].scored else None
        for _, row in rows.iterrows():
            out: dict[str, Any] = {str(k): v for k, v in row.items() if str(k) not in stale}
            for k in (*SCORED_KEYS, *_loss_keys(loss)):
                out[k] = float("nan")
            out.update(
                oracle=oracle.text,
                oracle_status="failed",
                oracle_error=error,
                oracle_seconds=float("nan") if moments is None else moments.seconds,
                oracle_info=None if moments is None else json.dumps(moments.info, default=str),
                metric_notes=None,
                status="failed",
            )
            if view is not None:
                _score_row(out, row, view, store, loss, own)
            out_rows.append(out)
        if on_task is not None:
            on_task(done, len(groups), str(task_id))
    return pd.DataFrame(out_rows, columns=_columns(results, loss, stale))


def _loss_keys(loss: str) -> tuple[str, ...]:
    """The loss columns a rescored row gets: under the oracle, then under the task's own."""
    if not LOSS_TABLE[loss].scored:  # squared: the unsuffixed SCORED_KEYS
        return ()
    from udbench.evaluation.losses import loss_columns

    cols = loss_columns(loss)
    return (*cols, *(OWN_PREFIX + c for c in cols))


def _mv(m: OracleMoments) -> tuple[np.ndarray, np.ndarray]:
    return m.mean, m.var


def _stale_columns(results: pd.DataFrame, loss: str) -> set[str]:
    """Loss columns of ``results`` that this rescoring does not recompute (another loss's,
    scored against the task's own oracle): left out of the rescored rows, where they would
    read as values under the alternative oracle."""
    from udbench.evaluation.losses import loss_columns

    scored = loss_names("regression", scored=True)
    cols = {c for lo in scored if lo != loss for c in loss_columns(lo)}
    return cols & {str(c) for c in results.columns}


def _columns(results: pd.DataFrame, loss: str, stale: set[str]) -> list[str]:
    cols = [c for c in results.columns if str(c) not in stale]
    extras = (*SCORED_KEYS, *_loss_keys(loss))
    for extra in (*extras, "oracle", "oracle_status", "oracle_error", "oracle_seconds"):
        if extra not in cols:
            cols.append(extra)
    if "oracle_info" not in cols:
        cols.append("oracle_info")
    return cols


def _score_row(
    out: dict[str, Any],
    row: pd.Series,
    view: Task,
    store: ResultsStore,
    loss: str = "squared",
    own: Task | None = None,
) -> None:
    key = str(row["cell_key"])
    path = store.prediction_path(key)
    if not path.is_file():
        out["oracle_status"] = "no-predictions"
        out["oracle_error"] = "predictions not kept (run with --keep-predictions)"
        return
    try:
        pdf = store.read_predictions(key)
        if not np.array_equal(pdf["eval_idx"].to_numpy(), np.asarray(view.eval_idx)):
            raise UdbenchError("stored eval_idx differ from the task's evaluation pool")
        pred = Prediction(
            pdf["mean"].to_numpy(dtype=np.float64),
            pdf["aleatoric"].to_numpy(dtype=np.float64),
            pdf["epistemic"].to_numpy(dtype=np.float64),
        )
        const = row.get("constant_aleatoric")
        constant = bool(const) if isinstance(const, bool | np.bool_) else False
        metrics, notes = score_prediction(view, pred, constant_aleatoric=constant)
    except Exception as err:
        out["oracle_error"] = f"rescoring failed: {type(err).__name__}: {err}"
        return
    if LOSS_TABLE[loss].scored and own is not None:
        from udbench.evaluation.losses import loss_metrics

        try:  # a failure here leaves the loss columns NaN, with the reason; squared stays
            for task_view, prefix in ((view, ""), (own, OWN_PREFIX)):
                by_loss, loss_notes = loss_metrics(
                    task_view, pred, (loss,), constant_aleatoric=constant, reference="gaussian"
                )
                metrics.update({prefix + k: v for k, v in by_loss.items()})
                if prefix == "" and loss_notes:
                    notes = "; ".join(filter(None, [notes, *loss_notes]))
        except Exception as err:
            why = f"{loss}: rescoring failed: {type(err).__name__}: {' '.join(str(err).split())}"
            notes = "; ".join(filter(None, [notes, why]))
    out.update(metrics)
    out["metric_notes"] = notes
    out["oracle_status"] = "ok"
    out["oracle_error"] = None
    out["status"] = "ok"
