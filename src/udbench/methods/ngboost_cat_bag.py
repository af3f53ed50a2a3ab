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
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from udbench.methods._ensemble import bagging_rows
from udbench.methods._ngboost import (
    BOOSTING_CONSTRAINTS,
    BOOSTING_SEARCH_SPACE,
    BOOSTING_SMOKE_PARAMS,
)
from udbench.methods.classification import BaseClassifier, embed_present_classes

__all__ = ["NGBoostCatBag", "ngboost_classifier"]


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
        Log score, regression trees (squared error) of depth ``max_depth``, no early stopping.
    """
    from ngboost import NGBClassifier
    from ngboost.distns import k_categorical
    from ngboost.scores import LogScore
    from sklearn.tree import DecisionTreeRegressor

    base = DecisionTreeRegressor(
        criterion="squared_error", max_depth=int(method.max_depth), random_state=seed
    )
    return NGBClassifier(
        Dist=k_categorical(int(n_classes)),
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
            members.append(ngboost_classifier(present.size, self, seed).fit(X[rows], codes))
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
