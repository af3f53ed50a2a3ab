"""The results store: long-format Parquet, one row per (task, method, configuration) cell.

Layout of a results directory (every file readable with :func:`pandas.read_parquet`)::

    RESULTS/
      results.parquet          compacted rows (written by :meth:`ResultsStore.compact`)
      cells/<cell>.parquet     one row per finished cell, written atomically as the cell ends
      predictions/<cell>.parquet   per-point predictions of a cell (on request)

Each finished cell is written at once to its own small part file (write to a temporary file,
``fsync``, then :func:`os.replace`), so an interrupted run loses no finished cell and a reader
never sees a half-written file. :meth:`ResultsStore.read` merges the compacted table with every
part file; when a cell appears twice (e.g. a failed cell that was retried) the newest row wins.
One row per cell is keyed by ``cell_key = "<task_id>|<method>|<config_hash>|<task checksum>"``
(:func:`cell_key`); rows also carry the full ``task_sha256``.

A part file that cannot be used (not Parquet, truncated, no ``cell_key`` column, or a column
whose type conflicts with the rest of the store, e.g. a string where the other cells hold
numbers) never blocks the folder: readers skip it with a one-line :class:`StoreWarning`
naming the file and the reason, and :meth:`ResultsStore.compact` (the end of every
``udbench run``) moves it to ``cells/quarantine/`` (never deleted). A cell whose only part
was bad is not finished, so the next run recomputes it. Parts are checked against the
compacted table first, then against each other, the most common column types first. Missing
or extra columns are not an error (they read as missing values). The compacted table is
many cells in one file: if it cannot be read, reading stops with a one-line
:class:`~udbench._validation.UdbenchError` that says how to repair the folder.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from udbench._validation import UdbenchError, UdbenchWarning, param_error
from udbench.methods.configs import canonical_config, config_hash

__all__ = [
    "COMPACTED_FILE",
    "QUARANTINE",
    "ResultsStore",
    "StoreWarning",
    "canonical_config",
    "cell_key",
    "config_hash",
    "merge_results",
    "prediction_from_frame",
    "read_results",
    "read_results_merged",
    "resolve_task_paths",
]

#: Name of the compacted table inside a results directory.
COMPACTED_FILE = "results.parquet"
_CELLS = "cells"
_PREDICTIONS = "predictions"
#: Sub-folder of ``cells/`` that unreadable or conflicting part files are moved to.
QUARANTINE = "quarantine"
_SAFE = re.compile(r"[^A-Za-z0-9_.=-]+")


def cell_key(task_id: str, method: str, chash: str, task_sha256: str | None = None) -> str:
    """Return the key of a cell: ``"<task_id>|<method>|<config_hash>|<task checksum>"``.

    The last part is the first 16 hex digits of the task file's content checksum, so the
    key names what was evaluated: a changed task file (same id, other content) is another
    cell. Without a checksum (a file that could not be read) the key is the older
    ``"<task_id>|<method>|<config_hash>"``.
    """
    key = f"{task_id}|{method}|{chash}"
    return f"{key}|{task_sha256[:16]}" if task_sha256 else key


def _part_name(key: str) -> str:
    """File name for a cell: readable prefix plus a hash of the exact key (no collisions)."""
    digest = hashlib.blake2b(key.encode(), digest_size=4).hexdigest()
    return f"{_SAFE.sub('_', key)[:150]}-{digest}.parquet"


def _file_mode() -> int:
    """The mode ``open()`` would give a new file (0o666 less the umask); mkstemp gives 0o600."""
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


#: read once at import (changing the umask is process-wide, so not from worker threads)
_FILE_MODE = _file_mode()


def _write_atomic(table: pa.Table, path: Path) -> None:
    """Write ``table`` to ``path`` so that readers see either nothing or the whole file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".parquet", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            pq.write_table(table, fh)
            fh.flush()
            os.fsync(fh.fileno())
            os.fchmod(fh.fileno(), _FILE_MODE)  # like any other output file, not owner-only
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class StoreWarning(UdbenchWarning):
    """A part file of a results folder was skipped or set aside (named in the message)."""


def _reason(err: BaseException) -> str:
    """One line: the error's first line, without pyarrow's repetition of the file name."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return f"{type(err).__name__}: {text}"


def _read_table(path: Path) -> pa.Table:
    """Read a Parquet file that must hold results rows (a string ``cell_key`` column).

    Raises
    ------
    OSError, pyarrow.ArrowException, ValueError
        Unreadable file (not Parquet, truncated, unreadable) or no usable ``cell_key``.
    """
    table = pq.read_table(path)
    if "cell_key" not in table.column_names:
        raise ValueError("no 'cell_key' column (not a udbench results file)")
    keys = table.column("cell_key")
    if not (pa.types.is_string(keys.type) or pa.types.is_large_string(keys.type)):
        raise ValueError(f"column 'cell_key' holds {keys.type}, not strings")
    if keys.null_count:
        raise ValueError("column 'cell_key' has missing values")
    return table


def _admit_parts(
    reference: pa.Schema | None, tables: list[tuple[Path, pa.Table]]
) -> tuple[list[pa.Table], list[tuple[Path, str]]]:
    """Split part tables into those whose column types fit together and those that conflict.

    The compacted table's schema (``reference``) is admitted first, then the parts whose
    column types are the most common ones, so that one stray part is the one set aside.
    """
    counts: dict[tuple[tuple[str, str], ...], int] = {}

    def signature(t: pa.Table) -> tuple[tuple[str, str], ...]:
        return tuple(
            sorted((f.name, str(f.type)) for f in t.schema if not pa.types.is_null(f.type))
        )

    for _, t in tables:
        counts[signature(t)] = counts.get(signature(t), 0) + 1
    order = sorted(tables, key=lambda pt: (-counts[signature(pt[1])], pt[0].name))
    schema = reference
    good: dict[Path, pa.Table] = {}
    bad: list[tuple[Path, str]] = []
    for path, table in order:
        if schema is None:
            schema = table.schema
        else:
            try:
                schema = pa.unify_schemas([schema, table.schema], promote_options="permissive")
            except (pa.ArrowException, TypeError, ValueError) as err:
                bad.append((path, _reason(err)))
                continue
        good[path] = table
    return [good[p] for p, _ in tables if p in good], bad


class ResultsStore:
    """A results directory: durable per-cell Parquet parts plus a compacted table.

    Parameters
    ----------
    root : str or Path
        The results directory; created on first write.

    Notes
    -----
    One ``udbench run`` should write to a directory at a time; readers may read at any time.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    # -- paths ------------------------------------------------------------------------
    @property
    def has_results(self) -> bool:
        """Whether the folder already holds results (a compacted table or a cells folder)."""
        return (self.root / COMPACTED_FILE).exists() or self.cells_dir.is_dir()

    @property
    def cells_dir(self) -> Path:
        """Folder of per-cell part files."""
        return self.root / _CELLS

    @property
    def predictions_dir(self) -> Path:
        """Folder of per-cell prediction files."""
        return self.root / _PREDICTIONS

    def prediction_path(self, key: str) -> Path:
        """Path of the per-point predictions of cell ``key``."""
        return self.predictions_dir / _part_name(key)

    # -- writing ----------------------------------------------------------------------
    def write_cell(self, row: Mapping[str, Any], predictions: pd.DataFrame | None = None) -> Path:
        """Write one finished cell durably and return its part file.

        Parameters
        ----------
        row : mapping
            The cell's long-format row; must hold ``cell_key``.
        predictions : DataFrame, optional
            Per-point predictions (one row per evaluation point), written first so that a
            cell row never points at missing predictions.

        Raises
        ------
        UdbenchError
            If ``row`` has no ``cell_key``.
        """
        key = row.get("cell_key")
        if not isinstance(key, str) or not key:
            raise param_error("ResultsStore.write_cell", "row", "hold a 'cell_key' string", key)
        if predictions is not None:
            pred_table = pa.Table.from_pandas(predictions, preserve_index=False)
            _write_atomic(pred_table, self.prediction_path(key))
        table = pa.Table.from_pylist([dict(row)])
        path = self.cells_dir / _part_name(key)
        _write_atomic(table, path)
        return path

    # -- reading ----------------------------------------------------------------------
    def _part_files(self) -> list[Path]:
        if not self.cells_dir.is_dir():
            return []
        return sorted(p for p in self.cells_dir.glob("*.parquet") if not p.name.startswith("."))

    def _load(self) -> tuple[pd.DataFrame, list[tuple[Path, str]]]:
        """Every usable row (newest per cell) and the part files that could not be used."""
        compacted = self.root / COMPACTED_FILE
        reference: pa.Table | None = None
        if compacted.is_file():
            try:
                reference = _read_table(compacted)
            except (OSError, pa.ArrowException, ValueError) as err:
                raise UdbenchError(
                    f"results store {str(self.root)!r}: {str(compacted)!r} cannot be read "
                    f"({_reason(err)}). It holds the cells compacted by earlier runs: restore it "
                    f"from a backup, or move it aside (e.g. to {COMPACTED_FILE}.bad) so that the "
                    f"next 'udbench run --out {self.root}' recomputes those cells."
                ) from None
        tables: list[tuple[Path, pa.Table]] = []
        bad: list[tuple[Path, str]] = []
        for part in self._part_files():
            try:
                tables.append((part, _read_table(part)))
            except (OSError, pa.ArrowException, ValueError) as err:
                bad.append((part, _reason(err)))
        good, conflicting = _admit_parts(None if reference is None else reference.schema, tables)
        bad.extend(conflicting)
        frames: list[pd.DataFrame] = []
        if reference is not None:
            frames.append(reference.to_pandas())
        if good:
            frames.append(pa.concat_tables(good, promote_options="permissive").to_pandas())
        frames = [f for f in frames if len(f)]
        if not frames:
            return pd.DataFrame(), sorted(bad)
        df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        if "finished_at" in df.columns:
            df = df.sort_values("finished_at", kind="stable")
        df = df.drop_duplicates("cell_key", keep="last")
        return df.reset_index(drop=True), sorted(bad)

    def read(self) -> pd.DataFrame:
        """Return every stored row (compacted table and part files), one row per cell.

        A part file that cannot be used is skipped with a :class:`StoreWarning` naming it
        and the reason (see the module notes); the folder is not changed.

        Returns
        -------
        DataFrame
            Long format, one row per cell key; the newest row wins for a key stored twice.
            Empty (no columns) if nothing is stored. ``task_path`` is absolute where the
            file can be found (:func:`resolve_task_paths`).

        Raises
        ------
        UdbenchError
            If the compacted ``results.parquet`` cannot be read (the message says how to
            repair the folder).
        """
        df, bad = self._load()
        for path, reason in bad:
            warnings.warn(
                f"results store: skipped part file {str(path)!r} ({reason}); 'udbench run "
                f"--out {self.root}' moves it to {str(self.cells_dir / QUARANTINE)!r} as it "
                "ends, and recomputes its cell",
                StoreWarning,
                stacklevel=2,
            )
        if "task_path" in df.columns:
            df["task_path"] = resolve_task_paths(df["task_path"], self.root)
        return df

    def finished(self, *, include_failed: bool = True) -> set[str]:
        """Return the keys of finished cells (``ok`` ones, and failed ones unless excluded)."""
        df = self.read()
        if df.empty:
            return set()
        if not include_failed:
            df = df[df["status"] == "ok"]
        return set(df["cell_key"].astype(str))

    def read_predictions(self, key: str, points: str = "eval") -> pd.DataFrame:
        """Return the stored per-point predictions of cell ``key``.

        Parameters
        ----------
        key : str
            The cell key.
        points : {"eval", "query", "all"}, default "eval"
            Which points: the evaluation pool, the task's query points (a task carrying
            query points, ``docs/tasks.md``; their file has a ``point_set`` column with
            ``"eval"``/``"query"`` and ``eval_idx`` holds the query row there), or both.

        Raises
        ------
        UdbenchError
            If the cell's predictions were not kept (run with ``keep_predictions``), or
            ``points`` is not one of the three.
        """
        if points not in ("eval", "query", "all"):
            raise param_error(
                "ResultsStore.read_predictions", "points", "be 'eval', 'query' or 'all'", points
            )
        path = self.prediction_path(key)
        if not path.is_file():
            raise param_error(
                "ResultsStore.read_predictions", "key", "name a cell run with keep_predictions", key
            )
        df = pd.read_parquet(path)
        if points == "all":
            return df
        if "point_set" not in df.columns:  # a task without query points
            return df if points == "eval" else df.iloc[:0]
        return df[df["point_set"] == points].drop(columns="point_set").reset_index(drop=True)

    def compact(self) -> int:
        """Merge every part file into ``results.parquet`` and delete the merged parts.

        The compacted table is written atomically before any part is removed, so an
        interruption at any point loses nothing. A part that cannot be used is moved to
        ``cells/quarantine/`` (with a :class:`StoreWarning`), never deleted. Returns the
        number of rows stored.
        """
        parts = self._part_files()
        df, bad = self._load()
        if not parts:
            return len(df)
        if len(df):
            _write_atomic(
                pa.Table.from_pandas(df, preserve_index=False), self.root / COMPACTED_FILE
            )
        quarantined = {path for path, _ in bad}
        for path, reason in bad:
            target = self.cells_dir / QUARANTINE / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            n = 1
            while target.exists():  # never replace a file set aside before
                target = target.with_name(f"{path.stem}.{n}{path.suffix}")
                n += 1
            os.replace(path, target)
            warnings.warn(
                f"results store: moved unusable part file {str(path)!r} ({reason}) to "
                f"{str(target)!r}; its row is not used (a cell stored only there is not "
                "finished and runs again)",
                StoreWarning,
                stacklevel=2,
            )
        for p in parts:
            if p not in quarantined:
                p.unlink(missing_ok=True)
        return len(df)


def resolve_task_paths(paths: pd.Series, results_dir: str | os.PathLike[str]) -> pd.Series:
    """The stored ``task_path`` of each row as a path that works from any folder.

    ``udbench run`` stores the absolute path of every task file (docs/running.md, "Task
    paths"). Rows written by earlier versions hold the path as it was given, relative to the
    folder the run was started in, which a command run from elsewhere cannot find. Such a
    relative path is resolved against, in order, the current folder (where it was found
    before), the results folder and each folder above it; the first that names an existing
    file wins. A path found nowhere, and every absolute path, is left as stored (a command
    that needs the file then says it is missing, and ``--tasks`` names where it is now).

    Parameters
    ----------
    paths : Series of str
        The ``task_path`` column.
    results_dir : str or Path
        The results folder the rows were read from.

    Returns
    -------
    Series of str
        Same index.
    """
    bases = [Path.cwd(), *Path(os.path.abspath(results_dir)).parents]
    bases.insert(1, Path(os.path.abspath(results_dir)))
    found: dict[str, str] = {}

    def resolve(value: Any) -> Any:
        if not isinstance(value, str) or not value or os.path.isabs(value):
            return value
        if value not in found:
            found[value] = value
            for base in bases:
                candidate = base / value
                if candidate.is_file():
                    found[value] = str(candidate)
                    break
        return found[value]

    return paths.map(resolve)


def read_results(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a results directory (or a single Parquet file) into a DataFrame.

    Parameters
    ----------
    path : str or Path
        A results directory written by ``udbench run`` or a ``.parquet`` file.

    Returns
    -------
    DataFrame
        One row per cell (see :class:`ResultsStore`).

    Raises
    ------
    UdbenchError
        If ``path`` does not exist, holds no results, or is a file that is not a readable
        results table (e.g. a text file, a truncated Parquet file).
    """
    p = Path(path)
    if p.is_file():
        try:
            df = _read_table(p).to_pandas()
        except (OSError, pa.ArrowException, ValueError) as err:
            # not param_error: its value is shortened, and the reason matters
            raise UdbenchError(
                f"read_results: {str(p)!r} is not a readable results table ({_reason(err)}); "
                "give a results folder written by 'udbench run', or its results.parquet"
            ) from None
        if "task_path" in df.columns:
            df["task_path"] = resolve_task_paths(df["task_path"], p.parent)
    elif p.is_dir():
        df = ResultsStore(p).read()
    else:
        raise param_error("read_results", "path", "be a results directory or Parquet file", str(p))
    if df.empty:
        raise UdbenchError(f"read_results: no results stored under {str(p)!r}")
    return df


#: Columns of a row that say where and when a cell ran, not what it measured: two folders
#: may hold the same cell with other values here and still count as one result.
_PROVENANCE = frozenset(
    {"task_path", "host", "started_at", "finished_at", "udbench_version", "traceback", "error"}
)
#: Relative tolerance under which two numbers of the same cell count as the same.
MERGE_RTOL = 1e-9


def _result_columns(df: pd.DataFrame) -> list[str]:
    """The columns that hold what a cell measured: ``status`` and every numeric column
    but timings (``*_time_s``, ``*_seconds``) and :data:`_PROVENANCE`."""
    return [
        c
        for c in df.columns
        if c == "status"
        or (
            c not in _PROVENANCE
            and not str(c).endswith(("_time_s", "_seconds"))
            and pd.api.types.is_numeric_dtype(df[c])
            and not pd.api.types.is_bool_dtype(df[c])
        )
    ]


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return bool(a == b)
    a_missing, b_missing = pd.isna(a), pd.isna(b)
    if a_missing or b_missing:
        return bool(a_missing and b_missing)
    return bool(np.isclose(float(a), float(b), rtol=MERGE_RTOL, atol=0.0))


def _differing_text(a: Any, b: Any) -> str:
    """``"0.6 vs 0.61"``: six significant figures where they tell the two apart."""
    if isinstance(a, float) and isinstance(b, float):
        short = f"{a:.6g} vs {b:.6g}"
        if f"{a:.6g}" != f"{b:.6g}":
            return short
    return f"{a!r} vs {b!r}"


def merge_results(frames: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Merge the rows of several results folders into one frame, one row per cell.

    Parameters
    ----------
    frames : mapping of str to DataFrame
        Where each frame was read from (used in the error message) → its rows
        (:func:`read_results`).

    Returns
    -------
    DataFrame
        The rows of every frame; a cell (``cell_key``) held by several frames with the same
        results (``status`` and every numeric column but timings equal to a relative
        :data:`MERGE_RTOL`, missing values equal to missing values) is kept once, from the
        first frame that holds it. Where and when a cell ran (host, times, task path) may
        differ.

    Raises
    ------
    UdbenchError
        If two frames hold the same cell with other results (the message names the cell,
        both sources and the first column that differs), or no frame is given.
    """
    if not frames:
        raise param_error("merge_results", "frames", "name at least one results folder", {})
    sources = list(frames)
    if len(sources) == 1:
        return frames[sources[0]]
    compared = {src: set(_result_columns(df)) for src, df in frames.items()}
    tagged = [df.assign(_merge_source=i) for i, df in enumerate(frames.values())]
    merged = pd.concat(tagged, ignore_index=True)
    twice = merged[merged["cell_key"].astype(str).duplicated(keep=False)]
    for key, group in twice.groupby(twice["cell_key"].astype(str), sort=False):
        rows = group.to_dict(orient="records")
        first, first_source = rows[0], sources[rows[0]["_merge_source"]]
        for row in rows[1:]:
            source = sources[row["_merge_source"]]
            # a column one folder lacks (e.g. another --loss) is not compared
            both = compared[first_source] & compared[source]
            for column in (c for c in merged.columns if c in both):  # status, then metrics
                a, b = first[column], row[column]
                if not _same_value(a, b):
                    shown = _differing_text(a, b)
                    raise UdbenchError(
                        f"merge_results: cell {key!r} is in {first_source!r} and {source!r} "
                        f"with other results ({column}: {shown}); give only one of the two "
                        "folders"
                    )
    merged = merged.drop_duplicates("cell_key", keep="first").drop(columns="_merge_source")
    return merged.reset_index(drop=True)


def read_results_merged(paths: Sequence[str | os.PathLike[str]]) -> pd.DataFrame:
    """Read several results folders (or Parquet files) and merge their rows.

    Parameters
    ----------
    paths : sequence of str or Path
        Results folders written by ``udbench run`` (or ``.parquet`` files); one path reads
        as :func:`read_results`.

    Returns
    -------
    DataFrame
        :func:`merge_results` of the folders' rows, in the order given.

    Raises
    ------
    UdbenchError
        A path :func:`read_results` refuses, or a cell held by two folders with other
        results (:func:`merge_results`).
    """
    names = [os.fspath(p) for p in paths]
    if len(names) == 1:
        return read_results(names[0])
    return merge_results({name: read_results(name) for name in dict.fromkeys(names)})


def prediction_from_frame(frame: pd.DataFrame, eval_idx: Any) -> Any:
    """The :class:`~udbench.methods.base.Prediction` held by a stored predictions frame
    (columns ``eval_idx``, ``mean``, ``aleatoric``, ``epistemic``, as
    :meth:`ResultsStore.read_predictions` returns them; variances in target units), or None
    when its points are not the task's ``eval_idx`` (another task's, or in another order):
    the caller says why it cannot use them."""
    import numpy as np

    from udbench.methods.base import Prediction

    if not np.array_equal(frame["eval_idx"].to_numpy(), np.asarray(eval_idx)):
        return None
    return Prediction(
        frame["mean"].to_numpy(dtype=np.float64),
        frame["aleatoric"].to_numpy(dtype=np.float64),
        frame["epistemic"].to_numpy(dtype=np.float64),
    )
