"""A user's own table as a dataset of the suite (``udbench datasets add``).

:func:`prepare_dataset` reads a CSV or Parquet table, cleans it the way SPEC §2 cleans the
suite (numeric covariates, rows with a missing value dropped, constant covariates dropped,
min-max scaling), checks that the design of SPEC §2–§3 is feasible, and derives the design
quantities by the rules below; :func:`write_dataset` registers it in the user's data folder
as ``<data folder>/<key>/<key>.csv.gz`` (the kept raw columns, target last) and
``<data folder>/<key>/dataset.toml`` (the registry entry and how it was made), where
:func:`udbench.data.list_datasets` and every command taking ``--datasets`` find it.

The work is split by job: reading and cleaning the table in :mod:`udbench.data.user_cleaning`,
the design rules (n_eval, n, ρ, the kernel family; documented in ``docs/data.md``) in
:mod:`udbench.data.user_design`, whose public names this module re-exports.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from udbench import __version__
from udbench._validation import check_choice, param_error
from udbench.data.cleaning import clean_table, normalise_name
from udbench.data.covariates import stratified_split
from udbench.data.geometry import fit_geometry
from udbench.data.registry import (
    DATA_DIR_ENV,
    USER_REGISTRY_FILE,
    DatasetSpec,
    _registry,
    list_datasets,
    user_data_dir,
)
from udbench.data.user_cleaning import (
    _check_size,
    _drop_constant,
    _drop_missing,
    _numeric_values,
    _read,
    _select_columns,
    _treat_duplicates,
    read_table,
)
from udbench.data.user_design import (
    _COMMAND,
    DEFAULT_KERNEL_FAMILY,
    MAX_EVAL,
    MIN_TRAIN,
    TRAIN_CAP,
    TRAIN_MARGIN,
    _check_shells,
    _train_size,
    design_train_size,
    min_rows_needed,
    spec_kernel_families,
    suite_median_rho,
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

#: What ``prepare_dataset`` does with duplicate covariate rows.
DUPLICATE_POLICIES = ("error", "drop", "keep")

_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")


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


def _check_options(
    name: str,
    duplicates: str,
    rho: float | None,
    data_dir: str | os.PathLike[str] | None,
    force: bool,
) -> None:
    """Check the options of :func:`prepare_dataset` before reading the table."""
    _check_name(name, data_dir, force)
    check_choice(_COMMAND, "--duplicates", duplicates, DUPLICATE_POLICIES)
    if rho is not None and not (np.isfinite(rho) and rho > 0):
        raise param_error(_COMMAND, "--rho", "be a finite number > 0", rho)


def _unfinished_spec(
    name: str, kept: pd.DataFrame, cols: list[str], target_col: str | None
) -> DatasetSpec:
    """The registry entry before the design (no n, ρ or kernel family yet); covariate names
    that clash once normalised are refused."""
    spec = DatasetSpec(
        key=name,
        source="user",
        source_id=0,
        n_rows=len(kept),
        n_features=len(cols),
        n_eval=min(MAX_EVAL, len(kept) // 2),
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
    return spec


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
    (``?`` and empty cells count as missing; a count is reported); drop constant and
    near-constant covariates (named; :func:`udbench.data.cleaning.is_near_constant`); treat
    duplicate covariate rows by ``duplicates``; check feasibility; scale to [0, 1]; fit the
    noise score and shells (SPEC §3); split (SPEC §2); set n and ρ.

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
    _check_options(name, duplicates, rho, data_dir, force)
    frame, origin = _read(table)
    messages: list[str] = [f"read {len(frame)} rows × {frame.shape[1]} columns from {origin}"]
    target_col, dropped, cols = _select_columns(frame, target, drop, covariates)
    with_target = [target_col] if target_col else []
    table_values = _numeric_values(frame, [*cols, *with_target])
    kept, missing = _drop_missing(table_values, cols, target_col, origin, messages)
    cols, constant = _drop_constant(kept, cols, messages)
    kept, n_dup = _treat_duplicates(kept, cols, duplicates, messages)
    notes = _check_size(kept, cols)

    frame_out = kept[[*cols, *with_target]]
    spec = _unfinished_spec(name, kept, cols, target_col)
    X, y_real, _ = clean_table(frame_out, spec)
    shell = fit_geometry(X).shell_of(X)
    assert spec.n_eval is not None
    _check_shells(shell, spec.n_eval)
    eval_idx, cand_idx = stratified_split(shell, spec.n_eval, name)
    n, n_rule_text = _train_size(shell, cand_idx, n_train, len(kept))
    rho_value = float(rho) if rho is not None else suite_median_rho()
    rho_rule = "given (--rho)" if rho is not None else "median of the suite"
    spec = replace(spec, n_train=n, rho=rho_value)
    messages.append(
        f"design: N = {len(kept)}, d = {len(cols)}, n_eval = {spec.n_eval}, n = {n} "
        f"({n_rule_text}), ρ = {rho_value:g} ({rho_rule})"
    )
    provenance = {
        "added_from": origin,
        "added_sha256": _source_sha256(table, origin),
        "rows_read": len(frame),
        "rows_dropped_missing": int(missing.sum()),
        "duplicates": duplicates,
        "duplicate_rows": n_dup,
        "columns_dropped_constant": constant,
        "columns_dropped": dropped,
        "n_train_rule": n_rule_text,
        "rho_rule": rho_rule,
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


def _source_sha256(table: str | os.PathLike[str] | pd.DataFrame, origin: str) -> str:
    """The checksum of the table's file ("" for a frame), recorded in the provenance."""
    if isinstance(table, pd.DataFrame):
        return ""
    return hashlib.sha256(Path(origin).read_bytes()).hexdigest()


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
