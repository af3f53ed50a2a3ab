"""Scoring methods under other losses: the CRPS and log-score decompositions (paper Table 2).

Under squared loss (the default, SPEC §1) a method's AU and EU estimates are compared with
AU* = σ² and EU* = σ_f² + (â − m)². For a distributional loss ℓ (CRPS, continuous log score)
the same comparison is made with the loss-specific terms of the posterior-risk decomposition
(paper Eq. 4, Appendix A.3–A.4, Table 2), on both sides:

- **Oracle targets** from the task's reference draws (:func:`udbench.risk.crps_decomposition`,
  :func:`udbench.risk.log_score_decomposition`), for the method's deployed predictive
  Q̂ = N(â, AU + EU): AU*_ℓ (the AU term), EU*_ℓ,risk = generalized variance + deployment gap,
  EU*_ℓ,var = generalized variance, and EU*_ℓ,point = d_ℓ(P_f* ‖ Q̂), the excess risk of Q̂ under
  the true law N(f*, σ²) (for the CRPS ∫(G_f* − Ĝ)² dt, for the log score KL(P_f* ‖ Q̂); the
  analogue of (â − f*)², from the Gaussian closed forms with a point-mass posterior at f*).
- **The method's own terms** in closed form from its Gaussian predictive: the method states
  f(x) ~ N(â, EU) and noise N(0, AU); its loss-specific AU and EU are the terms of that model's
  decomposition with its own predictive as the deployed action
  (:func:`udbench.risk.crps_decomposition_gaussian`,
  :func:`udbench.risk.log_score_decomposition_gaussian`): CRPS: AU = √AU/√π,
  EU = (√(AU + EU) − √AU)/√π; log score: AU = ½ log(2πe·AU), EU = ½ log(1 + EU/AU) (the
  deployment gap of a model against itself is 0).

The per-instance metrics are those of SPEC §10 (:func:`udbench.evaluation.metrics
.instance_metrics`) on these terms; they are stored beside the squared-loss ones with the
loss as a suffix (``rho_eu_risk_crps``, ``rho_au_log``, …; :func:`loss_column`). RMSE and
NMSE do not depend on the loss and are not repeated. Every metric is a rank correlation, so
ρ(AU, AU*) is the same under the three losses (each AU is increasing in the variance); the
EU terms are not monotone in EU alone (they mix EU with AU), so EU rankings can move.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from udbench._losses import LOSS_TABLE, loss_entry, loss_names
from udbench._validation import UdbenchError, check_choice, param_error
from udbench.data import N_SHELLS
from udbench.evaluation.metrics import RANK_METRIC_KEYS

__all__ = [
    "LOG_SCORE_SAMPLES",
    "LOSSES",
    "LOSS_METRIC_KEYS",
    "OTHER_LOSSES",
    "frames_ranking_agreement",
    "gaussian_loss_oracle_targets",
    "loss_column",
    "loss_columns",
    "loss_metrics",
    "loss_oracle_targets",
    "method_loss_terms",
    "parse_losses",
    "ranking_agreement",
    "results_under_loss",
]

#: Every loss a run can be scored under; ``squared`` is the default and always scored (the
#: regression losses of :data:`udbench._losses.LOSS_TABLE` at import; the checks below read
#: the table itself, so a loss registered later is accepted too).
LOSSES: tuple[str, ...] = loss_names("regression")
#: The losses scored on request (``udbench run/score --loss``).
OTHER_LOSSES: tuple[str, ...] = loss_names("regression", scored=True)
#: Outcome samples per point for the log-score mixture entropy from draws (M, capped at D):
#: its cost is O(M·D·n) (:func:`udbench.risk.log_score_decomposition`).
LOG_SCORE_SAMPLES: int = 200

#: Per-instance metrics that depend on the loss (the SPEC §10 keys except RMSE/NMSE, and the
#: per-shell ρ of EU with EU*_risk and EU*_var); stored as ``<key>_<loss>`` for other losses.
LOSS_METRIC_KEYS: tuple[str, ...] = (
    *RANK_METRIC_KEYS,
    *(f"rho_eu_{t}_shell{s}" for s in range(N_SHELLS) for t in ("risk", "var")),
)


def loss_column(key: str, loss: str) -> str:
    """The results column of metric ``key`` under ``loss`` (``key`` itself for squared loss).

    Parameters
    ----------
    key : str
        A metric key; only :data:`LOSS_METRIC_KEYS` depend on the loss.
    loss : {"squared", "crps", "log"}

    Returns
    -------
    str
        ``key`` for squared loss or a loss-independent key (``rmse``, proxies), else
        ``f"{key}_{loss}"``.

    Raises
    ------
    UdbenchError
        Unknown loss.
    """
    entry = loss_entry("loss_column", loss)
    return key if not entry.scored or key not in LOSS_METRIC_KEYS else f"{key}_{loss}"


def loss_columns(loss: str) -> tuple[str, ...]:
    """The results columns of every loss-dependent metric under ``loss`` (in key order)."""
    return tuple(loss_column(k, loss) for k in LOSS_METRIC_KEYS)


def parse_losses(component: str, text: str | None) -> tuple[str, ...]:
    """Parse ``--loss``: a comma list of losses; return the non-default ones, in order.

    ``squared`` may be named (it is always scored) and is dropped from the result; each
    loss is kept once.

    Raises
    ------
    UdbenchError
        An empty list or an unknown loss (naming the allowed ones).
    """
    if text is None:
        return ()
    values = [v.strip().lower() for v in str(text).split(",") if v.strip()]
    names = loss_names("regression")
    if not values:
        raise param_error(component, "--loss", f"be a comma list of {', '.join(names)}", text)
    for v in values:
        check_choice(component, "--loss", v, names)
    return tuple(dict.fromkeys(v for v in values if LOSS_TABLE[v].scored))


def _targets(
    au: np.ndarray,
    eu_risk: np.ndarray,
    eu_var: np.ndarray,
    eu_point: np.ndarray,
    total: np.ndarray,
    f_star: np.ndarray,
) -> Any:
    from udbench.risk import OracleTargets

    return OracleTargets(
        au=au, eu_risk=eu_risk, eu_var=eu_var, eu_point=eu_point, total_risk=total, f_star=f_star
    )


def _scored(component: str, loss: str) -> Any:
    """The :class:`udbench._losses.Loss` record of a loss scored on request (else an error)."""
    check_choice(component, "loss", loss, loss_names("regression", scored=True))
    return LOSS_TABLE[loss]


def _gaussian_decomposition(loss: str) -> Callable[..., Any]:
    """The closed-form decomposition of ``loss`` (e.g. "crps" or "log") for a Gaussian
    posterior and a Gaussian deployed predictive (paper A.3, A.4; the loss table's entry)."""
    return LOSS_TABLE[loss].gaussian_fn()


def loss_oracle_targets(
    draws: Any,
    noise_var: Any,
    f_star: Any,
    pred_mean: Any,
    pred_var: Any,
    loss: str,
    *,
    n_samples: int | None = LOG_SCORE_SAMPLES,
    random_state: int = 0,
    cache: dict[str, Any] | None = None,
) -> Any:
    """Oracle targets of one method under ``loss``, from the reference draws (Table 2).

    Parameters
    ----------
    draws : array_like, shape (D, n)
        Reference-posterior draws of f at the evaluation points.
    noise_var : array_like, shape (n,)
        Noise variance σ²(x) (> 0 for the log score).
    f_star : array_like, shape (n,)
        Ground truth f*(x).
    pred_mean, pred_var : array_like, shape (n,)
        The method's Gaussian predictive N(â, AU + EU); ``pred_var`` > 0.
    loss : {"crps", "log"}
    n_samples : int or None, default :data:`LOG_SCORE_SAMPLES`
        Log score only: outcome samples M per point for the mixture entropy (capped at D;
        None: M = D).
    random_state : int, default 0
        Names the noise-sample stream of the draw-based terms (the same for every method, so
        the method-independent terms are identical across methods).
    cache : dict, optional
        Holds the method-independent log-score mixture entropy between calls on the same
        task (same draws, noise, ``n_samples``, ``random_state``): pass one dict per task to
        score several methods without repeating the O(M·D·n) step (the terms are the same).

    Returns
    -------
    udbench.risk.OracleTargets
        ``au`` = AU*_ℓ, ``eu_risk`` = generalized variance + deployment gap, ``eu_var`` =
        generalized variance, ``eu_point`` = d_ℓ(N(f*, σ²) ‖ Q̂), ``total_risk`` (CRPS in
        target units, log score in nats), ``f_star``.

    Raises
    ------
    UdbenchError
        Unknown loss; the errors of the :mod:`udbench.risk` functions (shapes, NaN/inf,
        ``pred_var`` <= 0, ``noise_var`` <= 0 for the log score).
    """
    entry = _scored("loss_oracle_targets", loss)
    f = np.asarray(draws, dtype=np.float64)
    fs = np.asarray(f_star, dtype=np.float64)
    zero = np.zeros_like(fs)
    options: dict[str, Any] = {}
    if "random_state" in entry.draws_options:
        options["random_state"] = random_state
    m = None if n_samples is None else min(int(n_samples), f.shape[0])
    if "n_samples" in entry.draws_options:
        options["n_samples"] = m
    key = f"{loss}_mixture_entropy:{m}:{random_state}"
    if "mixture_entropy" in entry.draws_options:
        options["mixture_entropy"] = None if cache is None else cache.get(key)
    dec = entry.draws_fn()(f, noise_var, pred_mean, pred_var, **options)
    if "mixture_entropy" in entry.draws_options and cache is not None:
        cache[key] = dec.au + dec.generalized_variance
    point = _gaussian_decomposition(loss)(fs, zero, noise_var, pred_mean, pred_var)
    return _targets(
        dec.au, dec.eu, dec.generalized_variance, point.deployment_gap, dec.total, fs.copy()
    )


def gaussian_loss_oracle_targets(
    post_mean: Any,
    post_var: Any,
    noise_var: Any,
    f_star: Any,
    pred_mean: Any,
    pred_var: Any,
    loss: str,
) -> Any:
    """Oracle targets of one method under ``loss`` for a Gaussian reference posterior, in
    closed form (paper A.3, A.4): the terms of :func:`loss_oracle_targets` with the
    posterior F(x) ~ N(m, σ_f²) given by its moments instead of draws.

    Exact for a GP reference posterior (no Monte Carlo error); for a non-Gaussian one (an
    MCMC family's draws) it is the Gaussian approximation with the same mean and variance.
    Used by ``udbench transfer --loss``, whose alternative oracles give moments only.

    Parameters
    ----------
    post_mean, post_var : array_like, shape (n,)
        Reference-posterior mean and variance (>= 0, target units²) of f at the evaluation
        points.
    noise_var : array_like, shape (n,)
        Noise variance σ²(x) (> 0 for the log score).
    f_star : array_like, shape (n,)
        Ground truth f*(x).
    pred_mean, pred_var : array_like, shape (n,)
        The method's Gaussian predictive N(â, AU + EU); ``pred_var`` > 0.
    loss : {"crps", "log"}

    Returns
    -------
    udbench.risk.OracleTargets
        As :func:`loss_oracle_targets`.

    Raises
    ------
    UdbenchError
        Unknown loss; the errors of :func:`udbench.risk.crps_decomposition_gaussian` /
        :func:`udbench.risk.log_score_decomposition_gaussian` (shapes, NaN/inf, negative
        variances, ``pred_var`` <= 0, ``noise_var`` <= 0 for the log score).
    """
    _scored("gaussian_loss_oracle_targets", loss)
    fs = np.asarray(f_star, dtype=np.float64)
    fn = _gaussian_decomposition(loss)
    dec = fn(post_mean, post_var, noise_var, pred_mean, pred_var)
    point = fn(fs, np.zeros_like(fs), noise_var, pred_mean, pred_var)
    return _targets(
        dec.au, dec.eu, dec.generalized_variance, point.deployment_gap, dec.total, fs.copy()
    )


def method_loss_terms(
    mean: Any, aleatoric: Any, epistemic: Any, loss: str
) -> tuple[np.ndarray, np.ndarray]:
    """A method's own AU and EU under ``loss``, in closed form from its Gaussian predictive.

    The method's model: f(x) ~ N(â, EU), noise N(0, AU), deployed predictive N(â, AU + EU).
    Its terms are that model's decomposition with its own predictive deployed (paper A.3,
    A.4 closed forms; the deployment gap is 0 up to rounding):

    - ``crps``: AU = √AU/√π, EU = (√(AU + EU) − √AU)/√π (target units);
    - ``log``: AU = ½ log(2πe·AU), EU = ½ log(1 + EU/AU) (nats).

    Parameters
    ----------
    mean, aleatoric, epistemic : array_like, shape (n,)
        The method's prediction (variances in target units², >= 0).
    loss : {"crps", "log"}

    Returns
    -------
    au, eu : ndarray, shape (n,)

    Raises
    ------
    UdbenchError
        Unknown loss; AU + EU = 0 somewhere (a point-mass predictive); for the log score,
        AU = 0 somewhere (the entropy of a point mass is −∞).
    """
    _scored("method_loss_terms", loss)
    mu = np.asarray(mean, dtype=np.float64)
    au = np.asarray(aleatoric, dtype=np.float64)
    eu = np.asarray(epistemic, dtype=np.float64)
    dec = _gaussian_decomposition(loss)(mu, eu, au, mu, au + eu)
    return dec.au, dec.eu


def _prediction_problem(aleatoric: np.ndarray, epistemic: np.ndarray, loss: str) -> str | None:
    """Why ``loss`` cannot score this prediction (a point-mass predictive or noise), or None."""
    total = aleatoric + epistemic
    if np.any(total <= 0):
        k = int(np.sum(total <= 0))
        return f"AU + EU is 0 at {k} point(s): no {loss} predictive density"
    if LOSS_TABLE[loss].positive_noise and np.any(aleatoric <= 0):
        k = int(np.sum(aleatoric <= 0))
        return f"AU is 0 at {k} point(s): its log-score entropy is -inf"
    return None


def loss_metrics(
    task: Any,
    pred: Any,
    losses: tuple[str, ...] | list[str],
    *,
    constant_aleatoric: bool = False,
    cache: dict[str, Any] | None = None,
    reference: str = "draws",
) -> tuple[dict[str, float], list[str]]:
    """Per-instance metrics of one prediction under each of ``losses`` (module docstring).

    Parameters
    ----------
    task : udbench.tasks.Task
        With ``draws`` (D, n_eval) (or, with ``reference="gaussian"``, ``post_mean`` and
        ``post_var``), ``noise_var_eval``, ``f_eval``, ``shell_eval``.
    pred : udbench.methods.base.Prediction
        The method's validated prediction at the evaluation points.
    losses : sequence of {"crps", "log"}
        ``squared`` is ignored (it is scored by :func:`udbench.evaluation.scoring
        .score_prediction`).
    constant_aleatoric : bool, default False
        As in :func:`udbench.evaluation.metrics.instance_metrics`.
    cache : dict, optional
        One dict per task, shared by the calls for its methods (:func:`loss_oracle_targets`):
        the log score's method-independent term is computed once.
    reference : {"draws", "gaussian"}, default "draws"
        Oracle targets from the reference draws (:func:`loss_oracle_targets`), or in closed
        form from the task's posterior moments (:func:`gaussian_loss_oracle_targets`; what
        ``udbench transfer --loss`` uses, its oracles giving moments only).

    Returns
    -------
    metrics : dict
        ``<key>_<loss>`` for every key of :data:`LOSS_METRIC_KEYS` and loss (NaN where
        undefined).
    notes : list of str
        ``"<column>: reason"`` for every NaN value (e.g. a constant AU, a zero AU under the
        log score).
    """
    from udbench.evaluation.metrics import instance_metrics, spearman
    from udbench.methods.base import Prediction

    mean = np.asarray(pred.mean, dtype=np.float64)
    au = np.asarray(pred.aleatoric, dtype=np.float64)
    eu = np.asarray(pred.epistemic, dtype=np.float64)
    shell = np.asarray(task.shell_eval)
    out: dict[str, float] = {}
    notes: list[str] = []
    check_choice("loss_metrics", "reference", reference, ["draws", "gaussian"])
    for loss in losses:
        if loss in LOSS_TABLE and not LOSS_TABLE[loss].scored:
            continue
        check_choice("loss_metrics", "losses", loss, loss_names("regression", scored=True))
        problem = _prediction_problem(au, eu, loss)
        if problem is not None:
            for k in LOSS_METRIC_KEYS:
                out[loss_column(k, loss)] = float("nan")
            notes.append(f"{loss}: {problem}")
            continue
        if reference == "gaussian":
            targets = gaussian_loss_oracle_targets(
                task.post_mean, task.post_var, task.noise_var_eval, task.f_eval, mean, au + eu, loss
            )
        else:
            targets = loss_oracle_targets(
                task.draws, task.noise_var_eval, task.f_eval, mean, au + eu, loss, cache=cache
            )
        au_l, eu_l = method_loss_terms(mean, au, eu, loss)
        raw = instance_metrics(
            Prediction(mean, au_l, eu_l),
            targets,
            constant_aleatoric=constant_aleatoric,
            variances=False,
        )
        for k in LOSS_METRIC_KEYS:
            if k in raw:
                out[loss_column(k, loss)] = float(raw[k])
        reasons = str(raw.get("nan_reasons") or "")
        for item in filter(None, (r.strip() for r in reasons.split(";"))):
            key, _, why = item.partition(":")
            if key.strip() in LOSS_METRIC_KEYS:
                notes.append(f"{loss_column(key.strip(), loss)}:{why}")
        for s in range(N_SHELLS):
            m = shell == s
            for t, star in (("risk", targets.eu_risk), ("var", targets.eu_var)):
                value = float("nan")
                if int(m.sum()) >= 3:
                    value = float(spearman(eu_l[m], star[m]).value)
                out[loss_column(f"rho_eu_{t}_shell{s}", loss)] = value
    return out, notes


def results_under_loss(results: pd.DataFrame, loss: str, component: str = "--loss") -> pd.DataFrame:
    """The results frame with every loss-dependent metric replaced by its ``loss`` column.

    After this, the leaderboard and the analyses (which read ``rho_eu_risk``, ``rho_au``, …)
    rank and summarise the methods under ``loss``; the loss's own columns are kept too.

    Parameters
    ----------
    results : DataFrame
        Rows as stored by ``udbench run`` (scored under ``loss`` by ``udbench run --loss``
        or ``udbench score``).
    loss : {"squared", "crps", "log"}
    component : str
        Named in the error message.

    Returns
    -------
    DataFrame
        A copy (``results`` itself for squared loss); ``attrs["loss"]`` names the loss.

    Raises
    ------
    UdbenchError
        Unknown loss, or results that hold no value of the loss's metrics (the message says
        how to score them).
    """
    if not loss_entry(component, loss, param="--loss").scored:
        return results
    primary = loss_column("rho_eu_risk", loss)
    if primary not in results.columns or not results[primary].notna().any():
        raise UdbenchError(
            f"{component}: these results hold no {loss} metrics (column {primary!r}); score "
            f"them with 'udbench score RESULTS --loss {loss}' (needs cells run with "
            "--keep-predictions), or run with 'udbench run ... --loss "
            f"{loss} --keep-predictions'"
        )
    df = results.copy()
    for k in LOSS_METRIC_KEYS:
        col = loss_column(k, loss)
        df[k] = df[col] if col in df.columns else np.nan
    df.attrs["loss"] = loss
    return df


def ranking_agreement(
    results: pd.DataFrame,
    loss: str,
    *,
    rank_by: str = "rho_eu_risk",
    rank_stat: str = "mean",
) -> tuple[float, int]:
    """Kendall's τ-b between the squared-loss method ranking and the ranking under ``loss``.

    Both rankings are the leaderboard's (:func:`udbench.evaluation.leaderboard.leaderboard`,
    same ``rank_by`` criterion and ``rank_stat``), the second on
    :func:`results_under_loss`; methods ranked in both count.

    Returns
    -------
    tau : float
        τ-b (:func:`udbench.evaluation.metrics.kendall_tau`); NaN when fewer than 2 methods
        are ranked in both or one ranking ties every method.
    n_methods : int
        Methods ranked in both.

    Raises
    ------
    UdbenchError
        As :func:`results_under_loss` and the leaderboard.
    """
    other = results_under_loss(results, loss)
    return frames_ranking_agreement(results, other, rank_by=rank_by, rank_stat=rank_stat)


def frames_ranking_agreement(
    base: pd.DataFrame,
    other: pd.DataFrame,
    *,
    rank_by: str = "rho_eu_risk",
    rank_stat: str = "mean",
) -> tuple[float, int]:
    """Kendall's τ-b between the leaderboard's method rankings of two results frames.

    Both rankings are :func:`udbench.evaluation.leaderboard.leaderboard`'s (same ``rank_by``
    criterion and ``rank_stat``); methods ranked in both count. The frames are typically
    the same rows under two losses (:func:`ranking_agreement`; the classification losses
    of :mod:`udbench.evaluation.board_loss`).

    Returns
    -------
    tau : float
        τ-b (:func:`udbench.evaluation.metrics.kendall_tau`); NaN when fewer than 2 methods
        are ranked in both or one ranking ties every method.
    n_methods : int
        Methods ranked in both.

    Raises
    ------
    UdbenchError
        As the leaderboard.
    """
    import warnings

    from udbench.evaluation.leaderboard import leaderboard
    from udbench.evaluation.metrics import kendall_tau

    ranks = []
    with warnings.catch_warnings():  # the caller's own leaderboard has warned already
        warnings.simplefilter("ignore")
        for frame in (base, other):
            board = leaderboard(
                frame, metrics=[rank_by], rank_by=rank_by, rank_stat=rank_stat, n_resamples=1
            )
            ranks.append(board.set_index("method")["rank"])
    both = pd.concat(ranks, axis=1, keys=["base", "other"]).dropna()
    if len(both) < 2:
        return float("nan"), len(both)
    tau = kendall_tau(both["base"].to_numpy(float), both["other"].to_numpy(float))
    return float(tau.value), len(both)
