"""A prior family added from outside the package is one module and one table entry (issue 33).

The toy family lives in a temporary package written by the test: a random-feature model
f(x) = a · φ(x)ᵀw, w ~ N(0, I/M), with M random Fourier features of a unit RBF kernel, whose
posterior given S and the known noise variances is Gaussian in closed form (Bayesian linear
regression, Bishop 2006 eqs. 3.53-3.54 with per-point noise). Registering it touches only the
two family tables (:data:`~udbench.priors.PRIOR_FAMILIES`, module path; and
:data:`~udbench.priors.FAMILY_CAPABILITIES`, its tags); ``udbench generate``, ``check``,
``run`` and ``analyze`` then work on it with no other file of udbench changed.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from udbench.cli import main
from udbench.evaluation.store import read_results
from udbench.priors import FAMILY_CAPABILITIES, PRIOR_FAMILIES, PriorCapabilities
from udbench.tasks.generate import get_prior

TOY_MODULE = '''
"""A random-feature prior with exact Gaussian conditioning (a test's family)."""

import numpy as np

from udbench._seeding import derive_seed
from udbench.priors.base import (
    SCALE_N_DRAWS,
    Posterior,
    call_seed,
    prior_capabilities,
    scale_from_unit_draws,
)

N_FEATURES = 64


class ToyRFPrior:
    family = "toyrf"
    numerics_version = 1

    def __init__(self, d, scale, dataset):
        self.capabilities = prior_capabilities("toyrf")
        rng = np.random.default_rng(derive_seed("toyrf-features", dataset))
        self._omega = rng.normal(size=(d, N_FEATURES)) * 2.0
        self._phase = rng.uniform(0.0, 2.0 * np.pi, size=N_FEATURES)
        self._scale, self._dataset = float(scale), dataset

    @property
    def scale(self):
        return self._scale

    @property
    def settings(self):
        return {"n_features": N_FEATURES, "dataset": self._dataset}

    def _phi(self, X):
        Z = np.asarray(X, dtype=np.float64) @ self._omega + self._phase
        return self._scale * np.sqrt(2.0 / N_FEATURES) * np.cos(Z)

    def sample(self, X, key, n_draws=1):
        rng = np.random.default_rng(call_seed("toyrf", "prior", key))
        w = rng.standard_normal((n_draws, N_FEATURES))
        return w @ self._phi(X).T

    def condition(self, X_train, y, noise_var_train, X_eval, key, n_draws):
        P = self._phi(X_train) / np.sqrt(noise_var_train)[:, None]
        A = P.T @ P + np.eye(N_FEATURES)
        L = np.linalg.cholesky(A)
        mean_w = np.linalg.solve(A, P.T @ (y / np.sqrt(noise_var_train)))
        rng = np.random.default_rng(call_seed("toyrf", "mcmc", key))
        z = rng.standard_normal((n_draws, N_FEATURES))
        w = mean_w + np.linalg.solve(L.T, z.T).T
        Pe, Pt = self._phi(X_eval), self._phi(X_train)
        cov_w = np.linalg.inv(A)
        return Posterior(
            draws_eval=w @ Pe.T,
            draws_train=w @ Pt.T,
            mean=Pe @ mean_w,
            var=np.einsum("ij,jk,ik->i", Pe, cov_w, Pe),
        )


PRIOR_CLASS = ToyRFPrior


def build_prior(cov, fidelity):
    X = np.asarray(cov.X, dtype=np.float64)
    pool = X[np.asarray(cov.eval_idx)]
    unit = ToyRFPrior(X.shape[1], 1.0, cov.key)
    key = derive_seed("scale", cov.key, "toyrf")
    a = scale_from_unit_draws(unit.sample(pool, key, SCALE_N_DRAWS))
    return ToyRFPrior(X.shape[1], a, cov.key)
'''


@pytest.fixture
def toy_family(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    pkg = tmp_path / "toyfam_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent(TOY_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    # the family's whole registration: its module and its tags
    monkeypatch.setitem(PRIOR_FAMILIES, "toyrf", "toyfam_pkg")
    monkeypatch.setitem(
        FAMILY_CAPABILITIES,
        "toyrf",
        PriorCapabilities(draws_train_by_default=True, quick_instances=True),
    )
    monkeypatch.setenv("UDBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("UDBENCH_DATA_DIR", raising=False)  # diabetes is embedded
    get_prior.cache_clear()
    yield "toyrf"
    get_prior.cache_clear()
    sys.modules.pop("toyfam_pkg", None)


def test_toy_family_generates_checks_runs_and_analyses(
    toy_family: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tmp_path / "tasks"
    args = ["generate", "--datasets", "diabetes", "--families", toy_family]
    args += ["--noise", "homoscedastic,step", "--coverage", "balanced", "--seeds", "0-1"]
    args += ["--draws", "200", "--fidelity", "smoke", "--workers", "0", "--out", str(tasks)]
    assert main(args) == 0
    files = sorted(tasks.glob("*.npz"))
    assert [f.name.split("__")[1] for f in files] == [toy_family] * 4

    # checked as any family: the exact posterior passes coverage and the MC-moments check
    assert main(["check", str(tasks), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["invalid"] == []
    verdicts = {v["check"]: v["verdict"] for v in summary["families"][toy_family]["verdicts"]}
    assert verdicts["coverage 90 %"] == "pass"
    assert verdicts["MC = exact moments"] == "pass"

    # run: every cell scored against the toy family's oracle
    results = tmp_path / "results"
    run = ["run", str(tasks), "-m", "blr", "-m", "gp", "--workers", "0", "--out", str(results)]
    assert main(run) == 0
    frame = read_results(results)
    assert len(frame) == 8 and set(frame["family"]) == {toy_family}
    assert np.isfinite(frame["rho_eu_risk"].to_numpy(float)).all()

    # analyse: the tables and the page, the toy family among the factors
    out = tmp_path / "analyses"
    assert main(["analyze", str(results), "--out", str(out)]) == 0
    assert toy_family in (out / "analyses.html").read_text()
    assert (out / "tables" / "headline.csv").is_file()
