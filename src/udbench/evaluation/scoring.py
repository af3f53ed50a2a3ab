"""Scoring one cell: the oracle targets of a task and the metrics of one prediction on it.

:func:`score_prediction` computes the oracle targets of SPEC §1
(:func:`udbench.risk.oracle_targets`) from the task's reference posterior, ground truth and
noise, the per-instance metrics of SPEC §10
(:func:`udbench.evaluation.metrics.instance_metrics`) and the Spearman ρ of EU with EU*_risk
and EU*_var inside each coverage shell (SPEC §3), and the proxy metrics of
:mod:`udbench.evaluation.proxies` (NLL, CRPS, interval coverage and width, …) against the
task's noisy targets (:func:`udbench.evaluation.proxies.noisy_targets`). The run loop
(:mod:`udbench.evaluation.runner`) stores what it returns as the metric columns of a row.
"""

from __future__ import annotations

import numpy as np

from udbench.data import N_SHELLS
from udbench.evaluation.metrics import RANK_METRIC_KEYS
from udbench.evaluation.proxies import PROXY_KEYS
from udbench.methods.base import Prediction
from udbench.tasks import Task

__all__ = ["METRIC_KEYS", "N_SHELLS", "PROXY_KEYS", "score_prediction"]

#: Per-instance metrics stored in every row (SPEC §10; ``instance_metrics`` keys).
METRIC_KEYS: tuple[str, ...] = (*RANK_METRIC_KEYS, "rmse", "nmse")


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
    task: Task,
    pred: Prediction,
    *,
    constant_aleatoric: bool = False,
    losses: tuple[str, ...] = (),
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
    losses : tuple of {"crps", "log"}, default ()
        Also score under these losses (:func:`udbench.evaluation.losses.loss_metrics`:
        oracle targets from the reference draws, the method's terms from its Gaussian
        predictive), adding the columns ``<key>_<loss>``. Empty (the default): squared loss
        only, exactly as before.

    Returns
    -------
    metrics : dict
        :data:`METRIC_KEYS` (from :func:`udbench.evaluation.metrics.instance_metrics`,
        SPEC §10) plus ``rho_eu_risk_shell{s}`` and ``rho_eu_var_shell{s}`` for s = 0…4,
        and the proxy metrics :data:`udbench.evaluation.proxies.PROXY_KEYS` against the
        noisy targets ``noisy_targets(task.spec.task_id, task.f_eval, task.noise_var_eval)``;
        with ``losses``, also :data:`udbench.evaluation.losses.LOSS_METRIC_KEYS` per loss.
    notes : str or None
        Reasons for undefined metrics, if ``instance_metrics`` gave any.
    """
    from udbench.evaluation.metrics import instance_metrics
    from udbench.evaluation.proxies import noisy_targets, proxy_metrics
    from udbench.risk import oracle_targets

    targets = oracle_targets(
        np.asarray(pred.mean, dtype=np.float64),
        np.asarray(task.post_mean, dtype=np.float64),
        np.asarray(task.post_var, dtype=np.float64),
        np.asarray(task.noise_var_eval, dtype=np.float64),
        np.asarray(task.f_eval, dtype=np.float64),
    )
    raw = instance_metrics(pred, targets, constant_aleatoric=constant_aleatoric)
    f_eval = np.asarray(task.f_eval, dtype=np.float64)
    y = noisy_targets(task.spec.task_id, f_eval, task.noise_var_eval)
    proxies = proxy_metrics(pred.mean, pred.aleatoric, pred.epistemic, y, f_eval)
    reasons = "; ".join(str(r) for r in (raw["nan_reasons"], proxies["nan_reasons"]) if r)
    raw = {**raw, **{k: v for k, v in proxies.items() if k != "nan_reasons"}}
    raw["nan_reasons"] = reasons
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
    if losses:
        from udbench.evaluation.losses import loss_metrics

        extra, extra_notes = loss_metrics(task, pred, losses, constant_aleatoric=constant_aleatoric)
        metrics.update(extra)
        notes.extend(extra_notes)
    return metrics, ("; ".join(notes) if notes else None)
