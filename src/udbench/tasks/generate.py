"""Generating one task instance (SPEC §6, paper B.5)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from udbench import __version__
from udbench._threads import single_threaded
from udbench._validation import check_choice, param_error
from udbench.priors import (
    Fidelity,
    Prior,
    acceptance,
    make_prior,
    prior_capabilities,
    rhat_gates,
)
from udbench.tasks.checks import acceptance_checks
from udbench.tasks.provenance import reference_record, source_fingerprint, task_file_clash
from udbench.tasks.replacement import (
    MAX_REPLACEMENTS,
    REPLACEMENT_STRIDE,
    generate_with_seed_replacement,
    replacement_seed,
)
from udbench.tasks.spec import TaskSpec
from udbench.tasks.taskfile import Task

__all__ = [
    "CLASSIFICATION_STREAMS",
    "MAX_REPLACEMENTS",
    "REPLACEMENT_STRIDE",
    "QueryPoints",
    "draw_instance",
    "generate_task",
    "get_covariates",
    "get_prior",
    "make_classification_task",
    "make_task",
    "reference_record",
    "replacement_seed",
    "source_fingerprint",
    "task_file_clash",
    "training_inputs",
]


@lru_cache(maxsize=8)
def get_covariates(dataset: str, data_dir: str | None = None) -> Any:
    """Covariates of ``dataset`` (cached per process); see ``udbench.data.load_covariates``."""
    from udbench.data import load_covariates

    return load_covariates(dataset, data_dir=data_dir)


@lru_cache(maxsize=16)
def get_prior(
    family: str,
    dataset: str,
    fidelity: Fidelity | str,
    data_dir: str | None = None,
    n_classes: int | None = None,
) -> Prior:
    """The prior ``family`` bound to ``dataset`` (fitted once, cached per process and on disk).

    ``n_classes`` is K of a classification family (its builder's default when None; the
    fit it rests on, the dataset's GP kernel, is shared by every K); None for a regression
    family.
    """
    settings = {} if n_classes is None else {"n_classes": int(n_classes)}
    return make_prior(family, get_covariates(dataset, data_dir), fidelity, **settings)


@dataclass(frozen=True)
class QueryPoints:
    """Extra inputs at which a task stores the reference posterior (task-format extension).

    The wine OOD study (``docs/studies.md``) queries every method at red wines as well as at
    the evaluation pool, so its instances carry the oracle posterior there too
    (:mod:`udbench.tasks.taskfile`, "Query points").

    Attributes
    ----------
    X : ndarray, shape (m, d), float64
        The query inputs in the task's covariate frame (scaled with the task dataset's
        min-max bounds; values may lie outside [0, 1]).
    idx : ndarray, shape (m,), int64
        Row of every query point in its source table.
    name : str
        The table the points come from (e.g. ``"red_wine"``).
    info : dict
        JSON-serialisable description stored in ``diagnostics["query"]`` (source fingerprint,
        scaling, how the rows were drawn).
    """

    X: np.ndarray
    idx: np.ndarray
    name: str
    info: dict[str, Any] = field(default_factory=dict)


def training_inputs(spec: TaskSpec, cov: Any) -> np.ndarray:
    """Step 1 of SPEC §6: the training rows of ``spec`` (its coverage, stream ``"train"``).

    Parameters
    ----------
    spec : TaskSpec
    cov : udbench.data.Covariates

    Returns
    -------
    ndarray, shape (n,), int64
        Row indices into ``cov.X``.
    """
    from udbench.design import select_training_inputs

    rng = np.random.default_rng(spec.seed_for("train"))
    return np.asarray(select_training_inputs(cov, spec.coverage, rng), dtype=np.int64)


def draw_instance(
    spec: TaskSpec, prior: Prior, X_eval: np.ndarray, X_train: np.ndarray, noise_var_train: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps 2–3 of SPEC §6: f* jointly at (evaluation, training) inputs, then y.

    f* comes from ``prior.sample`` with stream ``spec.seed_for("f_star")``;
    y = f*(x_i) + σ(x_i)·ε_i with ε from ``spec.seed_for("noise")``: standard normal, or for
    a non-Gaussian noise mode (``student-t``) its standardised law
    (:func:`udbench.design.unit_noise`; variance 1, so Var y | f = σ²).

    Parameters
    ----------
    spec : TaskSpec
    prior : Prior
    X_eval : ndarray, shape (n_eval, d)
    X_train : ndarray, shape (n, d)
    noise_var_train : ndarray, shape (n,)
        σ²(x_i), target units squared.

    Returns
    -------
    f_eval : ndarray, shape (n_eval,)
    f_train : ndarray, shape (n,)
    y : ndarray, shape (n,)
    """
    m = X_eval.shape[0]
    f_joint = prior.sample(np.vstack([X_eval, X_train]), spec.seed_for("f_star"), 1)[0]
    f_eval, f_train = f_joint[:m], f_joint[m:]
    from udbench.design import unit_noise

    eps = unit_noise(spec.noise, np.random.default_rng(spec.seed_for("noise")), X_train.shape[0])
    y = f_train + np.sqrt(noise_var_train) * eps
    return f_eval, f_train, y


def make_task(
    spec: TaskSpec,
    prior: Prior,
    X: np.ndarray,
    eval_idx: np.ndarray,
    train_idx: np.ndarray,
    noise_var_eval: np.ndarray,
    noise_var_train: np.ndarray,
    shell_eval: np.ndarray | None = None,
    query: QueryPoints | None = None,
    draws_train: bool | None = None,
) -> Task:
    """Steps 2–4 of SPEC §6 given the inputs, noise variances and training indices.

    Draws f* jointly at (evaluation pool, training inputs) from ``prior`` with stream
    ``spec.seed_for("f_star")``; y = f*(x_i) + σ(x_i)·ε_i with ε from ``seed_for("noise")``
    (:func:`draw_instance`); conditions with the noise variances known and a Gaussian
    likelihood (``seed_for("posterior")``), and runs the acceptance checks (SPEC §7). For a
    non-Gaussian noise mode the diagnostics get ``"reference"`` (:func:`reference_record`):
    the posterior is approximate.

    Parameters
    ----------
    spec : TaskSpec
    prior : Prior
    X : ndarray, shape (N, d)
        All scaled covariate rows.
    eval_idx : ndarray, shape (n_eval,) int
    train_idx : ndarray, shape (n,) int
    noise_var_eval : ndarray, shape (n_eval,)
    noise_var_train : ndarray, shape (n,)
        σ²(x) in target units squared.
    shell_eval : ndarray, shape (n_eval,) int, optional
        Shell index of every evaluation point (zeros if absent).
    query : QueryPoints, optional
        Extra inputs at which to store the reference posterior too. f*, the training sample
        and y are those of the task without them (f* is not drawn at the query points). The
        posterior is conditioned once at (evaluation pool, query points) with the same key:
        for the MCMC families the sampler never sees the prediction inputs, so the draws at
        the evaluation pool are those of the task without query points, and their sampler
        diagnostics (split-R̂) cover both sets; for the GP the exact moments at the pool are
        unchanged and the draws are joint over both sets (another draw than without query
        points). Query inputs outside [0, 1] are clipped to it for HBART only (its trees split
        on thresholds in [0, 1], so its functions are constant beyond the unit cube and the
        clipped inputs give exactly the same values); ``X_query`` stores them unclipped.
    draws_train : bool, optional
        Keep the posterior draws at the training inputs (``Task.draws_train``, D × n float32)
        when the prior makes them. Default (None): the family's
        ``PriorCapabilities.draws_train_by_default``: off for the GP (its checks use the exact
        posterior; the draws at the evaluation pool are the same either way, so the task's
        other arrays do not depend on it), on for the MCMC families.

    Returns
    -------
    Task
        Posterior draws rounded to float32 (:func:`udbench.tasks.taskfile.is_draws_array`)
        *after* the acceptance checks, which are computed from the float64 draws.
    """
    caps = prior_capabilities(prior)
    keep_train = caps.draws_train_by_default if draws_train is None else bool(draws_train)
    eval_idx = np.asarray(eval_idx, dtype=np.int64)
    train_idx = np.asarray(train_idx, dtype=np.int64)
    X_eval, X_train = X[eval_idx], X[train_idx]
    m = eval_idx.size
    f_eval, f_train, y = draw_instance(spec, prior, X_eval, X_train, noise_var_train)
    X_cond = X_eval
    if query is not None:
        X_q = np.asarray(query.X, np.float64)
        if caps.clips_queries_to_unit_cube:
            # HBART: every split threshold lies in [0, 1], so a tree is constant beyond the
            # unit cube: f(x) = f(clip(x)) exactly, and its sampler takes only inputs in [0, 1]
            X_q = np.clip(X_q, 0.0, 1.0)
        X_cond = np.vstack([X_eval, X_q])
    extra: dict[str, Any] = {}
    if query is not None and caps.nugget:
        # GP: f* was drawn at (eval, train) with the nugget of that factor; the conditioning
        # inputs (eval, query, train) keep that nugget (GPPrior.condition, docs/tasks.md)
        extra["nugget"] = prior.nugget(X_eval, X_train)  # type: ignore[attr-defined]
    post = prior.condition(
        X_train, y, noise_var_train, X_cond, spec.seed_for("posterior"), spec.n_draws, **extra
    )
    draws_all = post.draws_eval
    draws = draws_all[:, :m] if query is not None else draws_all
    post_mean_all = post.mean if post.mean is not None else draws_all.mean(axis=0)
    post_var_all = post.var if post.var is not None else draws_all.var(axis=0, ddof=1)
    post_mean, post_var = post_mean_all[:m], post_var_all[:m]
    if query is not None:
        # acceptance checks compare MC draws with exact moments at the pool only
        post = replace(
            post,
            mean=None if post.mean is None else post.mean[:m],
            var=None if post.var is None else post.var[:m],
        )
    n_chains = int(post.diagnostics.get("n_chains", 1))
    summary, per_point = acceptance_checks(f_eval, draws, post.mean, post.var, n_chains=n_chains)
    if "rhat_max" in post.diagnostics:  # MCMC families: function-space split-R̂ (SPEC §7)
        summary["rhat_max"] = float(post.diagnostics["rhat_max"])
    diagnostics: dict[str, Any] = {
        "checks": summary,
        "sampler": post.diagnostics,
        "seeds": {c: spec.seed_for(c) for c in ("train", "f_star", "noise", "posterior")},
        "exact_moments": post.mean is not None,
    }
    reference = reference_record(spec.noise)
    if reference is not None:  # absent for Gaussian noise: those files keep their bytes
        diagnostics["reference"] = reference
    arrays: dict[str, np.ndarray | None] = {
        "train_idx": train_idx,
        "X_train": X_train,
        "y_train": y,
        "noise_var_train": np.asarray(noise_var_train, dtype=np.float64),
        "f_train": f_train,
        "eval_idx": eval_idx,
        "X_eval": X_eval,
        "noise_var_eval": np.asarray(noise_var_eval, dtype=np.float64),
        "f_eval": f_eval,
        "shell_eval": (
            np.zeros(m, dtype=np.int64)
            if shell_eval is None
            else np.asarray(shell_eval, dtype=np.int64)
        ),
        "post_mean": np.asarray(post_mean, dtype=np.float64),
        "post_var": np.asarray(post_var, dtype=np.float64),
        "sbc_rank": per_point["sbc_rank"],
        "mcse_var_rel": per_point["mcse_var_rel"],
        "draws": draws,
        "draws_train": post.draws_train if keep_train else None,
    }
    if query is not None:
        arrays.update(
            {
                "query_idx": np.asarray(query.idx, dtype=np.int64),
                "X_query": np.asarray(query.X, dtype=np.float64),
                "post_mean_query": np.asarray(post_mean_all[m:], dtype=np.float64),
                "post_var_query": np.asarray(post_var_all[m:], dtype=np.float64),
                "draws_query": np.ascontiguousarray(draws_all[:, m:]),
            }
        )
        diagnostics["query"] = {
            "name": query.name,
            "n_query": int(query.X.shape[0]),
            **query.info,
        }
    return Task(spec, arrays, diagnostics, prior.settings, version=__version__)


#: The seed streams of a classification task (``TaskSpec.seed_for``), in the order used.
CLASSIFICATION_STREAMS: tuple[str, ...] = ("train", "f_star", "labels", "labels_eval", "posterior")


def make_classification_task(
    spec: TaskSpec,
    prior: Any,
    X: np.ndarray,
    eval_idx: np.ndarray,
    train_idx: np.ndarray,
    tau_eval: np.ndarray,
    tau_train: np.ndarray,
    shell_eval: np.ndarray | None = None,
    temperature: dict[str, Any] | None = None,
) -> Task:
    """A classification task (docs/classification.md, "Classification tasks") given its inputs.

    1. f* (K latents) jointly at (evaluation pool, training inputs) from ``prior.sample``,
       stream ``spec.seed_for("f_star")`` (the joint factor whose jitter is the nugget
       ``condition`` uses, as for GP regression tasks);
    2. π* = softmax(f*/τ) at both (``prior.probabilities``); training labels
       y ~ Categorical(π*) with stream ``seed_for("labels")``, evaluation labels (for the
       accuracy-type metrics) with ``seed_for("labels_eval")`` (``prior.draw_labels``,
       :func:`udbench.priors.gp_classification.draw_labels`);
    3. the reference posterior ``prior.condition`` (elliptical slice sampling, stream
       ``seed_for("posterior")``), D = ``spec.n_draws`` draws of π at the pool;
    4. the acceptance checks of SPEC §7 on π: SBC ranks, 90 % coverage and MCSE of the
       posterior variance of π*_k(x) among the draws of π (the float64 draws, before they
       are stored as float32; ranks and coverage by log π, the same order without π's
       float64 saturation at 1.0), one variable per (point, class), point-major (as the
       sampler's R̂ of π), plus the sampler's ``rhat_max``. Not on the latents f*_k: each
       carries the shift latent whose posterior is its prior (docs/classification.md,
       "SBC and coverage of π*").

    Parameters
    ----------
    spec : TaskSpec
        A classification spec (``spec.task_type == "classification"``).
    prior : GPClassificationPrior
        Bound to the dataset with K = ``spec.n_classes``.
    X : ndarray, shape (N, d)
    eval_idx : ndarray, shape (n_eval,) int
    train_idx : ndarray, shape (n,) int
    tau_eval, tau_train : ndarray, shape (n_eval,) / (n,)
        The known temperature τ(x) > 0 (:class:`udbench.design.temperature.TemperatureModel`).
    shell_eval : ndarray, shape (n_eval,) int, optional
        Shell index of every evaluation point (zeros if absent).
    temperature : dict, optional
        The temperature model's settings, stored as ``diagnostics["temperature"]``.

    Returns
    -------
    Task
        With the arrays of :data:`udbench.tasks.taskfile.CLASSIFICATION_REQUIRED`.

    Raises
    ------
    UdbenchError
        D not a multiple of the preset's chains (from ``condition``), bad τ.
    """
    eval_idx = np.asarray(eval_idx, dtype=np.int64)
    train_idx = np.asarray(train_idx, dtype=np.int64)
    X_eval, X_train = X[eval_idx], X[train_idx]
    m, K = eval_idx.size, int(spec.n_classes or 0)
    f_joint = prior.sample(np.vstack([X_eval, X_train]), spec.seed_for("f_star"), 1)[0]
    f_eval, f_train = f_joint[:m], f_joint[m:]
    pi_eval = prior.probabilities(f_eval, tau_eval)
    pi_train = prior.probabilities(f_train, tau_train)
    y = prior.draw_labels(pi_train, np.random.default_rng(spec.seed_for("labels")))
    y_eval = prior.draw_labels(pi_eval, np.random.default_rng(spec.seed_for("labels_eval")))
    post = prior.condition(
        X_train,
        y,
        tau_train,
        X_eval,
        spec.seed_for("posterior"),
        spec.n_draws,
        tau_eval=tau_eval,
    )
    probs = post.prob_draws
    # the checks rank π*, not f*: each f*_k carries the shift latent whose posterior is its
    # prior (docs/classification.md, "SBC and coverage of π*"); point-major, as the R̂ of π.
    # Ranked by log π: the same order, without π's ties at 1.0 once a logit leads by ~37
    log_pi = prior.log_probabilities(post.latent_eval, tau_eval)
    log_pi_star = prior.log_probabilities(f_eval, tau_eval)
    summary, per_point = acceptance_checks(
        pi_eval.reshape(m * K),
        probs.reshape(spec.n_draws, m * K),
        n_chains=post.n_chains,
        rank_values=(log_pi_star.reshape(m * K), log_pi.reshape(spec.n_draws, m * K)),
    )
    summary["rhat_max"] = float(post.diagnostics["rhat_max"])
    summary["truth"] = "pi_star"  # what was ranked; gpc files made before it ranked f*
    diagnostics: dict[str, Any] = {
        "task_type": "classification",
        "checks": summary,
        "sampler": post.diagnostics,
        "seeds": {c: spec.seed_for(c) for c in CLASSIFICATION_STREAMS},
        "exact_moments": False,
        "temperature": dict(temperature or {}),
        "labels": {
            "train_counts": np.bincount(y, minlength=K).tolist(),
            "bayes_accuracy_eval": float(np.mean(np.argmax(pi_eval, axis=1) == y_eval)),
        },
    }
    arrays: dict[str, np.ndarray | None] = {
        "train_idx": train_idx,
        "X_train": X_train,
        "y_train": np.asarray(y, dtype=np.int64),
        "f_train": f_train,
        "eval_idx": eval_idx,
        "X_eval": X_eval,
        "f_eval": f_eval,
        "shell_eval": (
            np.zeros(m, dtype=np.int64)
            if shell_eval is None
            else np.asarray(shell_eval, dtype=np.int64)
        ),
        "post_mean": np.asarray(probs.mean(axis=0), dtype=np.float64),
        "post_var": np.asarray(probs.var(axis=0, ddof=1), dtype=np.float64),
        "sbc_rank": per_point["sbc_rank"].reshape(m, K),
        "mcse_var_rel": per_point["mcse_var_rel"].reshape(m, K),
        "tau_train": np.asarray(tau_train, dtype=np.float64),
        "pi_star_train": pi_train,
        "tau_eval": np.asarray(tau_eval, dtype=np.float64),
        "pi_star_eval": pi_eval,
        "y_eval": np.asarray(y_eval, dtype=np.int64),
        "draws_prob": probs,
    }
    return Task(spec, arrays, diagnostics, prior.settings, version=__version__)


@single_threaded
def generate_task(
    spec: TaskSpec,
    data_dir: str | Path | None = None,
    *,
    max_replacements: int = MAX_REPLACEMENTS,
    query: QueryPoints | None = None,
    draws_train: bool | None = None,
) -> Task:
    """Generate the instance ``spec`` end to end (SPEC §6), replacing rejected seeds (SPEC §7).

    Loads the covariates, binds the prior (kernel fit and scale constant, cached), builds
    the noise model (SPEC §4), selects the training inputs (SPEC §3) with stream
    ``seed_for("train")``, then :func:`make_task`. For a family gated by the R̂ rule
    (:func:`udbench.priors.rhat_gates`: the BNN; SPEC §7), if the reference posterior fails
    :func:`udbench.priors.acceptance` (any function-space split-R̂ > 1.05 at the evaluation
    pool), the instance is discarded and regenerated with the seed
    :func:`~udbench.tasks.replacement.replacement_seed` (all streams: training sample, f*,
    noise, posterior). HBART is not gated (SPEC §7: its many short chains are validated per
    preset by warm-up sensitivity, :mod:`udbench.tasks.validation`): its R̂ and the
    independent-draw reference are recorded in the sampler diagnostics, and the instance is
    kept (``gated`` False, ``accepted`` True, ``reason`` :data:`RHAT_NOT_A_GATE`).

    The returned task keeps the requested ``spec`` (its ``task_id`` and file name name the
    grid seed, so re-running ``udbench generate`` skips it); the seed actually used and
    every rejection are in ``task.diagnostics["seed_replacement"]``:
    ``{"requested_seed", "used_seed", "log": [{"slot", "rejected", "replacement",
    "reason"}, …], "gated", "accepted", "reason"}`` and ``task.diagnostics["seeds"]``
    holds the streams of the used seed.

    Runs with one compute thread (:func:`udbench._threads.cell_threads`: XLA's CPU pool fixed
    at one thread, BLAS capped at one), so the task's bytes do not depend on the number of
    cores, the pinning or ``--jobs``; parallelism comes from generating instances side by side.

    At a fidelity that is not a reference (``smoke``: tiny chains, see
    :attr:`~udbench.priors.base.Fidelity.is_reference`) nothing is replaced:
    the instance is kept and the verdict recorded (``gated`` False, ``accepted``,
    ``reason``), so quick runs neither fail nor multiply their cost.

    Parameters
    ----------
    spec : TaskSpec
        ``spec.seed`` must be below :data:`REPLACEMENT_STRIDE`.
    data_dir : str or Path, optional
        Raw-data folder (default ``$UDBENCH_DATA_DIR``, then the cache, then the embedded
        ``diabetes`` table).
    max_replacements : int, default MAX_REPLACEMENTS
        Replacements tried before giving up.
    query : QueryPoints, optional
        Extra inputs at which the task also stores the reference posterior
        (:func:`make_task`); for a gated family the R̂ rule then covers them too.
    draws_train : bool, optional
        Keep the draws at the training inputs; default off for the GP, on for the MCMC
        families (:func:`make_task`).

    Returns
    -------
    Task

    Raises
    ------
    UdbenchError
        Unknown dataset, family, noise mode or coverage; infeasible coverage; a seed
        >= REPLACEMENT_STRIDE; still rejected after ``max_replacements`` replacements.
    """
    from udbench.design import NoiseModel

    if spec.seed >= REPLACEMENT_STRIDE:
        raise param_error("generate_task", "seed", f"be < {REPLACEMENT_STRIDE}", spec.seed)
    dd = None if data_dir is None else str(data_dir)
    classification = spec.task_type == "classification"
    if classification:
        from udbench.design import NOISE_MODES

        check_choice("generate_task", "noise (temperature mode)", spec.noise, NOISE_MODES)
        if query is not None:
            raise param_error(
                "generate_task", "query", "be None for a classification task", query.name
            )
    cov = get_covariates(spec.dataset, dd)
    prior = get_prior(spec.family, spec.dataset, spec.fidelity, dd, spec.n_classes)
    eval_idx = np.asarray(cov.eval_idx, dtype=np.int64)
    X = np.asarray(cov.X, dtype=np.float64)
    shell_eval = np.asarray(cov.shell)[eval_idx]
    if classification:
        from udbench.design import TemperatureModel

        temp = TemperatureModel(
            cov,
            spec.noise,
            prior.marginal_sd(X[eval_idx]),  # type: ignore[attr-defined]
            int(spec.n_classes or 0),
            str(spec.difficulty),
        )
        tau_eval = temp.temperature(X[eval_idx])

        def run(seed: int) -> Task:
            used = replace(spec, seed=seed)
            train_idx = training_inputs(used, cov)
            return make_classification_task(
                used,
                prior,
                X,
                eval_idx,
                train_idx,
                tau_eval=tau_eval,
                tau_train=temp.temperature(X[train_idx]),
                shell_eval=shell_eval,
                temperature=temp.settings(),
            )

    else:
        noise = NoiseModel(cov, spec.noise)
        noise_var_eval = noise.variance(X[eval_idx])

        def run(seed: int) -> Task:
            used = replace(spec, seed=seed)
            train_idx = training_inputs(used, cov)
            return make_task(
                used,
                prior,
                X,
                eval_idx,
                train_idx,
                noise_var_eval=noise_var_eval,
                noise_var_train=noise.variance(X[train_idx]),
                shell_eval=shell_eval,
                query=query,
                draws_train=draws_train,
            )

    gated = spec.fidelity.is_reference and rhat_gates(prior)
    if gated:
        results, log = generate_with_seed_replacement(
            run,
            lambda task: acceptance(task.diagnostics["sampler"]),
            [spec.seed],
            max_replacements=max_replacements,
        )
        used_seed, task = results[spec.seed]
        accepted, reason = True, ""
    else:  # smoke (not a reference) or HBART (R̂ not a gate): record the verdict, keep it
        used_seed, task, log = spec.seed, run(spec.seed), []
        accepted, reason = acceptance(task.diagnostics["sampler"])
    task.spec = spec
    task.source = source_fingerprint(cov)
    task.diagnostics["seed_replacement"] = {
        "requested_seed": spec.seed,
        "used_seed": used_seed,
        "log": [asdict(r) for r in log],
        "gated": gated,
        "accepted": accepted,
        "reason": reason,
    }
    return task
