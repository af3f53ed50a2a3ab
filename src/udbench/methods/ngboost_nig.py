"""NGBoost-NIG: NGBoost with a Normal-Inverse-Gamma predictive distribution (paper App. C.3).

ngboost ships no NIG distribution, so this module defines one, :class:`NIG`, as an ngboost
``RegressionDistn`` with a log-score implementation, :class:`NIGLogScore`.

Parameterisation (the paper's, four internal parameters θ per point, boosted jointly)::

    μ = θ₁,   λ = exp θ₂,   α = exp θ₃ + 1,   β = exp θ₄

Score. The NIG's marginal of y is a Student-t with ν = 2α degrees of freedom, location μ and
scale² s² = β(1 + λ)/(λα) (Amini et al., NeurIPS 2020, eq. 8). With Ω = ν s² = 2β(1 + λ)/λ and
r = y − μ, the log score (negative log density) is

    L = lnΓ(α) − lnΓ(α + ½) + ½ ln π − α ln Ω + (α + ½) ln(Ω + r²).

It depends on (λ, β) only through Ω: λ and β are not separately identifiable from y, so the
Fisher information in θ has rank 3 (null direction (0, 1, 0, 1/(1+λ))). This is a property
of the method (the split of Ω between AU and EU is set by the initial values and the path of
the boosting), documented in docs/methods.md.

Gradient (exact) via the identifiable coordinates η = (μ, α, ω = ln Ω), with w = Ω/(Ω + r²):

    ∂L/∂μ = −(2α + 1) r/(Ω + r²),  ∂L/∂α = ψ(α) − ψ(α + ½) − ln w,  ∂L/∂ω = −α + (α + ½) w,

and the chain rule dα/dθ₃ = α − 1, dω/dθ₂ = −1/(1 + λ), dω/dθ₄ = 1.

Fisher information (closed form). Under the model w ~ Beta(α, ½), which gives

    I_μμ = 2α(2α + 1)/((2α + 3) Ω),  I_αα = ψ′(α) − ψ′(α + ½),
    I_αω = −1/(2α + 1),              I_ωω = α/(2α + 3),   I_μα = I_μω = 0,

and I_θ = Jᵀ I_η J with J = ∂η/∂θ (rank 3). The natural gradient is damped,
δ = (I_θ + εI)⁻¹ ∇_θ L with ε = 1e-2 (:data:`FISHER_DAMPING`): ∇_θ L is orthogonal to the null
direction, so δ is too (as the Moore–Penrose solution, its ε → 0 limit), and ε bounds the step
along ln(α − 1), whose information vanishes as α → 1 and as α → ∞.

Outputs per point (standardised units, mapped back by :class:`BaseMethod`): â = μ,
AU = β/(α − 1) = exp(θ₄ − θ₃), EU = β/(λ(α − 1)) = exp(θ₄ − θ₃ − θ₂) (computed in log space).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from ngboost.distns.distn import RegressionDistn
from ngboost.scores import LogScore
from scipy.special import digamma, gammaln, polygamma
from scipy.stats import t as student_t

from udbench.methods._ngboost import (
    BOOSTING_CONSTRAINTS,
    BOOSTING_SEARCH_SPACE,
    BOOSTING_SMOKE_PARAMS,
    ngboost_regressor,
)
from udbench.methods.base import BaseMethod, Prediction

__all__ = ["FISHER_DAMPING", "NIG", "NGBoostNIG", "NIGLogScore", "nig_uncertainties"]

#: Damping ε of the natural gradient, (I_θ + εI)⁻¹ ∇L (standardised target units). The Fisher
#: information of the ln(α − 1) coordinate vanishes as α → 1 (like (α − 1)²) and as α → ∞
#: (the Student-t tends to a Normal), so the undamped natural step diverges there (measured:
#: θ₃ jumped to −2e7 and the next gradient was infinite). 1e-2 is chosen here from a toy
#: comparison of 1e-3, 1e-2, 1e-1 (docs/methods.md).
FISHER_DAMPING = 1e-2


def _eta(params: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(μ, λ, α, Ω) from internal parameters θ of shape (4, n)."""
    mu, t2, t3, t4 = params
    lam = np.exp(t2)
    alpha = np.exp(t3) + 1.0
    # Ω = 2β(1 + λ)/λ = 2 exp(θ₄) (1 + exp(−θ₂)), in log space for range
    omega = 2.0 * np.exp(t4 + np.logaddexp(0.0, -t2))
    return mu, lam, alpha, omega


class NIGLogScore(LogScore):
    """Log score of :class:`NIG` (negative log Student-t marginal), gradient, Fisher information.

    ``score(Y)``, ``d_score(Y)`` and ``metric()`` follow ngboost's conventions: arrays over the
    n points of the distribution, gradients w.r.t. the internal parameters θ, shape (n, 4), the
    metric (Fisher information in θ) shape (n, 4, 4). Formulas: module docstring.
    """

    # attributes set by NIG.__init__
    loc: np.ndarray
    lam: np.ndarray
    alpha: np.ndarray
    omega: np.ndarray

    def score(self, Y: np.ndarray) -> np.ndarray:
        """Negative log density of the Student-t marginal at Y, shape (n,)."""
        a = self.alpha
        r2 = (Y - self.loc) ** 2
        return (
            gammaln(a)
            - gammaln(a + 0.5)
            + 0.5 * np.log(np.pi)
            + 0.5 * np.log(self.omega)
            + (a + 0.5) * np.log1p(r2 / self.omega)
        )

    def _d_eta(self, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """∂L/∂μ, ∂L/∂α, ∂L/∂ω (ω = ln Ω), each shape (n,)."""
        a, om = self.alpha, self.omega
        r = Y - self.loc
        u = r * r / om
        w = 1.0 / (1.0 + u)
        d_mu = -(2.0 * a + 1.0) * (r / om) * w
        d_a = digamma(a) - digamma(a + 0.5) + np.log1p(u)
        d_om = -a + (a + 0.5) * w
        return d_mu, d_a, d_om

    def _jacobian_terms(self) -> tuple[np.ndarray, np.ndarray]:
        """dα/dθ₃ = α − 1 and dω/dθ₂ = −1/(1 + λ), shape (n,) each."""
        return self.alpha - 1.0, -1.0 / (1.0 + self.lam)

    def d_score(self, Y: np.ndarray) -> np.ndarray:
        """Gradient of the score w.r.t. θ = (μ, ln λ, ln(α − 1), ln β), shape (n, 4)."""
        d_mu, d_a, d_om = self._d_eta(Y)
        da_dt3, dom_dt2 = self._jacobian_terms()
        return np.stack([d_mu, d_om * dom_dt2, d_a * da_dt3, d_om], axis=-1)

    def fisher_eta(self) -> np.ndarray:
        """Fisher information in η = (μ, α, ln Ω), shape (n, 3, 3) (closed form)."""
        a, n = self.alpha, self.alpha.shape[0]
        F = np.zeros((n, 3, 3))
        F[:, 0, 0] = 2.0 * a * (2.0 * a + 1.0) / ((2.0 * a + 3.0) * self.omega)
        F[:, 1, 1] = polygamma(1, a) - polygamma(1, a + 0.5)
        F[:, 1, 2] = F[:, 2, 1] = -1.0 / (2.0 * a + 1.0)
        F[:, 2, 2] = a / (2.0 * a + 3.0)
        return F

    def metric(self) -> np.ndarray:  # type: ignore[override]
        """Fisher information in θ, Jᵀ I_η J, shape (n, 4, 4) (rank 3, see module docstring)."""
        da_dt3, dom_dt2 = self._jacobian_terms()
        n = da_dt3.shape[0]
        J = np.zeros((n, 3, 4))
        J[:, 0, 0] = 1.0
        J[:, 1, 2] = da_dt3
        J[:, 2, 1] = dom_dt2
        J[:, 2, 3] = 1.0
        return np.einsum("nki,nkl,nlj->nij", J, self.fisher_eta(), J)

    def natural_d_score(self, Y: np.ndarray) -> np.ndarray:
        """Damped natural gradient (I_θ + εI)⁻¹ ∇_θ L, ε = :data:`FISHER_DAMPING`, shape (n, 4).

        ∇_θ L has no component along the null direction of I_θ, so neither has the result
        (as the Moore–Penrose solution); ε bounds the step along the directions whose Fisher
        information vanishes (α → 1 and α → ∞ in the ln(α − 1) coordinate).
        """
        F = self.metric()
        F = F + FISHER_DAMPING * np.eye(4)[None, :, :]
        return np.linalg.solve(F, self.d_score(Y)[..., None])[..., 0]

    def grad(self, Y: np.ndarray, natural: bool = True) -> np.ndarray:
        """Gradient (``natural=False``) or natural gradient of the score, shape (n, 4)."""
        return self.natural_d_score(Y) if natural else self.d_score(Y)


class NIG(RegressionDistn):
    """Normal-Inverse-Gamma distribution for ngboost, internal parameters θ of shape (4, n).

    μ = θ₁, λ = exp θ₂, α = exp θ₃ + 1, β = exp θ₄ (paper App. C.3). Only the log score is
    implemented (:class:`NIGLogScore`).
    """

    n_params = 4
    scores: ClassVar[list[type]] = [NIGLogScore]

    def __init__(self, params: np.ndarray) -> None:
        super().__init__(params)
        self.params_arr = np.asarray(params, dtype=np.float64)
        self.loc, self.lam, self.alpha, self.omega = _eta(self.params_arr)

    @staticmethod
    def fit(Y: np.ndarray) -> np.ndarray:
        """Initial θ (chosen here): μ = mean(Y), λ = 1, α = 2, β = var(Y)/2.

        With α = 2 and λ = 1 the marginal variance β(1 + λ)/(λ(α − 1)) = AU + EU equals
        var(Y) and AU = EU; var(Y) is floored at 1e-12 (a near-constant standardised target).
        """
        Y = np.asarray(Y, dtype=np.float64)
        var = max(float(np.var(Y)), 1e-12)
        return np.array([float(np.mean(Y)), 0.0, 0.0, np.log(var / 2.0)])

    def sample(self, m: int) -> np.ndarray:
        """m draws of y per point from the Student-t marginal, shape (m, n)."""
        return np.stack([self.rvs() for _ in range(m)])

    def rvs(self, random_state: Any = None) -> np.ndarray:
        """One draw of y per point from the Student-t marginal, shape (n,)."""
        scale = np.sqrt(self.omega / (2.0 * self.alpha))
        return np.asarray(
            student_t.rvs(df=2.0 * self.alpha, loc=self.loc, scale=scale, random_state=random_state)
        )

    def mean(self) -> np.ndarray:
        """μ, shape (n,)."""
        return np.asarray(self.loc)

    @property
    def params(self) -> dict[str, np.ndarray]:
        """μ, λ, α, β per point."""
        return {
            "mu": self.loc,
            "lam": self.lam,
            "alpha": self.alpha,
            "beta": np.exp(self.params_arr[3]),
        }


def nig_uncertainties(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Prediction, AU and EU from NIG internal parameters.

    Parameters
    ----------
    theta : ndarray, shape (n, 4)
        (μ, ln λ, ln(α − 1), ln β) per point.

    Returns
    -------
    mean, aleatoric, epistemic : ndarray, shape (n,) each
        μ, β/(α − 1) and β/(λ(α − 1)) (METHODS.md; Amini et al. 2020), computed in log space.
    """
    theta = np.asarray(theta, dtype=np.float64)
    mu, t2, t3, t4 = theta.T
    return mu.copy(), np.exp(t4 - t3), np.exp(t4 - t3 - t2)


class NGBoostNIG(BaseMethod):
    """NGBoost with a Normal-Inverse-Gamma predictive distribution (NGBoost-NIG; paper C.3).

    Parameters
    ----------
    n_estimators : int, default 500
        Boosting iterations; with ``validation_fraction > 0`` the most that are used (the
        number is chosen on a validation split, below).
    learning_rate : float, default 0.0224
        NGBoost learning rate.
    max_depth : int, default 4
        Depth of the regression-tree base learners (one tree per NIG parameter and iteration).
    minibatch_frac : float, default 0.75
        Fraction of rows used in each boosting iteration.
    col_sample : float, default 0.75
        Fraction of columns used in each boosting iteration.
    natural_gradient : bool, default True
        Precondition by the closed-form Fisher information (damped natural gradient, see
        :class:`NIGLogScore`) or use the plain gradient (both in the search space; measured
        trade-off in docs/methods.md).
    validation_fraction : float, default 0.2
        Share of the training rows (⌊fraction·n⌋, at least 1, leaving at least 2) held out to
        choose the number of boosting iterations, in [0, 0.5): a first fit on the other rows
        records the validation log score after every iteration (NGBoost's own validation
        monitor), and the final model is fitted on all rows with the iterations up to the
        first minimum (the NGBoost reference's procedure, Duan et al. 2020, which chose the
        iteration count on a 20 % validation split; here by the log score rather than the
        MSE). 0 turns it off (all ``n_estimators``, the behaviour before issue 31). Not tuned.
    random_state : int or None, default 0
        Root seed of the tree and row/column subsampling seeds and of the validation split.

    Attributes
    ----------
    n_estimators_ : int
        Boosting iterations of the fitted model.
    validation_scores_ : ndarray, shape (n_estimators,) or (0,)
        Mean validation log score (standardised targets) after each iteration of the first
        fit; empty when no validation split was made.

    Notes
    -----
    Outputs: â = μ, AU = β/(α − 1), EU = β/(λ(α − 1)) (so EU/AU = 1/λ). The search space is
    NGBoost-Bag's boosting part (chosen here; the paper gives none for NGBoost-NIG). A
    constant training target is predicted as that constant with AU = EU = 0. Without the
    validation split the variance overfits long before the mean: on a toy with known noise
    (n = 400, d = 5) 500 iterations gave a predictive variance 0.07 × the held-out MSE
    (90 % coverage 0.33), with the split coverage 0.90 (docs/methods.md).
    """

    name: ClassVar[str] = "ngboost-nig"
    paper_index: ClassVar[int | None] = 6  # SPEC §8's list
    family: ClassVar[str] = "trees"
    constant_aleatoric: ClassVar[bool] = False
    epistemic_from: ClassVar[str] = "closed_form"
    # reports the boosting so far: of the validation-split fit (which runs every iteration)
    # when validation_fraction > 0, else of the fit on all rows
    progress_param: ClassVar[str | None] = "n_estimators"
    description: ClassVar[str] = "NGBoost with a Normal-Inverse-Gamma distribution (paper C.3)"
    search_space: ClassVar[dict[str, dict[str, Any]]] = {
        **BOOSTING_SEARCH_SPACE,
    }
    param_constraints: ClassVar[dict[str, dict[str, Any]]] = {
        **BOOSTING_CONSTRAINTS,
        "validation_fraction": {"type": "float", "low": 0.0, "high": 0.5, "high_open": True},
    }
    smoke_params: ClassVar[dict[str, Any]] = {
        **BOOSTING_SMOKE_PARAMS,
    }

    def __init__(
        self,
        n_estimators: int = 500,
        learning_rate: float = 0.0224,
        max_depth: int = 4,
        minibatch_frac: float = 0.75,
        col_sample: float = 0.75,
        natural_gradient: bool = True,
        validation_fraction: float = 0.2,
        random_state: int | None = 0,
    ) -> None:
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.minibatch_frac = minibatch_frac
        self.col_sample = col_sample
        self.natural_gradient = natural_gradient
        self.validation_fraction = validation_fraction
        self.random_state = random_state

    def _n_iterations(
        self, X: np.ndarray, target: np.ndarray, seed: int, checkpoints: tuple[int, ...] = ()
    ) -> tuple[int, bool]:
        """Boosting iterations chosen on the validation split (module docstring), and whether
        the ``checkpoints`` of a reporting tuning trial were reported on the way (by the
        validation fit, which runs every iteration; the refit on all rows then reports
        nothing)."""
        self.validation_scores_ = np.zeros(0)
        n = X.shape[0]
        n_val = min(max(1, int(np.floor(float(self.validation_fraction) * n))), n - 2)
        if float(self.validation_fraction) == 0.0 or n_val < 1:
            return int(self.n_estimators), False
        perm = self._rng("validation", "rows").permutation(n)
        val, fit = np.sort(perm[:n_val]), np.sort(perm[n_val:])
        if np.ptp(target[fit]) == 0.0:  # nothing to boost on the fit rows
            return int(self.n_estimators), False
        scores: list[float] = []

        def monitor(dist: Any, Y: np.ndarray) -> float:
            score = float(dist.total_score(Y))
            scores.append(score)
            return score

        model = ngboost_regressor(NIG, self, seed)
        extra: dict[str, Any] = {}
        if checkpoints:  # the model so far, at the checkpoints (what _predict reads meanwhile)
            self.model_ = model
            extra["train_loss_monitor"] = self._monitor(checkpoints)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            model.fit(
                X[fit],
                target[fit],
                X_val=X[val],
                Y_val=target[val],
                val_loss_monitor=monitor,
                **extra,
            )
        self.validation_scores_ = np.asarray(scores, dtype=np.float64)
        finite = np.isfinite(self.validation_scores_)
        if not finite.any():
            return int(self.n_estimators), bool(checkpoints)
        # the first minimum (NaN/inf never count as one)
        best = int(np.argmin(np.where(finite, self.validation_scores_, np.inf))) + 1
        return best, bool(checkpoints)

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        # As NGBoost-Bag: greedy tree splits flip on rounding-level differences of the
        # standardised targets, which would break invariance to the units of y.
        target = np.round(y, 12)
        if np.ptp(target) == 0.0:
            self.model_ = float(target[0])
            self.n_estimators_ = 0
            self.validation_scores_ = np.zeros(0)
            return
        seed = self._seed("ngboost", bits=31)
        checkpoints = self._progress_checkpoints()
        self.n_estimators_, reported = self._n_iterations(X, target, seed, checkpoints)
        model = ngboost_regressor(NIG, self, seed, n_estimators=self.n_estimators_)
        # NGBoost's line search first scales a step up until the score is no longer finite
        # (exp overflow of θ) and then backs off: those trial overflows are expected.
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            if not checkpoints or reported:
                self.model_ = model.fit(X, target)
            else:  # a reporting tuning trial: the model so far, at the checkpoints
                self.model_ = model  # what _predict reads while it is being fitted
                model.fit(X, target, train_loss_monitor=self._monitor(checkpoints))

    def _monitor(self, checkpoints: tuple[int, ...]) -> Any:
        """NGBoost's ``train_loss_monitor`` (called at the start of every iteration with the
        batch's distribution): its default loss, plus a report of the model so far after the
        iterations in ``checkpoints``."""
        done = iter(range(1 << 62))
        wanted = set(checkpoints)

        def monitor(D: Any, Y: Any, W: Any) -> Any:
            iteration = next(done)  # iterations finished before this call
            if iteration in wanted:
                self._report_progress(iteration, self._predict)
            return D.total_score(Y, sample_weight=W)

        return monitor

    def _predict(self, X: np.ndarray) -> Prediction:
        if isinstance(self.model_, float):
            zeros = np.zeros(X.shape[0])
            return Prediction(mean=zeros + self.model_, aleatoric=zeros, epistemic=zeros.copy())
        theta = self.model_.pred_param(X)
        mean, au, eu = nig_uncertainties(theta)
        return Prediction(mean=mean, aleatoric=au, epistemic=eu)
