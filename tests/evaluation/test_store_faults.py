"""A bad file in a results folder: named, set aside, never blocking the good cells (issue 11.4)."""

from __future__ import annotations

import json
import warnings

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from _fakes import KnnMethod, MeanMethod, make_fake_task, save_fake_task
from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.evaluation.runner import run_benchmark
from udbench.evaluation.store import (
    COMPACTED_FILE,
    QUARANTINE,
    ResultsStore,
    StoreWarning,
    read_results,
)

#: columns compared between a clean run and a run that recovered from a bad part
COLS = ["cell_key", "status", "rho_eu_risk", "rho_eu_var", "rho_au", "rmse", "method_seed"]


def _run(tasks, out):
    return run_benchmark([tasks], [MeanMethod(), KnnMethod()], out, workers=0)


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """A finished run of 2 tasks × 2 methods (4 cells), compacted, and its rows."""
    root = tmp_path_factory.mktemp("store")
    save_fake_task(make_fake_task(0), root / "tasks")
    save_fake_task(make_fake_task(1, noise="homoscedastic"), root / "tasks")
    _run(root / "tasks", root / "clean")
    rows = read_results(root / "clean").sort_values("cell_key").reset_index(drop=True)
    assert len(rows) == 4 and (rows["status"] == "ok").all()
    return root, rows


def _record(rows: pd.DataFrame, i: int) -> dict:
    """Row ``i`` as the runner writes it (None, not NaN, in text columns)."""
    row = rows.iloc[i].to_dict()
    text = {k for k in rows.columns if not pd.api.types.is_numeric_dtype(rows[k])}
    return {k: None if k in text and pd.isna(v) else v for k, v in row.items()}


def _part_bytes(row: dict) -> bytes:
    """The bytes of a genuine part file holding ``row``."""
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist([row]), sink)
    return sink.getvalue().to_pybytes()


def _bad_part(kind: str, row: dict) -> bytes:
    if kind == "empty":
        return b""
    if kind == "truncated":
        data = _part_bytes(row)
        return data[: len(data) // 2]
    if kind == "text":
        return b"cell_key,status\nx,ok\n"
    if kind == "string_metric":  # type conflicts with the float column of every other cell
        return _part_bytes({**row, "rho_eu_risk": "0.5"})
    if kind == "no_cell_key":  # a foreign Parquet file
        return _part_bytes({k: v for k, v in row.items() if k != "cell_key"})
    raise AssertionError(kind)


def _damaged_copy(clean, tmp_path, kind):
    """The clean folder with one cell moved out of results.parquet into a bad part file."""
    _, rows = clean
    out = tmp_path / "res"
    victim = _record(rows, 0)
    rest = rows.iloc[1:]
    out.mkdir()
    pq.write_table(pa.Table.from_pandas(rest, preserve_index=False), out / COMPACTED_FILE)
    (out / "cells").mkdir()
    bad = out / "cells" / f"bad-{kind}.parquet"
    bad.write_bytes(_bad_part(kind, victim))
    return out, bad, victim["cell_key"], rest


KINDS = ["empty", "truncated", "text", "string_metric", "no_cell_key"]


@pytest.mark.parametrize("kind", KINDS)
def test_bad_part_is_skipped_named_and_recomputed_by_the_next_run(clean, tmp_path, kind):
    root, rows = clean
    out, bad, victim, rest = _damaged_copy(clean, tmp_path, kind)
    original = bad.read_bytes()
    store = ResultsStore(out)
    with pytest.warns(StoreWarning, match=f"skipped part file .*bad-{kind}.parquet") as rec:
        df = store.read()
    assert len(rec) == 1 and "\n" not in str(rec[0].message)
    # every good cell is readable, with its stored values
    got = df.sort_values("cell_key").reset_index(drop=True)[COLS]
    pd.testing.assert_frame_equal(got, rest[COLS].reset_index(drop=True))
    # reading changed nothing in the folder
    assert bad.read_bytes() == original
    # the cell stored only in the bad part is not finished ...
    with pytest.warns(StoreWarning):
        assert victim not in store.finished()
    # ... so a re-run computes exactly that cell, and sets the bad part aside (not deleted)
    with pytest.warns(StoreWarning) as rec:
        summary = _run(root / "tasks", out)
    assert [str(w.message).split(" part file")[0] for w in rec] == [
        "results store: skipped",  # when the run looks for finished cells
        "results store: moved unusable",  # when it compacts
    ]
    assert (summary.n_ok, summary.n_failed, summary.n_skipped) == (1, 0, 3)
    assert not bad.exists()
    assert (out / "cells" / QUARANTINE / bad.name).read_bytes() == original
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreWarning)  # the folder is clean again
        final = read_results(out).sort_values("cell_key").reset_index(drop=True)
    pd.testing.assert_frame_equal(final[COLS], rows[COLS], rtol=1e-12)


def test_parts_are_checked_against_the_majority_not_the_first_file(clean, tmp_path):
    """Without a compacted table, the odd part (string metric) is set aside, not the others."""
    _, rows = clean
    out = tmp_path / "res"
    store = ResultsStore(out)
    for i in range(1, len(rows)):
        store.write_cell(_record(rows, i))
    odd = {**_record(rows, 0), "rho_eu_risk": "high"}
    # named to sort first, so a first-come rule would keep it and reject the good parts
    (store.cells_dir / "0-odd.parquet").write_bytes(_part_bytes(odd))
    with pytest.warns(StoreWarning, match="0-odd.parquet.*rho_eu_risk has incompatible") as rec:
        df = store.read()
    assert len(rec) == 1
    assert sorted(df["cell_key"]) == sorted(rows["cell_key"][1:])
    assert df["rho_eu_risk"].dtype == float


def test_extra_and_missing_columns_are_not_errors(clean, tmp_path):
    _, rows = clean
    store = ResultsStore(tmp_path)
    a, b = _record(rows, 0), _record(rows, 1)
    store.write_cell({**a, "new_metric": 0.25})
    del b["rmse"]
    store.write_cell(b)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreWarning)
        df = store.read().set_index("cell_key")
    assert df.loc[a["cell_key"], "new_metric"] == 0.25
    assert pd.isna(df.loc[b["cell_key"], "new_metric"])
    assert df.loc[a["cell_key"], "rmse"] == pytest.approx(a["rmse"], rel=1e-15)
    assert pd.isna(df.loc[b["cell_key"], "rmse"])


def test_quarantine_never_replaces_a_file_set_aside_before(tmp_path):
    store = ResultsStore(tmp_path)
    store.write_cell({"cell_key": "a", "status": "ok", "finished_at": "1", "x": 1.0})
    for content in (b"first", b"second"):
        (store.cells_dir / "junk.parquet").write_bytes(content)
        with pytest.warns(StoreWarning, match="moved unusable part file"):
            assert store.compact() == 1
    kept = sorted(p.read_bytes() for p in (store.cells_dir / QUARANTINE).iterdir())
    assert kept == [b"first", b"second"]


def test_all_parts_bad_writes_no_empty_results_file(tmp_path):
    store = ResultsStore(tmp_path)
    store.cells_dir.mkdir(parents=True)
    (store.cells_dir / "junk.parquet").write_bytes(b"")
    with pytest.warns(StoreWarning, match="moved"):
        assert store.compact() == 0
    assert not (tmp_path / COMPACTED_FILE).exists()
    with pytest.raises(UdbenchError, match="no results stored"):
        read_results(tmp_path)


@pytest.mark.parametrize("kind", ["truncated", "foreign", "text"])
def test_unreadable_results_parquet_is_a_one_line_error_with_the_repair(clean, tmp_path, kind):
    root, _ = clean
    out = tmp_path / "res"
    out.mkdir()
    data = (root / "clean" / COMPACTED_FILE).read_bytes()
    content = {
        "truncated": data[: len(data) // 2],
        "foreign": _part_bytes({"a": 1.0}),
        "text": b"not parquet\n",
    }[kind]
    (out / COMPACTED_FILE).write_bytes(content)
    with pytest.raises(UdbenchError, match=r"cannot be read .*move it aside") as err:
        read_results(out)
    assert "\n" not in str(err.value) and COMPACTED_FILE in str(err.value)
    # a run stops before any cell: the file is left as it was, nothing else is written
    with pytest.raises(UdbenchError, match="move it aside"):
        _run(root / "tasks", out)
    assert (out / COMPACTED_FILE).read_bytes() == content
    assert not (out / "cells").exists()


def test_cli_reads_around_a_stray_part_and_warns_in_one_line(clean, tmp_path, capsys):
    out, bad, _, _ = _damaged_copy(clean, tmp_path, "empty")
    assert main(["leaderboard", str(out), "--json", "--n-resamples", "50"]) == 0
    captured = capsys.readouterr()
    recs = {r["method"]: r for r in json.loads(captured.out)}
    assert recs["fake-mean"]["n_valid"] + recs["fake-knn"]["n_valid"] == 3
    err = captured.err.strip()
    assert err.startswith("warning: results store: skipped part file") and bad.name in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert main(["report", str(out), "--out", str(tmp_path / "rep")]) == 0
    assert (tmp_path / "rep" / "report.html").is_file()
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("command", ["leaderboard", "report"])
def test_cli_results_that_are_not_a_table_are_one_line_errors(tmp_path, capsys, command):
    text = tmp_path / "results.txt"
    text.write_text("method,rho\nblr,0.5\n")
    args = [command, str(text)] + (["--out", str(tmp_path / "rep")] if command == "report" else [])
    assert main(args) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "is not a readable results table" in err and "results.txt" in err
    assert "Traceback" not in err


def test_a_predictions_frame_is_a_prediction_only_at_the_tasks_points() -> None:
    """The one reader of stored predictions for rescoring (transfer, loss, the runs campaign's
    transfer part): the arrays as stored, or None for another task's or order's points."""
    import numpy as np

    from udbench.evaluation.store import prediction_from_frame

    frame = pd.DataFrame(
        {"eval_idx": [3, 5, 7], "mean": [0.1, 0.2, 0.3], "aleatoric": [1.0, 2.0, 3.0]}
    ).assign(epistemic=[0.5, 0.25, 0.125])
    pred = prediction_from_frame(frame, np.array([3, 5, 7]))
    assert pred is not None
    np.testing.assert_array_equal(pred.mean, [0.1, 0.2, 0.3])
    np.testing.assert_array_equal(pred.aleatoric, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(pred.epistemic, [0.5, 0.25, 0.125])
    assert prediction_from_frame(frame, np.array([3, 7, 5])) is None  # another order
    assert prediction_from_frame(frame, np.array([3, 5])) is None  # another pool
