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

This module defines the oracles and computes their moments; the rescoring of the stored
predictions is :func:`udbench.evaluation.transfer_rescoring.rescore_cells`. Per task the
alternative moments are computed once and cached under the output folder
(``oracles/<task id>__<checksum[:16]>.npz``), so an interrupted ``udbench transfer`` resumes;
a task whose oracle fails gives failed rows with the reason and the others go on.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from udbench._losses import loss_names
from udbench._seeding import derive_seed, make_rng
from udbench._validation import UdbenchError, check_choice, param_error
from udbench.data import N_SHELLS
from udbench.evaluation.scoring import METRIC_KEYS, PROXY_KEYS
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
    fitted: dict[str, Any] | None = None,
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
    fitted : dict, optional
        A ``gp:KERNEL`` oracle's fit made before, ``{"kernel": hyperparameters, "scale": a}``
        (``info`` of an earlier result): used as it is instead of fitting again, so that
        every method of an instance is scored against one fit even where another machine's
        L-BFGS-B would end elsewhere (docs/campaigns.md, "Task versions across machines").
        ``info["fit_source"]`` says ``"given"``; ``"fitted"`` otherwise.

    Returns
    -------
    OracleMoments

    Raises
    ------
    UdbenchError
        Unknown dataset or data not found, a fit that does not converge; ``fitted`` for an
        oracle that fits nothing, or without a kernel dict and a finite scale > 0.
    """
    from udbench._threads import cell_threads
    from udbench.priors import prior_capabilities
    from udbench.priors.gp import GPPrior, fit_kernel
    from udbench.tasks.generate import get_prior

    spec = task.spec
    dd = None if data_dir is None else str(data_dir)
    if fitted is not None:
        _check_fitted(oracle, fitted)
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
        elif oracle.kind == GP_ORACLE and fitted is not None:
            prior = GPPrior(fitted["kernel"], float(fitted["scale"]))
            info.update(kernel=fitted["kernel"], scale=prior.scale, fit_source="given")
            mean, var = _exact_moments(prior, task)
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
                fit_source="fitted",
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


def _check_fitted(oracle: OracleSpec, fitted: Any) -> None:
    """Refuse a ``fitted`` argument that :func:`alternative_moments` cannot use."""
    comp = "alternative_moments"
    if oracle.kind != GP_ORACLE or oracle.name == "prior":
        raise param_error(comp, "fitted", "be given for a gp:KERNEL oracle only", oracle.text)
    if not isinstance(fitted, dict) or not isinstance(fitted.get("kernel"), dict):
        raise param_error(comp, "fitted", "be a dict with a 'kernel' dict", fitted)
    scale = fitted.get("scale")
    if isinstance(scale, bool) or not isinstance(scale, int | float):
        raise param_error(comp, "fitted['scale']", "be a finite number > 0", scale)
    if not np.isfinite(float(scale)) or float(scale) <= 0:
        raise param_error(comp, "fitted['scale']", "be a finite number > 0", scale)


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
