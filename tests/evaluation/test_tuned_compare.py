"""The tuned-vs-untuned comparison table (issue 36, item 3) on a small fake results frame."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from udbench._validation import UdbenchError
from udbench.analyses.tuned_compare import tuned_vs_untuned
from udbench.evaluation.metrics import bootstrap_ci

OFFSETS = np.array([-0.1, -0.05, 0.0, 0.05, 0.1])  # mean 0: each method's mean is exact
TASKS = [f"t{i}" for i in range(len(OFFSETS))]


def _frame(means: dict[str, float], suffix: str = "") -> pd.DataFrame:
    rows = []
    for method, mean in means.items():
        for task, off in zip(TASKS, OFFSETS, strict=True):
            rows.append(
                {
                    "cell_key": f"{task}|{method}{suffix}|h",
                    "task_id": task,
                    "task_sha256": f"sha-{task}",
                    "method": method,
                    "method_label": method + suffix,
                    "status": "ok",
                    "rho_eu_risk": mean + off,
                }
            )
    return pd.DataFrame(rows)


UNTUNED = {"a": 0.8, "b": 0.6, "c": 0.4, "d": 0.2}
TUNED = {"a": 0.7, "b": 0.75, "c": 0.3, "d": 0.9}


def test_means_ranks_tau_and_moves_equal_hand_computed_values():
    out = tuned_vs_untuned(_frame(UNTUNED), _frame(TUNED, "[tuned]"), n_resamples=400)
    t = out.table.set_index("method")
    # tuned order d, b, a, c; untuned a, b, c, d
    assert list(out.table["method"]) == ["d", "b", "a", "c"]
    assert t["rank_untuned"].to_dict() == {"a": 1, "b": 2, "c": 3, "d": 4}
    assert t["rank_tuned"].to_dict() == {"d": 1, "b": 2, "a": 3, "c": 4}
    assert t["rank_move"].to_dict() == {"a": -2, "b": 0, "c": -1, "d": 3}
    for m in UNTUNED:
        assert t.loc[m, "mean_untuned"] == pytest.approx(UNTUNED[m], abs=1e-12)
        assert t.loc[m, "mean_tuned"] == pytest.approx(TUNED[m], abs=1e-12)
        assert t.loc[m, "n_untuned"] == t.loc[m, "n_tuned"] == 5
    # intervals: the leaderboard's percentile bootstrap of the per-instance values
    ci = bootstrap_ci(UNTUNED["a"] + OFFSETS, n_resamples=400, random_state=0)
    assert t.loc["a", "low_untuned"] < UNTUNED["a"] < t.loc["a", "high_untuned"]
    assert t.loc["a", "high_untuned"] - t.loc["a", "low_untuned"] == pytest.approx(
        ci.high - ci.low, rel=0.5
    )
    # pairs: (a,c), (b,c) concordant; (a,b), (a,d), (b,d), (c,d) discordant: τ = (2 - 4) / 6
    assert out.tau == pytest.approx(-1.0 / 3.0, abs=1e-12) and out.tau_note is None
    ref = stats.kendalltau([1, 2, 3, 4], [3, 2, 4, 1]).statistic
    assert out.tau == pytest.approx(ref, abs=1e-12)
    assert [m["method"] for m in out.moves] == ["d", "a", "c"]  # b did not move
    assert out.moves[0] == {"method": "d", "rank_untuned": 4.0, "rank_tuned": 1.0, "rank_move": 3.0}
    text = out.markdown()
    assert "Kendall's τ-b between the orderings: -0.333" in text and "d 4 → 1" in text


def test_a_method_in_one_run_only_is_listed_and_moves_no_other_method():
    tuned = _frame({"a": 0.7, "b": 0.75, "c": 0.3}, "[tuned]")
    untuned = _frame({"a": 0.8, "b": 0.6, "c": 0.4, "e": 0.7})  # e between a and b
    out = tuned_vs_untuned(untuned, tuned, n_resamples=200)
    t = out.table.set_index("method")
    assert list(out.table["method"]) == ["b", "a", "c", "e"]
    # ranked among a, b, c (both runs): e does not push b to 3 in the untuned run
    assert t["rank_untuned"].to_dict() == pytest.approx(
        {"a": 1, "b": 2, "c": 3, "e": np.nan}, nan_ok=True
    )
    assert t.loc["b", "rank_move"] == 1 and t.loc["c", "rank_move"] == 0
    assert np.isnan(t.loc["e", "rank_move"]) and np.isnan(t.loc["e", "rank_tuned"])
    assert t.loc["e", "mean_untuned"] == pytest.approx(0.7, abs=1e-12)  # still shown
    assert out.tau == pytest.approx(1.0 / 3.0, abs=1e-12)  # (a, b) swapped
    # two methods in both: τ would be ±1 whatever the data, so none (as the per-factor τ)
    two = tuned_vs_untuned(_frame({"a": 0.8, "b": 0.6}), _frame({"a": 0.7, "b": 0.75}, "[tuned]"))
    assert np.isnan(two.tau) and two.tau_note == "needs >= 3 methods with both values (have 2)"
    assert "Kendall's τ-b between the orderings: – (needs >= 3" in two.markdown()


def test_bad_input_is_an_error_naming_it():
    with pytest.raises(UdbenchError, match="tuned results table is empty"):
        tuned_vs_untuned(_frame(UNTUNED), pd.DataFrame())
    with pytest.raises(UdbenchError, match="'tuned' must be a results DataFrame"):
        tuned_vs_untuned(_frame(UNTUNED), "results/tuned")  # type: ignore[arg-type]
    with pytest.raises(UdbenchError, match="top"):
        tuned_vs_untuned(_frame(UNTUNED), _frame(TUNED), top=-1)


def test_tau_intervals_pooled_and_per_factor_level():
    # every instance shifts all methods alike, so every bootstrap replicate keeps both
    # orderings: the interval is the point τ itself, pooled and within each dataset
    untuned, tuned = _frame(UNTUNED), _frame(TUNED, "[tuned]")
    for df in (untuned, tuned):
        df["dataset"] = df["task_id"].map(lambda t: "x" if t in ("t0", "t1", "t2") else "y")
    out = tuned_vs_untuned(untuned, tuned, n_resamples=300)
    taus = out.taus.set_index(["factor", "level"])
    assert list(taus.index) == [("all", "all"), ("dataset", "x"), ("dataset", "y")]
    for key in taus.index:
        row = taus.loc[key]
        assert row["tau"] == pytest.approx(-1.0 / 3.0, abs=1e-12)
        assert row["tau_low"] == pytest.approx(row["tau"]) == pytest.approx(row["tau_high"])
        assert row["n_methods"] == 4
    assert taus.loc[("dataset", "x"), "n_instances"] == 3
    assert taus.loc[("all", "all"), "n_instances"] == 5
    assert "| dataset | y | -0.333 [-0.333, -0.333] | 4 | 2 |" in out.markdown()
    # no factor columns: the pooled row only
    assert list(tuned_vs_untuned(_frame(UNTUNED), _frame(TUNED, "[tuned]")).taus["factor"]) == [
        "all"
    ]


def test_instances_where_the_metric_is_undefined_are_named_beside_the_table():
    """A tuned method whose EU is constant on two instances: its mean is over the other three
    (as the leaderboard's), and the comparison names the method, the run, the count and the
    reason the rows give."""
    tuned = _frame(TUNED, "[tuned]")
    tuned["metric_notes"] = ""
    flat = (tuned["method"] == "b") & tuned["task_id"].isin(["t0", "t4"])
    tuned.loc[flat, "rho_eu_risk"] = np.nan
    tuned.loc[flat, "metric_notes"] = "rho_eu_risk: EU is constant; rho_eu_var: EU is constant"
    out = tuned_vs_untuned(_frame(UNTUNED), tuned, n_resamples=200)
    t = out.table.set_index("method")
    assert t.loc["b", "n_tuned"] == 3 and t.loc["b", "n_untuned"] == 5
    assert t.loc["b", "mean_tuned"] == pytest.approx(0.75, abs=1e-12)  # t1..t3 offsets: mean 0
    assert out.undefined == [
        {"run": "tuned", "method": "b", "n_undefined": 2, "n_ok": 5, "reason": "EU is constant"}
    ]
    assert (
        "rho_eu_risk is undefined on some instances, left out of the method's mean (as "
        "`udbench leaderboard` does): b tuned: 2 of 5 (EU is constant)."
    ) in out.markdown()
    clean = tuned_vs_untuned(_frame(UNTUNED), _frame(TUNED, "[tuned]"), n_resamples=200)
    assert clean.undefined == [] and "undefined" not in clean.markdown()


def test_the_undefined_count_skips_rows_without_a_label_and_homoscedastic_au_rows():
    from udbench.analyses.tuned_compare import _undefined

    tuned = _frame(TUNED, "[tuned]")
    tuned.loc[0, "rho_eu_risk"] = np.nan  # a, t0
    stray = tuned.iloc[[1]].assign(method=np.nan, method_label=np.nan, rho_eu_risk=np.nan)
    both = pd.concat([tuned, stray], ignore_index=True)
    got = _undefined(both, "tuned", "rho_eu_risk")
    assert [(u["method"], u["n_undefined"], u["n_ok"], u["reason"]) for u in got] == [
        ("a", 1, 5, "")
    ]
    # ρ(AU, AU*) is not taken on homoscedastic rows (as the leaderboard): not "undefined"
    au = both.assign(rho_au=np.nan, noise="homoscedastic")
    assert _undefined(au, "tuned", "rho_au") == []


@pytest.mark.parametrize("blank", [None, "", "  "])
def test_a_row_without_a_method_label_is_refused_by_name(blank):
    """udbench writes a label on every row; a table with a row without one is refused with
    the table's name, the rule and the count (before, the labels' clean-up crashed)."""
    tuned = _frame(TUNED, "[tuned]")
    tuned.loc[3, "method_label"] = blank
    with pytest.raises(UdbenchError) as err:
        tuned_vs_untuned(_frame(UNTUNED), tuned, n_resamples=50)
    msg = str(err.value)
    assert "parameter 'tuned' must have a method label ('method_label') on every row" in msg
    assert "1 row(s) without one (first: task 't3')" in msg
    with pytest.raises(UdbenchError, match="parameter 'untuned' must have a 'method_label'"):
        tuned_vs_untuned(_frame(UNTUNED).drop(columns=["method", "method_label"]), tuned)
