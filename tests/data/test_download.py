"""The download path with the fetchers mocked (no network): parsing, reordering, caching."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.data import download_dataset, load_covariates
from udbench.data.covariates import _load


def space_ga_openml() -> pd.DataFrame:
    """3107 rows with OpenML-style names, target first (the fetcher's order is not assumed)."""
    rng = np.random.default_rng(5)
    cols = ["pop", "education", "houses", "income", "xcoord", "ycoord"]
    frame = pd.DataFrame(rng.normal(size=(3107, 6)), columns=cols)
    frame.insert(0, "ln_votes_pop", rng.normal(size=3107))
    return frame


def test_openml_download_is_parsed_cached_and_loadable(monkeypatch, empty_cache: Path):
    calls = []

    def fake_fetch_openml(**kwargs):
        calls.append(kwargs)
        return SimpleNamespace(frame=space_ga_openml(), data=None)

    monkeypatch.setattr("sklearn.datasets.fetch_openml", fake_fetch_openml)
    monkeypatch.delenv("UDBENCH_DATA_DIR", raising=False)
    path = download_dataset("space_ga")
    assert calls[0]["data_id"] == 45402 and calls[0]["as_frame"] is True
    assert path == empty_cache / "space_ga" / "space_ga.csv.gz"
    written = pd.read_csv(path)
    assert list(written.columns)[-1] == "ln_votes_pop" and written.shape == (3107, 7)
    _load.cache_clear()
    cov = load_covariates("space_ga")
    assert cov.origin == "cached" and cov.X.shape == (3107, 6)
    raw = space_ga_openml().iloc[:, 1:].to_numpy()
    np.testing.assert_allclose(cov.X, (raw - raw.min(0)) / np.ptp(raw, axis=0), atol=1e-12)
    download_dataset("space_ga")  # cached: no second fetch
    assert len(calls) == 1


def test_uci_download_via_ucimlrepo(monkeypatch, empty_cache: Path, make_concrete):
    frame = make_concrete()
    fake = SimpleNamespace(data=SimpleNamespace(original=frame))
    monkeypatch.setattr("ucimlrepo.fetch_ucirepo", lambda id: fake if id == 165 else None)
    assert main(["datasets", "download", "concrete"]) == 0
    written = pd.read_csv(empty_cache / "concrete" / "concrete.csv.gz")
    assert list(written.columns)[-1] == "Concrete compressive strength"
    assert written.shape == (1031, 9)


def test_failed_or_wrong_download_is_a_clear_error_and_not_cached(monkeypatch, empty_cache):
    def offline(**kwargs):
        raise ConnectionError("no route to host")

    monkeypatch.setattr("sklearn.datasets.fetch_openml", offline)
    with pytest.raises(UdbenchError, match=r"fetching 'sarcos' from openml id 44976 failed"):
        download_dataset("sarcos")
    short = space_ga_openml().iloc[:100]
    monkeypatch.setattr(
        "sklearn.datasets.fetch_openml", lambda **kw: SimpleNamespace(frame=short, data=None)
    )
    with pytest.raises(UdbenchError, match=r"clean to SPEC's \(N, d\) = \(3107, 6\)"):
        download_dataset("space_ga")
    assert not (empty_cache / "space_ga" / "space_ga.csv.gz").exists()


def test_download_all_goes_on_after_failures(monkeypatch, empty_cache: Path, make_concrete, capsys):
    seen: list[tuple[str, int]] = []

    def fake_openml(**kwargs):
        seen.append(("openml", kwargs["data_id"]))
        raise ConnectionError("offline")

    def fake_uci(id):
        seen.append(("uci", id))
        if id != 165:
            raise ConnectionError("offline")
        return SimpleNamespace(data=SimpleNamespace(original=make_concrete()))

    monkeypatch.setattr("sklearn.datasets.fetch_openml", fake_openml)
    monkeypatch.setattr("ucimlrepo.fetch_ucirepo", fake_uci)
    assert main(["datasets", "download", "all"]) == 2
    assert len(seen) == 14 and ("openml", 44976) in seen and ("uci", 560) in seen
    assert (empty_cache / "concrete" / "concrete.csv.gz").is_file()
    captured = capsys.readouterr()
    assert "concrete: " in captured.out and "abalone: failed" in captured.err
    last = captured.err.strip().splitlines()[-1]
    assert "parameter 'key'" not in last  # the summary blames what each line blamed
    assert last.startswith(
        "error: udbench datasets download: 13 of 14 datasets could not be downloaded ("
    ), last
    assert "): no network (or the sources are down): their fetches failed;" in last, last
    assert "(abalone, airfoil, " in last and "concrete" not in last
