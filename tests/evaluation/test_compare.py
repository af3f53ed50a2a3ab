"""``udbench compare``: paired per-method differences on the cells two results folders share."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.evaluation.compare import compare_results
from udbench.evaluation.metrics import bootstrap_ci


def _rows(method: str, values: dict[str, float], sha: dict[str, str] | None = None):
    return [
        {
            "cell_key": f"{t}|{method}|h",
            "task_id": t,
            "task_sha256": (sha or {}).get(t, f"sha-{t}"),
            "method": method,
            "method_label": method,
            "status": "ok" if np.isfinite(v) else "failed",
            "rho_eu_risk": v,
            "rmse": 2.0 * v,
        }
        for t, v in values.items()
    ]


def test_paired_differences_on_common_cells_only():
    a = pd.DataFrame(
        _rows("x", {"t0": 0.1, "t1": 0.2, "t2": 0.3, "t3": 0.5, "t4": 0.9})
        + _rows("only-a", {"t0": 0.0})
    )
    # t0..t2: common; t3 other task content in b (not compared); t4 only in a; t5 only in b
    b = pd.DataFrame(
        _rows("x", {"t0": 0.2, "t1": 0.4, "t2": 0.3, "t3": 0.0, "t5": 0.7}, sha={"t3": "other"})
    )
    (row,) = compare_results(a, b, n_resamples=300).to_dict(orient="records")
    assert row["method"] == "x"
    assert (row["n_common"], row["n_only_a"], row["n_only_b"], row["n_changed_task"]) == (
        3,
        1,
        1,
        1,
    )
    diffs = np.array([0.1, 0.2, 0.0])
    assert row["rho_eu_risk_diff"] == pytest.approx(diffs.mean())
    assert row["rho_eu_risk_a"] == pytest.approx(0.2) and row["rho_eu_risk_b"] == pytest.approx(0.3)
    ci = bootstrap_ci(diffs, n_resamples=300, random_state="compare:x:rho_eu_risk")
    assert (row["rho_eu_risk_low"], row["rho_eu_risk_high"]) == pytest.approx((ci.low, ci.high))
    assert row["rmse_diff"] == pytest.approx(2 * diffs.mean())  # target units
    assert np.isnan(row["rho_au_diff"]) and row["rho_au_n"] == 0  # absent metric: undefined


def test_identical_runs_differ_by_exactly_zero_and_errors():
    a = pd.DataFrame(_rows("x", {"t0": 0.1, "t1": 0.4, "t2": 0.3}))
    (row,) = compare_results(a, a.copy(), n_resamples=100).to_dict(orient="records")
    assert (row["rho_eu_risk_diff"], row["rho_eu_risk_low"], row["rho_eu_risk_high"]) == (0, 0, 0)
    with pytest.raises(UdbenchError, match="'b' must share at least one method label"):
        compare_results(a, pd.DataFrame(_rows("y", {"t0": 0.1})))
    with pytest.raises(UdbenchError, match="a results table is empty"):
        compare_results(a, a.iloc[:0])


def test_cli_compare(tmp_path, capsys):
    a = pd.DataFrame(_rows("x", {"t0": 0.1, "t1": 0.4, "t2": 0.3}))
    b = pd.DataFrame(_rows("x", {"t0": 0.3, "t1": 0.5, "t2": 0.3}))
    a.to_parquet(tmp_path / "a.parquet")
    b.to_parquet(tmp_path / "b.parquet")
    args = [str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet"), "--n-resamples", "100"]
    assert main(["compare", *args, "--json"]) == 0
    (rec,) = json.loads(capsys.readouterr().out)
    assert rec["n_common"] == 3 and rec["rho_eu_risk_diff"] == pytest.approx(0.1)
    assert rec["rho_au_diff"] is None
    assert main(["compare", *args]) == 0
    assert "+0.1 [" in capsys.readouterr().out


def test_a_tuned_run_pairs_label_tuned_with_label():
    """`udbench compare UNTUNED TUNED`: blr[tuned] in B against blr in A (a user found no
    CLI way to compare a run --tuned folder with a default one); a label both hold still
    pairs with itself, and a folder with both forms pairs exactly only."""
    a = pd.DataFrame(_rows("blr", {"t0": 0.1, "t1": 0.4, "t2": 0.3}) + _rows("gp", {"t0": 0.5}))
    tuned = _rows("blr", {"t0": 0.3, "t1": 0.5, "t2": 0.3}) + _rows("gp", {"t0": 0.6})
    for r in tuned[:3]:
        r["method_label"] = "blr[tuned]"
    rows = compare_results(a, pd.DataFrame(tuned), n_resamples=100).to_dict(orient="records")
    assert [(r["method_a"], r["method"]) for r in rows] == [("blr", "blr[tuned]"), ("gp", "gp")]
    assert rows[0]["n_common"] == 3 and rows[0]["rho_eu_risk_diff"] == pytest.approx(0.1)
    # the tuned run's fallback cells hold plain blr too: both pairs, the tuned one kept
    fallback = pd.DataFrame(tuned + _rows("blr", {"t3": 0.2}))
    rows = compare_results(a, fallback, n_resamples=100).to_dict(orient="records")
    assert [(r["method_a"], r["method"]) for r in rows] == [
        ("blr", "blr"),
        ("blr", "blr[tuned]"),
        ("gp", "gp"),
    ]
    assert rows[1]["rho_eu_risk_diff"] == pytest.approx(0.1)
    # A holds blr[tuned] itself: exact pairs only, nothing invented
    both = pd.concat([a, pd.DataFrame(tuned[:3])])
    rows = compare_results(both, pd.DataFrame(tuned), n_resamples=100).to_dict(orient="records")
    assert [(r["method_a"], r["method"]) for r in rows] == [
        ("blr[tuned]", "blr[tuned]"),
        ("gp", "gp"),
    ]
