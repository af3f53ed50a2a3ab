"""What the tuner chose (issue 36, item 3): tuned values over sweeps against the default,
on hand-made records."""

from __future__ import annotations

import json

import pytest

from udbench.tuning.choices import tuned_choices, tuned_choices_markdown

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
    assert t.loc["depth", "median"] == pytest.approx(6.0)
    assert t.loc["depth", "share_at_edge"] == pytest.approx(0.5)
    assert t.loc["act", "kind"] == "categorical" and t.loc["act", "median"] == "tanh"
    assert t.loc["act", "share_mode"] == pytest.approx(0.75)
    text = tuned_choices_markdown(tuned_choices(recs))
    assert "| m | act | relu | tanh (75%) | – | – |" in text
    assert "| m | lr | 0.01 | 0.0255 | 0.0001–0.099 | 50% |" in text


def test_no_complete_record_gives_an_empty_table() -> None:
    t = tuned_choices([_rec(0.1, 2, "relu", status="failed")])
    assert t.empty and "share_at_edge" in t.columns
