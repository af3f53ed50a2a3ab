"""NGBoost-Cat-Bag: a bagged ensemble of categorical NGBoost classifiers.

Each of ``n_classifiers`` members is an :class:`ngboost.NGBClassifier` with NGBoost's
K-class categorical distribution (``ngboost.distns.k_categorical(K)``: K − 1 free logits,
the first class's fixed at 0) trained under the log score with depth-limited regression trees
as base learners (Duan et al., ICML 2020, "NGBoost: Natural Gradient Boosting for
Probabilistic Prediction"; the library ``ngboost``), on its own resample of
⌊sample_fraction·n⌋ training rows drawn with or without replacement (Breiman, 1996). It is
the classification sibling of :mod:`udbench.methods.ngboost_bag` and shares its boosting
hyperparameters, search space and validation (:mod:`udbench.methods._ngboost`).

Member m gives π_m(x) (``predict_proba``); the M members are decomposed by
:func:`udbench.methods.classification.sample_decomposition` (log loss: AU = expected entropy
mean_m H(π_m), EU = mutual information; Brier analogues), and π̂ is their mean.

A member knows only the classes present in its resample: it is fitted on those (relabelled
0 … K_m − 1, NGBoost's categorical needs every one of its classes in the data) and its
probabilities are extended to all K classes by
:func:`~udbench.methods.classification.embed_present_classes` (Laplace's rule of succession
on its resample). A member whose resample holds one class predicts it with that rule.

**The natural gradient in closed form.** NGBoost preconditions the log-score gradient
g = p − e_y (free logits 1 … K − 1) with the Fisher information F = diag(q) − q qᵀ,
q = (p_1 … p_{K−1}), by solving F x = g numerically (a pseudo-inverse where ``solve`` finds F
singular). Once a training point's logits grow to several hundred (the line search scales
steps up to 512× on separable rows), the other classes' probabilities underflow to
subnormal numbers: F is then singular in floating point although its exact inverse
applied to g is finite, and the pseudo-inverse divides by a subnormal singular value
(inf · 0 = NaN), so the next tree is fitted to NaN targets (scikit-learn's "Input y
contains NaN", the 2 failed cells of the clf-small preview). The members therefore use
:func:`stable_k_categorical`, NGBoost's own categorical distribution with a log score
whose natural gradient is the exact closed form (Sherman–Morrison:
F⁻¹ = diag(1/q) + 11ᵀ/p_0, so (F⁻¹g)_j = [y = 0]/p_0 − [y = j]/p_j), from
log-probabilities; it equals NGBoost's solve wherever that is well conditioned (to
rounding).

**Bounded logits (a documented clip).** The exact gradient alone does not stop the logits
growing: on nearly separable resamples NGBoost's fit drives some observed class's
log-probability below −709 (1/p_y overflows). Each free logit is therefore clipped to
[−L, L], L = :data:`LOGIT_BOUND` = 100, before the softmax, in fitting and in prediction:
every class keeps probability ≥ e^(−2L)/K ≈ 1e−87, far below any probability the scoring
distinguishes, and every gradient stays in float64 range. A clipped coordinate gets the
clipped model's gradient, 0 (:func:`categorical_natural_gradient`). A member whose gradient
is still not finite (non-finite parameters) raises a
:class:`~udbench._validation.UdbenchError` naming the member; NaNs are never replaced.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from udbench._validation import UdbenchError
from udbench.methods._ensemble import bagging_rows
from udbench.methods._ngboost import (
    BOOSTING_CONSTRAINTS,
    BOOSTING_SEARCH_SPACE,
    BOOSTING_SMOKE_PARAMS,
    lean_tree_class,
)
from udbench.methods.classification import BaseClassifier, embed_present_classes

__all__ = [
    "LOGIT_BOUND",
    "NGBoostCatBag",
    "categorical_natural_gradient",
    "ngboost_classifier",
    "stable_k_categorical",
]


#: Bound on each of the K − 1 free logits of a member's categorical distribution (class 0's
#: is 0): its probabilities are those of the logits clipped to [−L, L], so every class keeps
#: probability ≥ e^(−2L)/K ≈ 1e−87 and the natural gradient (≤ e^(2L)·K) stays in float64
#: range (module docstring, "Bounded logits").
LOGIT_BOUND: float = 100.0


def categorical_natural_gradient(
    params: np.ndarray, y: np.ndarray, bound: float = LOGIT_BOUND
) -> np.ndarray:
    """The natural gradient of the log score of a categorical with clipped logits, exactly.

    The model: logits z = (0, clip(θ, −L, L)), p = softmax(z), θ the K − 1 free parameters
    (NGBoost's ``k_categorical`` parametrisation, class 0 the reference). On the free
    coordinates S = {j : |θ_j| < L} the gradient of −log p_y is g_S = p_S − e_{y,S} and the
    Fisher information F_S = diag(p_S) − p_S p_Sᵀ; by the Sherman–Morrison formula
    F_S⁻¹ = diag(1/p_S) + 11ᵀ/r with r = 1 − Σ_{k∈S} p_k, so

        (F_S⁻¹ g_S)_j = [y ∉ S]/r − [y = j]/p_j,   j ∈ S,

    and 0 on the clipped coordinates (the clipped model does not depend on them: its
    gradient and Fisher information there are 0, the pseudo-inverse's answer). With no
    coordinate clipped, r = p_0 and this is F⁻¹g of NGBoost's categorical log score.

    Parameters
    ----------
    params : ndarray, shape (K − 1, n)
        The free logits θ per point (NGBoost's parameter array, transposed).
    y : ndarray of int, shape (n,)
        Observed classes in 0 … K − 1.
    bound : float, default :data:`LOGIT_BOUND`
        L.

    Returns
    -------
    ndarray, shape (n, K − 1)
        The natural gradient per point, from log-probabilities (log-softmax, log-sum-exp),
        so exact however small the probabilities are; finite for any finite ``params``.
    """
    from scipy.special import logsumexp

    theta = np.asarray(params, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    n = y.shape[0]
    z = np.vstack([np.zeros((1, n)), np.clip(theta, -bound, bound)])  # (K, n)
    free = np.vstack([np.zeros((1, n), dtype=bool), np.abs(theta) < bound])
    log_total = logsumexp(z, axis=0)
    log_rest = logsumexp(np.where(free, -np.inf, z), axis=0)  # class 0 is always in it
    inv_p_y = np.exp(log_total - z[y, np.arange(n)])
    inv_r = np.exp(log_total - log_rest)
    y_free = free[y, np.arange(n)]
    out = np.where(free[1:].T & ~y_free[:, None], inv_r[:, None], 0.0)
    rows = np.flatnonzero(y_free)
    out[rows, y[rows] - 1] = -inv_p_y[rows]
    return out


def stable_k_categorical(n_classes: int, bound: float = LOGIT_BOUND) -> Any:
    """NGBoost's ``k_categorical(n_classes)`` with logits clipped to [−L, L], exact gradients.

    NGBoost's own distribution class (its initial fit, sampling, ``class_probs``), whose
    probabilities are those of the clipped logits (so a member's ``predict_proba`` too),
    with a log score whose natural gradient is :func:`categorical_natural_gradient` in
    place of NGBoost's numerical solve with the Fisher matrix, and whose ordinary gradient
    is NGBoost's ``p − e_y`` with the clipped coordinates set to 0.

    Parameters
    ----------
    n_classes : int
        K >= 2.
    bound : float, default :data:`LOGIT_BOUND`
        L.

    Raises
    ------
    FloatingPointError
        At ``fit``: a natural gradient is not finite (a non-finite parameter: NGBoost's
        fit has diverged); :class:`NGBoostCatBag` reports it as a UdbenchError.
    """
    from ngboost.distns import k_categorical
    from ngboost.distns.categorical import CategoricalLogScore
    from ngboost.scores import LogScore

    class BoundedCategoricalLogScore(CategoricalLogScore, LogScore):  # type: ignore[misc]
        """The categorical log score with exact gradients of the clipped model (LogScore is
        the last base, so that NGBoost picks it for ``Score=LogScore``)."""

        def grad(self, Y: Any, natural: bool = True) -> Any:
            free = (np.abs(self.raw_params) < bound).T
            if not natural:
                return np.where(free, self.d_score(Y), 0.0)
            out = categorical_natural_gradient(self.raw_params, Y, bound)
            if not np.all(np.isfinite(out)):
                bad = int((~np.isfinite(out).all(axis=1)).sum())
                raise FloatingPointError(
                    f"natural gradient not finite at {bad} training point(s) (non-finite "
                    "logits: the boosting diverged)"
                )
            return out

    base = k_categorical(int(n_classes))

    def __init__(self: Any, params: Any) -> None:
        self.raw_params = np.asarray(params, dtype=np.float64)
        base.__init__(self, np.clip(self.raw_params, -bound, bound))

    return type(
        base.__name__,
        (base,),
        {"scores": [BoundedCategoricalLogScore], "__init__": __init__, "bound": bound},
    )


def ngboost_classifier(n_classes: int, method: Any, seed: int) -> Any:
    """An unfitted ``ngboost.NGBClassifier`` with ``k_categorical(n_classes)``.

    Parameters
    ----------
    n_classes : int
        K_m >= 2, the classes of the member's data (labels 0 … K_m − 1, each present).
    method : BaseClassifier
        Supplies ``max_depth``, ``natural_gradient``, ``n_estimators``, ``learning_rate``,
        ``minibatch_frac`` and ``col_sample`` (validated at ``fit``).
    seed : int
        Seed of the tree base learner and of NGBoost's row and column subsampling.

    Returns
    -------
    ngboost.NGBClassifier
        Log score with the exact natural gradient (:func:`stable_k_categorical`), regression
        trees (squared error) of depth ``max_depth``, no early stopping.
    """
    from ngboost import NGBClassifier
    from ngboost.scores import LogScore

    # scikit-learn's regression tree, without its per-call validation: same trees (_ngboost)
    base = lean_tree_class()(
        criterion="squared_error", max_depth=int(method.max_depth), random_state=seed
    )
    return NGBClassifier(
        Dist=stable_k_categorical(int(n_classes)),
        Score=LogScore,
        Base=base,
        natural_gradient=bool(method.natural_gradient),
        n_estimators=int(method.n_estimators),
        learning_rate=float(method.learning_rate),
        minibatch_frac=float(method.minibatch_frac),
        col_sample=float(method.col_sample),
        verbose=False,
        random_state=seed,
    )


class NGBoostCatBag(BaseClassifier):
    """Bagged categorical NGBoost classifiers (module docstring).

    Parameters
    ----------
    n_estimators : int, default 500
        Boosting iterations per member.
    learning_rate : float, default 0.0224
        NGBoost learning rate (centre of the log-uniform range [0.005, 0.1]).
    max_depth : int, default 4
        Depth of the regression-tree base learners.
    minibatch_frac : float, default 0.75
        Fraction of rows used in each boosting iteration.
    col_sample : float, default 0.75
        Fraction of columns used in each boosting iteration.
    natural_gradient : bool, default True
        Use the natural gradient (Fisher-preconditioned) of the log score.
    n_classifiers : int, default 15
        M, the number of members.
    sample_fraction : float, default 0.775
        Size of each member's resample as a fraction of n.
    replace : bool, default True
        Resample with replacement (bootstrap) or without.
    random_state : int or None, default 0
        Root seed; member m's resample (stream ``("member", m, "rows")``) and its NGBoost and
        tree seed (``("member", m, "ngboost")``) derive from it.

    Notes
    -----
    Defaults and search space are NGBoost-Bag's (:mod:`udbench.methods.ngboost_bag`; paper
    C.3), ``n_classifiers`` in place of ``n_regressors``. Fitted attributes: ``members_``
    (per member an ``NGBClassifier``, or None for a one-class resample),
    ``member_classes_`` (per member its present classes), ``member_rows_`` (resample sizes).
    """

    name: ClassVar[str] = "ngboost-cat-bag"
    family: ClassVar[str] = "trees"
    constant_aleatoric: ClassVar[bool] = False
    epistemic_from: ClassVar[str] = "samples"
    description: ClassVar[str] = (
        "Bagged NGBoost, k_categorical members (Duan et al. 2020; Breiman 1996)"
    )
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        **BOOSTING_SEARCH_SPACE,
        "n_classifiers": {"type": "int", "low": 5, "high": 25},
        "sample_fraction": {"type": "float", "low": 0.6, "high": 0.95},
        "replace": {"type": "categorical", "choices": [True, False]},
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        **BOOSTING_CONSTRAINTS,
        "n_classifiers": {"type": "int", "low": 1},
        "sample_fraction": {"type": "float", "low": 0.0, "low_open": True, "high": 1.0},
        "replace": {"type": "bool"},
    }
    smoke_params: ClassVar[dict[str, Any]] = {**BOOSTING_SMOKE_PARAMS, "n_classifiers": 3}

    def __init__(
        self,
        n_estimators: int = 500,
        learning_rate: float = 0.0224,
        max_depth: int = 4,
        minibatch_frac: float = 0.75,
        col_sample: float = 0.75,
        natural_gradient: bool = True,
        n_classifiers: int = 15,
        sample_fraction: float = 0.775,
        replace: bool = True,
        random_state: int | None = 0,
    ) -> None:
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.minibatch_frac = minibatch_frac
        self.col_sample = col_sample
        self.natural_gradient = natural_gradient
        self.n_classifiers = n_classifiers
        self.sample_fraction = sample_fraction
        self.replace = replace
        self.random_state = random_state

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        members: list[Any] = []
        classes: list[np.ndarray] = []
        sizes: list[int] = []
        for m in range(int(self.n_classifiers)):
            rng = self._rng("member", m, "rows")
            rows = bagging_rows(X.shape[0], float(self.sample_fraction), bool(self.replace), rng)
            present = np.unique(y[rows])
            classes.append(present)
            sizes.append(int(rows.size))
            if present.size < 2:
                members.append(None)
                continue
            codes = np.searchsorted(present, y[rows])
            seed = self._seed("member", m, "ngboost", bits=31)
            try:
                member = ngboost_classifier(present.size, self, seed).fit(X[rows], codes)
            except FloatingPointError as err:
                raise UdbenchError(
                    f"{self.name}: member {m} of {int(self.n_classifiers)} failed to fit "
                    f"({present.size} classes, {rows.size} rows): {err}"
                ) from None
            members.append(member)
        self.members_ = members
        self.member_classes_ = classes
        self.member_rows_ = np.asarray(sizes)

    def _predict_samples(self, X: np.ndarray) -> np.ndarray:
        out = np.empty((len(self.members_), X.shape[0], self.n_classes_))
        for m, (member, present) in enumerate(
            zip(self.members_, self.member_classes_, strict=True)
        ):
            if member is None:
                probs = np.ones((1, X.shape[0], 1))
            else:
                p = np.asarray(member.predict_proba(X), dtype=np.float64)
                probs = (p / p.sum(axis=1, keepdims=True))[None]
            out[m] = embed_present_classes(
                probs, present, self.n_classes_, int(self.member_rows_[m])
            )[0]
        return out
