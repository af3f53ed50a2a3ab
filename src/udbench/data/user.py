"""A user's own table as a dataset of the suite (``udbench datasets add``).

:func:`prepare_dataset` reads a CSV or Parquet table, cleans it the way SPEC §2 cleans the
suite (numeric covariates, rows with a missing value dropped, constant covariates dropped,
min-max scaling), checks that the design of SPEC §2–§3 is feasible, and derives the design
quantities by the rules below; :func:`write_dataset` registers it in the user's data folder
as ``<data folder>/<key>/<key>.csv.gz`` (the kept raw columns, target last) and
``<data folder>/<key>/dataset.toml`` (the registry entry and how it was made), where
:func:`udbench.data.list_datasets` and every command taking ``--datasets`` find it.

Design rules for a new dataset (documented in ``docs/data.md``):

- n_eval = min(1500, ⌊N/2⌋) and the stratified split, exactly as for the suite (SPEC §2).
- n (training size) = min(:data:`TRAIN_CAP`, ⌊:data:`TRAIN_MARGIN` · n_max⌋), n_max the largest
  n whose ``balanced`` and ``ood`` quotas both fit the candidate pool's shells; 2000 is the
  suite's median n, the margin keeps ``ood`` draws from exhausting an inner shell.
- ρ = the median ρ of the packaged suite (0.32), unless given.
- GP kernel family: chosen by the caller among :func:`spec_kernel_families`
  (:func:`udbench.priors.gp.fit.select_kernel_family`) when there is a target, else
  :data:`DEFAULT_KERNEL_FAMILY`.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from udbench import __version__
from udbench._validation import UdbenchError, check_choice, param_error
from udbench.data.cleaning import clean_table, normalise_name
from udbench.data.covariates import stratified_split
from udbench.data.geometry import N_SHELLS, fit_geometry, largest_remainder
from udbench.data.registry import (
    DATA_DIR_ENV,
    USER_REGISTRY_FILE,
    DatasetSpec,
    _registry,
    list_datasets,
    user_data_dir,
)

__all__ = [
    "DEFAULT_KERNEL_FAMILY",
    "DUPLICATE_POLICIES",
    "MAX_EVAL",
    "MIN_TRAIN",
    "TRAIN_CAP",
    "TRAIN_MARGIN",
    "PreparedDataset",
    "design_train_size",
    "min_rows_needed",
    "prepare_dataset",
    "read_table",
    "spec_kernel_families",
    "suite_median_rho",
    "user_dataset_root",
    "write_dataset",
]

#: Largest evaluation pool (SPEC §2: n_eval = min(1500, ⌊N/2⌋)).
MAX_EVAL = 1500
#: Largest training size given to a new dataset: the median n of SPEC §2's suite.
TRAIN_CAP = 2000
#: Share of the largest feasible n that a new dataset gets (room for the ``ood`` draws).
TRAIN_MARGIN = 0.9
#: Smallest training size a dataset may have.
MIN_TRAIN = 50
#: GP kernel family of a dataset without a real target (nothing to fit): RBF, the field's
#: default smooth kernel (also the embedded ``diabetes`` default's family). Its
#: hyperparameters are the fit's starting values
#: (``udbench.priors.gp.fit.default_kernel_hyper``).
DEFAULT_KERNEL_FAMILY = "rbf"
#: What ``prepare_dataset`` does with duplicate covariate rows.
DUPLICATE_POLICIES = ("error", "drop", "keep")

_BALANCED = np.full(N_SHELLS, 1.0 / N_SHELLS)
_OOD = np.array([0.25, 0.25, 0.25, 0.25, 0.0])
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
_COMMAND = "udbench datasets add"


@dataclass(frozen=True)
class PreparedDataset:
    """A user's table, cleaned and designed, ready to be written by :func:`write_dataset`.

    Attributes
    ----------
    spec : DatasetSpec
        The registry entry (``source="user"``, ``kernel_family`` None until chosen).
    frame : pandas.DataFrame
        The kept raw columns (covariates in order, then the target if any), kept rows only.
    X : ndarray of shape (N, d)
        Scaled covariates (:func:`udbench.data.clean_table` of ``frame``).
    y_real : ndarray of shape (N,)
        The real target (all NaN without one).
    shell, eval_idx, cand_idx : ndarray of int64
        Shell of every row and the stratified split (SPEC §2–§3).
    messages : tuple of str
        What cleaning did (rows and columns dropped, rules used).
    warnings : tuple of str
        Things the user should look at (id-like columns, few rows per covariate).
    provenance : dict
        Recorded in the registry file (source file and checksum, counts, rules).
    """

    spec: DatasetSpec
    frame: pd.DataFrame = field(repr=False)
    X: np.ndarray = field(repr=False)
    y_real: np.ndarray = field(repr=False)
    shell: np.ndarray = field(repr=False)
    eval_idx: np.ndarray = field(repr=False)
    cand_idx: np.ndarray = field(repr=False)
    messages: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    provenance: dict[str, Any] = field(default_factory=dict, repr=False)


def user_dataset_root(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The data folder a dataset is added to: ``data_dir``, else ``$UDBENCH_DATA_DIR``.

    Raises
    ------
    UdbenchError
        Neither is set (the dataset must live where later commands look for it).
    """
    root = user_data_dir(data_dir)
    if root is None:
        raise param_error(
            _COMMAND,
            "--data-dir",
            f"name the user's data folder (or set ${DATA_DIR_ENV}); later commands find the "
            f"dataset there through --data-dir or ${DATA_DIR_ENV}",
            None,
        )
    return root


def read_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a CSV (any compression pandas infers, ``?`` counts as missing) or Parquet table.

    Raises
    ------
    UdbenchError
        The file does not exist, has another format, or cannot be parsed.
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
            return pd.read_csv(p, sep=sep, na_values=["?"], low_memory=False)
    except (OSError, ValueError, EOFError, ImportError) as err:
        raise UdbenchError(
            f"{_COMMAND}: file {str(p)!r} must be a readable CSV (header row) or Parquet "
            f"table; reading it failed: {type(err).__name__}: {err}"
        ) from None
    raise param_error(
        _COMMAND, "PATH", "end in .csv, .csv.gz, .tsv or .parquet (the format)", str(path)
    )


def suite_median_rho() -> float:
    """Median ρ of the packaged benchmark datasets (SPEC §2; ``diabetes`` excluded): 0.32."""
    return float(
        statistics.median(
            s.rho
            for s in _registry().values()
            if s.rho is not None and s.source in ("uci", "openml")
        )
    )


def spec_kernel_families() -> tuple[str, ...]:
    """The distinct GP kernel families of SPEC §2's table, in table order (nine families)."""
    families = [
        s.kernel_family
        for s in _registry().values()
        if s.kernel_family and s.source in ("uci", "openml")
    ]
    return tuple(dict.fromkeys(families))


def _quotas_fit(n: int, available: np.ndarray) -> bool:
    return all(
        bool(np.all(largest_remainder(n, shares) <= available)) for shares in (_BALANCED, _OOD)
    )


def design_train_size(shell: np.ndarray, cand_idx: np.ndarray) -> tuple[int, int]:
    """Training size n of a new dataset, and the largest n that fits (n_max).

    n_max is the largest n for which the ``balanced`` (20 % per shell) and ``ood`` (25 % from
    each inner shell) quotas, rounded by largest remainder, fit the candidate pool's shells;
    n = min(:data:`TRAIN_CAP`, ⌊:data:`TRAIN_MARGIN` · n_max⌋).

    Parameters
    ----------
    shell : ndarray of shape (N,), int
        Shell of every row.
    cand_idx : ndarray of int
        Candidate rows.

    Returns
    -------
    n, n_max : int
    """
    available = np.bincount(np.asarray(shell)[cand_idx], minlength=N_SHELLS)
    n_max = int(min(4 * available[:4].min(), N_SHELLS * available.min())) + 4
    while n_max > 0 and not _quotas_fit(n_max, available):
        n_max -= 1
    return min(TRAIN_CAP, int(np.floor(TRAIN_MARGIN * n_max))), n_max


def min_rows_needed() -> int:
    """Smallest N whose design gives n ≥ :data:`MIN_TRAIN` whatever the rounding.

    Quantile shells hold at least ⌊N/5⌋ rows each (without ties in the distance) and the
    evaluation pool takes at most ⌈n_eval/5⌉ of them, so every shell keeps at least
    ⌊N/5⌋ − ⌈n_eval/5⌉ candidates; N is the smallest with ⌊0.9 · 4 · that⌋ ≥ 50 (140).
    """
    N = 2 * N_SHELLS
    while True:
        n_eval = min(MAX_EVAL, N // 2)
        per_shell = N // N_SHELLS - -(-n_eval // N_SHELLS)
        if np.floor(TRAIN_MARGIN * 4 * per_shell) >= MIN_TRAIN:
            return N
        N += 1


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


def _check_name(name: str, data_dir: str | os.PathLike[str] | None, force: bool) -> None:
    if not isinstance(name, str) or not _NAME.match(name) or "__" in name:
        raise param_error(
            _COMMAND,
            "--name",
            "be a lower-case key of 1-64 characters: a letter, then letters, digits, '_' or "
            "'-', without '__' (it names files and task ids)",
            name,
        )
    if name in _registry():
        raise param_error(_COMMAND, "--name", "not be the key of a packaged dataset", name)
    if not force and any(s.key == name for s in list_datasets(data_dir=data_dir)):
        raise param_error(
            _COMMAND,
            "--name",
            "not name a dataset already added (pass --force to replace it)",
            name,
        )


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


def prepare_dataset(
    table: str | os.PathLike[str] | pd.DataFrame,
    name: str,
    *,
    target: str | None = None,
    drop: Sequence[str] = (),
    covariates: Sequence[str] | None = None,
    duplicates: str = "error",
    n_train: int | None = None,
    rho: float | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    force: bool = False,
) -> PreparedDataset:
    """Clean a user's table per SPEC §2, check the design is feasible and derive it.

    Steps: select the covariates (``covariates``, else every column but ``target`` and
    ``drop``); reject non-numeric ones; drop rows with a missing covariate or target
    (``?`` and empty cells count as missing; a count is reported); drop constant covariates
    (named); treat duplicate covariate rows by ``duplicates``; check feasibility; scale to
    [0, 1]; fit the noise score and shells (SPEC §3); split (SPEC §2); set n and ρ.

    Parameters
    ----------
    table : path-like or pandas.DataFrame
        A CSV (also ``.csv.gz``) or Parquet file, or a frame.
    name : str
        The new key: lower case, a letter first, then letters, digits, ``_`` or ``-``
        (no ``__``); not a packaged key; not an existing user key unless ``force``.
    target : str, optional
        The real target column (used only to fit GP kernel hyperparameters, SPEC §2).
    drop : sequence of str
        Columns to leave out (ids, categoricals, other targets).
    covariates : sequence of str, optional
        The covariates to keep (default: all the other columns).
    duplicates : {"error", "drop", "keep"}
        Rows with the same covariates as an earlier row: an error (default), dropped
        (the first is kept), or kept (as the packaged suite does).
    n_train : int, optional
        Training size n (default: the rule of :func:`design_train_size`).
    rho : float, optional
        Noise-to-signal ratio ρ > 0 (default :func:`suite_median_rho`).
    data_dir : path-like, optional
        The user's data folder (for the name check; default ``$UDBENCH_DATA_DIR``).
    force : bool
        Allow replacing an existing user dataset of that name.

    Returns
    -------
    PreparedDataset

    Raises
    ------
    UdbenchError
        Bad name, unknown columns, non-numeric covariates (all listed, with how to encode
        them), infinite values, no data row, a covariate or target column without any value,
        every row missing some value, duplicate rows (``duplicates="error"``), no covariate
        left (every one constant),
        fewer rows than the design needs (the number needed is given), at least as many
        covariates as rows, a bad ``n_train`` or ``rho``.
    """
    _check_name(name, data_dir, force)
    check_choice(_COMMAND, "--duplicates", duplicates, DUPLICATE_POLICIES)
    if rho is not None and not (np.isfinite(rho) and rho > 0):
        raise param_error(_COMMAND, "--rho", "be a finite number > 0", rho)
    if isinstance(table, pd.DataFrame):
        frame, origin = table, "<DataFrame>"
    else:
        frame, origin = read_table(table), str(Path(table).expanduser().resolve())
    frame = frame.copy()
    frame.columns = [str(c) for c in frame.columns]
    if frame.columns.duplicated().any():
        repeated = sorted(set(frame.columns[frame.columns.duplicated()]))
        raise param_error(_COMMAND, "PATH", "have distinct column names", repeated)
    messages: list[str] = [f"read {len(frame)} rows × {frame.shape[1]} columns from {origin}"]
    notes: list[str] = []

    target_col = _match(frame, [target], "--target")[0] if target else None
    dropped = _match(frame, list(drop), "--drop")
    if covariates is not None:
        cols = _match(frame, list(covariates), "--covariates")
    else:
        cols = [c for c in frame.columns if c != target_col]
    cols = [c for c in cols if c not in dropped and c != target_col]
    if not cols:
        raise param_error(_COMMAND, "--covariates", "leave at least one covariate", cols)

    # numbers only: list every offending column with how to encode it
    numeric: dict[str, pd.Series] = {}
    bad: list[str] = []
    for c in [*cols, *([target_col] if target_col else [])]:
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
    kept = table_values.iloc[np.flatnonzero(~missing)].reset_index(drop=True)

    constant = [c for c in cols if kept[c].nunique() <= 1]
    if constant:
        messages.append(f"dropped constant column(s) {constant} (min-max scaling needs max > min)")
        cols = [c for c in cols if c not in constant]
        if not cols:
            shown = ", ".join(f"{c} = {kept[c].iloc[0]:g}" for c in constant)
            raise UdbenchError(
                f"{_COMMAND}: every covariate is constant on the {len(kept)} row(s) kept after "
                f"cleaning ({shown}), and min-max scaling needs max > min; a table needs at "
                "least one covariate that varies"
            )

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

    frame_out = kept[[*cols, *([target_col] if target_col else [])]]
    spec = DatasetSpec(
        key=name,
        source="user",
        source_id=0,
        n_rows=N,
        n_features=d,
        n_eval=min(MAX_EVAL, N // 2),
        n_train=None,
        rho=None,
        kernel_family=None,
        covariates=tuple(cols),
        target=target_col or "",
    )
    normalised = [normalise_name(c) for c in spec.covariates]
    clash = sorted({c for c, k in zip(cols, normalised, strict=True) if normalised.count(k) > 1})
    if clash:
        raise param_error(
            _COMMAND,
            "table columns",
            "have names that differ beyond case and punctuation (rename them)",
            clash,
        )
    X, y_real, _ = clean_table(frame_out, spec)
    geometry = fit_geometry(X)
    shell = geometry.shell_of(X)
    assert spec.n_eval is not None
    sizes = np.bincount(shell, minlength=N_SHELLS)
    if sizes.min() * N_SHELLS < spec.n_eval:  # ties in the distance make unequal shells
        raise param_error(
            _COMMAND,
            "table",
            f"give shells of at least n_eval/5 = {spec.n_eval / N_SHELLS:g} rows each (many "
            "rows share a Mahalanobis distance, e.g. repeated or few-valued covariates, so "
            "the quintile shells are unequal); drop repeats or few-valued covariates",
            f"shell sizes {sizes.tolist()}",
        )
    eval_idx, cand_idx = stratified_split(shell, spec.n_eval, name)
    n_rule, n_max = design_train_size(shell, cand_idx)
    if n_train is None:
        n = n_rule
        if n < MIN_TRAIN:
            raise param_error(
                _COMMAND,
                "table",
                f"give a training size n ≥ {MIN_TRAIN} (the shells are too unequal: the "
                f"`ood` quotas fit only n ≤ {n_max}); add rows",
                f"{N} rows",
            )
        n_rule_text = (
            f"min({TRAIN_CAP}, ⌊{TRAIN_MARGIN}·{n_max}⌋) (n_max = {n_max}: largest n whose "
            "balanced and ood quotas fit the candidate shells)"
        )
    else:
        if not (isinstance(n_train, int | np.integer) and MIN_TRAIN <= n_train <= n_max):
            raise param_error(
                _COMMAND,
                "--n",
                f"be an integer from {MIN_TRAIN} to {n_max} (the largest n whose balanced and "
                "ood quotas fit the candidate pool's shells)",
                n_train,
            )
        n, n_rule_text = int(n_train), "given (--n)"
    rho_value = float(rho) if rho is not None else suite_median_rho()
    spec = replace(spec, n_train=n, rho=rho_value)
    messages.append(
        f"design: N = {N}, d = {d}, n_eval = {spec.n_eval}, n = {n} ({n_rule_text}), "
        f"ρ = {rho_value:g} ({'given (--rho)' if rho is not None else 'median of the suite'})"
    )
    sha = None
    if not isinstance(table, pd.DataFrame):
        sha = hashlib.sha256(Path(origin).read_bytes()).hexdigest()
    provenance = {
        "added_from": origin,
        "added_sha256": sha or "",
        "rows_read": len(frame),
        "rows_dropped_missing": int(missing.sum()),
        "duplicates": duplicates,
        "duplicate_rows": n_dup,
        "columns_dropped_constant": constant,
        "columns_dropped": dropped,
        "n_train_rule": n_rule_text,
        "rho_rule": "given (--rho)" if rho is not None else "median of the suite",
    }
    for a in (X, y_real, shell, eval_idx, cand_idx):
        a.setflags(write=False)
    return PreparedDataset(
        spec=spec,
        frame=frame_out,
        X=X,
        y_real=y_real,
        shell=shell,
        eval_idx=eval_idx,
        cand_idx=cand_idx,
        messages=tuple(messages),
        warnings=tuple(notes),
        provenance=provenance,
    )


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return repr(value) if isinstance(value, int) else repr(float(value))
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        items = (f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    raise TypeError(f"cannot write {value!r} to TOML")  # a bug


def write_dataset(
    prepared: PreparedDataset,
    kernel_family: str,
    *,
    kernel_rule: str,
    kernel_lml: dict[str, float] | None = None,
    data_dir: str | os.PathLike[str] | None = None,
) -> DatasetSpec:
    """Write the table and the registry file of a prepared dataset into the data folder.

    Writes ``<root>/<key>/<key>.csv.gz`` (the kept raw columns, target last; gzip with a
    fixed timestamp) and then ``<root>/<key>/dataset.toml`` (the ``[dataset]`` registry
    entry and a ``[provenance]`` table), each through a temporary file, so a failed write
    never leaves a registered dataset without its table.

    Parameters
    ----------
    prepared : PreparedDataset
    kernel_family : str
        The GP kernel family (``+``-joined parts).
    kernel_rule : str
        How it was chosen (recorded).
    kernel_lml : dict, optional
        Maximised log marginal likelihood per candidate family (recorded).
    data_dir : path-like, optional
        The data folder (default ``$UDBENCH_DATA_DIR``).

    Returns
    -------
    DatasetSpec
        The registered entry (``registry_file`` set).
    """
    root = user_dataset_root(data_dir)
    spec = replace(prepared.spec, kernel_family=kernel_family)
    folder = root / spec.key
    folder.mkdir(parents=True, exist_ok=True)
    table = folder / f"{spec.key}.csv.gz"
    registry = folder / USER_REGISTRY_FILE
    tmp = folder / f".{spec.key}.csv.gz.tmp"
    prepared.frame.to_csv(
        tmp, index=False, float_format="%.17g", compression={"method": "gzip", "mtime": 0}
    )
    tmp.replace(table)
    entry = {
        "key": spec.key,
        "source": "user",
        "source_id": 0,
        "n_rows": spec.n_rows,
        "n_features": spec.n_features,
        "n_eval": spec.n_eval,
        "n_train": spec.n_train,
        "rho": spec.rho,
        "kernel_family": spec.kernel_family,
        "covariates": list(spec.covariates),
        "target": spec.target,
    }
    provenance = {
        **prepared.provenance,
        "kernel_rule": kernel_rule,
        "table_sha256": hashlib.sha256(table.read_bytes()).hexdigest(),
        "udbench_version": __version__,
        "added_at": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    lines = [
        "# A user dataset of udbench, written by `udbench datasets add` (see docs/data.md).",
        f"# Its table is {table.name} beside this file. Edit with care: add again with --force.",
        "",
        "[dataset]",
        *(f"{k} = {_toml_value(v)}" for k, v in entry.items()),
        "",
        "[provenance]",
        *(f"{k} = {_toml_value(v)}" for k, v in provenance.items()),
    ]
    if kernel_lml:
        lines += ["", "[provenance.kernel_log_marginal_likelihood]"]
        lines += [f"{json.dumps(k)} = {_toml_value(float(v))}" for k, v in kernel_lml.items()]
    tmp_reg = folder / f".{USER_REGISTRY_FILE}.tmp"
    tmp_reg.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp_reg.replace(registry)
    return replace(spec, registry_file=str(registry))
