"""The behaviour battery of classifiers: semantic checks of AU and EU on seeded 2-D toys.

The classifier conformance battery (:mod:`udbench.methods.classifier_conformance`) checks the
contract; this one checks that the numbers *behave* like AU and EU, as
:mod:`udbench.methods._behaviour` does for regression methods, and reports in the same types
(:class:`~udbench.methods._behaviour.BehaviourReport`: per check the measured ``value``, the
``threshold``, its ``rule`` and passed / failed / skipped). Every fit uses the class's
``smoke_params`` plus overrides and ``random_state`` (default 0).

Problems (all draws from :func:`udbench._seeding.make_rng` with the components
``("classifier-behaviour", kind)``): inputs uniform on the box [-1, 1]², K = 3 classes, Bayes
probabilities π*(x) = softmax(W x / τ(x)) with W = :data:`W_TRUE` and labels drawn from π*:

- ``"small"`` and ``"large"``: τ = :data:`TAU` = 0.5, n = :data:`N_SMALL` and 4·n;
- ``"het"``: the temperature grows along the second input, τ(x) = 0.1 + 1.4·(x₂ + 1)/2
  (labels nearly deterministic at x₂ = −1, noisy at x₂ = 1), n = 4·:data:`N_SMALL`.

Query sets (:data:`N_TEST` = 64 points each): ``inside``, uniform on [-0.8, 0.8]²
(stream ``("classifier-behaviour", "inside")``); ``far``, the circle of radius
:data:`FAR_RADIUS` = 4 (evenly spaced angles); ``grid``, the 8 × 8 grid on [-0.9, 0.9]².
AU and EU are read in the units of ``"multiclass_log"`` (nats: expected entropy, mutual
information).

Checks, in order (:data:`CLASSIFIER_BEHAVIOUR_CHECKS`):

``eu_far_from_data``
    The ``large`` fit. Value: median EU on ``far`` / median EU on ``inside``. Pass if
    ≥ :data:`MIN_EU_RATIO_FAR` = 2.
``eu_shrinks_with_n``
    The ``small`` and ``large`` fits. Value: median EU (4n) / median EU (n) on ``inside``.
    Pass if ≤ :data:`MAX_EU_RATIO_4N` = 0.8.
``au_tracks_label_noise``
    The ``het`` fit. Value: Spearman ρ(AU, H(π*)) on ``grid``, H the entropy (nats). Pass
    if ≥ :data:`MIN_AU_SPEARMAN` = 0.5. Skipped for ``constant_aleatoric = True``.
``probs_on_simplex``
    Every prediction of the three fits on the three query sets (far ones included, where
    saturated logits test the numerics). Value: the largest |Σ_k π̂_k − 1| (∞ if an entry is
    negative or not finite). Pass if ≤ :data:`~udbench.methods.classification.PROB_ATOL`.

A classifier that fails a check by its nature is declared in :data:`EXPECTED_FAILURES`, with
the reason, at the configuration :data:`TABLE_PARAMS`; docs/methods.md ("Classifier
behaviour") has the measured table, and a test checks both against each other and the
measurements.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
from scipy.special import entr, softmax
from scipy.stats import spearmanr

from udbench._seeding import make_rng
from udbench._validation import UdbenchError, param_error
from udbench.methods._behaviour import (
    FAILED,
    PASSED,
    SKIPPED,
    BehaviourReport,
    _Skip,
    run_checks,
)
from udbench.methods.classification import PROB_ATOL, BaseClassifier, ClassPrediction
from udbench.methods.classifiers import classifier_class_of, get_classifier_class

__all__ = [
    "CLASSIFIER_BEHAVIOUR_CHECKS",
    "EXPECTED_FAILURES",
    "FAR_RADIUS",
    "MAX_EU_RATIO_4N",
    "MIN_AU_SPEARMAN",
    "MIN_EU_RATIO_FAR",
    "N_SMALL",
    "N_TEST",
    "TABLE_PARAMS",
    "TAU",
    "W_TRUE",
    "check_classifier_behaviour",
    "expected_statuses",
]

#: Training-set size of the small fit (the large and heteroscedastic fits have 4x as many).
N_SMALL = 100
#: Points per query set.
N_TEST = 64
#: Class weights of π* = softmax(W x / τ), shape (K, d) = (3, 2).
W_TRUE = np.array([[2.0, -1.0], [-1.0, 2.0], [0.0, 0.0]])
#: Temperature of the homoscedastic problems.
TAU = 0.5
#: Radius of the ``far`` query circle (the training box is [-1, 1]²).
FAR_RADIUS = 4.0

# -- thresholds, the same for every classifier --
#: ``eu_far_from_data``: median EU far / median EU inside must be at least this.
MIN_EU_RATIO_FAR = 2.0
#: ``eu_shrinks_with_n``: median EU(4n) / median EU(n) must be at most this.
MAX_EU_RATIO_4N = 0.8
#: ``au_tracks_label_noise``: Spearman ρ(AU, H(π*)) must be at least this.
MIN_AU_SPEARMAN = 0.5

#: The checks in order, with their comparison rule and threshold.
CLASSIFIER_BEHAVIOUR_CHECKS: dict[str, tuple[str, float]] = {
    "eu_far_from_data": (">=", MIN_EU_RATIO_FAR),
    "eu_shrinks_with_n": ("<=", MAX_EU_RATIO_4N),
    "au_tracks_label_noise": (">=", MIN_AU_SPEARMAN),
    "probs_on_simplex": ("<=", PROB_ATOL),
}

#: Overrides of ``smoke_params`` at which the documented table is measured (the others:
#: smoke). GPC-Lap's smoke ``max_train = 60`` would subsample both fits to the same size.
TABLE_PARAMS: dict[str, dict[str, Any]] = {"gpc-lap": {"max_train": 200}}

_SATURATES = (
    "far along W the logits grow linearly in the distance and every sample saturates on the "
    "same class, so the mutual information falls"
)

#: The checks each classifier fails by its nature at :data:`TABLE_PARAMS`, with the reason
#: (docs/methods.md, "Classifier behaviour"); every other check is expected to pass (or to
#: be skipped: ``au_tracks_label_noise`` for a constant-AU classifier).
EXPECTED_FAILURES: dict[str, dict[str, str]] = {
    "logreg-lap": {"eu_far_from_data": f"linear logits with a Gaussian posterior: {_SATURATES}"},
    "catboost-ve": {
        "eu_far_from_data": "trees predict a constant beyond the last border: a far point "
        "shares the edge leaves of the training points",
        "eu_shrinks_with_n": "the virtual ensemble is truncations of one boosting path; their "
        "spread does not contract with n",
    },
    "nn-ens-softmax": {"eu_far_from_data": f"ReLU networks are piecewise linear: {_SATURATES}"},
    "nn-drop-softmax": {"eu_far_from_data": f"ReLU networks are piecewise linear: {_SATURATES}"},
    "nn-bag-softmax": {"eu_far_from_data": f"ReLU networks are piecewise linear: {_SATURATES}"},
    "nn-edl-dirichlet": {
        "eu_far_from_data": "the evidence of a ReLU network grows with the distance, so the "
        "Dirichlet's EU falls far from the data",
        "eu_shrinks_with_n": "nothing in the evidential loss makes the evidence grow with n",
    },
    "nn-lap-softmax": {
        "eu_far_from_data": f"a last-layer Laplace is logistic regression on features: {_SATURATES}"
    },
    "nn-swag-softmax": {
        "eu_far_from_data": f"the SWAG iterates are a small cloud around one mode: {_SATURATES}"
    },
}


def expected_statuses(name: str) -> dict[str, str]:
    """The declared outcome of every check for the registered classifier ``name``.

    Returns
    -------
    dict
        Check name -> ``"passed"``, ``"failed"`` (listed in :data:`EXPECTED_FAILURES`) or
        ``"skipped"`` (``au_tracks_label_noise`` of a ``constant_aleatoric`` classifier).

    Raises
    ------
    UdbenchError
        ``name`` is not in :data:`udbench.methods.classifiers.CLASSIFIERS`.
    """
    cls = get_classifier_class(name)
    failures = EXPECTED_FAILURES.get(name, {})
    out = {}
    for check in CLASSIFIER_BEHAVIOUR_CHECKS:
        if check == "au_tracks_label_noise" and cls.constant_aleatoric:
            out[check] = SKIPPED
        else:
            out[check] = FAILED if check in failures else PASSED
    return out


def _temperature(X: np.ndarray, kind: str) -> np.ndarray:
    if kind == "het":
        return 0.1 + 1.4 * (X[:, 1] + 1.0) / 2.0
    return np.full(X.shape[0], TAU)


def bayes_probs(X: np.ndarray, kind: str) -> np.ndarray:
    """π*(x) of the problem ``kind`` (``"small"``, ``"large"`` or ``"het"``), shape (n, 3)."""
    return softmax((X @ W_TRUE.T) / _temperature(X, kind)[:, None], axis=1)


def _entropy(p: np.ndarray) -> np.ndarray:
    return np.asarray(entr(p).sum(axis=1))


class _ClassifierBehaviour:
    def __init__(self, cls: type[BaseClassifier], params: dict[str, Any], random_state: int):
        self.cls = cls
        self.params = params
        self.random_state = random_state
        self._fits: dict[str, BaseClassifier] = {}
        self._preds: dict[tuple[str, str], ClassPrediction] = {}
        angles = 2.0 * np.pi * np.arange(N_TEST) / N_TEST
        g = np.linspace(-0.9, 0.9, 8)
        self.queries = {
            "inside": make_rng("classifier-behaviour", "inside").uniform(-0.8, 0.8, (N_TEST, 2)),
            "far": FAR_RADIUS * np.column_stack([np.cos(angles), np.sin(angles)]),
            "grid": np.array([[a, b] for a in g for b in g]),
        }

    def data(self, kind: str) -> tuple[np.ndarray, np.ndarray]:
        rng = make_rng("classifier-behaviour", kind)
        n = N_SMALL if kind == "small" else 4 * N_SMALL
        X = rng.uniform(-1.0, 1.0, size=(n, 2))
        p = bayes_probs(X, kind)
        y = (rng.random(n)[:, None] >= np.cumsum(p, axis=1)).sum(axis=1)
        return X, np.minimum(y, 2).astype(np.int64)

    def predict(self, kind: str, query: str) -> ClassPrediction:
        if kind not in self._fits:
            X, y = self.data(kind)
            method = self.cls(**{**self.params, "random_state": self.random_state})
            self._fits[kind] = method.fit(X, y, n_classes=3)
        if (kind, query) not in self._preds:
            pred = self._fits[kind]._predict_unchecked(self.queries[query], "multiclass_log")
            self._preds[kind, query] = pred
        return self._preds[kind, query]

    def _median_eu(self, kind: str, query: str) -> float:
        return float(np.median(np.asarray(self.predict(kind, query).epistemic, dtype=float)))

    # -- checks ---------------------------------------------------------------------------
    def eu_far_from_data(self) -> tuple[float, str]:
        far, inside = self._median_eu("large", "far"), self._median_eu("large", "inside")
        return _ratio(far, inside), f"median EU far {far:.3g}, inside {inside:.3g} (nats)"

    def eu_shrinks_with_n(self) -> tuple[float, str]:
        small, large = self._median_eu("small", "inside"), self._median_eu("large", "inside")
        return _ratio(large, small), f"median EU {small:.3g} (n={N_SMALL}) -> {large:.3g} (4n)"

    def au_tracks_label_noise(self) -> tuple[float, str]:
        if self.cls.constant_aleatoric:
            raise _Skip("the classifier declares constant AU (constant_aleatoric=True)")
        au = np.asarray(self.predict("het", "grid").aleatoric, dtype=float)
        h = _entropy(bayes_probs(self.queries["grid"], "het"))
        if np.ptp(au) == 0.0:
            return 0.0, "AU is constant over x although the classifier declares it varies"
        rho = float(spearmanr(au, h).statistic)
        return rho, f"true entropy from {h.min():.3g} to {h.max():.3g} nats"

    def probs_on_simplex(self) -> tuple[float, str]:
        worst, where = 0.0, ""
        for kind in ("small", "large", "het"):
            for query in self.queries:
                p = np.asarray(self.predict(kind, query).probs, dtype=float)
                if not np.all(np.isfinite(p)) or p.min() < 0:
                    return float("inf"), f"negative or non-finite π̂ ({kind} fit, {query})"
                dev = float(np.max(np.abs(p.sum(axis=1) - 1.0)))
                if dev >= worst:
                    worst, where = dev, f"{kind} fit, {query}"
        return worst, f"largest row-sum deviation at {where}"


def _ratio(num: float, den: float) -> float:
    if den > 0:
        return num / den
    return float("inf") if num > 0 else 1.0


def check_classifier_behaviour(
    cls_or_name: str | type[BaseClassifier],
    *,
    params: dict[str, Any] | None = None,
    random_state: int = 0,
    checks: tuple[str, ...] | None = None,
) -> BehaviourReport:
    """Run the classifier behaviour battery (module docstring) on a classifier class.

    Parameters
    ----------
    cls_or_name : str or type
        A :class:`~udbench.methods.classification.BaseClassifier` subclass or a name of
        :data:`udbench.methods.classifiers.CLASSIFIERS`.
    params : dict, optional
        Overrides of the class's ``smoke_params`` (the documented table uses
        :data:`TABLE_PARAMS`).
    random_state : int, default 0
        The ``random_state`` of every fit.
    checks : tuple of str, optional
        A subset of :data:`CLASSIFIER_BEHAVIOUR_CHECKS` (default: all, in order).

    Returns
    -------
    BehaviourReport
        One result per check; a check whose fit or predict raises is failed with the
        exception.

    Raises
    ------
    UdbenchError
        Unknown classifier, check name or keyword; ``random_state`` not an integer >= 0; a
        hyperparameter value the classifier rejects.
    """
    where = "check_classifier_behaviour"
    cls, label = classifier_class_of(cls_or_name, where)
    for name in checks or ():
        if name not in CLASSIFIER_BEHAVIOUR_CHECKS:
            raise param_error(
                where, "checks", f"contain names from {list(CLASSIFIER_BEHAVIOUR_CHECKS)}", name
            )
    if isinstance(random_state, bool) or not isinstance(random_state, int) or random_state < 0:
        raise param_error(where, "random_state", "be an integer >= 0", random_state)
    used = {**cls.smoke_params, **(params or {})}
    allowed = set(inspect.signature(cls.__init__).parameters) - {"self", "random_state"}
    for key in used:
        if key not in allowed:
            raise param_error(where, "params", f"name keywords of {sorted(allowed)}", key)
    try:
        cls(**used).validate_hyperparameters()
    except UdbenchError as err:
        raise UdbenchError(f"{where}: {err}") from None
    battery = _ClassifierBehaviour(cls, used, random_state)
    report = BehaviourReport(method=label, params=used)
    names = tuple(checks) if checks is not None else tuple(CLASSIFIER_BEHAVIOUR_CHECKS)
    report.results.extend(run_checks(battery, CLASSIFIER_BEHAVIOUR_CHECKS, names))
    return report
