"""The :class:`Covariates` of one dataset: the cleaned table (SPEC §2, :mod:`udbench.data.cleaning`)
with its geometry and evaluation/candidate split."""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from udbench._seeding import make_rng
from udbench._validation import param_error
from udbench.data.cleaning import clean_table
from udbench.data.geometry import (
    N_SHELLS,
    CovariateGeometry,
    fit_geometry,
    largest_remainder,
)
from udbench.data.registry import DatasetSpec, get_dataset_spec
from udbench.data.sources import read_raw_table

__all__ = ["Covariates", "load_covariates", "stratified_split"]


def stratified_split(shell: np.ndarray, n_eval: int, key: str) -> tuple[np.ndarray, np.ndarray]:
    """Evaluation/candidate split stratified by shell (SPEC §2).

    Each shell gives n_eval/5 rows (largest remainder, ties to the inner shell), drawn
    uniformly within the shell by a stream derived from ``("eval-split", key)``.

    Returns
    -------
    eval_idx, cand_idx : ndarray of int64
        Sorted, disjoint row indices covering all rows.
    """
    rng = make_rng("eval-split", key)
    counts = largest_remainder(n_eval, np.full(N_SHELLS, 1.0 / N_SHELLS))
    chosen = []
    for k in range(N_SHELLS):
        rows = np.flatnonzero(shell == k)
        if rows.size < counts[k]:
            raise param_error(
                f"stratified_split({key!r})",
                "n_eval",
                f"fit in shell {k} ({rows.size} rows)",
                n_eval,
            )
        chosen.append(rng.choice(rows, size=counts[k], replace=False))
    eval_idx = np.sort(np.concatenate(chosen)).astype(np.int64)
    mask = np.ones(shell.shape[0], dtype=bool)
    mask[eval_idx] = False
    return eval_idx, np.flatnonzero(mask).astype(np.int64)


@dataclass(frozen=True, eq=False, repr=False)
class Covariates:
    """The cleaned covariates of one dataset with their geometry and split (SPEC §2–§3).

    Arrays are read-only (instances are cached and shared).

    Attributes
    ----------
    key : str
    spec : DatasetSpec
    X : ndarray of shape (N, d), float64 in [0, 1]
        Min-max scaled covariates (over all kept rows).
    feature_names : tuple of str
        Registry names of the d covariates.
    y_real : ndarray of shape (N,)
        The real target (for fitting GP kernel hyperparameters only; never a task target).
        All NaN for a user dataset added without a target column (``spec.target == ""``):
        its GP prior then uses the family's default hyperparameters (``docs/data.md``).
    z : ndarray of shape (N,)
        Noise score of every row (mean 0, SD 1 over all rows; SPEC §3).
    shell : ndarray of shape (N,), int64 in 0..4
        Coverage shell of every row (0 inner, 4 outermost).
    eval_idx : ndarray of shape (n_eval,), int64
        Evaluation pool (all rows for out-of-distribution-only data).
    cand_idx : ndarray of shape (N − n_eval,), int64
        Candidate pool for training inputs.
    geometry : CovariateGeometry
        The fitted noise-score and shell maps (value-based).
    bounds : ndarray of shape (2, d)
        Raw min and max of each covariate (to scale other tables into this frame).
    origin : str
        ``"local"``, ``"cached"`` or ``"embedded"``.
    """

    key: str
    spec: DatasetSpec
    X: np.ndarray
    feature_names: tuple[str, ...]
    y_real: np.ndarray
    z: np.ndarray
    shell: np.ndarray
    eval_idx: np.ndarray
    cand_idx: np.ndarray
    geometry: CovariateGeometry = field(repr=False)
    bounds: np.ndarray = field(repr=False)
    origin: str = "local"

    def __repr__(self) -> str:
        return (
            f"Covariates({self.key!r}, N={self.n_rows}, d={self.X.shape[1]}, "
            f"n_eval={self.eval_idx.size}, origin={self.origin!r})"
        )

    @property
    def n_rows(self) -> int:
        """N."""
        return int(self.X.shape[0])

    @property
    def X_eval(self) -> np.ndarray:
        """Evaluation-pool covariates, shape (n_eval, d)."""
        return self.X[self.eval_idx]

    @functools.cached_property
    def fingerprint(self) -> str:
        """SHA-256 (hex) of the cleaned table, in row order: what tasks are drawn from.

        Hashes the dataset key, (N, d), the scaled covariates ``X``, their raw ``bounds`` and
        the real target ``y_real`` (float64, little-endian, C order). Shuffled rows, another
        value anywhere, or another row selection give another fingerprint; the same rows in
        another file format, compression or column order (or extra columns) give the same
        one, since the cleaned table is all that task generation reads. Recorded in every task
        file (``Task.source["data_sha256"]``).
        """
        digest = hashlib.sha256()
        digest.update(f"udbench-covariates-v1|{self.key}|{self.X.shape}".encode())
        for arr in (self.X, self.bounds, self.y_real):
            digest.update(np.ascontiguousarray(arr, dtype="<f8").tobytes())
        return digest.hexdigest()

    def noise_score(self, X: object) -> np.ndarray:
        """Noise score z of scaled rows ``X`` (m, d) -> (m,) (value-based, SPEC §3)."""
        return self.geometry.noise_score(X)

    def shell_of(self, X: object) -> np.ndarray:
        """Shell index (m,) of scaled rows ``X`` (m, d) under this dataset's edges."""
        return self.geometry.shell_of(X)

    def scale(self, X_raw: object) -> np.ndarray:
        """Map raw covariate values (m, d) into this dataset's [0, 1] frame (not clipped)."""
        X_raw = np.asarray(X_raw, dtype=np.float64)
        low, high = self.bounds
        return (X_raw - low) / (high - low)

    def unscale(self, X: object) -> np.ndarray:
        """Map scaled rows (m, d) back to raw covariate units."""
        low, high = self.bounds
        return np.asarray(X, dtype=np.float64) * (high - low) + low


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


@functools.lru_cache(maxsize=16)
def _load(
    key: str, data_dir: str | None, stamp: tuple[str | None, float, str | None, int]
) -> Covariates:
    spec = get_dataset_spec(key, data_dir)
    raw = read_raw_table(key, data_dir)
    X, y_real, bounds = clean_table(raw.frame, spec)
    geometry = fit_geometry(X)
    z = geometry.noise_score(X)
    shell = geometry.shell_of(X)
    if spec.ood_only or spec.n_eval is None:
        eval_idx, cand_idx = np.arange(X.shape[0]), np.arange(0)
    else:
        eval_idx, cand_idx = stratified_split(shell, spec.n_eval, key)
    arrays = [X, y_real, z, shell, eval_idx, cand_idx, bounds]
    for a in arrays:
        _readonly(a)
    return Covariates(
        key=key,
        spec=spec,
        X=X,
        feature_names=spec.covariates,
        y_real=y_real,
        z=z,
        shell=shell,
        eval_idx=eval_idx,
        cand_idx=cand_idx,
        geometry=geometry,
        bounds=bounds,
        origin=raw.origin,
    )


def _registry_stamp(spec: DatasetSpec) -> tuple[str | None, int]:
    """A user dataset's registry file and its mtime (a re-added dataset is reloaded)."""
    if spec.registry_file is None:
        return (None, 0)
    try:
        return (spec.registry_file, Path(spec.registry_file).stat().st_mtime_ns)
    except OSError:
        return (spec.registry_file, 0)


def load_covariates(key: str, data_dir: str | os.PathLike[str] | None = None) -> Covariates:
    """Load, clean and lay out the covariates of dataset ``key`` (SPEC §2–§3).

    Sources tried in order: ``data_dir`` (default ``$UDBENCH_DATA_DIR``) laid out as
    ``<key>/<key>.csv.gz``; the download cache (``$UDBENCH_CACHE_DIR``, default
    ``~/.cache/udbench``, filled by ``udbench datasets download KEY``); for ``"diabetes"``,
    scikit-learn's bundled table. Results are cached in memory per (key, file, mtime).

    Parameters
    ----------
    key : str
        A registered dataset key (see :func:`list_datasets`).
    data_dir : path-like, optional
        Local data folder; overrides ``$UDBENCH_DATA_DIR``.

    Returns
    -------
    Covariates

    Raises
    ------
    UdbenchError
        Unknown key; no raw table anywhere (the message names the files looked for and how
        to provide one); a table with missing/renamed columns, non-numeric values, a
        constant covariate, or a cleaned shape different from SPEC.
    """
    from udbench.data.sources import find_raw_table

    spec = get_dataset_spec(key, data_dir)
    path = find_raw_table(key, data_dir)
    table, mtime = (str(path), path.stat().st_mtime) if path is not None else (None, 0.0)
    registry_file, registry_mtime = _registry_stamp(spec)
    stamp = (table, mtime, registry_file, registry_mtime)
    resolved = None if data_dir is None else str(Path(data_dir).expanduser())
    return _load(key, resolved, stamp)
