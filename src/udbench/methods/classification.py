"""The classifier contract, beside the regression one (docs/classification.md, "Contract").

A classifier is a scikit-learn-style estimator like a :class:`udbench.methods.BaseMethod`:
its constructor stores hyperparameters unchanged; ``fit(X, y, n_classes=None)`` takes integer
labels in 0 … K − 1 and returns ``self``; ``predict(X, loss="multiclass_log")`` returns a
:class:`ClassPrediction`: class probabilities π̂ (n, K), and AU and EU (n,) in the units of the
named loss, so that they estimate the terms of the posterior-risk decomposition (paper A.5,
A.6, Table 2):

- ``"multiclass_log"`` (nats): AU ≈ E_F H(π_F), EU ≈ I(Y; F) (expected entropy and mutual
  information, "BALD"; Houlsby et al. 2011, Depeweg et al. 2018);
- ``"brier"``: AU ≈ E_F (1 − ‖π_F‖²) (expected Gini impurity), EU ≈ E_F ‖π_F − π̄‖².

A sample-based method (ensemble members, posterior or virtual-ensemble samples) returns its
S probability samples from ``_predict_samples`` and gets both decompositions from the one
shared helper :func:`sample_decomposition`. A method with another route overrides
``_predict``.

Classifiers are kept apart from the regression methods: :class:`BaseClassifier` is not a
:class:`~udbench.methods.BaseMethod`, its class attribute ``task_type`` is
``"classification"``, and they are listed by :mod:`udbench.methods.classifiers`, never by
:data:`udbench.methods.REGISTRY`, so no regression runner, suite or quickstart picks one up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import scipy.stats
from scipy.special import entr, rel_entr, softmax
from sklearn.base import BaseEstimator

from udbench._losses import loss_names
from udbench._validation import UdbenchError, check_array, check_choice, param_error
from udbench.methods.base import BaseMethod, MethodOutputError, NotFittedError

__all__ = [
    "CLASSIFIER_LOSSES",
    "PROB_ATOL",
    "PROB_FLOOR",
    "BaseClassifier",
    "ClassPrediction",
    "embed_present_classes",
    "gaussian_softmax_samples",
    "qmc_standard_normal",
    "row_chunked_decomposition",
    "sample_decomposition",
]

#: The losses a classifier's AU and EU can be stated in (the classification losses of
#: :data:`udbench._losses.LOSS_TABLE`).
CLASSIFIER_LOSSES: tuple[str, ...] = loss_names("classification")
#: Tolerance on Σ_k π̂_k = 1 of a classifier's output (that of :mod:`udbench.risk`).
PROB_ATOL: float = 1e-6
#: Floor of a predicted class probability wherever the log loss scores it (the tuning
#: objective's held-out NLL, the runner's oracle metrics): a probability that underflowed to
#: 0 (e.g. a float32 softmax) scores −log(1e-12) ≈ 27.6 nats, not +∞ (as scikit-learn's
#: ``log_loss`` clips at its eps).
PROB_FLOOR: float = 1e-12


@dataclass(frozen=True)
class ClassPrediction:
    """A classifier's output at n evaluation points.

    Attributes
    ----------
    probs : ndarray, shape (n, K)
        π̂(x), the deployed class probabilities (rows >= 0 summing to 1).
    aleatoric : ndarray, shape (n,)
        AU estimate, in the units of ``loss`` (>= 0).
    epistemic : ndarray, shape (n,)
        EU estimate, in the units of ``loss`` (>= 0).
    loss : str
        ``"multiclass_log"`` (nats) or ``"brier"``.
    """

    probs: np.ndarray
    aleatoric: np.ndarray
    epistemic: np.ndarray
    loss: str = "multiclass_log"

    @property
    def total(self) -> np.ndarray:
        """AU + EU, shape (n,)."""
        return self.aleatoric + self.epistemic

    def validate(
        self, n: int | None = None, n_classes: int | None = None, component: str = "ClassPrediction"
    ) -> ClassPrediction:
        """Check shapes, finiteness, the simplex (atol :data:`PROB_ATOL`) and AU, EU >= 0.

        Raises
        ------
        MethodOutputError
            Naming the offending field and what it held.
        """
        try:
            check_choice(component, "loss", self.loss, CLASSIFIER_LOSSES)
            p = check_array(component, "probs", self.probs, shape=(n, n_classes), ndim=2)
            if p.shape[1] < 2:
                raise param_error(component, "probs", "have K >= 2 columns", p.shape)
            if p.size and p.min() < 0:
                raise param_error(component, "probs", "be >= 0", f"minimum {float(p.min())!r}")
            dev = float(np.max(np.abs(p.sum(axis=1) - 1.0))) if p.size else 0.0
            if dev > PROB_ATOL:
                raise param_error(
                    component,
                    "probs",
                    f"have rows summing to 1 (atol {PROB_ATOL:g})",
                    f"largest deviation {dev:.3g}",
                )
            want = (p.shape[0],)
            check_array(component, "aleatoric", self.aleatoric, shape=want, nonnegative=True)
            check_array(component, "epistemic", self.epistemic, shape=want, nonnegative=True)
        except UdbenchError as err:
            raise MethodOutputError(str(err)) from None
        return self


def sample_decomposition(prob_samples: Any, loss: str = "multiclass_log") -> ClassPrediction:
    """π̂, AU and EU of S probability samples (the shared helper of sample-based methods).

    With π̄ = mean_s π_s (the method's predictive, returned as ``probs``):

    - ``"multiclass_log"``: AU = mean_s H(π_s) (expected entropy), EU = mean_s KL(π_s ‖ π̄)
      = H(π̄) − AU (mutual information; paper A.5; Houlsby et al. 2011);
    - ``"brier"``: AU = mean_s (1 − ‖π_s‖²), EU = mean_s ‖π_s − π̄‖² (paper A.6).

    These are the reference decompositions of :mod:`udbench.risk` applied to the method's own
    samples, with the method's π̄ as the deployed action (its deployment gap is 0). With S = 1
    (a deterministic method) EU is 0.

    Parameters
    ----------
    prob_samples : array_like, shape (S, n, K)
        Rows on the simplex (atol :data:`PROB_ATOL`); entries may be 0 (0 log 0 := 0).
    loss : {"multiclass_log", "brier"}

    Returns
    -------
    ClassPrediction

    Raises
    ------
    UdbenchError
        Unknown loss, wrong shape, NaN/inf, negative entries, rows off the simplex.
    """
    comp = "sample_decomposition"
    check_choice(comp, "loss", loss, CLASSIFIER_LOSSES)
    p = check_array(comp, "prob_samples", prob_samples, ndim=3, nonnegative=True)
    if p.shape[0] < 1 or p.shape[2] < 2:
        raise param_error(comp, "prob_samples", "have S >= 1 samples and K >= 2", p.shape)
    dev = float(np.max(np.abs(p.sum(axis=2) - 1.0))) if p.size else 0.0
    if dev > PROB_ATOL:
        raise param_error(comp, "prob_samples", "have rows summing to 1", f"deviation {dev:.3g}")
    mean = p.mean(axis=0)
    mean = mean / mean.sum(axis=1, keepdims=True)  # exact simplex rows after averaging
    if loss == "multiclass_log":
        au = entr(p).sum(axis=2).mean(axis=0)
        eu = rel_entr(p, mean[None]).sum(axis=2).mean(axis=0)
    else:
        au = (1.0 - (p**2).sum(axis=2)).mean(axis=0)
        eu = ((p - mean[None]) ** 2).sum(axis=2).mean(axis=0)
    # rounding can leave -1e-17 where the samples agree
    return ClassPrediction(mean, np.maximum(au, 0.0), np.maximum(eu, 0.0), loss)


def qmc_standard_normal(n_samples: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    """S randomised quasi-Monte Carlo draws of N(0, I_dim): scrambled Sobol' points, Φ⁻¹.

    z = Φ⁻¹(u) with u the first S points of one Owen-scrambled Sobol' sequence in [0, 1)^dim
    (``scipy.stats.qmc.Sobol``, 2^⌈log₂ S⌉ points generated, the first S kept; u clipped to
    [2⁻⁵³, 1 − 2⁻⁵³]). Randomised QMC (Owen 1997, "Scrambled net variance for integrals of
    smooth functions", Ann. Statist. 25(4)) integrates a smooth function of z with an error
    that falls faster than plain Monte Carlo's S^(−1/2); the Gaussian-logit predictives of
    the Laplace classifiers use it over the logit vector (dim = K), where the integrand
    softmax(μ + Lz) is smooth and low-dimensional.

    Parameters
    ----------
    n_samples : int
        S >= 1.
    dim : int
        Dimension >= 1.
    rng : numpy.random.Generator
        Seeds the scrambling.

    Returns
    -------
    ndarray, shape (S, dim), float64
    """
    k = max(0, int(np.ceil(np.log2(max(int(n_samples), 1)))))
    u = scipy.stats.qmc.Sobol(int(dim), scramble=True, seed=rng).random_base2(k)[: int(n_samples)]
    return np.asarray(scipy.stats.norm.ppf(np.clip(u, 2.0**-53, 1.0 - 2.0**-53)), np.float64)


def gaussian_softmax_samples(mean: np.ndarray, cov: np.ndarray, z: np.ndarray) -> np.ndarray:
    """π_s = softmax(μ(x) + L(x) z_s) for Gaussian logits f(x) ~ N(μ(x), Σ(x)), Σ = L Lᵀ.

    The draws of a linear-Gaussian (Laplace) posterior on a softmax model's last layer,
    taken in the K-dimensional logit space of each point rather than in weight space: the
    per-point distribution of π_s is the same, at a cost of O(S·m·K²) instead of
    O(S·m·p·K). L is the Cholesky factor of Σ(x) + 10⁻¹²·max(diag Σ(x), 1)·I (jitter
    against rounding).

    Parameters
    ----------
    mean : ndarray, shape (m, K)
        μ(x), the MAP logits.
    cov : ndarray, shape (m, K, K)
        Σ(x), the logits' posterior covariance.
    z : ndarray, shape (S, K)
        Standard normal draws, shared by the rows.

    Returns
    -------
    ndarray, shape (S, m, K), float64
    """
    cov = np.asarray(cov, np.float64)
    K = cov.shape[-1]
    scale = np.maximum(np.max(np.diagonal(cov, axis1=1, axis2=2), axis=1), 1.0)
    L = np.linalg.cholesky(cov + 1e-12 * scale[:, None, None] * np.eye(K))
    logits = np.asarray(mean, np.float64)[None] + np.einsum("mkl,sl->smk", L, z)
    return np.asarray(softmax(logits, axis=2), np.float64)


def row_chunked_decomposition(
    samples_of: Callable[[np.ndarray], np.ndarray],
    X: np.ndarray,
    n_samples: int,
    n_classes: int,
    loss: str,
    max_elements: int = 2**23,
) -> ClassPrediction:
    """:func:`sample_decomposition` of ``samples_of(X[rows])`` over blocks of rows.

    For a method whose draws at a row do not depend on the other rows (the same z at every
    row), the result equals the decomposition of ``samples_of(X)`` while the (S, rows, K)
    array stays below ``max_elements`` entries (64 MiB in float64), so that large S is
    affordable in memory.

    Parameters
    ----------
    samples_of : callable
        (rows, d) inputs to (S, rows, K) probability samples.
    X : ndarray, shape (m, d)
    n_samples, n_classes : int
        S and K (to size the blocks).
    loss : {"multiclass_log", "brier"}
    max_elements : int
        Largest S · rows · K per block.

    Returns
    -------
    ClassPrediction
    """
    rows = max(1, int(max_elements) // max(1, int(n_samples) * int(n_classes)))
    m = int(X.shape[0])
    if m <= rows:
        return sample_decomposition(samples_of(X), loss)
    parts = [sample_decomposition(samples_of(X[i : i + rows]), loss) for i in range(0, m, rows)]
    return ClassPrediction(
        np.concatenate([q.probs for q in parts]),
        np.concatenate([q.aleatoric for q in parts]),
        np.concatenate([q.epistemic for q in parts]),
        loss,
    )


class BaseClassifier(BaseEstimator):
    """Base class of udbench's classifiers (the contract of the module docstring).

    Attributes
    ----------
    name : str
        Registry name (:data:`udbench.methods.classifiers.CLASSIFIERS`).
    family : str
        ``"linear"``, ``"gp"``, ``"trees"`` or ``"nn"``.
    task_type : "classification"
        What the method solves (a regression method is a :class:`BaseMethod`).
    constant_aleatoric : bool
        AU constant in x by construction.
    epistemic_from : str
        ``"samples"`` or ``"closed_form"``.
    description : str
        One line with the method's reference.
    search_space, param_constraints, smoke_params : dict
        As for :class:`~udbench.methods.BaseMethod` (the same declaration format).

    (Class attributes, declared by each subclass.) Subclasses implement ``_fit(X, y)``
    (``y`` int labels; ``self.n_classes_`` is K) and
    either ``_predict_samples(X) -> (S, m, K)`` or ``_predict(X, loss) -> ClassPrediction``.
    Hyperparameter checks and seed streams are those of :class:`BaseMethod` (the same
    functions, shared).
    """

    name: ClassVar[str] = "base-classifier"
    family: ClassVar[str] = "base"
    task_type: ClassVar[str] = "classification"
    constant_aleatoric: ClassVar[bool] = False
    epistemic_from: ClassVar[str] = "samples"
    description: ClassVar[str] = ""
    search_space: ClassVar[dict[str, dict[str, Any]]] = {}
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {}
    smoke_params: ClassVar[dict[str, Any]] = {}

    # the regression contract's checks and seed streams, shared (not copied)
    validate_hyperparameters = BaseMethod.validate_hyperparameters
    _seed = BaseMethod._seed
    _rng = BaseMethod._rng

    def fit(self, X: Any, y: Any, n_classes: int | None = None) -> BaseClassifier:
        """Fit on inputs ``X`` (n, d) and labels ``y`` (n,) in 0 … K − 1; return ``self``.

        Parameters
        ----------
        X : array_like, shape (n, d)
        y : array_like, shape (n,)
            Integer labels (integer-valued floats are accepted).
        n_classes : int, optional
            K >= 2 (the task's; a class may be absent from ``y``). Default: max(y) + 1,
            at least 2.

        Raises
        ------
        UdbenchError
            Invalid hyperparameters, wrong shapes, NaN/inf in ``X``, fewer than 2 rows,
            K < 2, labels that are not integers or lie outside 0 … K − 1.
        """
        comp = type(self).__name__
        self.validate_hyperparameters()
        X = check_array(comp, "X", X, ndim=2)
        if X.shape[0] < 2:
            raise param_error(comp, "X", "have at least 2 rows", X.shape)
        if X.shape[1] < 1:
            raise param_error(comp, "X", "have at least 1 column", X.shape)
        raw = np.asarray(y)
        if raw.shape != (X.shape[0],):
            raise param_error(comp, "y", f"have shape ({X.shape[0]},)", f"shape {raw.shape}")
        if raw.dtype.kind not in "iu":
            ok = raw.dtype.kind == "f" and np.all(np.isfinite(raw))
            if not ok or np.any(raw != np.round(raw)):
                raise param_error(comp, "y", "hold integer class labels", f"dtype {raw.dtype}")
        labels = raw.astype(np.int64)
        if labels.min() < 0:
            raise param_error(comp, "y", "hold labels >= 0", int(labels.min()))
        if n_classes is None:
            K = max(int(labels.max()) + 1, 2)
        else:
            if isinstance(n_classes, bool) or not isinstance(n_classes, int | np.integer):
                raise param_error(comp, "n_classes", "be an integer >= 2", n_classes)
            K = int(n_classes)
            if K < 2:
                raise param_error(comp, "n_classes", "be an integer >= 2", n_classes)
            if labels.max() >= K:
                raise param_error(comp, "y", f"lie in 0 … {K - 1}", int(labels.max()))
        self.n_classes_ = K
        self.classes_ = np.arange(K)
        self.n_features_in_ = X.shape[1]
        self._fit(np.array(X, dtype=np.float64), labels)
        return self

    def predict(self, X: Any, loss: str = "multiclass_log") -> ClassPrediction:
        """π̂ (m, K), AU and EU (m,) at ``X`` (m, d) in the units of ``loss``.

        Raises
        ------
        NotFittedError
            Before :meth:`fit`.
        UdbenchError
            Unknown loss, wrong number of features, NaN/inf in ``X``.
        MethodOutputError
            An output off the simplex, NaN/inf, a negative AU or EU, a wrong shape.
        """
        pred = self._predict_unchecked(X, loss)
        return pred.validate(
            int(np.shape(X)[0]), self.n_classes_, component=f"{type(self).__name__}.predict"
        )

    def predict_proba(self, X: Any) -> np.ndarray:
        """π̂ (m, K) (scikit-learn's name)."""
        return self.predict(X).probs

    def _predict_unchecked(self, X: Any, loss: str) -> ClassPrediction:
        """Input checks and ``_predict``, without output checks (for the battery)."""
        comp = type(self).__name__
        if not hasattr(self, "n_classes_"):
            raise NotFittedError(f"{comp}: not fitted; call fit(X, y) before predict(X)")
        check_choice(comp, "loss", loss, CLASSIFIER_LOSSES)
        X = check_array(comp, "X", X, ndim=2)
        if X.shape[1] != self.n_features_in_:
            raise param_error(comp, "X", f"have {self.n_features_in_} columns", X.shape)
        return self._predict(np.array(X, dtype=np.float64), loss)

    # -- to implement ---------------------------------------------------------------------
    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _predict_samples(self, X: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _predict(self, X: np.ndarray, loss: str) -> ClassPrediction:
        """Default: :func:`sample_decomposition` of :meth:`_predict_samples`."""
        return sample_decomposition(self._predict_samples(X), loss)


def embed_present_classes(
    prob_samples: np.ndarray, present: np.ndarray, n_classes: int, n_train: int
) -> np.ndarray:
    """Probability samples over the classes seen in training, extended to all K classes.

    A library classifier fitted on the labels present in training (scikit-learn, CatBoost)
    knows only those classes. A class never seen in the n training labels gets the constant
    probability ε = 1/(n + 2) (Laplace's rule of succession for an event seen 0 times in n
    trials), and the seen classes share 1 − (K − K')·ε in their fitted proportions, so π̂
    stays on the simplex interior (the log loss stays finite). With every class present the
    samples are returned unchanged.

    Parameters
    ----------
    prob_samples : ndarray, shape (S, m, K')
        Samples over the present classes (rows on the simplex).
    present : ndarray, shape (K',)
        The present classes, increasing, in 0 … K − 1.
    n_classes : int
        K.
    n_train : int
        n.

    Returns
    -------
    ndarray, shape (S, m, K)
    """
    present = np.asarray(present, dtype=np.int64)
    if present.size == n_classes:
        return prob_samples
    eps = 1.0 / (n_train + 2.0)
    n_absent = n_classes - present.size
    out = np.full((*prob_samples.shape[:2], n_classes), eps)
    out[..., present] = prob_samples * (1.0 - n_absent * eps)
    return out
