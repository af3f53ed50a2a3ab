"""The transfer oracle cache is verified on read (issue 68, item 1): an edited cache file,
still a valid zip, is recomputed and overwritten, never used."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from _fakes import make_fake_task
from udbench._validation import UdbenchWarning
from udbench.evaluation import transfer_rescoring
from udbench.evaluation.transfer import OracleMoments, parse_oracle


@pytest.fixture
def counted(monkeypatch):
    """A stand-in for the oracle's computation that counts its calls."""
    calls: list[str] = []

    def fake(task, oracle, **_kwargs):
        calls.append(task.spec.task_id)
        n = len(task.eval_idx)
        return OracleMoments(
            np.linspace(-1.0, 1.0, n), np.full(n, 0.25), 1.5, {"oracle": oracle.text}
        )

    monkeypatch.setattr(transfer_rescoring, "alternative_moments", fake)
    return calls


def _entries(path):
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def _same(a, b) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def _moments(task, cache):
    return transfer_rescoring.cached_oracle_moments(
        task, parse_oracle("gp:prior"), cache, task.content_sha256
    )


def test_an_edited_oracle_cache_is_recomputed_not_used(tmp_path, counted) -> None:
    task = make_fake_task(0, n_train=20, n_eval=30)
    first = _moments(task, tmp_path)
    (path,) = tmp_path.glob("*.npz")
    written = _entries(path)
    assert set(written) == {"mean", "var", "seconds", "info", "checksum"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = _moments(task, tmp_path)  # an intact cache is read, silently
    assert len(counted) == 1 and np.array_equal(again.mean, first.mean)

    # rewrite the mean and variance inside the file: still a valid zip with every entry
    entries = _entries(path)
    entries["mean"] = -entries["mean"]
    entries["var"] = entries["var"] * 9.0
    with open(path, "wb") as fh:
        np.savez(fh, **entries)
    with pytest.warns(UdbenchWarning, match="do not match their checksum .*recomputing"):
        fixed = _moments(task, tmp_path)
    assert len(counted) == 2
    assert np.array_equal(fixed.mean, first.mean) and np.array_equal(fixed.var, first.var)
    assert _same(_entries(path), written)  # overwritten with the recomputed moments

    # a cache written before checksums were kept: recomputed (no warning), then sealed
    del entries["checksum"]
    entries["mean"], entries["var"] = first.mean, first.var
    with open(path, "wb") as fh:
        np.savez(fh, **entries)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(_moments(task, tmp_path).mean, first.mean)
    assert len(counted) == 3 and _same(_entries(path), written)
