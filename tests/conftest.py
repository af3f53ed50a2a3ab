"""Shared test fixtures. Seeds are printed on failure so a run can be reproduced."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real-data folder named by ``UDBENCH_DATA_DIR``; skip the test when absent."""
    value = os.environ.get("UDBENCH_DATA_DIR")
    if not value or not Path(value).is_dir():
        pytest.skip("UDBENCH_DATA_DIR is not set to a data folder (see README)")
    return Path(value)
