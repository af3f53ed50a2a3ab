"""The download and fit cache: one folder shared by every layer that caches files.

``$UDBENCH_CACHE_DIR`` (default ``~/.cache/udbench``) holds downloaded raw tables
(``<key>/<key>.csv.gz``, :mod:`udbench.data.sources`) and fitted prior hyperparameters
(``priors/gp/``, :mod:`udbench.priors.gp`). It lives at the ground level so that neither of
those packages has to import the other to find it.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CACHE_DIR_ENV", "cache_dir"]

#: Environment variable naming the download cache (default ``~/.cache/udbench``).
CACHE_DIR_ENV = "UDBENCH_CACHE_DIR"


def cache_dir() -> Path:
    """The download cache: ``$UDBENCH_CACHE_DIR``, else ``~/.cache/udbench``.

    Read at every call (not at import), so a test or a user can point it elsewhere by
    setting the variable. The folder is not created here.
    """
    value = os.environ.get(CACHE_DIR_ENV)
    return Path(value).expanduser() if value else Path.home() / ".cache" / "udbench"
