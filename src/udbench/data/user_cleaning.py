"""Reading and cleaning a user's table per SPEC §2 (the first steps of ``prepare_dataset``).

:func:`read_table` reads a CSV or Parquet file; the steps below, run in this order by
:func:`udbench.data.user.prepare_dataset`, select the covariates and the target, keep numbers
only (every non-numeric column listed, with how to encode it), drop rows with a missing
value, drop constant covariates, treat repeated covariate rows, and check the table is large
enough for the design (:mod:`udbench.data.user_design`). Each step says what it did in
``messages`` (reported by ``udbench datasets add``) or raises a one-line error naming the
option that fixes it.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from udbench._validation import UdbenchError, param_error
from udbench.data.cleaning import NEAR_CONSTANT_RTOL, is_near_constant, normalise_name
from udbench.data.user_design import _COMMAND, MIN_TRAIN, min_rows_needed

__all__ = ["read_table"]


def read_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a CSV (any compression pandas infers, ``?`` counts as missing) or Parquet table.

    Parameters
    ----------
    path : str or Path
        The file; its suffix says the format (``.csv``, ``.csv.gz``, ``.tsv``, ``.txt``,
        ``.parquet``, ``.pq``).

    Returns
    -------
    pandas.DataFrame
        The table, its columns named as the file's header names them.

    Raises
    ------
    UdbenchError
        The file does not exist, has another format, cannot be parsed, or its header names a
        column twice (pandas would rename the repeat ``a.1`` without a word, and the two
        columns would then pass as distinct covariates).
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise param_error(_COMMAND, "PATH", "be an existing CSV or Parquet file", str(path))
    suffixes = [s.lower() for s in p.suffixes]
    try:
        if ".parquet" in suffixes or ".pq" in suffixes:
            return pd.read_parquet(p)
        if ".csv" in suffixes or ".tsv" in suffixes or ".txt" in suffixes:
            sep = "\t" if ".tsv" in suffixes else ","
            _check_header_names(p, sep)
            return pd.read_csv(p, sep=sep, na_values=["?"], low_memory=False)
    except UdbenchError:  # a ValueError too: said as it is, not as a parsing failure
        raise
    except (OSError, ValueError, EOFError, ImportError) as err:
        raise UdbenchError(
            f"{_COMMAND}: file {str(p)!r} must be a readable CSV (header row) or Parquet "
            f"table; reading it failed: {type(err).__name__}: {err}"
        ) from None
    raise param_error(
        _COMMAND, "PATH", "end in .csv, .csv.gz, .tsv or .parquet (the format)", str(path)
    )


def _check_header_names(path: Path, sep: str) -> None:
    """Raise when the header row of the CSV ``path`` names a column twice.

    ``pandas.read_csv`` renames repeats (``a, a.1``), so the read frame cannot tell; the
    header is read raw here. Empty header cells (an unnamed index column) are left to
    pandas (``Unnamed: 0``).

    Raises
    ------
    UdbenchError
        Naming the repeated column names.
    """
    header = pd.read_csv(
        path, sep=sep, header=None, nrows=1, dtype=str, keep_default_na=False
    ).iloc[0]
    counts = Counter(str(v) for v in header if str(v) != "")
    repeated = sorted(n for n, k in counts.items() if k > 1)
    if repeated:
        raise param_error(
            _COMMAND,
            "PATH",
            "have distinct column names (pandas would rename a repeat 'a' to 'a.1'); rename "
            "or remove the repeated columns",
            repeated,
        )


def _match(frame: pd.DataFrame, names: Sequence[str], option: str) -> list[str]:
    by_norm: dict[str, list[str]] = {}
    for c in frame.columns:
        by_norm.setdefault(normalise_name(str(c)), []).append(str(c))
    out = []
    for name in names:
        if name in frame.columns:
            out.append(str(name))
            continue
        found = by_norm.get(normalise_name(name), [])
        if len(found) != 1:
            raise param_error(
                _COMMAND,
                option,
                f"name columns of the table {[str(c) for c in frame.columns]}",
                name,
            )
        out.append(found[0])
    return out


def _is_id_like(values: np.ndarray) -> bool:
    if values.size < 3 or not np.all(np.isfinite(values)) or not np.all(values == np.round(values)):
        return False
    diff = np.diff(values)
    return bool(np.all(diff > 0) or np.all(diff < 0))


def _check_not_all_missing(values: pd.DataFrame, cols: Sequence[str], target: str | None) -> None:
    """Raise when a kept column holds no value at all: it would drop every row (SPEC §2).

    Raises
    ------
    UdbenchError
        Naming the empty covariate columns (with the ``--drop`` that leaves them out) or the
        empty ``--target`` column.
    """
    if target is not None and values[target].isna().all():
        raise UdbenchError(
            f"{_COMMAND}: the --target column {target!r} holds no value (every cell is empty or "
            f"'?'), so SPEC §2's rule (drop a row with a missing target) would drop all "
            f"{len(values)} rows; name another --target, or leave it out (the GP kernel "
            "family is then the default rbf)"
        )
    empty = [c for c in cols if values[c].isna().all()]
    if empty:
        raise UdbenchError(
            f"{_COMMAND}: covariate column(s) {', '.join(repr(c) for c in empty)} hold no value "
            f"(every cell is empty or '?'), so SPEC §2's rule (drop a row with a missing "
            f"covariate) would drop all {len(values)} rows; leave them out with --drop "
            f"{','.join(empty)}"
        )


def _read(table: str | os.PathLike[str] | pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The table as a frame with string column names (a copy), and where it came from."""
    if isinstance(table, pd.DataFrame):
        frame, origin = table, "<DataFrame>"
    else:
        frame, origin = read_table(table), str(Path(table).expanduser().resolve())
    frame = frame.copy()
    frame.columns = [str(c) for c in frame.columns]
    if frame.columns.duplicated().any():
        repeated = sorted(set(frame.columns[frame.columns.duplicated()]))
        raise param_error(_COMMAND, "PATH", "have distinct column names", repeated)
    return frame, origin


def _select_columns(
    frame: pd.DataFrame,
    target: str | None,
    drop: Sequence[str],
    covariates: Sequence[str] | None,
) -> tuple[str | None, list[str], list[str]]:
    """The target column, the ``--drop`` columns and the covariates, as the table names them."""
    target_col = _match(frame, [target], "--target")[0] if target else None
    dropped = _match(frame, list(drop), "--drop")
    if covariates is not None:
        cols = _match(frame, list(covariates), "--covariates")
    else:
        cols = [c for c in frame.columns if c != target_col]
    cols = [c for c in cols if c not in dropped and c != target_col]
    if not cols:
        raise param_error(_COMMAND, "--covariates", "leave at least one covariate", cols)
    return target_col, dropped, cols


def _numeric_values(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """The columns as float64 (booleans as 0/1); every non-numeric column listed in one error,
    with how to encode it; an infinite value refused."""
    numeric: dict[str, pd.Series] = {}
    bad: list[str] = []
    for c in columns:
        values = frame[c]
        if pd.api.types.is_bool_dtype(values):
            values = values.astype(np.float64)
        if not pd.api.types.is_numeric_dtype(values):
            converted = pd.to_numeric(values, errors="coerce")
            if (converted.isna() & values.notna()).any():
                levels = values.dropna().astype(str).unique()
                shown = ", ".join(repr(v) for v in levels[:3]) + (", …" if levels.size > 3 else "")
                bad.append(f"{c} ({levels.size} levels: {shown})")
                continue
            values = converted
        numeric[c] = values.astype(np.float64)
    if bad:
        raise UdbenchError(
            f"{_COMMAND}: parameter 'table columns' must hold numbers only (SPEC §2 keeps "
            f"numeric covariates); got non-numeric columns {bad}. Leave them out with "
            f"--drop {','.join(b.split(' (')[0] for b in bad)}, or encode them as numbers "
            "first: a two-level column as 0/1, an ordered category as its rank, a multi-level "
            "category as one-hot columns (pandas.get_dummies)."
        )
    table_values = pd.DataFrame(numeric)
    for c in table_values.columns:
        if np.isinf(table_values[c].to_numpy()).any():
            raise param_error(
                _COMMAND, f"column {c}", "hold finite numbers (or be empty where missing)", "inf"
            )
    return table_values


def _drop_missing(
    table_values: pd.DataFrame,
    cols: Sequence[str],
    target_col: str | None,
    origin: str,
    messages: list[str],
) -> tuple[pd.DataFrame, np.ndarray]:
    """The rows without a missing value (SPEC §2), and the mask of the dropped ones.

    Raises when no row is left (no data row, an empty column, every row missing something).
    """
    if len(table_values) == 0:
        raise UdbenchError(
            f"{_COMMAND}: the table {origin} holds no data rows (a header only); add the rows "
            f"(at least {min_rows_needed()} after cleaning)"
        )
    _check_not_all_missing(table_values, cols, target_col)
    missing = np.asarray(table_values.isna().to_numpy().any(axis=1), dtype=bool)
    if missing.all():
        share = table_values[[*cols, *([target_col] if target_col else [])]].isna().mean()
        worst = share.sort_values(ascending=False, kind="stable")
        shown = ", ".join(f"{c} {v:.0%}" for c, v in worst.items() if v > 0)
        raise UdbenchError(
            f"{_COMMAND}: every one of the {len(table_values)} rows has a missing value in some "
            "column, and SPEC §2 drops a row with a missing covariate"
            + (" or target" if target_col else "")
            + f", so no row is left (share of missing cells: {shown}); leave the columns "
            "with most missing cells out with --drop, or fill them in first"
        )
    if missing.any():
        messages.append(
            f"dropped {int(missing.sum())} of {len(table_values)} rows with a missing value"
            + (" (covariates or target)" if target_col else "")
        )
    return table_values.iloc[np.flatnonzero(~missing)].reset_index(drop=True), missing


def _drop_constant(
    kept: pd.DataFrame, cols: list[str], messages: list[str]
) -> tuple[list[str], list[str]]:
    """The covariates without the constant ones (min-max scaling needs max > min), and those.

    A near-constant column (relative range at most :data:`NEAR_CONSTANT_RTOL`,
    :func:`~udbench.data.cleaning.is_near_constant`) counts as constant: scaled, its
    rounding-level differences would become a full-range covariate. Each kind is noted.
    """
    values = kept[cols].to_numpy(dtype=np.float64)
    low, high = values.min(axis=0), values.max(axis=0)
    exact = [c for c, lo, hi in zip(cols, low, high, strict=True) if lo == hi]
    near = [
        c
        for c, flag, lo, hi in zip(cols, is_near_constant(low, high), low, high, strict=True)
        if flag and lo != hi
    ]
    if exact:
        messages.append(f"dropped constant column(s) {exact} (min-max scaling needs max > min)")
    if near:
        messages.append(
            f"dropped near-constant column(s) {near} (max - min <= {NEAR_CONSTANT_RTOL:g} × "
            "max(|min|, |max|): min-max scaling would turn rounding into a full-range "
            "covariate; if its variation is real, subtract its offset first)"
        )
    constant = [c for c in cols if c in exact or c in near]
    if constant:
        cols = [c for c in cols if c not in constant]
        if not cols:
            shown = ", ".join(
                f"{c} = {kept[c].iloc[0]:g}"
                if c in exact
                else f"{c} in [{kept[c].min():.17g}, {kept[c].max():.17g}]"
                for c in constant
            )
            raise UdbenchError(
                f"{_COMMAND}: every covariate is constant on the {len(kept)} row(s) kept after "
                f"cleaning ({shown}), and min-max scaling needs max > min; a table needs at "
                "least one covariate that varies"
            )
    return cols, constant


def _treat_duplicates(
    kept: pd.DataFrame, cols: list[str], duplicates: str, messages: list[str]
) -> tuple[pd.DataFrame, int]:
    """The rows after the ``duplicates`` policy, and how many repeat an earlier row."""
    dup = kept.duplicated(subset=cols, keep="first").to_numpy()
    n_dup = int(dup.sum())
    if n_dup and duplicates == "error":
        first = int(np.flatnonzero(dup)[0])
        raise UdbenchError(
            f"{_COMMAND}: parameter 'table' must not repeat a row of covariates, or say what "
            f"to do with repeats; got {n_dup} rows that repeat an earlier row (the first is "
            f"kept row {first}, values {kept.iloc[first][cols].to_list()}). Pass --duplicates "
            "drop (keep the first of each; an evaluation point then never equals a training "
            "input) or --duplicates keep (as the packaged suite does)."
        )
    if n_dup and duplicates == "drop":
        kept = kept.iloc[np.flatnonzero(~dup)].reset_index(drop=True)
        messages.append(f"dropped {n_dup} rows repeating the covariates of an earlier row")
    elif n_dup:
        messages.append(f"kept {n_dup} rows repeating the covariates of an earlier row")
    return kept, n_dup


def _check_size(kept: pd.DataFrame, cols: list[str]) -> list[str]:
    """Raise when the table is too small for the design; return warnings on its shape."""
    N, d = len(kept), len(cols)
    need = min_rows_needed()
    if N < need:
        raise param_error(
            _COMMAND,
            "table",
            f"have at least {need} rows after cleaning (n_eval = ⌊N/2⌋ evaluation rows, and a "
            f"training size n ≥ {MIN_TRAIN} that fits the `ood` quotas of the candidate pool)",
            f"{N} rows",
        )
    if d >= N:
        raise param_error(
            _COMMAND,
            "table",
            "have more rows than covariates (with d ≥ N the sample covariance is singular and "
            "the shells would reflect the isotropic shrinkage target, not the data); drop "
            "covariates with --drop/--covariates",
            f"N = {N}, d = {d}",
        )
    notes: list[str] = []
    if d * 10 > N:
        notes.append(
            f"only {N / d:.1f} rows per covariate (N = {N}, d = {d}): the shells' covariance "
            "rests mostly on its shrinkage toward isotropy (λ = 0.1, SPEC §3)"
        )
    for c in cols:
        if _is_id_like(kept[c].to_numpy()):
            notes.append(
                f"column {c} looks like a row id (integers, strictly monotone in file order); "
                f"if it is one, add again with --drop {c} --force"
            )
    return notes
