"""Leaderboard (hand-computed means, restrictions, ranks) and the HTML report."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from _fakes import KnnMethod, MeanMethod, make_fake_task, save_fake_task
from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.evaluation.leaderboard import leaderboard, leaderboard_records
from udbench.evaluation.metrics import bootstrap_ci
from udbench.evaluation.runner import run_benchmark
from udbench.report.html import shell_table, task_grid, write_report


def _row(task, method, noise, rho, *, status="ok", const=False, au=0.5, rmse=1.0):
    return {
        "cell_key": f"{task}|{method}|h",
        "task_id": task,
        "method": method,
        "method_label": method,
        "noise": noise,
        "constant_aleatoric": const,
        "status": status,
        "rho_eu_risk": rho if status == "ok" else np.nan,
        "rho_eu_var": rho / 2 if status == "ok" else np.nan,
        "rho_eu_point": 0.1,
        "rho_au": np.nan if const else au,
        "delta_ent_risk": np.nan if const else -au / 10,
        "rmse": rmse,
        "dataset": "toy",
        "seed": int(task[-1]),
    }


@pytest.fixture
def results():
    rows = [
        # method A (heteroscedastic AU): 3 instances, the homoscedastic one must not enter rho_au
        _row("t1", "A", "smooth-monotone", 0.6, au=0.4),
        _row("t2", "A", "u-shaped", 0.4, au=0.2),
        _row("t3", "A", "homoscedastic", 0.2, au=0.9),
        # method B (constant AU): better rho on t1, t2; failed on t3
        _row("t1", "B", "smooth-monotone", 0.7, const=True),
        _row("t2", "B", "u-shaped", 0.5, const=True),
        _row("t3", "B", "homoscedastic", 0.0, const=True, status="failed"),
    ]
    return pd.DataFrame(rows)


def test_leaderboard_means_restrictions_counts_and_rank(results):
    board = leaderboard(results, n_resamples=500).set_index("method")
    a, b = board.loc["A"], board.loc["B"]
    assert a["rho_eu_risk"] == pytest.approx(0.4) and a["rho_eu_risk_n"] == 3
    assert b["rho_eu_risk"] == pytest.approx(0.6) and b["rho_eu_risk_n"] == 2
    assert a["rho_au"] == pytest.approx(0.3) and a["rho_au_n"] == 2  # homoscedastic t3 excluded
    assert a["delta_ent_risk"] == pytest.approx(-0.03)
    assert math.isnan(b["rho_au"]) and b["rho_au_n"] == 0  # constant AU: undefined
    assert (a["n_valid"], a["n_failed"], b["n_valid"], b["n_failed"]) == (3, 0, 2, 1)
    # complete instances t1, t2: B ranks first on both -> mean ranks 1 and 2
    assert (b["mean_rank"], a["mean_rank"]) == (1.0, 2.0)
    assert (b["rank"], a["rank"]) == (1, 2)
    # the interval is exactly udbench's bootstrap_ci over A's three instances
    ci = bootstrap_ci(
        np.array([0.6, 0.4, 0.2]), n_resamples=500, random_state="leaderboard:A:rho_eu_risk"
    )
    assert (a["rho_eu_risk_low"], a["rho_eu_risk_high"]) == (ci.low, ci.high)
    assert a["rho_eu_risk_low"] <= 0.4 <= a["rho_eu_risk_high"]


def test_leaderboard_records_are_json_ready(results):
    recs = leaderboard_records(leaderboard(results, n_resamples=200))
    text = json.dumps(recs)
    assert "NaN" not in text
    need = {
        "method",
        "rho_eu_risk",
        "rho_eu_var",
        "rho_eu_point",
        "rho_au",
        "delta_ent_risk",
        "rmse",
        "n_valid",
        "n_failed",
        "rank",
    }
    assert all(need <= set(r) for r in recs)
    assert [r["method"] for r in recs] == ["B", "A"] and recs[0]["rho_au"] is None


def test_leaderboard_errors(results):
    with pytest.raises(UdbenchError, match="results table is empty"):
        leaderboard(results.iloc[:0])
    with pytest.raises(UdbenchError, match="'rank_by' must be one of"):
        leaderboard(results, rank_by="accuracy")


def test_rank_by_au_leaves_constant_au_methods_unranked(results):
    # B has constant AU, so ρ(AU, AU*) is undefined for it everywhere: it must get no rank
    # (not a shared last place); with a third heteroscedastic method C ranked against A.
    extra = pd.DataFrame(
        [
            _row("t1", "C", "smooth-monotone", 0.1, au=0.9),
            _row("t2", "C", "u-shaped", 0.1, au=0.8),
            _row("t3", "C", "homoscedastic", 0.1, au=0.1),
        ]
    )
    both = pd.concat([results, extra], ignore_index=True)
    board = leaderboard(both, rank_by="rho_au", n_resamples=100)
    ranks = dict(zip(board["method"], board["rank"], strict=True))
    assert ranks["C"] == 1 and ranks["A"] == 2 and ranks["B"] is pd.NA
    assert list(board["method"]) == ["C", "A", "B"]
    rec = {r["method"]: r for r in leaderboard_records(board)}
    assert rec["B"]["rank"] is None and rec["B"]["mean_rank"] is None
    assert rec["C"]["mean_rank"] == 1.0


def test_rank_by_rmse_prefers_lower(results):
    res = results.copy()
    res.loc[res["method"] == "A", "rmse"] = 0.5
    board = leaderboard(res, rank_by="rmse", n_resamples=100)
    assert list(board["method"]) == ["A", "B"]


@pytest.fixture(scope="module")
def fake_results(tmp_path_factory):
    root = tmp_path_factory.mktemp("rep")
    for seed, noise in enumerate(("smooth-monotone", "homoscedastic", "u-shaped")):
        save_fake_task(make_fake_task(seed, noise=noise), root / "tasks")
    run_benchmark(
        [root / "tasks"],
        [MeanMethod(), KnnMethod()],
        root / "res",
        workers=0,
    )
    return root / "res"


def test_report_writes_html_and_figures(fake_results, tmp_path):
    from udbench.evaluation.store import read_results

    df = read_results(fake_results)
    path = write_report(df, tmp_path / "rep", n_resamples=200)
    text = path.read_text()
    pngs = ("eu_rho.png", "au_rho.png", "entanglement.png", "shells.png")
    # and the critical-difference diagrams of rho_eu_risk and crps (issue 24)
    for png in (*pngs, "cd_rho_eu_risk.png", "cd_crps.png"):
        data = (tmp_path / "rep" / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert text.count("data:image/png;base64,") == 6
    assert "Task grid" in text and "smooth-monotone" in text and "udbench" in text
    assert "n/a (constant AU)" in text  # fake-mean has constant AU
    assert text.count("<tr>") >= 6 + 2  # per-instance table has every cell
    assert "<td>None</td>" not in text  # ok cells show an empty error, not "None"
    grid = task_grid(df)
    assert grid["noise"] == ["homoscedastic", "smooth-monotone", "u-shaped"]
    shells = shell_table(df)
    knn = df[df["method"] == "fake-knn"]
    assert shells.loc["fake-knn", "shell4"] == pytest.approx(knn["rho_eu_risk_shell4"].mean())
    assert shells.loc["fake-knn", "outer_minus_inner"] == pytest.approx(
        knn["rho_eu_risk_shell4"].mean() - knn["rho_eu_risk_shell0"].mean()
    )


def test_cli_leaderboard_json_csv_and_report(fake_results, tmp_path, capsys):
    assert main(["leaderboard", str(fake_results), "--json", "--n-resamples", "100"]) == 0
    recs = json.loads(capsys.readouterr().out)
    assert {r["method"] for r in recs} == {"fake-mean", "fake-knn"}
    assert all(r["n_valid"] == 3 and r["n_failed"] == 0 for r in recs)
    assert main(["leaderboard", str(fake_results), "--csv", "--n-resamples", "100"]) == 0
    csv = capsys.readouterr().out.splitlines()
    assert csv[0].startswith("method,rank,rank_value,mean_rank,n_valid,n_failed") and len(csv) == 3
    assert main(["leaderboard", str(fake_results), "--n-resamples", "100"]) == 0
    assert "fake-knn" in capsys.readouterr().out
    assert main(["report", str(fake_results), "--out", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "report.html").is_file()
    # the analyses of udbench analyze are written beside it and linked
    assert (tmp_path / "r" / "analyses" / "tables" / "headline.csv").is_file()
    page = (tmp_path / "r" / "report.html").read_text()
    assert "href='analyses/tables/stability.tex'" in page


def test_cli_user_errors_are_one_line(tmp_path, capsys):
    assert main(["leaderboard", str(tmp_path / "nothing")]) == 2
    err = " ".join(capsys.readouterr().err.split())  # rich wraps at 80 columns
    assert "must be a results directory or Parquet file" in err and "Traceback" not in err
    assert main(["leaderboard", str(tmp_path), "--json", "--csv"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "'--json/--csv' must be given alone" in err
