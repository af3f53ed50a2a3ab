"""CatBoost-VE: CatBoost multiclass with virtual ensembles (a classifier).

One :class:`catboost.CatBoostClassifier` with the ``MultiClass`` objective (``Logloss`` for
K = 2) trained in posterior-sampling mode (stochastic gradient Langevin boosting, SGLB), whose
*virtual ensemble* — truncations of the one boosted model at regularly spaced iterations in
its second half — gives V approximate posterior samples at no extra training cost (Malinin,
Prokhorenkova & Ustimenko 2021, "Uncertainty in Gradient Boosting via Ensembles", ICLR).
``virtual_ensembles_predict(prediction_type="VirtEnsembles")`` returns each member's raw
scores (logits); π_v = softmax(logits_v) (K = 2: π_v = (1 − σ(s_v), σ(s_v))), decomposed by
:func:`udbench.methods.classification.sample_decomposition` (AU = expected entropy, EU =
mutual information; Brier analogues). These equal CatBoost's own
``prediction_type="TotalUncertainty"`` (data and total uncertainty) to rounding (tested).
π̂ is the mean of the members' probabilities (not ``predict_proba`` of the full model, so
that π̂ is the centroid of the decomposed samples). Classes absent from the training labels:
:func:`~udbench.methods.classification.embed_present_classes`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from scipy.special import expit, softmax

from udbench.methods.classification import BaseClassifier, embed_present_classes

__all__ = ["CatBoostVE"]


class CatBoostVE(BaseClassifier):
    """CatBoost classifier with SGLB and virtual ensembles (module docstring).

    Parameters
    ----------
    iterations : int, default 500
        Boosting iterations.
    learning_rate : float, default 0.05
    depth : int, default 6
    l2_leaf_reg : float, default 3.0
    virtual_ensembles_count : int, default 10
        V, the members of the virtual ensemble.
    thread_count : int, default 1
        CatBoost threads.
    random_state : int or None, default 0
    """

    name: ClassVar[str] = "catboost-ve"
    family: ClassVar[str] = "trees"
    constant_aleatoric: ClassVar[bool] = False
    epistemic_from: ClassVar[str] = "samples"
    description: ClassVar[str] = (
        "CatBoost multiclass, SGLB virtual ensembles (Malinin, Prokhorenkova & Ustimenko 2021)"
    )
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        "iterations": {"type": "int", "low": 200, "high": 1000},
        "learning_rate": {"type": "float", "low": 0.01, "high": 0.3, "log": True},
        "depth": {"type": "int", "low": 3, "high": 8},
        "l2_leaf_reg": {"type": "float", "low": 1.0, "high": 10.0, "log": True},
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        "iterations": {"type": "int", "low": 2},
        "learning_rate": {"type": "float", "low": 0.0, "low_open": True},
        "depth": {"type": "int", "low": 1, "high": 16},
        "l2_leaf_reg": {"type": "float", "low": 0.0},
        "virtual_ensembles_count": {"type": "int", "low": 2},
        "thread_count": {"type": "int", "low": 1},
    }
    smoke_params: ClassVar[dict[str, Any]] = {"iterations": 60, "depth": 3}

    model_: Any  # the fitted CatBoostClassifier (None when one class was seen)

    def __init__(
        self,
        iterations: int = 500,
        learning_rate: float = 0.05,
        depth: int = 6,
        l2_leaf_reg: float = 3.0,
        virtual_ensembles_count: int = 10,
        thread_count: int = 1,
        random_state: int | None = 0,
    ) -> None:
        self.iterations = iterations
        self.learning_rate = learning_rate
        self.depth = depth
        self.l2_leaf_reg = l2_leaf_reg
        self.virtual_ensembles_count = virtual_ensembles_count
        self.thread_count = thread_count
        self.random_state = random_state

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        from catboost import CatBoostClassifier

        present = np.unique(y)
        self.present_classes_ = present
        self.n_train_ = int(X.shape[0])
        if present.size < 2:
            self.model_ = None
            return
        # labels 0 … K'−1 for the present classes (CatBoost sees only these)
        codes = np.searchsorted(present, y)
        self.model_ = CatBoostClassifier(
            loss_function="MultiClass" if present.size > 2 else "Logloss",
            iterations=int(self.iterations),
            learning_rate=float(self.learning_rate),
            depth=int(self.depth),
            l2_leaf_reg=float(self.l2_leaf_reg),
            posterior_sampling=True,
            random_seed=self._seed("catboost"),
            thread_count=int(self.thread_count),
            verbose=0,
            allow_writing_files=False,
        ).fit(X, codes)

    def _count(self) -> int:
        # CatBoost needs at least 2 iterations per virtual member
        return int(min(int(self.virtual_ensembles_count), max(int(self.iterations) // 4, 1)))

    def member_scores(self, X: np.ndarray) -> np.ndarray:
        """Raw scores of the virtual members: (m, V, K') for MultiClass, (m, V, 1) for K' = 2."""
        out = self.model_.virtual_ensembles_predict(
            X, prediction_type="VirtEnsembles", virtual_ensembles_count=self._count()
        )
        arr = np.asarray(out, dtype=np.float64)
        return arr if arr.ndim == 3 else arr[..., None]

    def _predict_samples(self, X: np.ndarray) -> np.ndarray:
        present = self.present_classes_
        if self.model_ is None:
            probs = np.ones((2, X.shape[0], 1))
        else:
            scores = self.member_scores(X).transpose(1, 0, 2)  # (V, m, K' or 1)
            if present.size == 2:
                s = expit(scores[..., 0])
                probs = np.stack([1.0 - s, s], axis=-1)
            else:
                probs = softmax(scores, axis=-1)
        return embed_present_classes(probs, present, self.n_classes_, self.n_train_)
