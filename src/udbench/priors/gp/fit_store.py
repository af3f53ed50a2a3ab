"""Where a dataset's GP kernel fit is kept: this machine's cache, or the fits shipped with
udbench (package data, :func:`shipped_fit`), and the fingerprint that ties a fit to its data
(:func:`udbench.priors.gp.prior.build_prior`)."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from udbench._validation import UdbenchWarning

__all__ = ["SHIPPED_FITS_DIR", "data_fingerprint", "fit_cache_path", "shipped_fit"]


def _cache_root() -> Path:
    from udbench._cache import cache_dir

    return cache_dir()


def data_fingerprint(*arrays: np.ndarray) -> str:
    """BLAKE2b-64 checksum (hex) of the arrays' bytes, in order: the covariates, the real
    target and the evaluation pool name a dataset's fit."""
    h = hashlib.blake2b(digest_size=8)
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def fit_cache_path(key: str, kernel_family: str, fit: dict[str, int], fingerprint: str) -> Path:
    """Path of the JSON cache of one dataset's GP fit (``$UDBENCH_CACHE_DIR/priors/gp``)."""
    return _cache_root() / "priors" / "gp" / _fit_file_name(key, kernel_family, fit, fingerprint)


def _fit_file_name(key: str, kernel_family: str, fit: dict[str, int], fingerprint: str) -> str:
    tag = f"r{fit['max_rows']}-s{fit['restarts']}-i{fit['maxiter']}"
    return f"{key}__{kernel_family}__{tag}__{fingerprint}.json"


#: The fields :func:`udbench.priors.gp.prior.build_prior` reads from a fit record.
SHIPPED_FIT_KEYS = (
    "hyperparameters",
    "scale",
    "fit_settings",
    "lml_initial",
    "lml_final",
    "fitted_noise_variance",
)

#: Folder of the kernel fits shipped with udbench (package data), named as the cache's files.
SHIPPED_FITS_DIR = Path(__file__).with_name("shipped")


def shipped_fit(key: str, kernel_family: str, fit: dict[str, int], fingerprint: str) -> Any:
    """The kernel fit shipped with udbench for this dataset, kernel family, fit settings and
    data, or None.

    Why ship fits: the L-BFGS-B fit of :func:`udbench.priors.gp.prior.build_prior` is
    deterministic on one machine, but another processor can end at another optimum of an
    ill-conditioned marginal likelihood (airfoil's fit has a fitted noise variance of 7e-6),
    and then every task of the dataset differs. On 2026-12-04 the gp-small task files of
    airfoil and qsar_fish generated on two machines differed, concrete's did not
    (docs/campaigns.md, "Task versions across machines"). A shipped fit makes the tasks of
    its dataset the same wherever they are generated from the same raw table
    (``fingerprint``).

    Parameters
    ----------
    key, kernel_family : str
        Dataset key and its kernel family (``DatasetSpec.kernel_family``).
    fit : dict
        :data:`udbench.priors.gp.fit.FIT_SETTINGS` entry (``max_rows``, ``restarts``,
        ``maxiter``).
    fingerprint : str
        Checksum of the covariates, real target and evaluation pool.

    Returns
    -------
    dict or None
        The fit record (as the cache's), or None when none is shipped for these inputs.

    Raises
    ------
    UdbenchError
        A shipped file that cannot be read or lacks a field of :data:`SHIPPED_FIT_KEYS` (a
        packaging error).

    Warns
    -----
    UdbenchWarning
        A fit is shipped for this dataset, kernel family and fit settings, but for other
        data (another fingerprint: e.g. another release of the raw table).

    Notes
    -----
    A shipped fit is data, like a shipped tuning record: it is not refitted when the fitting
    code or the package version changes (a cached fit is), so that the tasks stay the same.
    ``tools/ship_gp_fits.py`` adds one (from this machine's fit).
    """
    from udbench._validation import UdbenchError

    name = _fit_file_name(key, kernel_family, fit, fingerprint)
    path = SHIPPED_FITS_DIR / name
    if not path.is_file():
        prefix = name.rsplit("__", 1)[0] + "__"
        others = sorted(p.name for p in SHIPPED_FITS_DIR.glob(f"{prefix}*.json"))
        if others:  # shipped for this dataset, but for other data: say so, then fit here
            warnings.warn(
                f"build_prior: udbench ships the GP fit of {key!r} ({kernel_family}) for other "
                f"data ({others[0]}; this table's fingerprint is {fingerprint}): fitting it "
                "here, so its tasks can differ from the suites' reference versions "
                "(docs/tasks.md, 'Shipped fits')",
                UdbenchWarning,
                stacklevel=3,
            )
        return None
    try:
        record = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise UdbenchError(
            f"build_prior: the shipped GP fit {str(path)!r} is unreadable ({err})"
        ) from None
    missing = [k for k in SHIPPED_FIT_KEYS if k not in record]
    if missing:
        raise UdbenchError(f"build_prior: the shipped GP fit {path.name!r} lacks {missing}")
    return record


def _write_json_atomic(path: Path, obj: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        json.dump(obj, fh, indent=2, sort_keys=True)
        fh.write("\n")
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    os.replace(tmp, path)
