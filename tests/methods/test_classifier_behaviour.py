"""The classifier behaviour battery (``check_classifier_behaviour``).

Small fakes: a kernel-Dirichlet classifier (the well-behaved reference: a Dirichlet posterior
whose concentration is 1 + the Gaussian-kernel-weighted class counts at x, so it reverts to
the flat prior away from the data and sharpens with n), and broken variants (constant EU, AU
and EU swapped, rows off the simplex, a crash). Each fits in milliseconds. Two quick registered
classifiers run in the default suite; every registered classifier against its declaration
(:data:`~udbench.methods.classifier_behaviour.EXPECTED_FAILURES` and the docs table) is slow.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from udbench._validation import UdbenchError
from udbench.methods import classifier_behaviour as cb
from udbench.methods.classification import BaseClassifier, ClassPrediction
from udbench.methods.classifier_behaviour import (
    CLASSIFIER_BEHAVIOUR_CHECKS,
    EXPECTED_FAILURES,
    TABLE_PARAMS,
    check_classifier_behaviour,
    expected_statuses,
)
from udbench.methods.classifiers import CLASSIFIERS

DOCS = Path(__file__).resolve().parents[2] / "docs" / "methods.md"


class KernelDirichlet(BaseClassifier):
    """Dirichlet(1 + Σ_i k(x, x_i) e_{y_i}), k Gaussian with length 0.25; 200 draws."""

    name: ClassVar[str] = "fake-kernel-dirichlet"
    family: ClassVar[str] = "gp"

    def __init__(self, length: float = 0.25, random_state: int | None = 0):
        self.length = length
        self.random_state = random_state

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        self.X_, self.Y_ = X, np.eye(self.n_classes_)[y]

    def _predict_samples(self, X: np.ndarray) -> np.ndarray:
        d2 = ((X[:, None, :] - self.X_[None, :, :]) ** 2).sum(axis=-1)
        alpha = 1.0 + np.exp(-0.5 * d2 / self.length**2) @ self.Y_
        rng = np.random.default_rng(self.random_state)
        g = rng.standard_gamma(np.broadcast_to(alpha, (200, *alpha.shape)))
        return g / g.sum(axis=2, keepdims=True)


class ConstantEU(KernelDirichlet):
    """Broken: EU the same everywhere."""

    def _predict(self, X: np.ndarray, loss: str) -> ClassPrediction:
        p = super()._predict(X, loss)
        return ClassPrediction(p.probs, p.aleatoric, np.full(len(X), 0.05), loss)


class SwappedAUEU(KernelDirichlet):
    """Broken: AU and EU exchanged."""

    def _predict(self, X: np.ndarray, loss: str) -> ClassPrediction:
        p = super()._predict(X, loss)
        return ClassPrediction(p.probs, p.epistemic, p.aleatoric, loss)


class OffSimplex(KernelDirichlet):
    """Broken: rows sum to 1.01 far from the data (only there)."""

    def _predict(self, X: np.ndarray, loss: str) -> ClassPrediction:
        p = super()._predict(X, loss)
        far = np.linalg.norm(X, axis=1) > 2.0
        return ClassPrediction(
            p.probs * np.where(far, 1.01, 1.0)[:, None], p.aleatoric, p.epistemic
        )


class Crashes(KernelDirichlet):
    def _predict(self, X: np.ndarray, loss: str) -> ClassPrediction:
        raise RuntimeError("boom")


def _by_name(cls: Any, **kw: Any) -> dict[str, Any]:
    return {r.name: r for r in check_classifier_behaviour(cls, **kw).results}


def test_reference_fake_passes_with_real_margins():
    res = _by_name(KernelDirichlet)
    assert list(res) == list(CLASSIFIER_BEHAVIOUR_CHECKS)
    assert all(r.status == "passed" for r in res.values()), res
    assert res["eu_far_from_data"].value > 5 * cb.MIN_EU_RATIO_FAR
    assert res["eu_shrinks_with_n"].value < 0.5  # concentration ~ n: EU ~ 1/n
    assert res["au_tracks_label_noise"].value > 0.8
    assert res["probs_on_simplex"].value < 1e-12


def test_constant_and_swapped_uncertainties_are_flagged():
    res = _by_name(ConstantEU)
    assert res["eu_far_from_data"].status == "failed"
    assert res["eu_far_from_data"].value == pytest.approx(1.0, abs=1e-12)
    assert res["eu_shrinks_with_n"].status == "failed"
    assert res["au_tracks_label_noise"].status == "passed"  # only the EU checks fail
    res = _by_name(SwappedAUEU, checks=("au_tracks_label_noise", "eu_shrinks_with_n"))
    assert list(res) == ["au_tracks_label_noise", "eu_shrinks_with_n"]
    assert res["au_tracks_label_noise"].status == "failed"
    assert res["eu_shrinks_with_n"].status == "failed"  # AU does not shrink with n


def test_off_simplex_far_from_data_is_flagged():
    r = _by_name(OffSimplex, checks=("probs_on_simplex",))["probs_on_simplex"]
    assert r.status == "failed" and r.value == pytest.approx(0.01, rel=1e-6)
    assert "far" in r.message


def test_crash_fails_every_check_with_the_exception():
    report = check_classifier_behaviour(Crashes)
    assert report.n_failed == 4 and not report.ok
    assert all("RuntimeError: boom" in r.message for r in report.results)
    assert report.summary().endswith("0 passed, 4 failed, 0 skipped (behaviour)")
    first = report.to_dict()["results"][0]
    assert (first["rule"], first["threshold"]) == (">=", cb.MIN_EU_RATIO_FAR)


def test_thresholds_written_once():
    assert CLASSIFIER_BEHAVIOUR_CHECKS == {
        "eu_far_from_data": (">=", cb.MIN_EU_RATIO_FAR),
        "eu_shrinks_with_n": ("<=", cb.MAX_EU_RATIO_4N),
        "au_tracks_label_noise": (">=", cb.MIN_AU_SPEARMAN),
        "probs_on_simplex": ("<=", cb.PROB_ATOL),
    }


def test_bad_inputs_are_clear_errors():
    with pytest.raises(UdbenchError, match=r"'checks'.*'nope'"):
        check_classifier_behaviour(KernelDirichlet, checks=("nope",))
    with pytest.raises(UdbenchError, match="'random_state'"):
        check_classifier_behaviour(KernelDirichlet, random_state=-1)
    with pytest.raises(UdbenchError, match="'cls_or_name'"):
        check_classifier_behaviour(42)  # type: ignore[arg-type]
    with pytest.raises(UdbenchError, match=r"'params'.*'bogus'"):
        check_classifier_behaviour("logreg-lap", params={"bogus": 1})
    with pytest.raises(UdbenchError, match="max_iter"):
        check_classifier_behaviour("logreg-lap", params={"max_iter": 0})
    with pytest.raises(UdbenchError, match="nope"):
        check_classifier_behaviour("nope")


def _docs_table() -> dict[str, dict[str, str]]:
    text = DOCS.read_text(encoding="utf-8")
    block = text.split("<!-- classifier-behaviour-table -->")[1]
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


def test_docs_table_equals_the_declaration():
    table = _docs_table()
    assert list(table) == list(CLASSIFIERS)
    for name in CLASSIFIERS:
        assert table[name] == expected_statuses(name), name
    assert set(EXPECTED_FAILURES) <= set(CLASSIFIERS)
    assert set(TABLE_PARAMS) <= set(CLASSIFIERS)
    for failures in EXPECTED_FAILURES.values():
        assert set(failures) <= set(CLASSIFIER_BEHAVIOUR_CHECKS)
        assert all(reason.strip() for reason in failures.values())


def _measured(name: str) -> dict[str, str]:
    report = check_classifier_behaviour(name, params=TABLE_PARAMS.get(name))
    return {r.name: r.status for r in report.results}


@pytest.mark.parametrize("name", ["logreg-lap", "catboost-ve"])
def test_quick_classifiers_match_their_declaration(name: str):
    assert _measured(name) == expected_statuses(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in CLASSIFIERS if n not in ("logreg-lap", "catboost-ve")])
def test_registered_classifiers_match_their_declaration(name: str):
    assert _measured(name) == expected_statuses(name)
