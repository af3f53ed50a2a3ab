"""Proxy metrics on the leaderboard: --metrics columns, ranking direction, old rows."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

from _fakes import make_fake_task, save_fake_task
from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.commands._board import parse_metrics, print_board
from udbench.evaluation.leaderboard import leaderboard
from udbench.evaluation.proxies import PROXY_KEYS


def _frame() -> pd.DataFrame:
    rows = []
    # method: (crps, picp_95) per instance — "a" best CRPS, "c" closest coverage
    spec = {"a": (0.1, 0.80), "b": (0.2, 0.90), "c": (0.3, 0.95)}
    for m, (crps, picp) in spec.items():
        for t in range(4):
            rows.append(
                {
                    "task_id": f"t{t}",
                    "method": m,
                    "method_label": m,
                    "status": "ok",
                    "noise": "linear",
                    "rho_eu_risk": {"a": 0.2, "b": 0.5, "c": 0.8}[m] + 0.01 * t,
                    "crps": crps + 0.01 * t,
                    "picp_95": picp,
                }
            )
    return pd.DataFrame(rows)


def test_proxy_ranks_by_its_own_direction():
    df = _frame()
    board = leaderboard(df, metrics=["rho_eu_risk", "crps"], rank_by="crps", n_resamples=50)
    assert board["method"].tolist() == ["a", "b", "c"]  # lower CRPS first
    assert board.loc[0, "crps"] == pytest.approx(0.115)
    board = leaderboard(df, metrics=["rho_eu_risk", "picp_95"], rank_by="picp_95", n_resamples=50)
    assert board["method"].tolist() == ["c", "b", "a"]  # closest to 0.95 first
    assert board["rank_value"].tolist() == pytest.approx([0.0, 0.05, 0.15])
    assert "|PICP 95% − 0.95|" in board.attrs["ranking"]


def test_old_rows_without_proxies_show_nan():
    df = _frame().drop(columns=["crps", "picp_95"])
    board = leaderboard(df, metrics=["rho_eu_risk", "nll"], n_resamples=50)
    assert board["nll"].isna().all() and (board["nll_n"] == 0).all()
    text = _render(board, ["rank", "method", "rho_eu_risk", "nll"])
    assert "NLL" in text and "–" in text


def _render(board, columns) -> str:
    console = Console(width=100, file=io.StringIO(), record=True)
    print_board(board, console, columns)
    return console.export_text()


def test_parse_metrics():
    assert parse_metrics("all") == list(PROXY_KEYS)
    assert parse_metrics("crps, nll,crps") == ["crps", "nll"]
    assert parse_metrics(None) == []
    with pytest.raises(UdbenchError, match="--metrics"):
        parse_metrics("crps,rho_eu_risk")


def test_cli_leaderboard_metrics_columns_end_to_end(tmp_path, capsys):
    save_fake_task(make_fake_task(0), tmp_path / "tasks")
    out = str(tmp_path / "res")
    args = ["run", str(tmp_path / "tasks"), "--out", out, "-w", "0"]
    assert main([*args, "-m", "_fakes:MeanMethod", "-m", "_fakes:KnnMethod"]) == 0
    capsys.readouterr()
    code = main(["leaderboard", out, "--metrics", "crps,picp_90", "--by", "crps"])
    text = capsys.readouterr().out
    assert code == 0 and "CRPS" in text and "PICP 90%" in text
    assert "rank: mean CRPS" in " ".join(text.split())
    assert main(["leaderboard", out, "--metrics", "all", "--json", "--n-resamples", "50"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert all(k in records[0] for k in PROXY_KEYS)
    finite = [r["crps"] for r in records]
    assert all(isinstance(v, float) and np.isfinite(v) for v in finite)
    assert main(["leaderboard", out, "--metrics", "bogus"]) == 2
    assert "--metrics" in capsys.readouterr().err
