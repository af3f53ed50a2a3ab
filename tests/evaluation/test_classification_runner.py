"""``udbench run`` on classification task files (issue 37, items 3–5).

One tiny ``gpc`` task (a synthetic problem: 30 evaluation and 40 training inputs, 2 features,
K = 3, short chains) is made once per module with
:func:`udbench.tasks.generate.make_classification_task`; the cells run in this process.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from _fakes import save_toy_gpc_task
from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.evaluation.classification import classification_instance_metrics
from udbench.evaluation.classification_cell import CLASSIFICATION_METRIC_KEYS
from udbench.evaluation.leaderboard import leaderboard
from udbench.evaluation.metrics import spearman
from udbench.evaluation.runner import run_benchmark
from udbench.evaluation.scoring import _per_shell
from udbench.evaluation.selective import selective_columns
from udbench.evaluation.store import ResultsStore, read_results
from udbench.methods.classification import BaseClassifier, ClassPrediction
from udbench.methods.classifiers import make_classifier
from udbench.risk import brier_decomposition, classification_oracle_targets
from udbench.tasks import Task
from udbench.tasks.generate import get_prior

N_EVAL, N_TRAIN, K = 30, 40, 3
FAST = "logreg-lap:n_samples=50"


def _make_task(folder: Path, n_classes: int) -> Path:
    return save_toy_gpc_task(folder, n_classes, N_EVAL, N_TRAIN)


@pytest.fixture(scope="module")
def task_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("UDBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        get_prior.cache_clear()
        yield _make_task(tmp_path_factory.mktemp("gpc-tasks"), K)
        get_prior.cache_clear()


@pytest.fixture(scope="module")
def results(task_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("results")
    summary = run_benchmark([task_path], [FAST], out, workers=0, keep_predictions=True)
    assert (summary.n_ok, summary.n_failed) == (1, 0), summary.failures
    return out


def _brier_by_hand(task: Task, pred: ClassPrediction) -> dict[str, float]:
    """The Brier columns from the Brier decomposition itself (paper A.6), one by one."""
    dec = brier_decomposition(task.draws_prob, pred.probs)
    star = {
        "risk": dec.generalized_variance + dec.deployment_gap,
        "var": dec.generalized_variance,
        "point": ((task.pi_star_eval - pred.probs) ** 2).sum(axis=1),
    }
    eu, au = pred.epistemic, pred.aleatoric  # the log-loss prediction's own terms
    want = {"rho_au_brier": spearman(au, dec.au).value}
    want["rho_eu_au_brier"] = spearman(eu, au).value
    for t, s in star.items():
        want[f"rho_eu_{t}_brier"] = spearman(eu, s).value
        want[f"delta_ent_{t}_brier"] = spearman(eu, au).value - spearman(s, dec.au).value
        want[f"rho_eu_au_star_{t}_brier"] = spearman(s, dec.au).value
    shell = np.asarray(task.shell_eval)
    for k in range(5):
        m = shell == k
        for t in ("risk", "var"):
            value = spearman(eu[m], star[t][m]).value if m.sum() >= 3 else float("nan")
            want[f"rho_eu_{t}_shell{k}_brier"] = value
    return want


def test_a_classifier_row_equals_the_metrics_computed_by_hand(task_path, results) -> None:
    (row,) = read_results(results).to_dict(orient="records")
    task = Task.load(task_path)
    clf = make_classifier("logreg-lap", n_samples=50, random_state=int(row["method_seed"]))
    pred = clf.fit(task.X_train, task.y_train, n_classes=K).predict(task.X_eval)
    targets = classification_oracle_targets(
        np.asarray(task.draws_prob, dtype=np.float64), pred.probs, task.pi_star_eval
    )
    want = classification_instance_metrics(
        pred.probs, pred.aleatoric, pred.epistemic, targets, task.y_eval
    )
    for key in ("risk", "var", "point"):  # the ground-truth part of Δ_ent
        star = getattr(targets, f"eu_{key}")
        want[f"rho_eu_au_star_{key}"] = spearman(star, targets.au).value
    want.update(selective_columns(pred.probs, task.y_eval, pred.aleatoric, pred.epistemic))
    want.update(_per_shell(pred.epistemic, targets.eu_risk, targets.eu_var, task.shell_eval))
    want.update(_brier_by_hand(task, pred))
    assert {"selective_auc_eu", "rho_eu_var_shell4"} <= set(CLASSIFICATION_METRIC_KEYS)
    assert {"rho_eu_risk_brier", "rho_eu_var_shell4_brier"} <= set(CLASSIFICATION_METRIC_KEYS)
    for key in CLASSIFICATION_METRIC_KEYS:
        assert row[key] == pytest.approx(want[key], rel=1e-12, abs=1e-12, nan_ok=True), key
    assert np.isfinite(row["rho_eu_risk"]) and 0.0 <= row["accuracy"] <= 1.0
    assert row["status"] == "ok" and row["task_type"] == "classification"
    assert (row["n_classes"], row["difficulty"], row["loss"]) == (K, "medium", "multiclass_log")
    assert (row["dataset"], row["family"], row["noise"], row["coverage"], row["seed"]) == (
        "toy",
        "gpc",
        "u-shaped",
        "balanced",
        0,
    )
    assert row["task_id"] == task.spec.task_id and row["method"] == "logreg-lap"
    assert row["fit_time_s"] > 0 and row["predict_time_s"] > 0
    assert "rmse" not in row and "crps" not in row  # regression-only columns
    assert 0.0 <= row["selective_auc_eu"] <= 1.0 and 0.0 <= row["selective_auc_total"] <= 1.0
    shells = np.asarray(task.shell_eval)
    for s in range(5):  # NaN below 3 points of the shell, else a Spearman ρ
        value = row[f"rho_eu_risk_shell{s}"]
        assert np.isnan(value) if (shells == s).sum() < 3 else -1.0 <= value <= 1.0
    kept = ResultsStore(results).read_predictions(row["cell_key"])
    probs = kept[[f"prob_{k}" for k in range(K)]].to_numpy()
    np.testing.assert_allclose(probs, pred.probs, rtol=1e-12)
    np.testing.assert_allclose(kept["epistemic"], pred.epistemic, rtol=1e-12)


class _OffSimplex(BaseClassifier):
    """Rows summing to 0.9, through the validated ``predict`` or around it."""

    name: ClassVar[str] = "off-simplex"
    family: ClassVar[str] = "linear"

    def __init__(self, skip_checks: bool = False, random_state: int | None = 0) -> None:
        self.skip_checks = skip_checks
        self.random_state = random_state

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        self.fitted_ = True

    def _predict(self, X: np.ndarray, loss: str) -> ClassPrediction:
        n, k = X.shape[0], self.n_classes_
        zeros = np.zeros(n)
        return ClassPrediction(np.full((n, k), 0.9 / k), zeros, zeros, loss)

    def predict(self, X: Any, loss: str = "multiclass_log") -> ClassPrediction:
        if self.skip_checks:  # a user's classifier that does not check its own output
            return self._predict_unchecked(X, loss)
        return super().predict(X, loss)


@pytest.mark.parametrize("skip_checks", [False, True])
def test_probabilities_off_the_simplex_are_a_recorded_failure(
    task_path, tmp_path, skip_checks
) -> None:
    summary = run_benchmark(
        [task_path], [_OffSimplex(skip_checks=skip_checks)], tmp_path, workers=0
    )
    assert (summary.n_ok, summary.n_failed) == (0, 1)
    (row,) = read_results(tmp_path).to_dict(orient="records")
    assert row["status"] == "failed" and "\n" not in row["error"]
    assert row["error"].startswith("invalid prediction:")
    assert "rows summing to 1" in row["error"]
    assert np.isnan(row["rho_eu_risk"]) and row["task_type"] == "classification"


class _Underflow(BaseClassifier):
    """Confident one-hot probabilities (an exact 0 in every other class, as a float32 softmax
    underflows) on the first half of the points, uniform on the rest; EU rises with x₀."""

    name: ClassVar[str] = "underflow"
    family: ClassVar[str] = "linear"

    def __init__(self, random_state: int | None = 0) -> None:
        self.random_state = random_state

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        self.fitted_ = True

    def _predict(self, X: np.ndarray, loss: str) -> ClassPrediction:
        n, k = X.shape[0], self.n_classes_
        probs = np.full((n, k), 1.0 / k)
        probs[: n // 2] = np.eye(k)[0]
        return ClassPrediction(probs, np.ones(n), np.asarray(X[:, 0], float) - X[:, 0].min(), loss)


def test_probabilities_that_underflowed_to_zero_are_floored_and_noted(task_path, tmp_path) -> None:
    from udbench.methods.classification import PROB_FLOOR
    from udbench.tuning.objective import PROB_FLOOR as TUNING_FLOOR

    assert PROB_FLOOR == TUNING_FLOOR == 1e-12  # one floor for tuning and scoring
    summary = run_benchmark([task_path], [_Underflow()], tmp_path, workers=0)
    assert (summary.n_ok, summary.n_failed) == (1, 0)
    (row,) = read_results(tmp_path).to_dict(orient="records")
    task = Task.load(task_path)
    n = len(task.y_eval)
    assert f"floored at {n // 2} point(s)" in row["metric_notes"]
    # the NLL by hand with the floored, renormalised probabilities: finite, not +inf
    k = np.asarray(task.draws_prob).shape[-1]
    p = np.full((n, k), 1.0 / k)
    p[: n // 2] = np.maximum(np.eye(k)[0], PROB_FLOOR)
    p /= p.sum(axis=1, keepdims=True)
    y = np.asarray(task.y_eval)
    assert row["nll"] == pytest.approx(-np.mean(np.log(p[np.arange(n), y])), rel=1e-12)
    assert np.isfinite(row["rho_eu_risk"])


def test_a_classifier_on_a_regression_task_is_a_recorded_failure(tmp_path) -> None:
    from _fakes import make_fake_task

    path = make_fake_task().save(tmp_path / "toy.npz")
    summary = run_benchmark([path], [FAST], tmp_path / "out", workers=0)
    assert summary.n_failed == 1
    (row,) = read_results(tmp_path / "out").to_dict(orient="records")
    assert "method 'logreg-lap' is a classification method and task" in row["error"]
    assert "is a regression task" in row["error"] and "\n" not in row["error"]


def test_the_leaderboard_ranks_classification_results(results, capsys) -> None:
    board = leaderboard(read_results(results), n_resamples=50)
    assert board.attrs["task_type"] == "classification"
    assert list(board["method"]) == [FAST] and int(board["rank"][0]) == 1
    assert {"accuracy", "nll", "brier", "ece"} <= set(board.columns)
    assert "rmse" not in board.columns
    assert board["rho_au_n"][0] == 1  # AU* varies in x: no homoscedastic restriction
    capsys.readouterr()
    assert main(["leaderboard", str(results), "--n-resamples", "50"]) == 0
    out = capsys.readouterr().out
    assert "acc." in out and "NLL" in out and "logreg-lap" in out
    assert main(["leaderboard", str(results), "--by", "ece", "--n-resamples", "50"]) == 0
    capsys.readouterr()
    brier = ["--columns", "rho_eu_risk,rho_eu_risk_brier,rho_au_brier", "--n-resamples", "50"]
    assert main(["leaderboard", str(results), *brier]) == 0
    out = capsys.readouterr().out
    assert "ρ EU·risk B" in out and "ρ AU·AU* B" in out and "Brier-score oracle" in out
    assert main(["leaderboard", str(results), *brier, "--json", "--by", "rho_eu_risk_brier"]) == 0
    (record,) = json.loads(capsys.readouterr().out)
    (row,) = read_results(results).to_dict(orient="records")  # one instance: its value
    assert record["rho_eu_risk_brier"] == pytest.approx(row["rho_eu_risk_brier"])
    assert record["rho_au_brier"] == pytest.approx(row["rho_au_brier"])


def test_a_folder_mixing_task_types_is_refused_by_the_leaderboard(
    task_path, results, tmp_path
) -> None:
    import shutil

    from _fakes import MeanMethod, make_fake_task

    mixed = tmp_path / "mixed"
    shutil.copytree(results, mixed)
    path = make_fake_task().save(tmp_path / "toy.npz")
    run_benchmark([path], [MeanMethod()], mixed, workers=0)
    with pytest.raises(UdbenchError, match="mix regression and classification rows") as info:
        leaderboard(read_results(mixed), n_resamples=50)
    assert "--family" in str(info.value)
    gpc = read_results(mixed)
    assert len(leaderboard(gpc[gpc["family"] == "gpc"], n_resamples=50)) == 1


def test_udbench_run_takes_a_classifier_name(task_path, tmp_path, capsys) -> None:
    args = ["run", str(task_path), "-m", FAST, "--out", str(tmp_path), "--workers", "0"]
    assert main([*args, "--no-progress", "--loss", "crps"]) == 0
    assert "1 ok, 0 failed" in capsys.readouterr().out
    (row,) = read_results(tmp_path).to_dict(orient="records")
    assert "rho_eu_risk_crps" not in row  # regression losses: no columns in a classification row


def test_udbench_methods_lists_the_classifiers(capsys) -> None:
    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    assert "classification tasks" in out and "logreg-lap" in out and "nn-ens" in out
    assert main(["methods", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["logreg-lap"]["task_type"] == "classification"
    assert rows["gp"]["task_type"] == "regression"
    assert main(["methods", "logreg-lap"]) == 0
    assert "prior_precision" in capsys.readouterr().out


@pytest.mark.slow
def test_the_classification_quickstart_ranks_its_classifiers(tmp_path) -> None:
    from udbench.recipes.quickstart import quickstart_classification

    # a regression quickstart's folders in the same --out: neither is read nor written
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "not-a-task.npz").write_bytes(b"regression quickstart's")
    board = quickstart_classification(tmp_path, workers=0, methods=("logreg-lap",))
    assert list(board["method"]) == ["logreg-lap"] and int(board["n_valid"][0]) == 4
    assert len(list((tmp_path / "classification" / "tasks").glob("*.npz"))) == 4
    assert len(read_results(tmp_path / "classification" / "results")) == 4
    assert sorted(p.name for p in (tmp_path / "tasks").iterdir()) == ["not-a-task.npz"]
    assert not (tmp_path / "results").exists()


def test_a_two_class_task_gets_its_brier_columns(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("UDBENCH_CACHE_DIR", str(tmp_path / "cache"))
    get_prior.cache_clear()
    try:
        path = _make_task(tmp_path, 2)
        summary = run_benchmark([path], [FAST], tmp_path / "out", workers=0)
    finally:
        get_prior.cache_clear()
    assert (summary.n_ok, summary.n_failed) == (1, 0), summary.failures
    (row,) = read_results(tmp_path / "out").to_dict(orient="records")
    task = Task.load(path)
    assert row["n_classes"] == 2 and row["loss"] == "multiclass_log"
    clf = make_classifier("logreg-lap", n_samples=50, random_state=int(row["method_seed"]))
    pred = clf.fit(task.X_train, task.y_train, n_classes=2).predict(task.X_eval)
    for key, value in _brier_by_hand(task, pred).items():
        assert row[key] == pytest.approx(value, rel=1e-12, abs=1e-12, nan_ok=True), key
    assert np.isfinite(row["rho_eu_risk_brier"]) and np.isfinite(row["rho_au_brier"])


def test_runner_rows_fill_the_proxy_and_shell_analyses(task_path, tmp_path) -> None:
    """The runner stores the selective-prediction and per-shell columns, so the analyses that
    read them give numbers (before, these columns were absent: τ NaN, the shell table refused).
    Two classifiers, three configurations: τ-b needs at least 3 methods."""
    from udbench.analyses.classification import (
        classification_proxy_table,
        classification_shell_table,
    )

    methods = [FAST, f"{FAST},prior_precision=30", "gpc-lap:n_samples=50"]
    summary = run_benchmark([task_path], methods, tmp_path, workers=0)
    assert (summary.n_ok, summary.n_failed) == (3, 0), summary.failures
    rows = read_results(tmp_path)
    table = classification_proxy_table(rows, n_resamples=20)
    pooled = table[table["factor"] == "all"].set_index(["criterion", "proxy"])
    for proxy in ("selective_auc_eu", "selective_auc_total"):
        assert np.isfinite(pooled.loc[("eu", proxy), "tau"]), proxy
        assert pooled.loc[("eu", proxy), "n_methods"] == 3
    shells = classification_shell_table(rows, n_resamples=20).set_index("method")
    counts = np.bincount(np.asarray(Task.load(task_path).shell_eval), minlength=5)
    for s in range(5):  # a shell of 3 or more evaluation points has its ρ
        col = shells[f"shell{s}"]
        assert col.notna().all() if counts[s] >= 3 else col.isna().all(), (s, counts)
    assert (counts >= 3).any()
    # without the runner's columns (rows written before them): NaN τ, no shell table
    old = rows.drop(columns=[c for c in rows.columns if "selective" in c or "_shell" in c])
    before = classification_proxy_table(old, n_resamples=20)
    assert before[before["proxy"] == "selective_auc_eu"]["tau"].isna().all()
    with pytest.raises(UdbenchError, match="shell0"):
        classification_shell_table(old, n_resamples=20)
