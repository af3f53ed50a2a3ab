"""The behaviour battery (``check_behaviour``, ``udbench check-method NAME --behaviour``).

Small fakes: an exact GP on fixed hyperparameters (the well-behaved reference), the same GP
with a heteroscedastic AU (k-NN smoothed squared residuals), and broken variants (EU
constant, AU and EU swapped, a mean that ignores x, a crash). Each fake fits in milliseconds,
so the default suite stays fast; the registered methods' table is a slow test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from sklearn.neighbors import KNeighborsRegressor

from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.methods import BaseMethod, Prediction
from udbench.methods import _behaviour as bh
from udbench.methods.conformance import BEHAVIOUR_CHECKS, check_behaviour

DOCS = Path(__file__).resolve().parents[2] / "docs" / "methods.md"


class FakeGP(BaseMethod):
    """Exact GP, RBF kernel (length 0.3, unit variance) and noise variance 0.02 (standardised
    units): mean and EU in closed form, AU = the fixed noise variance."""

    name: ClassVar[str] = "fake-gp"
    family: ClassVar[str] = "gp"
    constant_aleatoric: ClassVar[bool] = True
    epistemic_from: ClassVar[str] = "closed_form"

    def __init__(self, length: float = 0.3, random_state: int | None = 0):
        self.length = length
        self.random_state = random_state

    def _k(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        d2 = np.sum((A[:, None, :] - B[None, :, :]) ** 2, axis=-1)
        return np.exp(-0.5 * d2 / self.length**2)

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        self.X_ = X
        self.L_ = np.linalg.cholesky(self._k(X, X) + 0.02 * np.eye(len(X)))
        self.alpha_ = np.linalg.solve(self.L_.T, np.linalg.solve(self.L_, y))
        self.resid2_ = (y - self._k(X, X) @ self.alpha_) ** 2

    def _gp(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ks = self._k(X, self.X_)
        v = np.linalg.solve(self.L_, ks.T)
        return ks @ self.alpha_, np.maximum(1.0 - np.sum(v**2, axis=0), 0.0)

    def _predict(self, X: np.ndarray) -> Prediction:
        mean, eu = self._gp(X)
        return Prediction(mean, np.full(len(X), 0.02), eu)


class FakeHetGP(FakeGP):
    """FakeGP with AU = k-NN (k = 40) average of the training squared residuals."""

    name: ClassVar[str] = "fake-het-gp"
    constant_aleatoric: ClassVar[bool] = False

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        super()._fit(X, y)
        self.knn_ = KNeighborsRegressor(n_neighbors=min(40, len(X))).fit(X, self.resid2_)

    def _predict(self, X: np.ndarray) -> Prediction:
        mean, eu = self._gp(X)
        return Prediction(mean, self.knn_.predict(X), eu)


class ConstantEU(FakeGP):
    """Broken: EU the same everywhere, whatever the data."""

    def _predict(self, X: np.ndarray) -> Prediction:
        p = super()._predict(X)
        return Prediction(p.mean, p.aleatoric, np.full(len(X), 0.05))


class SwappedAUEU(FakeHetGP):
    """Broken: AU and EU exchanged."""

    def _predict(self, X: np.ndarray) -> Prediction:
        p = super()._predict(X)
        return Prediction(p.mean, p.epistemic, p.aleatoric)


class MeanOnly(FakeGP):
    """Broken: predicts the training mean everywhere (silent under-fitting)."""

    def _predict(self, X: np.ndarray) -> Prediction:
        p = super()._predict(X)
        return Prediction(np.zeros(len(X)), p.aleatoric, p.epistemic)


class AbsoluteNoise(FakeGP):
    """Broken units: AU fixed at 0.02 in target units (not standardised ones)."""

    def _predict(self, X: np.ndarray) -> Prediction:
        p = super()._predict(X)
        return Prediction(p.mean, np.full(len(X), 0.02 / self.y_scale_**2), p.epistemic)


class Crashes(FakeGP):
    def _predict(self, X: np.ndarray) -> Prediction:
        raise RuntimeError("boom")


def _by_name(cls: Any, **kw: Any) -> dict[str, bh.BehaviourResult]:
    return {r.name: r for r in check_behaviour(cls, **kw).results}


def test_good_gp_passes_and_constant_au_is_skipped_with_reason():
    res = _by_name(FakeGP)
    assert list(res) == list(BEHAVIOUR_CHECKS)
    assert res["au_tracks_noise"].status == "skipped"
    assert res["au_tracks_noise"].value is None
    assert "constant_aleatoric=True" in res["au_tracks_noise"].message
    for name, r in res.items():
        if name != "au_tracks_noise":
            assert r.status == "passed", (name, r)
    # values are real measurements on the right side of their thresholds
    assert res["eu_gap_and_outside"].value > 10 * bh.MIN_EU_RATIO_AWAY
    assert 0.1 < res["eu_shrinks_with_n"].value < 0.6  # GP posterior variance ~ 1/n
    assert 0.5 < res["au_stable_with_n"].value < 2.0
    assert res["affine_equivariance"].value < 1e-9


def test_heteroscedastic_au_is_checked_against_true_noise():
    r = _by_name(FakeHetGP, checks=("au_tracks_noise",))["au_tracks_noise"]
    assert r.status == "passed" and r.value > 0.8
    assert (r.rule, r.threshold) == (">=", bh.MIN_AU_SPEARMAN)


def test_constant_eu_is_flagged():
    res = _by_name(ConstantEU)
    assert res["eu_gap_and_outside"].status == "failed"
    assert res["eu_gap_and_outside"].value == pytest.approx(1.0, abs=1e-12)
    assert res["eu_shrinks_with_n"].status == "failed"
    # the same EU in standardised units: only the two data sets' SDs differ
    assert res["eu_shrinks_with_n"].value == pytest.approx(1.0, rel=0.05)
    assert res["mean_vs_baseline"].status == "passed"  # only the EU checks fail


def test_swapped_au_and_eu_is_flagged():
    res = _by_name(SwappedAUEU)
    for name in ("eu_gap_and_outside", "eu_shrinks_with_n", "au_stable_with_n"):
        assert res[name].status == "failed", (name, res[name])
    # AU (really EU) shrinks like 1/n; EU (really the noise) does not shrink
    assert res["au_stable_with_n"].value < 0.6
    assert res["eu_shrinks_with_n"].value > 0.8


def test_underfitting_mean_is_flagged():
    r = _by_name(MeanOnly, checks=("mean_vs_baseline",))["mean_vs_baseline"]
    assert r.status == "failed" and r.value > 10 * bh.MAX_MSE_RATIO
    assert "gradient boosting" in r.message


def test_affine_check_flags_absolute_units():
    r = _by_name(AbsoluteNoise, checks=("affine_equivariance",))["affine_equivariance"]
    assert r.status == "failed" and r.value > 0.5  # AU off by a factor ~250**2
    assert "AU" in r.message


def test_report_carries_value_threshold_verdict_and_crashes_fail():
    report = check_behaviour(Crashes)
    assert report.n_failed == 5 and report.n_skipped == 1 and not report.ok
    assert all("RuntimeError: boom" in r.message for r in report.results if r.status == "failed")
    data = report.to_dict()
    first = data["results"][0]
    assert {"name", "status", "value", "threshold", "rule", "message"} <= set(first)
    assert first["threshold"] == bh.MIN_EU_RATIO_AWAY and first["rule"] == ">="
    assert report.summary().endswith("0 passed, 5 failed, 1 skipped (behaviour)")


def test_thresholds_written_once():
    assert BEHAVIOUR_CHECKS == {
        "eu_gap_and_outside": (">=", bh.MIN_EU_RATIO_AWAY),
        "eu_shrinks_with_n": ("<=", bh.MAX_EU_RATIO_4N),
        "au_tracks_noise": (">=", bh.MIN_AU_SPEARMAN),
        "au_stable_with_n": (">=", bh.MIN_AU_RATIO_4N),
        "mean_vs_baseline": ("<=", bh.MAX_MSE_RATIO),
        "affine_equivariance": ("<=", bh.MAX_AFFINE_ERROR),
    }


def test_bad_inputs_are_clear_errors():
    with pytest.raises(UdbenchError, match=r"'checks'.*'nope'"):
        check_behaviour(FakeGP, checks=("nope",))
    with pytest.raises(UdbenchError, match="'random_state'"):
        check_behaviour(FakeGP, random_state=-1)
    with pytest.raises(UdbenchError, match="'cls_or_name'"):
        check_behaviour(42)  # type: ignore[arg-type]
    with pytest.raises(UdbenchError, match="max_iter"):
        check_behaviour("blr", params={"max_iter": 0})


def test_cli_behaviour_blr(capsys):
    # BLR is linear: it fails the gap and baseline checks by nature (docs/methods.md)
    assert main(["check-method", "blr", "--behaviour", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    status = {r["name"]: r["status"] for r in report["results"]}
    assert status == {
        "eu_gap_and_outside": "failed",
        "eu_shrinks_with_n": "passed",
        "au_tracks_noise": "skipped",
        "au_stable_with_n": "passed",
        "mean_vs_baseline": "failed",
        "affine_equivariance": "passed",
    }
    mse = next(r for r in report["results"] if r["name"] == "mean_vs_baseline")
    assert mse["value"] > 10 and mse["threshold"] == bh.MAX_MSE_RATIO

    assert main(["check-method", "blr", "--behaviour"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"failed mean_vs_baseline: \d", out)
    assert "needs <= 3" in out
    assert out.strip().splitlines()[-1] == "blr: 3 passed, 2 failed, 1 skipped (behaviour)"


def test_cli_behaviour_bad_params_exit_2(capsys):
    assert main(["check-method", "blr", "--behaviour", "--params", "max_iter=0"]) == 2
    assert "max_iter" in capsys.readouterr().err


#: The configurations of the docs table (smoke, except the neural methods: see docs/methods.md).
TABLE_PARAMS: dict[str, dict[str, Any]] = {
    m: {"n_epochs": 200}
    for m in (
        "nn-ens",
        "nn-bag",
        "nn-drop",
        "nn-edl",
        "nn-deup",
        "nn-swag",
        "sngp-het",
        "nn-lap",
        "nn-lap-sn",
        "nn-fsp",
        "nn-fsp-sn",
    )
}


def _docs_table() -> dict[str, dict[str, str]]:
    text = DOCS.read_text(encoding="utf-8")
    block = text.split("<!-- behaviour-table -->")[1]
    rows: dict[str, dict[str, str]] = {}
    header: list[str] = []
    for line in block.strip().splitlines():
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        if not header:
            header = cells
        elif not set(cells[0]) <= {"-", ":"}:
            rows[cells[0].strip("`")] = {
                h.strip("`"): c.split()[-1] for h, c in zip(header[1:], cells[1:], strict=True)
            }
    return rows


@pytest.mark.slow
def test_registered_methods_match_docs_table():
    from udbench.methods.registry import list_methods

    table = _docs_table()
    for info in list_methods():
        if not info.available:
            continue
        assert info.name in table, f"{info.name} missing from the behaviour table of methods.md"
        report = check_behaviour(info.name, params=TABLE_PARAMS.get(info.name))
        got = {r.name: r.status for r in report.results}
        assert got == table[info.name], info.name
