"""Fixtures of the suite-run campaign's tests (test_runs_campaign.py, test_runs_transfer.py);
none is autouse, so the other campaign tests are unaffected."""

from __future__ import annotations

from pathlib import Path

import pytest

from _fakes import tuned_blr_folder


@pytest.fixture
def runs_env(tmp_path, monkeypatch):
    """A cache folder of the test's own, and no raw-data folder (the tasks are fakes)."""
    monkeypatch.setenv("UDBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("UDBENCH_DATA_DIR", raising=False)


@pytest.fixture(scope="module")
def tuning(tmp_path_factory) -> Path:
    """A tuning folder with blr's record of the fake concrete condition (3 trials), no other
    method's."""
    return tuned_blr_folder(tmp_path_factory.mktemp("runs-tuning"))
