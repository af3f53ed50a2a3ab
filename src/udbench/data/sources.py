"""Where raw tables come from: a local data folder, the download cache, or scikit-learn.

Layout on disk (both the data folder and the cache): ``<root>/<key>/<key>.csv.gz``, a gzip
CSV with a header row, the source's column names and the target column last (the layout of
the project's shared data folder).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from udbench._cache import CACHE_DIR_ENV, cache_dir
from udbench._validation import InputUnavailableError, UdbenchError, check_choice, param_error

if TYPE_CHECKING:  # pandas loads where a table is read: listing sources must stay fast
    import pandas as pd
from udbench.data.registry import (
    DATA_DIR_ENV,
    DatasetSpec,
    get_dataset_spec,
    list_datasets,
    user_data_dir,
)

__all__ = [
    "DatasetFetchError",
    "RawTable",
    "availability",
    "cache_dir",
    "download_dataset",
    "find_raw_table",
    "read_raw_table",
]


@dataclass(frozen=True)
class RawTable:
    """A raw table before cleaning: the frame and where it was found."""

    frame: pd.DataFrame
    origin: str  # "local" | "cached" | "embedded"
    path: str | None


def _data_dir(data_dir: str | os.PathLike[str] | None) -> Path | None:
    return user_data_dir(data_dir)


def _table_path(root: Path, key: str) -> Path:
    return root / key / f"{key}.csv.gz"


def availability(key: str, data_dir: str | os.PathLike[str] | None = None) -> str:
    """Where ``key`` would be loaded from: ``"local"``, ``"cached"``, ``"embedded"`` or
    ``"needs download"`` (sources tried in that order, see :func:`find_raw_table`); a user
    dataset whose table is gone is ``"missing"``."""
    spec = get_dataset_spec(key, data_dir)
    root = _data_dir(data_dir)
    if root is not None and _table_path(root, key).is_file():
        return "local"
    if _table_path(cache_dir(), key).is_file():
        return "cached"
    if spec.source == "sklearn":
        return "embedded"
    return "missing" if spec.source == "user" else "needs download"


def find_raw_table(key: str, data_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """Path of the raw table of ``key``, or None when it is embedded.

    Tried in order: ``data_dir`` (default ``$UDBENCH_DATA_DIR``), the download cache, and
    (``diabetes``) scikit-learn's bundled table.

    Raises
    ------
    InputUnavailableError
        If the table is nowhere available (a :class:`UdbenchError`); the message names the
        files looked for and how to provide one (``udbench datasets download KEY`` or a
        data folder).
    """
    spec = get_dataset_spec(key, data_dir)
    root = _data_dir(data_dir)
    looked: list[str] = []
    if root is not None:
        path = _table_path(root, key)
        if path.is_file():
            return path
        note = "data folder"
        if path.parent.is_dir():
            others = sorted(p.name for p in path.parent.iterdir() if p.name != path.name)
            if others:
                note += f"; its {key}/ folder holds only {', '.join(others)}"
        looked.append(f"{path} ({note})")
    cached = _table_path(cache_dir(), key)
    if cached.is_file():
        return cached
    looked.append(f"{cached} (download cache, ${CACHE_DIR_ENV})")
    if spec.source == "sklearn":
        return None
    if spec.source == "user":
        raise InputUnavailableError(
            f"load_covariates: parameter 'key' must name a dataset whose table is available; "
            f"got {key!r}, registered in {spec.registry_file}, but its table is missing "
            f"({' nor '.join(looked)}). Add it again: `udbench datasets add PATH --name {key} "
            "--force`.",
            what=f"the table of {key}",
        )
    where = "OpenML data id" if spec.source == "openml" else "UCI repository id"
    raise InputUnavailableError(
        f"load_covariates: parameter 'key' must name a dataset whose raw table is available; "
        f"got {key!r}, but no file exists at {' nor at '.join(looked)}. "
        f"Run `udbench datasets download {key}` (needs internet; {where} {spec.source_id}) "
        f"or put the full {spec.n_rows}-row table at <data folder>/{key}/{key}.csv.gz "
        f"and name that folder as the data folder (--data-dir, or ${DATA_DIR_ENV}).",
        what=f"the raw table of {key}",
    )


def _embedded_frame(spec: DatasetSpec) -> pd.DataFrame:
    from sklearn.datasets import load_diabetes

    bunch = load_diabetes(as_frame=True, scaled=False)
    return bunch.frame


def read_raw_table(key: str, data_dir: str | os.PathLike[str] | None = None) -> RawTable:
    """Read the raw table of ``key`` from the first source that has it (no cleaning)."""
    spec = get_dataset_spec(key, data_dir)
    path = find_raw_table(key, data_dir)
    if path is None:
        return RawTable(_embedded_frame(spec), "embedded", None)
    root = _data_dir(data_dir)
    origin = "local" if root is not None and path == _table_path(root, key) else "cached"
    try:
        import pandas as pd

        frame = pd.read_csv(path, na_values=["?"], low_memory=False)
    except (OSError, ValueError, EOFError) as err:
        raise UdbenchError(
            f"load_covariates: file {str(path)!r} must be a gzip CSV with a header row; "
            f"reading it failed: {err}"
        ) from None
    return RawTable(frame, origin, str(path))


def _fetch_frame(spec: DatasetSpec) -> pd.DataFrame:
    """Fetch the raw table of ``spec`` from its source, target column last."""
    if spec.source == "openml":
        from sklearn.datasets import fetch_openml

        bunch = fetch_openml(
            data_id=spec.source_id,
            as_frame=True,
            data_home=str(cache_dir() / "openml"),
            target_column=None,
        )
        frame = bunch.frame if bunch.frame is not None else bunch.data
    elif spec.source == "uci":
        from ucimlrepo import fetch_ucirepo

        frame = fetch_ucirepo(id=spec.source_id).data.original
    else:  # embedded
        frame = _embedded_frame(spec)
    import pandas as pd

    frame = pd.DataFrame(frame).copy()
    target = [c for c in frame.columns if _same_name(c, spec.target)]
    rest = [c for c in frame.columns if c not in target]
    return frame[rest + target]


def _same_name(a: object, b: str) -> bool:
    from udbench.data.cleaning import normalise_name

    return normalise_name(str(a)) == normalise_name(b)


class DatasetFetchError(UdbenchError):
    """A dataset's fetch failed (network, source or its parser), as opposed to a fetched
    table that does not clean to SPEC's shape: ``udbench datasets download all`` counts the
    two apart in its summary line."""


def download_dataset(key: str, *, force: bool = False) -> Path:
    """Fetch ``key`` from OpenML (by data id) or UCI (``ucimlrepo``) into the cache.

    The table is written as ``<cache>/<key>/<key>.csv.gz`` (raw columns, target last) after
    checking that it cleans to SPEC's (N, d); a table that does not is not cached.

    Parameters
    ----------
    key : str
        A registered dataset key (``"all"`` is handled by the CLI).
    force : bool, default False
        Re-download even if the cache already has the table.

    Returns
    -------
    pathlib.Path
        The cached file.

    Raises
    ------
    DatasetFetchError
        A fetch that fails (no network, a source down, its parser).
    UdbenchError
        Unknown key, or a table that does not clean to SPEC's shape.
    """
    spec = get_dataset_spec(key)
    if spec.source == "user":
        raise param_error(
            "download_dataset",
            "key",
            "name a dataset of the packaged suite (a user dataset has no source to fetch from)",
            key,
        )
    path = _table_path(cache_dir(), key)
    if path.is_file() and not force:
        return path
    try:
        frame = _fetch_frame(spec)
    except UdbenchError:
        raise
    except Exception as err:  # network and parser errors of the fetchers
        raise DatasetFetchError(
            f"download_dataset: fetching {key!r} from {spec.source} id {spec.source_id} "
            f"failed ({type(err).__name__}: {err}); check the internet connection or put the "
            f"table at <data folder>/{key}/{key}.csv.gz and set ${DATA_DIR_ENV}."
        ) from None
    from udbench.data.cleaning import clean_table

    clean_table(frame, spec)  # raises if columns or shape do not match SPEC
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    frame.to_csv(tmp, index=False, compression={"method": "gzip", "mtime": 0})
    tmp.replace(path)
    return path


def downloadable_keys() -> list[str]:
    """Keys that ``udbench datasets download all`` fetches (every non-embedded dataset)."""
    return [s.key for s in list_datasets() if s.source in ("uci", "openml")]


def check_key(key: str, data_dir: str | os.PathLike[str] | None = None) -> str:
    """Validate a dataset key, the user's datasets included (helper for the CLI)."""
    keys = [s.key for s in list_datasets(data_dir=data_dir)]
    return check_choice("udbench datasets", "key", key, keys)
