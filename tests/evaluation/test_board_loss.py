"""``udbench leaderboard --loss`` on classification results: log (default) or brier (issue 37).

The fake frame is tests/_classification_results.py's (three methods on four tasks) with the
Brier-target columns added by hand, so the Brier ranking differs from the log-loss one.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from _classification_results import METHODS, classification_rows
from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.evaluation.board_loss import (
    board_loss_names,
    default_board_loss,
    leaderboard_under_loss,
    results_under_board_loss,
)
from udbench.evaluation.leaderboard import leaderboard

#: ρ(EU, EU*_risk) against the Brier targets, per method, the same on every task: the
#: Brier ranking is A (0.8), C (0.5), B (0.1).
RHO_BRIER = {"A": 0.8, "B": 0.1, "C": 0.5}
#: Δ_ent against the Brier targets, per method.
DELTA_BRIER = {"A": -0.3, "B": 0.4, "C": 0.05}


def _rows() -> pd.DataFrame:
    df = classification_rows()
    df["task_type"] = "classification"
    df["cell_key"] = df["task_id"] + "|" + df["method"]
    df["rho_eu_risk_brier"] = df["method"].map(RHO_BRIER)
    df["rho_eu_var_brier"] = df["method"].map(RHO_BRIER) - 0.1
    df["rho_eu_point_brier"] = df["method"].map(RHO_BRIER) - 0.2
    df["rho_au_brier"] = 0.3
    df["delta_ent_risk_brier"] = df["method"].map(DELTA_BRIER)
    return df


def test_the_losses_of_each_task_type():
    assert board_loss_names("classification") == ("log", "brier")
    assert board_loss_names("regression") == ("squared", "crps", "log")
    assert default_board_loss("classification") == "log"
    assert default_board_loss("regression") == "squared"


def test_brier_swaps_the_brier_columns_in():
    df = _rows()
    assert results_under_board_loss(df, "log") is df  # the base loss: the frame itself
    swapped = results_under_board_loss(df, "brier")
    assert swapped.attrs["loss"] == "brier"
    np.testing.assert_array_equal(swapped["rho_eu_risk"], df["method"].map(RHO_BRIER))
    np.testing.assert_array_equal(swapped["delta_ent_risk"], df["method"].map(DELTA_BRIER))
    np.testing.assert_array_equal(swapped["rho_au"], np.full(len(df), 0.3))
    assert swapped["rho_eu_au"].isna().all()  # no rho_eu_au_brier column in the fake: NaN
    np.testing.assert_array_equal(swapped["nll"], df["nll"])  # label metrics untouched
    assert df["rho_eu_risk"].tolist() == classification_rows()["rho_eu_risk"].tolist()


def test_the_board_under_brier_and_its_tau_by_hand():
    df = _rows()
    base = leaderboard_under_loss(df, n_resamples=20)
    # log loss: mean ρ(EU, EU*_risk) A (0.9+0.7+0.2+0.2)/4 = 0.5, B 0.55, C 0.25 → B, A, C
    assert list(base["method"]) == ["B", "A", "C"]
    assert base.attrs["loss"] == "log" and "loss_tau" not in base.attrs
    assert base.set_index("method")["rho_eu_risk"].to_dict() == pytest.approx(
        {"A": 0.5, "B": 0.55, "C": 0.25}
    )
    board = leaderboard_under_loss(df, "brier", n_resamples=20)
    assert list(board["method"]) == ["A", "C", "B"]
    by = board.set_index("method")
    assert by["rho_eu_risk"].to_dict() == pytest.approx(RHO_BRIER)
    assert by["delta_ent_risk"].to_dict() == pytest.approx(DELTA_BRIER)
    assert by["rho_eu_var"].to_dict() == pytest.approx({m: RHO_BRIER[m] - 0.1 for m in METHODS})
    # ranks log (A 2, B 1, C 3) vs brier (A 1, B 3, C 2): pairs AB discordant, AC
    # concordant, BC discordant: τ = (1 − 2)/3
    assert board.attrs["loss_tau"] == pytest.approx(-1.0 / 3.0)
    assert board.attrs["loss_tau_methods"] == 3
    ranking = board.attrs["ranking"]
    assert ranking.startswith("loss: brier (ρ and Δ_ent against the Brier-score oracle targets")
    assert ranking.endswith("Kendall's τ with the log-loss ranking: -0.333 (3 methods)")
    # --by reads the Brier column: ranked by Δ_ent (higher first) B 0.4, C 0.05, A −0.3
    by_delta = leaderboard_under_loss(df, "brier", rank_by="delta_ent_risk", n_resamples=20)
    assert list(by_delta["method"]) == ["B", "C", "A"]
    # same τ as the two leaderboards computed directly
    plain = leaderboard(df, n_resamples=1).set_index("method")["rank"]
    brier = leaderboard(results_under_board_loss(df, "brier"), n_resamples=1)
    assert plain.to_dict() == {"B": 1, "A": 2, "C": 3}
    assert brier.set_index("method")["rank"].to_dict() == {"A": 1, "C": 2, "B": 3}


def test_a_loss_of_the_other_task_type_is_a_one_line_error():
    df = _rows()
    with pytest.raises(UdbenchError) as info:
        leaderboard_under_loss(df, "crps", component="udbench leaderboard")
    msg = str(info.value)
    assert msg == (
        "udbench leaderboard: parameter '--loss' must be one of ['log', 'brier'] for "
        "classification results; got 'crps'"
    )
    regression = df.drop(columns="task_type")
    with pytest.raises(UdbenchError) as info:
        leaderboard_under_loss(regression, "brier", component="udbench leaderboard")
    assert str(info.value) == (
        "udbench leaderboard: parameter '--loss' must be one of ['squared', 'crps', 'log']; "
        "got 'brier'"
    )
    with pytest.raises(UdbenchError, match="hold no brier metrics"):
        results_under_board_loss(df.drop(columns="rho_eu_risk_brier"), "brier")


def test_cli_leaderboard_loss_brier(tmp_path, capsys):
    path = tmp_path / "results.parquet"
    _rows().to_parquet(path)
    assert main(["leaderboard", str(path), "--loss", "brier", "--json", "--n-resamples", "20"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert [r["method"] for r in records] == ["A", "C", "B"]
    assert {r["method"]: r["rho_eu_risk"] for r in records} == pytest.approx(RHO_BRIER)
    assert main(["leaderboard", str(path), "--loss", "brier", "--n-resamples", "20"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "loss: brier" in text and "Kendall's τ with the log-loss ranking: -0.333" in text
    assert "Brier score: AU* = E_F(1 − ‖π_F‖²)" in text  # the legend says which AU*
    assert "ρ EU·risk" in text and "ρ EU·risk B" not in text  # plain names shown
    assert main(["leaderboard", str(path), "--loss", "log", "--json", "--n-resamples", "20"]) == 0
    assert [r["method"] for r in json.loads(capsys.readouterr().out)] == ["B", "A", "C"]
    assert main(["leaderboard", str(path), "--n-resamples", "20"]) == 0
    assert "Kendall" not in capsys.readouterr().out  # default: log loss, no τ
    assert main(["leaderboard", str(path), "--loss", "squared"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "parameter '--loss' must be one of ['log', 'brier'] for classification results" in err
    assert "got 'squared'" in err
