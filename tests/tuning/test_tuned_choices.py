"""What the tuner chose (issue 36, item 3): tuned values over sweeps against the default,
on hand-made records."""

from __future__ import annotations

import json

import pytest

from udbench.tuning.choices import (
    changes_markdown,
    largest_changes,
    tuned_choices,
    tuned_choices_markdown,
)

SPACE = {
    "lr": {"type": "float", "low": 1e-4, "high": 1e-1, "log": True},
    "depth": {"type": "int", "low": 2, "high": 10},
    "act": {"type": "categorical", "choices": ["relu", "tanh"]},
}
BASE = json.dumps({"method": "m", "params": {"lr": 0.01, "depth": 6, "act": "relu"}})


def _rec(lr: float, depth: int, act: str, status: str = "ok") -> dict:
    tuned = {"lr": lr, "depth": depth, "act": act} if status == "ok" else None
    return {"method": "m", "status": status, "tuned_params": tuned, "search_space": SPACE,
            "base_config": BASE}  # fmt: skip


def test_median_range_mode_and_edge_shares_by_hand() -> None:
    recs = [
        _rec(1e-4, 2, "tanh"),  # lr at the low edge (log scale), depth at the low edge
        _rec(1e-3, 5, "tanh"),
        _rec(0.099, 10, "relu"),  # lr within 2 % of the log range of the high edge; depth too
        _rec(0.05, 7, "tanh"),  # log10 0.05 = -1.30: 10 % of the log range from the top
        _rec(0.5, 3, "relu", status="failed"),  # no complete trial: skipped
    ]
    t = tuned_choices(recs).set_index("param")
    assert list(t.index) == ["act", "depth", "lr"] and set(t["n"]) == {4}
    assert t.loc["lr", "default"] == 0.01 and t.loc["depth", "default"] == 6
    assert t.loc["lr", "median"] == pytest.approx((1e-3 + 0.05) / 2)
    assert (t.loc["lr", "low"], t.loc["lr", "high"]) == (1e-4, 0.099)
    assert t.loc["lr", "share_at_edge"] == pytest.approx(0.5)
    assert t.loc["depth", "median"] == 5.0  # of 2, 5, 7, 10: the lower middle, a chosen value
    assert t.loc["depth", "share_at_edge"] == pytest.approx(0.5)
    assert t.loc["act", "kind"] == "categorical" and t.loc["act", "median"] == "tanh"
    assert t.loc["act", "share_mode"] == pytest.approx(0.75)
    # each edge apart, against what a uniform choice gives at one edge: 2 % of a float's
    # range; of depth's 9 values {2..10}, only 2 lies within 2 % of the range (0.16) of 2
    assert (t.loc["lr", "share_at_low"], t.loc["lr", "share_at_high"]) == (0.25, 0.25)
    assert (t.loc["depth", "share_at_low"], t.loc["depth", "share_at_high"]) == (0.25, 0.25)
    assert t.loc["lr", "edge_chance"] == pytest.approx(0.02)
    assert t.loc["depth", "edge_chance"] == pytest.approx(1 / 9)
    assert t.loc["act", "edge_chance"] != t.loc["act", "edge_chance"]  # NaN: categorical
    text = tuned_choices_markdown(tuned_choices(recs))
    assert "| m | act | relu | tanh (75%) | – | – | – |" in text
    assert "| m | lr | 0.01 | 0.0255 | 0.0001–0.099 | 50% | 25% / 25% (2%) |" in text
    assert "| m | depth | 6 | 5 | 2–10 | 50% | 25% / 25% (11%) |" in text


def test_edge_chance_of_a_layer_count_is_one_value_in_three() -> None:
    from udbench.tuning.choices import edge_chance

    assert edge_chance({"type": "int", "low": 1, "high": 3}) == pytest.approx(1 / 3)
    # a wide integer range: the values within 2 % of its span (4) of the low end, 5 of 201
    assert edge_chance({"type": "int", "low": 50, "high": 250}) == pytest.approx(5 / 201)
    assert edge_chance({"type": "float", "low": 1e-6, "high": 1e-2, "log": True}) == 0.02


def test_no_complete_record_gives_an_empty_table() -> None:
    t = tuned_choices([_rec(0.1, 2, "relu", status="failed")])
    assert t.empty and "share_at_edge" in t.columns


def test_largest_changes_rank_by_log_ratio_and_skip_small_ones() -> None:
    """lr's median 0.0255 against 0.01: |log 2.55| = 0.94 first; act: 'tanh' in 3 of 4 sweeps
    against the default 'relu' ranks by its share, 0.75; depth's median is the default."""
    recs = [_rec(1e-4, 2, "tanh"), _rec(1e-3, 5, "tanh"), _rec(0.099, 10, "relu")]
    recs += [_rec(0.05, 7, "tanh")]
    t = tuned_choices(recs)
    assert largest_changes(t, "m") == ["lr 0.01 → 0.0255", "act relu → tanh (75%)"]
    assert largest_changes(t, "m", top=1) == ["lr 0.01 → 0.0255"]
    assert largest_changes(t, "other") == []
    # a factor of 1.2 is below the threshold (1.25); a default of 0 moves by the absolute
    # difference relative to 1e-12, i.e. any change counts
    base = json.dumps({"method": "m", "params": {"lr": 0.01, "depth": 0, "act": "relu"}})
    near = [{**_rec(0.012, 1, "relu"), "base_config": base}]
    assert largest_changes(tuned_choices(near), "m") == ["depth 0 → 1"]


def test_changes_markdown_puts_the_largest_rank_move_first() -> None:
    import math

    import pandas as pd

    kept = [{**_rec(0.011, 6, "relu"), "method": "a"}]  # within a factor 1.25 of every default
    t = tuned_choices([_rec(1e-3, 6, "relu"), _rec(1e-3, 6, "relu"), *kept])
    comparison = pd.DataFrame(
        {
            "method": ["a", "m", "solo"],
            "rank_untuned": [1.0, 2.0, math.nan],
            "rank_tuned": [1.0, 3.0, math.nan],
            "rank_move": [0.0, -1.0, math.nan],
            "mean_untuned": [0.5, 0.4, math.nan],
            "mean_tuned": [0.6, 0.3, 0.2],
        }
    )
    md = changes_markdown(comparison, t, "rho_eu_risk")
    rows = [line for line in md.splitlines() if line.startswith("| ") and "→" in line]
    assert rows[0].startswith("| method | rank untuned → tuned | rho_eu_risk untuned → tuned")
    assert rows[1] == "| m | 2 → 3 | 0.400 → 0.300 | lr 0.01 → 0.001 |"
    assert rows[2] == "| a | 1 → 1 | 0.500 → 0.600 | none so large |"
    # no record of the method was read: no claim that the tuner kept its defaults
    assert rows[3] == "| solo | – → – | – → 0.200 | no tuning record found |"
