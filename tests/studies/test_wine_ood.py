"""The wine OOD study (paper D.3): matching, references, partial Spearman, analysis, CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from _fakes import KnnMethod, MeanMethod, make_fake_task, save_fake_task
from udbench._validation import UdbenchError
from udbench.evaluation.runner import run_benchmark
from udbench.evaluation.store import ResultsStore, read_results
from udbench.studies import wine_ood as wo
from udbench.tasks import Task


def _shells(n: int, d: int, scale: float, rng: np.random.Generator) -> np.ndarray:
    """Points whose directions are uniform and radii scale·χ_d: classes differ in distance only."""
    return scale * rng.standard_normal((n, d))


# ------------------------------------------------------------------------ distance matching
def test_matching_keeps_equal_counts_per_bin() -> None:
    rng = np.random.default_rng(3)
    d_neg = np.abs(rng.normal(0.0, 1.0, 1500))
    d_pos = np.abs(rng.normal(1.0, 1.5, 900))
    m = wo.distance_match(d_neg, d_pos, 20, rng=1)
    assert m.edges.size == 21
    b_neg = np.bincount(m.bins(d_neg[m.negatives]), minlength=20)
    b_pos = np.bincount(m.bins(d_pos[m.positives]), minlength=20)
    np.testing.assert_array_equal(b_neg, b_pos)
    # in every bin the smaller of the two counts is kept
    full_neg = np.bincount(m.bins(d_neg), minlength=20)
    full_pos = np.bincount(m.bins(d_pos), minlength=20)
    np.testing.assert_array_equal(b_neg, np.minimum(full_neg, full_pos))
    assert len(set(m.negatives)) == m.negatives.size  # no point drawn twice
    # deterministic for a seed, another seed draws other points
    again = wo.distance_match(d_neg, d_pos, 20, rng=1)
    np.testing.assert_array_equal(again.negatives, m.negatives)
    assert not np.array_equal(wo.distance_match(d_neg, d_pos, 20, rng=2).negatives, m.negatives)


def test_distance_score_is_near_chance_after_matching() -> None:
    # classes that differ only in their distance from the training centre
    rng = np.random.default_rng(0)
    d = 4
    X_train = _shells(2000, d, 1.0, rng)
    X_white = _shells(3000, d, 1.0, rng)
    X_red = _shells(3000, d, 1.6, rng)
    s_w = wo.mahalanobis_distance(X_train, X_white)
    s_r = wo.mahalanobis_distance(X_train, X_red)
    assert wo.auroc(s_w, s_r) > 0.8  # all points: distance separates the classes
    m = wo.distance_match(s_w, s_r, 20, rng=0)
    assert m.negatives.size > 500
    assert abs(wo.auroc(s_w[m.negatives], s_r[m.positives]) - 0.5) < 0.05
    # a score that is a monotone function of the distance too
    k_w, k_r = wo.knn_distance(X_train, X_white), wo.knn_distance(X_train, X_red)
    assert abs(wo.auroc(k_w[m.negatives], k_r[m.positives]) - 0.5) < 0.08


def test_mahalanobis_distance_matches_the_closed_form() -> None:
    rng = np.random.default_rng(1)
    X_train = rng.normal(size=(400, 3)) @ np.array([[2.0, 0, 0], [0.5, 1.0, 0], [0, 0, 0.3]])
    X = rng.normal(size=(5, 3))
    mu = X_train.mean(0)
    S = np.cov(X_train, rowvar=False)
    ref = np.sqrt([(x - mu) @ np.linalg.solve(S, x - mu) for x in X])
    np.testing.assert_allclose(wo.mahalanobis_distance(X_train, X), ref, rtol=1e-9)


def test_auroc_closed_form_and_bad_matching_input() -> None:
    assert wo.auroc([0.0, 1.0], [2.0, 3.0]) == 1.0
    assert wo.auroc([2.0, 3.0], [0.0, 1.0]) == 0.0
    assert wo.auroc([1.0, 2.0], [1.0, 3.0]) == pytest.approx(0.625)  # pairs: ½ + 0 + 1 + 1 of 4
    assert np.isnan(wo.auroc([], [1.0]))
    with pytest.raises(UdbenchError, match="n_bins"):
        wo.distance_match([1.0], [2.0], 0)
    with pytest.raises(UdbenchError, match="finite"):
        wo.distance_match([np.nan], [2.0], 5)


# ----------------------------------------------------------------------- supervised reference
def test_supervised_reference_on_separable_and_identical_classes() -> None:
    rng = np.random.default_rng(2)
    a = rng.normal(size=(300, 3))
    far = rng.normal(size=(300, 3)) + 6.0
    same = rng.normal(size=(300, 3))
    assert wo.supervised_auroc(a, far, 5, 0) > 0.99
    assert abs(wo.supervised_auroc(a, same, 5, 0) - 0.5) < 0.08
    assert np.isnan(wo.supervised_auroc(a[:3], far, 5, 0))  # fewer points than folds


# --------------------------------------------------------------------------- partial Spearman
def test_partial_spearman_equals_hand_computation() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    y = np.array([20.0, 10.0, 40.0, 30.0, 50.0])  # ranks 2 1 4 3 5
    z = np.array([0.1, 0.3, 0.2, 0.5, 0.4])  # ranks 1 3 2 5 4
    # by hand (no ties: ρ = 1 − 6 Σd² / (n(n² − 1)), n = 5): Σd² = 4, 4, 14
    r_xy, r_xz, r_yz = 1 - 24 / 120, 1 - 24 / 120, 1 - 84 / 120  # 0.8, 0.8, 0.3
    hand = (r_xy - r_xz * r_yz) / np.sqrt((1 - r_xz**2) * (1 - r_yz**2))
    assert hand == pytest.approx(0.56 / np.sqrt(0.36 * 0.91))
    assert wo.partial_spearman(x, y, z) == pytest.approx(hand, abs=1e-12)
    # invariant under monotone transforms; NaN when z explains x entirely
    assert wo.partial_spearman(np.exp(x), y**3, z) == pytest.approx(hand, abs=1e-12)
    assert np.isnan(wo.partial_spearman(x, y, x))
    with pytest.raises(UdbenchError, match="length"):
        wo.partial_spearman(x, y, z[:4])


# ----------------------------------------------------------------------- analysis on fakes
def _fake_ood_task(seed: int) -> Task:
    task = make_fake_task(seed, n_train=40, n_eval=60, d=3, dataset="toywine")
    arrays = task.arrays()
    rng = np.random.default_rng(seed)
    m = 50
    X_q = 0.5 + 0.9 * (rng.uniform(size=(m, 3)) - 0.5) * 2.0  # wider than the pool: "red"
    dist = np.linalg.norm(X_q - 0.5, axis=1)
    var_q = 0.01 + 0.2 * dist**2
    arrays.update(
        query_idx=np.arange(m, dtype=np.int64),
        X_query=X_q,
        post_mean_query=np.zeros(m),
        post_var_query=var_q,
        draws_query=np.sqrt(var_q) * rng.standard_normal((arrays["draws"].shape[0], m)),
    )
    return Task(task.spec, arrays, {"query": {"name": "toyred", "n_query": m}}, task.prior)


def test_analysis_on_fake_tasks_writes_tables_and_figures(tmp_path) -> None:
    tasks = tmp_path / "tasks"
    for s in range(3):
        save_fake_task(_fake_ood_task(s), tasks)
    res = tmp_path / "results"
    summary = run_benchmark(
        [tasks],
        [("mean", MeanMethod()), ("knn", KnnMethod())],
        res,
        workers=0,
        keep_predictions=True,
    )
    assert summary.n_ok == 6
    # the predictions at the query points are stored beside the pool's
    store = ResultsStore(res)
    key = str(read_results(res)["cell_key"].iloc[0])
    assert len(store.read_predictions(key)) == 60
    assert "point_set" not in store.read_predictions(key).columns
    assert len(store.read_predictions(key, points="query")) == 50
    assert set(store.read_predictions(key, points="all")["point_set"]) == {"eval", "query"}
    out = wo.analyse(res, tasks, tmp_path / "analysis", n_resamples=50, n_bins=5)
    auroc = out.tables["auroc"]
    assert {"mean", "knn", *wo.REFERENCE_SCORES} <= set(auroc.index)
    assert (auroc.loc[["mean", "knn"], "auroc_all_n"] == 3).all()
    # MeanMethod's EU is the squared distance to the training mean: AUROC from the pooled rows
    inst = out.tables["instances"]
    row = inst[(inst["score"] == "mean")].iloc[0]
    t = Task.load(tasks / f"{row['task_id']}.npz")
    c = np.asarray(t.X_train).mean(0)
    eu_w = ((np.asarray(t.X_eval) - c) ** 2).sum(1)
    eu_r = ((np.asarray(t.X_query) - c) ** 2).sum(1)
    assert row["auroc_all"] == pytest.approx(wo.auroc(eu_w, eu_r), abs=1e-12)
    mean_all = inst[inst["score"] == "mean"]["auroc_all"].mean()
    assert auroc.loc["mean", "auroc_all"] == pytest.approx(mean_all, abs=1e-12)
    lo, hi = auroc.loc["mean", ["auroc_all_low", "auroc_all_high"]]
    assert lo <= mean_all <= hi
    w = out.tables["kendall_w"]
    assert set(w["version"]) == {"all", "matched"} and (w["n_methods"] == 2).all()
    assert w["kendall_w"].between(0, 1).all()  # two methods: W is 0 or 1
    for name in ("auroc.csv", "auroc.tex", "kendall_w.tex", "variance_ratio.csv"):
        assert (tmp_path / "analysis" / "tables" / name).is_file()
    assert (tmp_path / "analysis" / "figures" / "auroc.png").stat().st_size > 1000
    summary_json = json.loads((tmp_path / "analysis" / "summary.json").read_text())
    assert summary_json["n_instances"] == 3


def test_analysis_needs_tasks_with_query_points(tmp_path) -> None:
    tasks = tmp_path / "tasks"
    save_fake_task(make_fake_task(0), tasks)
    with pytest.raises(UdbenchError, match="query points"):
        wo.analyse(tmp_path / "none", tasks, tmp_path / "a", n_resamples=10)


# ----------------------------------------------------------------------------- the command
def _fake_results_with_time(folder, seconds: float) -> None:
    store = ResultsStore(folder)
    store.write_cell(
        {
            "cell_key": "x|blr|h|s",
            "status": "ok",
            "method": "blr",
            "dataset": "white_wine",
            "fit_time_s": seconds,
            "predict_time_s": 0.0,
        }
    )


def test_cli_asks_for_yes_above_an_hour(tmp_path, data_dir, capsys) -> None:
    from udbench.cli import main

    measured = tmp_path / "measured"
    _fake_results_with_time(measured, 3600.0)  # one blr fit: one wall-clock hour
    args = ["study", "wine-ood", "--out", str(tmp_path / "study"), "--methods", "blr"]
    args += ["--families", "gp", "--seeds", "0-1", "--measured", str(measured)]
    assert main(args) == 2
    err = " ".join(capsys.readouterr().err.split())
    # a results folder's cells measure elapsed time: wall-clock hours, never called CPU time
    assert "measured wall (1)" in err and "2 h wall" in err
    assert "this run: 2 instances × 1 methods = 2 fits; measured 2 h wall-clock" in err
    assert (
        "projected cost of this run is 2 h wall-clock (measured elapsed time, not CPU), 2 h "
        "counted against the limit of 1 h (wall-clock hours counted as CPU-hours" in err
    )
    assert "--yes" in err and "2 CPU-h" not in err and "CPU-h measured" not in err
    assert not (tmp_path / "study" / "tasks").exists()  # nothing generated
    assert main([*args, "--methods", "nope"]) == 2
    assert "methods" in capsys.readouterr().err
    # nothing measured for gp: its cost is unknown, which is not shown to be under the hour
    args = ["study", "wine-ood", "--out", str(tmp_path / "study"), "--methods", "blr,gp"]
    args += ["--families", "gp", "--seeds", "0", "--measured", str(measured)]
    assert main(args) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "the cost of 1 stage(s) is not measured yet (run gp)" in err and "--yes" in err
    assert not (tmp_path / "study" / "tasks").exists()


def test_cli_projection_leaves_out_finished_cells(tmp_path, data_dir, capsys) -> None:
    """A stopped study that is resumed is asked for --yes only for the work still to do."""
    from udbench.cli import main

    measured = tmp_path / "measured"
    _fake_results_with_time(measured, 3600.0)  # one blr fit: one wall-clock hour
    args = ["study", "wine-ood", "--out", str(tmp_path / "study"), "--methods", "blr"]
    args += ["--families", "gp", "--seeds", "0-2", "--measured", str(measured)]
    assert main(args) == 2
    assert "this run is 3 h wall-clock" in " ".join(capsys.readouterr().err.split())
    # seed 0's blr cell is finished (an ok row in the study's results): 2 of 3 fits are left
    ResultsStore(tmp_path / "study" / "results").write_cell(
        {
            "cell_key": "w0|blr",
            "status": "ok",
            "task_id": "white_wine__gp__smooth-monotone__balanced__s0",
            "method": "blr",
            "dataset": "white_wine",
            "fit_time_s": 3600.0,  # the study's own cells are measurements too
            "predict_time_s": 0.0,
        }
    )
    assert main(args) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "this run is 2 h wall-clock" in err and "(to do: 3 instances, 2 fits)" in err
    assert not (tmp_path / "study" / "tasks").exists()  # still nothing generated


@pytest.mark.slow
def test_small_study_end_to_end_and_resume(tmp_path, data_dir, capsys) -> None:
    from udbench.cli import main

    args = ["study", "wine-ood", "--out", str(tmp_path / "s"), "--families", "gp"]
    args += ["--seeds", "0", "--methods", "blr", "--smoke", "--fidelity", "smoke"]
    args += ["--draws", "40", "--n-query", "150", "--workers", "0", "--n-resamples", "100"]
    args += ["--yes"]  # nothing is measured yet: an unknown cost asks for --yes
    args += ["--data-dir", str(data_dir)]
    assert main(args) == 0, capsys.readouterr().err
    task = Task.load(next((tmp_path / "s" / "tasks").glob("*.npz")))
    q = task.query()
    assert q is not None and q["X_query"].shape == (150, 11)
    assert task.diagnostics["query"]["name"] == "red_wine"
    assert np.all(q["post_var_query"] > 0)
    auroc = pd.read_csv(tmp_path / "s" / "analysis" / "tables" / "auroc.csv", index_col=0)
    assert {"blr", "ref:mahalanobis", "ref:classifier-cv5"} <= set(auroc.index)
    assert auroc.loc["ref:mahalanobis", "auroc_all"] > 0.8  # red wines are far from white
    capsys.readouterr()
    # a re-run generates nothing and runs no cell again
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "0 generated" in err and "1 already done" in err


class _NanFarMethod(MeanMethod):
    """Valid at the evaluation pool, NaN EU outside the unit cube (the query points)."""

    name = "fake-nan-far"

    def _predict(self, X: np.ndarray):  # type: ignore[no-untyped-def]
        pred = super()._predict(X)
        eu = np.where(np.any(X > 1.0, axis=1), np.nan, pred.epistemic)
        return type(pred)(pred.mean, pred.aleatoric, eu)


def test_an_invalid_prediction_at_the_query_points_is_a_failed_cell(tmp_path) -> None:
    tasks = tmp_path / "tasks"
    save_fake_task(_fake_ood_task(0), tasks)
    summary = run_benchmark([tasks], [("bad", _NanFarMethod())], tmp_path / "r", workers=0)
    assert summary.n_failed == 1
    row = read_results(tmp_path / "r").iloc[0]
    assert row["status"] == "failed" and "query" in row["error"]
