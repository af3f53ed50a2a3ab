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
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from udbench._validation import UdbenchError, param_error

__all__ = [
    "COMPACTED_FILE",
    "ResultsStore",
    "cell_key",
    "config_hash",
    "read_results",
]

#: Name of the compacted table inside a results directory.
COMPACTED_FILE = "results.parquet"
_CELLS = "cells"
_PREDICTIONS = "predictions"
_SAFE = re.compile(r"[^A-Za-z0-9_.=-]+")


def _jsonable(value: Any) -> Any:
    """Map a hyperparameter value to a JSON-serialisable, order-stable form."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def canonical_config(method: str, params: Mapping[str, Any]) -> str:
    """Return the canonical JSON text of a method configuration (sorted keys, no spaces).

    ``random_state`` is excluded: the seed is derived per cell, it is not part of the
    configuration.
    """
    clean = {k: _jsonable(v) for k, v in params.items() if k != "random_state"}
    return json.dumps({"method": method, "params": clean}, sort_keys=True, separators=(",", ":"))


def config_hash(method: str, params: Mapping[str, Any]) -> str:
    """Return a 12-hex-digit BLAKE2b hash of :func:`canonical_config` (stable across platforms).

    Parameters
    ----------
    method : str
        The method's name.
    params : mapping
        All of its hyperparameters (defaults included), as ``get_params(deep=False)`` gives.

    Returns
    -------
    str
        Identical for identical configurations; any changed hyperparameter changes it.
    """
    text = canonical_config(method, params)
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


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

    def read(self) -> pd.DataFrame:
        """Return every stored row (compacted table and part files), one row per cell.

        Returns
        -------
        DataFrame
            Long format, one row per cell key; the newest row wins for a key stored twice.
            Empty (no columns) if nothing is stored.
        """
        frames: list[pd.DataFrame] = []
        compacted = self.root / COMPACTED_FILE
        if compacted.is_file():
            frames.append(pd.read_parquet(compacted))
        parts = self._part_files()
        if parts:
            frames.append(_read_parts(parts))
        frames = [f for f in frames if len(f)]
        if not frames:
            return pd.DataFrame()
        df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        if "finished_at" in df.columns:
            df = df.sort_values("finished_at", kind="stable")
        df = df.drop_duplicates("cell_key", keep="last")
        return df.reset_index(drop=True)

    def finished(self, *, include_failed: bool = True) -> set[str]:
        """Return the keys of finished cells (``ok`` ones, and failed ones unless excluded)."""
        df = self.read()
        if df.empty:
            return set()
        if not include_failed:
            df = df[df["status"] == "ok"]
        return set(df["cell_key"].astype(str))

    def read_predictions(self, key: str) -> pd.DataFrame:
        """Return the stored per-point predictions of cell ``key``.

        Raises
        ------
        UdbenchError
            If the cell's predictions were not kept (run with ``keep_predictions``).
        """
        path = self.prediction_path(key)
        if not path.is_file():
            raise param_error(
                "ResultsStore.read_predictions", "key", "name a cell run with keep_predictions", key
            )
        return pd.read_parquet(path)

    def compact(self) -> int:
        """Merge every part file into ``results.parquet`` and delete the merged parts.

        The compacted table is written atomically before any part is removed, so an
        interruption at any point loses nothing. Returns the number of rows stored.
        """
        parts = self._part_files()
        df = self.read()
        if not parts:
            return len(df)
        _write_atomic(pa.Table.from_pandas(df, preserve_index=False), self.root / COMPACTED_FILE)
        for p in parts:
            p.unlink(missing_ok=True)
        return len(df)


def _read_parts(parts: Iterable[Path]) -> pd.DataFrame:
    """Read one-row part files into one frame (columns may differ between parts)."""
    tables = [pq.read_table(p) for p in parts]
    if not tables:
        return pd.DataFrame()
    return pa.concat_tables(tables, promote_options="permissive").to_pandas()


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
        If ``path`` does not exist or holds no results.
    """
    p = Path(path)
    if p.is_file():
        df = pd.read_parquet(p)
    elif p.is_dir():
        df = ResultsStore(p).read()
    else:
        raise param_error("read_results", "path", "be a results directory or Parquet file", str(p))
    if df.empty:
        raise UdbenchError(f"read_results: no results stored under {str(p)!r}")
    return df
