"""DKL: with an identity feature map it is the exact GP on the inputs; the schedule; errors."""

from __future__ import annotations

import numpy as np
import pytest

from udbench._seeding import make_rng
from udbench._validation import UdbenchError
from udbench.methods.dkl import DKL


def _matern52(A: np.ndarray, B: np.ndarray, ls: np.ndarray, var: float) -> np.ndarray:
    r = np.sqrt(np.sum(((A[:, None, :] - B[None, :, :]) / ls) ** 2, axis=-1))
    return var * (1 + np.sqrt(5) * r + 5 / 3 * r**2) * np.exp(-np.sqrt(5) * r)


def test_dkl_identity_feature_map_is_the_exact_gp():
    # φ(x) = x: DKL's prediction is the exact GP posterior (R&W eqs. 2.25-2.26) with an ARD
    # Matérn-5/2 kernel on the standardised inputs at DKL's fitted hyperparameters, written
    # here in NumPy; its training loss is that GP's negative log marginal likelihood / n.
    import jax
    import jax.numpy as jnp

    from udbench.methods.dkl import _compiled

    rng = make_rng("tests", "methods", "dkl-identity")
    X = rng.uniform(-1, 1, size=(30, 2))
    y = np.sin(3 * X[:, 0]) + X[:, 1] + 0.2 * rng.standard_normal(30)
    X_test = rng.uniform(-1.5, 1.5, size=(12, 2))
    m = DKL(feature_map="identity", num_iters=40, warmup_steps=5, peak_learning_rate=0.05)
    m.fit(X, y)
    pred = m.predict(X_test)
    Z, Zt = m._transform(X), m._transform(X_test)
    ys = (y - m.y_loc_) / m.y_scale_
    s2 = m.noise_variance_std_
    K = _matern52(Z, Z, m.lengthscale_, m.variance_) + (s2 + 1e-6) * np.eye(30)
    Ks = _matern52(Zt, Z, m.lengthscale_, m.variance_)
    mean = Ks @ np.linalg.solve(K, ys)
    var = m.variance_ - np.sum(Ks * np.linalg.solve(K, Ks.T).T, axis=1)
    np.testing.assert_allclose(pred.mean, mean * m.y_scale_ + m.y_loc_, rtol=0, atol=1e-8)
    np.testing.assert_allclose(pred.epistemic, var * m.y_scale_**2, rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(pred.aleatoric, s2 * m.y_scale_**2, rtol=1e-12)
    # the objective at the fitted parameters: the exact GP's -log ML / n
    _, logdet = np.linalg.slogdet(K)
    nll = 0.5 * ys @ np.linalg.solve(K, ys) + 0.5 * logdet + 15 * np.log(2 * np.pi)
    u = lambda v: v + np.log(-np.expm1(-v))  # noqa: E731 - inverse softplus
    with jax.enable_x64(True):
        params = {
            "net": [],
            "ls": jnp.asarray(u(m.lengthscale_)),
            "var": jnp.asarray(u(m.variance_)),
            "noise": jnp.asarray(u(np.sqrt(s2) - m.min_noise_std)),
        }
        loss = float(_compiled("loss")(params, jnp.asarray(Z), jnp.asarray(ys), m.min_noise_std))
    assert loss == pytest.approx(nll / 30, rel=1e-8)
    # training reduced the loss
    assert m.loss_history_[-1] < m.loss_history_[0]


def test_dkl_learning_rate_schedule_and_determinism():
    est = DKL(num_iters=10, warmup_steps=4, peak_learning_rate=0.01)
    lr = est._learning_rates()
    assert lr[0] == 0.0 and lr[4] == pytest.approx(0.01)
    assert np.all(np.diff(lr[:5]) > 0) and np.all(np.diff(lr[4:]) < 0)
    # warmup_steps >= num_iters is clipped to num_iters - 1 (the search space allows it)
    short = DKL(num_iters=5, warmup_steps=150, peak_learning_rate=0.01)._learning_rates()
    assert short.shape == (5,) and short[-1] == pytest.approx(0.01)
    rng = make_rng("tests", "methods", "dkl-det")
    X, y = rng.standard_normal((25, 3)), rng.standard_normal(25)
    a = DKL(**DKL.smoke_params).fit(X, y).predict(X)
    b = DKL(**DKL.smoke_params).fit(X, y).predict(X)
    c = DKL(**DKL.smoke_params, random_state=1).fit(X, y).predict(X)
    np.testing.assert_array_equal(a.mean, b.mean)
    assert not np.allclose(a.mean, c.mean)


def test_dkl_bad_hyperparameter_is_one_line_error():
    X = np.zeros((5, 1))
    with pytest.raises(UdbenchError, match="parameter 'feature_map' must be one of"):
        DKL(feature_map="cnn").fit(X, np.arange(5.0))
    with pytest.raises(UdbenchError, match="parameter 'num_iters' must be an integer >= 1"):
        DKL(num_iters=0).fit(X, np.arange(5.0))


class _NLLRecorder:
    """A reporter that never stops the fit: step -> held-out Gaussian NLL of the model."""

    def __init__(self, X: np.ndarray, y: np.ndarray, steps: tuple[int, ...]):
        self.X, self.y, self.steps = X, y, steps
        self.asked: list[int] = []
        self.nll: dict[int, float] = {}

    def checkpoints(self, total: int) -> tuple[int, ...]:
        self.asked.append(total)
        return tuple(s for s in self.steps if s < total)

    def report(self, step: int, predict) -> None:
        from udbench.tuning.objective import gaussian_nll

        pred = predict(self.X)
        self.nll[step] = gaussian_nll(self.y, pred.mean, pred.total)


def test_dkl_reports_the_held_out_nll_of_the_model_at_each_checkpoint(monkeypatch):
    # identity feature map: the model after s steps is the exact GP posterior (written in
    # NumPy) at the softplus-constrained parameters of step s, captured from the optimiser
    import udbench.methods.dkl as dkl
    from udbench.methods._progress import reporting
    from udbench.tuning.objective import gaussian_nll

    rng = make_rng("tests", "methods", "dkl-report")
    X = rng.uniform(-1, 1, size=(30, 2))
    y = 5.0 + 2.0 * (np.sin(3 * X[:, 0]) + X[:, 1] + 0.2 * rng.standard_normal(30))
    Xh = rng.uniform(-1, 1, size=(10, 2))
    yh = 5.0 + 2.0 * (np.sin(3 * Xh[:, 0]) + Xh[:, 1] + 0.2 * rng.standard_normal(10))
    settings = {"feature_map": "identity", "num_iters": 40, "warmup_steps": 5}
    plain = DKL(**settings, peak_learning_rate=0.05).fit(X, y)

    seen: list[dict] = []
    step = dkl._compiled("step")

    def recording_step(*args):
        out = step(*args)
        seen.append({k: np.asarray(v) for k, v in out[0].items() if k != "net"})
        return out

    monkeypatch.setitem(dkl._COMPILED, "step", recording_step)
    rec = _NLLRecorder(Xh, yh, (10, 25, 40))  # 40 = num_iters: the end, not a checkpoint
    with reporting(rec):
        m = DKL(**settings, peak_learning_rate=0.05).fit(X, y)
    assert rec.asked == [40] and sorted(rec.nll) == [10, 25] and len(seen) == 40
    # a reporter that never stops leaves the fit bit for bit as without one
    np.testing.assert_array_equal(m.loss_history_, plain.loss_history_)
    np.testing.assert_array_equal(m.lengthscale_, plain.lengthscale_)
    assert (m.variance_, m.noise_variance_) == (plain.variance_, plain.noise_variance_)
    a, b = m.predict(Xh), plain.predict(Xh)
    for field in ("mean", "aleatoric", "epistemic"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))

    sp = lambda v: np.logaddexp(0.0, v)  # noqa: E731 - softplus
    Z, Zh = m._transform(X), m._transform(Xh)
    ys = (y - m.y_loc_) / m.y_scale_
    for s, got in rec.nll.items():
        p = seen[s - 1]  # the parameters after s steps
        ls, var = sp(p["ls"]), float(sp(p["var"]))
        s2 = float(m.min_noise_std + sp(p["noise"])) ** 2
        K = _matern52(Z, Z, ls, var) + (s2 + 1e-6) * np.eye(30)
        Ks = _matern52(Zh, Z, ls, var)
        mean = Ks @ np.linalg.solve(K, ys)
        eu = var - np.sum(Ks * np.linalg.solve(K, Ks.T).T, axis=1)
        want = gaussian_nll(yh, mean * m.y_scale_ + m.y_loc_, (eu + s2) * m.y_scale_**2)
        assert got == pytest.approx(want, rel=1e-7)
    assert rec.nll[10] != rec.nll[25]  # the models differ between checkpoints
