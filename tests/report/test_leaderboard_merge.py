"""``udbench leaderboard A B …``: several results folders merged into one board."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.evaluation.store import COMPACTED_FILE, merge_results, read_results_merged


def _rows(method: str, values: list[float], *, host: str = "a") -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "cell_key": f"t{t}|{method}|cfg|abc",
                "task_id": f"t{t}",
                "task_sha256": "abc" * 8,
                "method": method,
                "method_label": method,
                "status": "ok",
                "noise": "linear",
                "dataset": "wine",
                "family": "gp",
                "coverage": "balanced",
                "constant_aleatoric": True,
                "rho_eu_risk": v,
                "rho_eu_var": v / 2,
                "rho_eu_point": v / 3,
                "rho_au": np.nan,
                "delta_ent_risk": np.nan,
                "rmse": 1.0 + t,
                "fit_time_s": 10.0 * (t + 1) if host == "a" else 99.0,  # timings may differ
                "host": host,
            }
            for t, v in enumerate(values)
        ]
    )


def _folder(path: Path, *frames: pd.DataFrame) -> Path:
    path.mkdir(parents=True)
    pd.concat(frames, ignore_index=True).to_parquet(path / COMPACTED_FILE)
    return path


def _board(capsys, *folders: Path) -> dict[str, dict]:
    assert main(["leaderboard", *map(str, folders), "--json", "--n-resamples", "50"]) == 0
    return {r["method"]: r for r in json.loads(capsys.readouterr().out)}


def test_leaderboard_merges_folders_and_keeps_identical_cells_once(tmp_path, capsys):
    baselines = _folder(
        tmp_path / "baselines", _rows("gp", [0.5, 0.6, 0.7]), _rows("blr", [0.1, 0.2, 0.3])
    )
    # the user's folder: their method, and one gp cell run again elsewhere with the same result
    mine = _folder(tmp_path / "mine", _rows("mine", [0.8, 0.9, 0.4]), _rows("gp", [0.5], host="b"))
    board = _board(capsys, baselines, mine)
    assert sorted(board) == ["blr", "gp", "mine"]
    assert board["gp"]["n_valid"] == 3  # the duplicate cell counted once
    assert board["mine"]["rho_eu_risk"] == pytest.approx(0.7)
    assert board["gp"]["rho_eu_risk"] == pytest.approx(0.6)
    assert [board[m]["rank"] for m in ("mine", "gp", "blr")] == [1, 2, 3]
    # one folder reads as before; the same folder twice is the folder once
    assert sorted(_board(capsys, baselines)) == ["blr", "gp"]
    merged = read_results_merged([baselines, baselines])
    assert len(merged) == 6 and merged["cell_key"].is_unique


def test_leaderboard_refuses_a_cell_with_other_numbers_in_one_line(tmp_path, capsys):
    baselines = _folder(tmp_path / "baselines", _rows("gp", [0.5, 0.6, 0.7]))
    other = _folder(tmp_path / "other", _rows("gp", [0.5, 0.61]))
    assert main(["leaderboard", str(baselines), str(other)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert "cell 't1|gp|cfg|abc' is in" in err and "(rho_eu_risk: 0.6 vs 0.61)" in err
    assert str(baselines) in err and str(other) in err


def test_merge_results_compares_results_not_provenance():
    a, b = _rows("gp", [0.5]), _rows("gp", [0.5 * (1 + 1e-12)], host="b")
    assert len(merge_results({"a": a, "b": b})) == 1  # other host and timing, same result
    b.loc[0, "status"] = "failed"
    with pytest.raises(UdbenchError, match=r"\(status: 'ok' vs 'failed'\)"):
        merge_results({"a": a, "b": b})
    # a metric column only one folder has (another --loss) is not compared
    c = _rows("gp", [0.5]).assign(rho_au_crps=0.3)
    assert merge_results({"a": a, "c": c})["cell_key"].tolist() == ["t0|gp|cfg|abc"]
