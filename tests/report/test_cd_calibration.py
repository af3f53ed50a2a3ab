"""Critical-difference analysis (Friedman + Nemenyi) and calibration curves in the report."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from _fakes import KnnMethod, MeanMethod, make_fake_task, save_fake_task
from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.evaluation.ranking import critical_difference
from udbench.evaluation.runner import run_benchmark
from udbench.evaluation.store import read_results
from udbench.report._proxies import calibration_figure, cd_figure
from udbench.report.html import write_report


def _frame(table: dict[str, list[float]], metric: str = "rho_eu_risk") -> pd.DataFrame:
    rows = [
        {"task_id": f"t{t}", "method": m, "status": "ok", "noise": "linear", metric: v}
        for m, vals in table.items()
        for t, v in enumerate(vals)
    ]
    return pd.DataFrame(rows)


def test_mean_ranks_friedman_and_nemenyi_cd_by_hand():
    # 3 methods, 4 instances: a always best, b and c swap (ranks b: 2,3,2,3; c: 3,2,3,2)
    table = {"a": [0.9, 0.9, 0.9, 0.9], "b": [0.5, 0.1, 0.5, 0.1], "c": [0.1, 0.5, 0.1, 0.5]}
    cd = critical_difference(_frame(table))
    assert cd.methods == ["a", "b", "c"]
    np.testing.assert_allclose(cd.mean_ranks, [1.0, 2.5, 2.5])
    want = stats.friedmanchisquare(*(np.array(v) for v in table.values()))
    assert cd.friedman_statistic == pytest.approx(want.statistic)
    assert cd.friedman_p == pytest.approx(want.pvalue)
    # q_0.05 for k = 3 is 2.343 (Demšar 2006, Table 5a): CD = 2.343 √(3·4 / (6·4))
    assert cd.cd == pytest.approx(2.3437 * np.sqrt(0.5), abs=1e-3)
    # a−b differ by 1.5 < CD 1.657: one clique holds all three
    assert cd.cliques == [(0, 1, 2)]


def test_lower_is_better_metrics_and_separated_cliques():
    rng = np.random.default_rng(0)
    n = 40
    table = {"good": rng.uniform(0, 1, n), "mid": rng.uniform(1, 2, n), "bad": rng.uniform(2, 3, n)}
    cd = critical_difference(_frame(table, "crps"), "crps")
    assert cd.methods == ["good", "mid", "bad"]
    np.testing.assert_allclose(cd.mean_ranks, [1, 2, 3])
    assert cd.cliques == []  # every difference (1) exceeds CD ≈ 0.52
    assert cd.friedman_p < 1e-10
    fig = cd_figure(cd, "CRPS")
    assert fig.axes  # draws without error


def test_critical_difference_errors():
    df = _frame({"a": [1.0, 2.0], "b": [2.0, 1.0]})
    with pytest.raises(UdbenchError, match="metric"):
        critical_difference(df, "crps")
    with pytest.raises(UdbenchError, match="alpha"):
        critical_difference(df, alpha=1.5)
    one = _frame({"a": [1.0, 2.0]})
    with pytest.raises(UdbenchError, match="fewer than 2 methods"):
        critical_difference(one)


def test_report_draws_cd_diagrams_and_calibration_curves(tmp_path, capsys):
    for seed in range(3):
        save_fake_task(make_fake_task(seed, n_eval=100), tmp_path / "tasks")
    out = tmp_path / "res"
    run_benchmark(
        [tmp_path / "tasks"], [MeanMethod(), KnnMethod()], out, workers=0, keep_predictions=True
    )
    df = read_results(out)
    page = write_report(df, tmp_path / "rep", n_resamples=50, results_dir=out).read_text()
    assert (tmp_path / "rep" / "cd_rho_eu_risk.png").is_file()
    assert (tmp_path / "rep" / "cd_crps.png").is_file()
    assert (tmp_path / "rep" / "calibration.png").is_file()
    assert "Critical difference: CRPS" in page and "over-confident" in page
    # a metric without values: a note, no figure, no failure
    page = write_report(
        df.drop(columns=["ence"]), tmp_path / "rep2", n_resamples=50, cd_metrics=("ence",)
    ).read_text()
    assert "Critical-difference diagram of ENCE: not drawn" in page
    assert main(["report", str(out), "--out", str(tmp_path / "r3"), "--cd-metric", "bogus"]) == 2
    assert "--cd-metric" in capsys.readouterr().err


def test_calibration_figure_says_why_a_zero_variance_method_has_no_curve():
    y = np.linspace(-1, 1, 50)
    series = [
        ("ok", np.zeros(50), np.ones(50), y),
        ("degenerate", np.zeros(50), np.zeros(50), y),
    ]
    fig = calibration_figure(series, "t0", ["ok", "degenerate"])
    ok, degenerate = fig.axes
    assert ok.get_title().startswith("ok\narea") and len(ok.get_lines()) == 2
    assert degenerate.get_title() == "degenerate" and len(degenerate.get_lines()) == 1
    assert [t.get_text() for t in degenerate.texts] == [
        "not drawn:\nAU + EU = 0 at\n50 of 50 points"
    ]
