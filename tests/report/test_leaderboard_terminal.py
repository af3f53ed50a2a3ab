"""The leaderboard as a reader sees it: 80 columns, a rank that agrees, honest partial results."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

from _fakes import make_fake_task, save_fake_task
from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.commands._board import board_table, parse_columns, print_board
from udbench.evaluation.leaderboard import filter_results, leaderboard
from udbench.report.html import write_report

#: The paper's nineteen method names (the longest registry names a table must hold).
NAMES = (
    "blr gp vlgp dkl sngp-het ngboost-bag ngboost-nig catboost-ps catboost-kgb nn-ens nn-bag "
    "nn-drop nn-edl nn-deup nn-swag nn-lap nn-lap-sn nn-fsp nn-fsp-sn"
).split()


def _frame(rho: dict[str, list[float]], *, rmse: float = 1.0, failed=()) -> pd.DataFrame:
    rows = []
    for m, values in rho.items():
        for t, v in enumerate(values):
            ok = (m, t) not in failed and np.isfinite(v)
            rows.append(
                {
                    "task_id": f"t{t}",
                    "method": m,
                    "method_label": m,
                    "status": "ok" if ok else "failed",
                    "noise": "linear",
                    "dataset": "toy" if t % 2 else "wine",
                    "family": "gp",
                    "coverage": "balanced",
                    "constant_aleatoric": m in ("blr", "gp", "nn-deup", "catboost-kgb"),
                    "rho_eu_risk": v if ok else np.nan,
                    "rho_eu_var": v / 2,
                    "rho_eu_point": v / 3,
                    "rho_au": 0.3,
                    "delta_ent_risk": -0.123,
                    "rmse": rmse * (1 + t),
                    **{f"rho_eu_risk_shell{s}": v for s in range(5)},
                }
            )
    return pd.DataFrame(rows)


def _render(board, width=80, **kw) -> str:
    console = Console(width=width, file=io.StringIO(), record=True)
    print_board(board, console, **kw)
    return console.export_text()


@pytest.mark.parametrize("rmse", [0.012345, 1234.5, 2.5e9])
def test_nineteen_methods_fit_in_80_columns_with_no_value_cut(rmse):
    rng = np.random.default_rng(0)
    rho = {m: list(rng.uniform(-0.2, 0.9, size=12)) for m in NAMES}
    # one method with failed cells: partial results add the "common" column and a note
    frame = _frame(rho, rmse=rmse, failed={("dkl", 0), ("dkl", 1)})
    board = leaderboard(frame, n_resamples=100)
    text = _render(board)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "…" not in text
    table, _ = board_table(board)
    # every method is one whole line, with every value of its row whole on that line
    for row_index, method in enumerate(board["method"]):
        (line,) = [ln for ln in lines if ln.split()[1:2] == [method]]
        for column in table.columns:
            cell = list(column.cells)[row_index]
            assert str(cell) in line, (method, column.header, cell)
    assert "common" in text and "partial results" in text and "dkl 10" in " ".join(text.split())


def test_columns_option_and_intervals():
    frame = _frame({"a": [0.5, 0.6, 0.7], "b": [0.1, 0.2, 0.3]})
    board = leaderboard(frame, n_resamples=100)
    assert parse_columns("rho_eu_var, n") == ["rank", "method", "rho_eu_var", "n"]
    text = _render(board, columns=parse_columns("rho_eu_var"), intervals=True)
    row = board.iloc[0]
    assert f"{row['rho_eu_var']:.3f} [{row['rho_eu_var_low']:.3f}" in text
    assert "ρ EU·risk" not in text
    with pytest.raises(UdbenchError, match="'--columns' must be comma-separated names"):
        parse_columns("rho_eu_risk,not_a_column")


def test_rank_agrees_with_the_statistic_shown():
    # mean ρ says x (0.333 > 0.133); per-instance ranks say y (wins t1 and t2)
    frame = _frame({"x": [1.0, 0.0, 0.0], "y": [0.2, 0.1, 0.1]})
    by_mean = leaderboard(frame, n_resamples=100)
    assert list(by_mean["method"]) == ["x", "y"]
    assert by_mean["rank_value"].tolist() == pytest.approx([1 / 3, 4 / 30])
    assert by_mean["mean_rank"].tolist() == pytest.approx([5 / 3, 4 / 3])
    assert "rank: mean ρ(EU, EU*_risk) over the 3 instance(s)" in by_mean.attrs["ranking"]
    by_rank = leaderboard(frame, rank_stat="mean_rank", n_resamples=100)
    assert list(by_rank["method"]) == ["y", "x"]
    assert by_rank["rank_value"].tolist() == pytest.approx([4 / 3, 5 / 3])
    text = " ".join(_render(by_rank).split())
    assert "mean rank" in text and "mean per-instance rank of ρ(EU, EU*_risk)" in text
    with pytest.raises(UdbenchError, match="'rank_stat' must be one of"):
        leaderboard(frame, rank_stat="median")


def test_report_tables_and_figures_follow_the_rank(tmp_path):
    frame = _frame({"x": [1.0, 0.0, 0.0], "y": [0.2, 0.1, 0.1], "z": [0.05, 0.05, 0.05]})
    html = write_report(frame, tmp_path, n_resamples=100).read_text()
    board = leaderboard(frame, n_resamples=100)
    order = list(board["method"])
    assert order == ["x", "y", "z"]
    # the leaderboard table and the per-shell table list the methods in rank order
    board_part = html[html.index("<h2>Leaderboard</h2>") : html.index("EU quality</h2>")]
    shell_part = html[html.index("EU quality per shell</h2>") :]
    for part in (board_part, shell_part):
        positions = [
            part.index(f"<th>{m}</th>" if part is shell_part else f"<td>{m}</td>") for m in order
        ]
        assert positions == sorted(positions)
    assert "Rank: mean ρ(EU, EU*_risk) over the 3 instance(s)" in html


def test_partial_results_rank_on_common_instances_and_say_so(tmp_path):
    # a alone has t2, where it scores 1.0: its own mean (0.6) beats b's (0.45), but on the
    # common instances t0, t1 b is better (0.45 vs 0.4) and must rank first
    frame = _frame({"a": [0.4, 0.4, 1.0], "b": [0.45, 0.45, np.nan]})
    board = leaderboard(frame, n_resamples=100).set_index("method")
    assert board.loc["a", "rho_eu_risk"] == pytest.approx(0.6)
    assert board.loc["a", "rank_value"] == pytest.approx(0.4)
    assert (board.loc["b", "rank"], board.loc["a", "rank"]) == (1, 2)
    note = board.attrs["partial"]
    assert "(b 2)" in note and "the ranks only the 2 common" in note
    html = write_report(frame, tmp_path, n_resamples=100).read_text()
    assert "Partial results: 1 method(s) have fewer valid instances" in html
    complete = leaderboard(_frame({"a": [0.4, 0.5], "b": [0.3, 0.2]}), n_resamples=100)
    assert complete.attrs["partial"] is None


def test_filter_results_by_factor():
    frame = _frame({"a": [0.1, 0.2, 0.3, 0.4], "b": [0.5, 0.6, 0.7, 0.8]})
    kept = filter_results(frame, dataset=["toy"], method=["b"])
    assert sorted(kept["task_id"]) == ["t1", "t3"] and set(kept["method"]) == {"b"}
    assert len(filter_results(frame, noise=None, family=[])) == len(frame)
    with pytest.raises(UdbenchError, match=r"'dataset' must name values present .*toy, wine"):
        filter_results(frame, dataset=["concrete"])


def test_cli_leaderboard_filters_and_run_exit_status(tmp_path, capsys):
    for seed in range(2):
        save_fake_task(make_fake_task(seed), tmp_path / "tasks")
    out = str(tmp_path / "res")
    # every cell of the bad method fails: stored, then exit status 3 with the retry hint
    code = main(["run", str(tmp_path / "tasks"), "-m", "_fakes:BadMethod", "--out", out, "-w", "0"])
    text = " ".join(capsys.readouterr().out.split())
    assert code == 3
    assert "2 cell(s) failed" in text and "--retry-failed" in text
    assert (
        main(["run", str(tmp_path / "tasks"), "-m", "_fakes:MeanMethod", "--out", out, "-w", "0"])
        == 0
    )
    capsys.readouterr()
    assert main(["leaderboard", out, "--method", "fake-mean", "--n-resamples", "50"]) == 0
    text = capsys.readouterr().out
    assert "_fakes:MeanMethod" in text and "BadMethod" not in text
    assert main(["leaderboard", out, "--noise", "nope"]) == 2
    assert "'noise' must name values present" in " ".join(capsys.readouterr().err.split())


def test_report_by_factor_shell_intervals_and_eu_scatter(tmp_path):
    """Factor tables (coverage levels apart), shell error bars, EU vs EU* with kept predictions."""
    from _fakes import KnnMethod, MeanMethod
    from udbench.evaluation.runner import run_benchmark
    from udbench.evaluation.store import read_results
    from udbench.report._factors import factor_tables, shell_errorbars

    for seed, coverage in ((0, "balanced"), (1, "ood"), (2, "balanced")):
        save_fake_task(make_fake_task(seed, coverage=coverage), tmp_path / "tasks")
    out = tmp_path / "res"
    run_benchmark(
        [tmp_path / "tasks"], [MeanMethod(), KnnMethod()], out, workers=0, keep_predictions=True
    )
    df = read_results(out)
    order = ["fake-knn", "fake-mean"]
    tables = dict(factor_tables(df, order))
    cov = tables["coverage (balanced vs ood)"]
    assert list(cov.columns) == ["balanced", "ood"] and list(cov.index) == order
    knn = df[df["method"] == "fake-knn"]
    balanced = knn[knn["coverage"] == "balanced"]["rho_eu_risk"]
    assert cov.at["fake-knn", "balanced"] == f"{balanced.mean():.3f} (2)"
    bars = shell_errorbars(df, order)
    one = bars[(bars["method"] == "fake-knn") & (bars["shell"] == 4)].iloc[0]
    v = knn["rho_eu_risk_shell4"].to_numpy(dtype=float)
    assert one["mean"] == pytest.approx(v.mean())
    assert one["half"] == pytest.approx(1.96 * v.std(ddof=1) / np.sqrt(3))
    page = write_report(df, tmp_path / "rep", n_resamples=50, results_dir=out).read_text()
    assert "EU against the oracle on one instance" in page and "By factor" in page
    assert (tmp_path / "rep" / "eu_vs_oracle.png").read_bytes()[:4] == b"\x89PNG"
    # without kept predictions the report says how to get the figure instead
    plain = write_report(df, tmp_path / "rep2", n_resamples=50).read_text()
    assert "--keep-predictions" in plain and "eu_vs_oracle" not in plain


def _au_frame() -> pd.DataFrame:
    """blr (constant AU) and nn-ens on 2 homoscedastic and 2 heteroscedastic instances."""
    frame = _frame({"blr": [0.48, 0.484, 0.488, 0.485], "nn-ens": [0.1, 0.5, 0.3, 0.2]})
    frame.loc[frame["task_id"].isin(["t0", "t1"]), "noise"] = "homoscedastic"
    return frame


def test_au_columns_say_how_many_instances_they_average():
    board = leaderboard(_au_frame(), n_resamples=200).set_index("method")
    # ρ(AU, AU*) = 0.3 on both heteroscedastic instances: two values, not one
    assert board.loc["nn-ens", "rho_au_n"] == 2 and board.loc["nn-ens", "n_valid"] == 4
    text = " ".join(_render(leaderboard(_au_frame(), n_resamples=200)).split())
    assert (
        "ρ AU·AU* and Δ_ent: means over the 2 valid instance(s) with heteroscedastic noise only"
        in text
    )
    # with every instance heteroscedastic the valid count is theirs: no note
    plain = _frame({"a": [0.1, 0.5, 0.3], "b": [0.2, 0.3, 0.4]})
    assert "means over the" not in _render(leaderboard(plain, n_resamples=100))


def test_classification_au_note_says_where_the_correlations_are_defined():
    from _classification_results import classification_rows

    df = classification_rows()
    df["task_type"] = "classification"
    df["cell_key"] = df["task_id"] + "|" + df["method"]
    # one classifier's estimates constant on one instance: no ρ there (as on clf-small)
    first = df.index[(df["task_id"] == df["task_id"].iloc[0]) & (df["method"] == "A")]
    df.loc[first, ["rho_au", "delta_ent_risk"]] = np.nan
    board = leaderboard(df, n_resamples=100)
    assert board.set_index("method").loc["A", "rho_au_n"] == 3
    cols = ["rho_eu_risk", "rho_au", "delta_ent_risk", "n"]
    text = " ".join(_render(board, width=200, columns=cols).split())
    assert "means over the 3–4 valid instance(s) where they are defined" in text
    # homoscedastic temperature modes are not left out of a classification board
    assert "heteroscedastic noise only" not in text


def test_half_width_and_precision_are_honest_and_one_per_column():
    board = leaderboard(_au_frame(), n_resamples=400).set_index("method")
    half = (board.loc["blr", "rho_eu_risk_high"] - board.loc["blr", "rho_eu_risk_low"]) / 2
    assert 0.0005 < half < 0.005  # a real, small uncertainty
    text = _render(leaderboard(_au_frame(), n_resamples=400))
    assert f"0.484±{half:.3f}" in text and "±0.00 " not in text and "±0.00\n" not in text
    # RMSE of 1.03 and 0.0412 (3 significant digits each before): one count of decimals
    frame = _frame({"a": [0.5, 0.6], "b": [0.1, 0.2]})
    frame.loc[frame["method"] == "a", "rmse"] = 1.03
    frame.loc[frame["method"] == "b", "rmse"] = 0.0412
    table, _ = board_table(leaderboard(frame, n_resamples=100))
    (rmse,) = [c for c in table.columns if c.header == "RMSE"]
    cells = sorted(str(c) for c in rmse.cells)
    decimals = {len(c.split("±")[0].split(".")[1]) for c in cells}
    assert len(decimals) == 1, cells
    # equal values on both instances: a degenerate interval, truly ±0
    assert cells == ["0.041±0.000", "1.030±0.000"]


def test_a_single_method_is_ranked_on_its_own_instances():
    board = leaderboard(_frame({"blr": [0.48, 0.484, 0.488]}), n_resamples=100)
    assert board["rank"].tolist() == [1] and board["mean_rank"].tolist() == [1.0]
    ranking = board.attrs["ranking"]
    assert "no instance has a value for every method" not in ranking
    assert ranking == (
        "rank: a single ranked method (blr), mean ρ(EU, EU*_risk) over its 3 valid instance(s)"
    )


def test_leaderboard_is_the_same_for_the_rows_in_any_order():
    frame = _frame({"a": [0.1, 0.5, 0.3, 0.9, 0.2], "b": [0.2, 0.3, 0.4, 0.1, 0.6]})
    board = leaderboard(frame, n_resamples=300)
    shuffled = frame.sample(frac=1.0, random_state=3)
    assert list(shuffled.index) != list(frame.index)
    again = leaderboard(shuffled, n_resamples=300)
    pd.testing.assert_frame_equal(board, again, check_exact=False, rtol=1e-12)


def test_a_wide_table_written_to_a_pipe_keeps_every_column_whole():
    board = leaderboard(_au_frame(), n_resamples=100)
    cols = parse_columns(
        "rho_eu_risk,rho_eu_var,rho_eu_point,rho_au,delta_ent_risk,rmse,nll,crps,n"
    )
    text = _render(board, width=60, columns=cols)  # a StringIO file: not a terminal
    assert "…" not in text
    header = next(line for line in text.splitlines() if "method" in line)
    assert header.split()[:2] == ["#", "method"] and "valid" in header
