"""Fixtures of the data tests: an empty download cache and synthetic raw tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from udbench.data.covariates import _load


@pytest.fixture(autouse=True)
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the download cache at an empty folder so no test sees a user's cache."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("UDBENCH_CACHE_DIR", str(cache))
    return cache


def concrete_like(seed: int = 0) -> pd.DataFrame:
    """A synthetic 1031-row table with UCI-style (ucimlrepo) concrete column names, the target
    first, and one row with a missing value (1030 rows remain, SPEC's N)."""
    rng = np.random.default_rng(seed)
    names = [
        "Cement",
        "Blast Furnace Slag",
        "Fly Ash",
        "Water",
        "Superplasticizer",
        "Coarse Aggregate",
        "Fine Aggregate",
        "Age",
    ]
    frame = pd.DataFrame(rng.uniform(1.0, 9.0, size=(1031, 8)), columns=names)
    frame.insert(0, "Concrete compressive strength", rng.normal(size=1031))
    frame.loc[17, "Fly Ash"] = np.nan
    return frame


def write_table(root: Path, key: str, frame: pd.DataFrame) -> Path:
    """Write ``frame`` as ``root/<key>/<key>.csv.gz`` (the data-folder layout)."""
    path = root / key / f"{key}.csv.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)
    _load.cache_clear()
    return path


@pytest.fixture
def make_concrete():
    """The :func:`concrete_like` table builder."""
    return concrete_like


@pytest.fixture
def write():
    """The :func:`write_table` writer."""
    return write_table
