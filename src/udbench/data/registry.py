"""The dataset registry: SPEC §2's table, shipped as ``datasets.toml`` and read into specs."""

from __future__ import annotations

import functools
import os
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from udbench._validation import UdbenchError, check_choice

__all__ = [
    "DATA_DIR_ENV",
    "SOURCES",
    "USER_REGISTRY_FILE",
    "DatasetSpec",
    "get_dataset_spec",
    "list_datasets",
    "user_data_dir",
]

#: Where a dataset's raw table comes from when it is not on disk (``user``: added with
#: ``udbench datasets add``, lives only in the user's data folder).
SOURCES = ("uci", "openml", "sklearn", "user")

#: Environment variable naming the local data folder.
DATA_DIR_ENV = "UDBENCH_DATA_DIR"

#: Name of a user dataset's registry file, beside its table: ``<data folder>/<key>/dataset.toml``.
USER_REGISTRY_FILE = "dataset.toml"


@dataclass(frozen=True)
class DatasetSpec:
    """One row of the covariate-suite table (SPEC §2, paper Table 4).

    Attributes
    ----------
    key : str
        Short name, e.g. ``"concrete"``; also the folder/file name ``<key>/<key>.csv.gz``.
    source : {"uci", "openml", "sklearn"}
        Where ``udbench datasets download`` fetches the raw table from.
    source_id : int
        UCI repository id or OpenML data id (0 for scikit-learn's bundled table).
    n_rows, n_features : int
        N and d after cleaning (checks: a cleaned table that differs is an error).
    n_eval, n_train : int or None
        Evaluation-pool size min(1500, ⌊N/2⌋) and training-set size n (SPEC §2);
        ``None`` for out-of-distribution-only data.
    rho : float or None
        Noise-to-signal ratio: mean aleatoric variance over the evaluation pool (SPEC §4),
        in target units (prior draws have median SD 1 over the pool, SPEC §5).
    kernel_family : str or None
        GP kernel family of the dataset, e.g. ``"matern12+linear"`` (parts joined by ``+``).
    covariates : tuple of str
        Kept covariates, in column order of the cleaned matrix.
    target : str
        The real target column (used only to fit GP kernel hyperparameters).
    ood_only : bool
        True for data used only as out-of-distribution queries (``red_wine``).
    registry_file : str or None
        For a user dataset (``source="user"``), the registry file it was read from
        (``<data folder>/<key>/dataset.toml``); None for the packaged suite.
    """

    key: str
    source: str
    source_id: int
    n_rows: int
    n_features: int
    n_eval: int | None
    n_train: int | None
    rho: float | None
    kernel_family: str | None
    covariates: tuple[str, ...]
    target: str
    ood_only: bool = False
    registry_file: str | None = None


def _spec_from_row(row: dict, registry_file: str | None = None) -> DatasetSpec:
    return DatasetSpec(
        key=row["key"],
        source=row["source"],
        source_id=int(row["source_id"]),
        n_rows=int(row["n_rows"]),
        n_features=int(row["n_features"]),
        n_eval=row.get("n_eval"),
        n_train=row.get("n_train"),
        rho=row.get("rho"),
        kernel_family=row.get("kernel_family"),
        covariates=tuple(row["covariates"]),
        target=row.get("target", ""),
        ood_only=bool(row.get("ood_only", False)),
        registry_file=registry_file,
    )


@functools.cache
def _registry() -> dict[str, DatasetSpec]:
    """The packaged suite (``datasets.toml``)."""
    text = resources.files("udbench.data").joinpath("datasets.toml").read_text("utf-8")
    table = tomllib.loads(text)["dataset"]
    specs: dict[str, DatasetSpec] = {}
    for row in table:
        spec = _spec_from_row(row)
        if spec.source not in SOURCES or len(spec.covariates) != spec.n_features:
            raise RuntimeError(f"datasets.toml: inconsistent entry {spec.key!r}")  # a bug
        specs[spec.key] = spec
    return specs


def user_data_dir(data_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """The user's data folder: ``data_dir`` if given, else ``$UDBENCH_DATA_DIR``, else None."""
    if data_dir is not None:
        return Path(data_dir).expanduser()
    value = os.environ.get(DATA_DIR_ENV)
    return Path(value).expanduser() if value else None


@functools.lru_cache(maxsize=256)
def _read_user_file(path: str, mtime_ns: int) -> DatasetSpec:
    try:
        row = tomllib.loads(Path(path).read_text("utf-8"))["dataset"]
        spec = _spec_from_row(row, registry_file=path)
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as err:
        raise UdbenchError(
            f"udbench datasets: file {path!r} must be a user-dataset registry file written by "
            f"`udbench datasets add` (a [dataset] table); reading it failed: "
            f"{type(err).__name__}: {err}. Add the dataset again with --force."
        ) from None
    if spec.source != "user" or len(spec.covariates) != spec.n_features:
        raise UdbenchError(f"udbench datasets: file {path!r} has an inconsistent [dataset] entry")
    if spec.key != Path(path).parent.name:
        raise UdbenchError(
            f"udbench datasets: file {path!r} registers key {spec.key!r} but lies in the "
            f"folder {Path(path).parent.name!r}; the folder must be named after the key"
        )
    return spec


def _user_registry(data_dir: str | os.PathLike[str] | None) -> dict[str, DatasetSpec]:
    """User datasets of the data folder: every ``<root>/<key>/dataset.toml``, by key."""
    root = user_data_dir(data_dir)
    if root is None or not root.is_dir():
        return {}
    builtin = _registry()
    specs: dict[str, DatasetSpec] = {}
    for path in sorted(root.glob(f"*/{USER_REGISTRY_FILE}")):
        if path.parent.name in builtin:  # a built-in key cannot be shadowed
            continue
        specs[path.parent.name] = _read_user_file(str(path), path.stat().st_mtime_ns)
    return specs


def list_datasets(
    include_ood: bool = True, data_dir: str | os.PathLike[str] | None = None
) -> list[DatasetSpec]:
    """Return every registered dataset, in table order, then the user's datasets by key.

    Parameters
    ----------
    include_ood : bool, default True
        Include out-of-distribution-only data (``red_wine``).
    data_dir : path-like, optional
        The user's data folder (default ``$UDBENCH_DATA_DIR``), whose
        ``<key>/dataset.toml`` files register the datasets added with
        ``udbench datasets add`` (``source="user"``).

    Returns
    -------
    list of DatasetSpec
        The 13 benchmark datasets of SPEC §2, ``red_wine`` (if requested), the
        embedded default ``diabetes`` and the user's datasets.
    """
    specs = [*_registry().values(), *_user_registry(data_dir).values()]
    return [s for s in specs if include_ood or not s.ood_only]


def get_dataset_spec(key: str, data_dir: str | os.PathLike[str] | None = None) -> DatasetSpec:
    """Return the registry entry of ``key`` (packaged suite, else the user's data folder).

    Parameters
    ----------
    key : str
    data_dir : path-like, optional
        The user's data folder (default ``$UDBENCH_DATA_DIR``).

    Raises
    ------
    UdbenchError
        If ``key`` is not a registered dataset (the message lists the known keys).
    """
    if key in _registry():
        return _registry()[key]
    user = _user_registry(data_dir)
    check_choice("get_dataset_spec", "key", key, [*_registry(), *user])
    return user[key]
