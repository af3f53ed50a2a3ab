"""The dataset registry: SPEC §2's table, shipped as ``datasets.toml`` and read into specs."""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from importlib import resources

from udbench._validation import check_choice

__all__ = ["SOURCES", "DatasetSpec", "get_dataset_spec", "list_datasets"]

#: Where a dataset's raw table comes from when it is not on disk.
SOURCES = ("uci", "openml", "sklearn")


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


@functools.cache
def _registry() -> dict[str, DatasetSpec]:
    text = resources.files("udbench.data").joinpath("datasets.toml").read_text("utf-8")
    table = tomllib.loads(text)["dataset"]
    specs: dict[str, DatasetSpec] = {}
    for row in table:
        spec = DatasetSpec(
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
            target=row["target"],
            ood_only=bool(row.get("ood_only", False)),
        )
        if spec.source not in SOURCES or len(spec.covariates) != spec.n_features:
            raise RuntimeError(f"datasets.toml: inconsistent entry {spec.key!r}")  # a bug
        specs[spec.key] = spec
    return specs


def list_datasets(include_ood: bool = True) -> list[DatasetSpec]:
    """Return every registered dataset, in table order.

    Parameters
    ----------
    include_ood : bool, default True
        Include out-of-distribution-only data (``red_wine``).

    Returns
    -------
    list of DatasetSpec
        The 13 benchmark datasets of SPEC §2, ``red_wine`` (if requested) and the
        embedded default ``diabetes``.
    """
    return [s for s in _registry().values() if include_ood or not s.ood_only]


def get_dataset_spec(key: str) -> DatasetSpec:
    """Return the registry entry of ``key``.

    Raises
    ------
    UdbenchError
        If ``key`` is not a registered dataset (the message lists the known keys).
    """
    check_choice("get_dataset_spec", "key", key, _registry())
    return _registry()[key]
