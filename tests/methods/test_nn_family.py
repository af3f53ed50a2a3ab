"""NN-Bag, NN-Drop, NN-EDL, NN-DEUP and NN-SWAG on the shared backbone (paper App. C.4).

Reference values (issue 15): NN-Bag with sample_fraction = 1 without replacement is NN-Ens
member for member; NN-Drop with dropout 0 has EU = 0 exactly; the EDL loss is a Student-t
negative log density plus the regulariser; DEUP's out-of-fold errors never use a model that
saw the point; SWAG's moments are the NumPy moments of the collected iterates and EU -> 0 as
swa_lr -> 0. Then each method on noise growing in x (AU tracks it, EU larger outside the
training range) and bad input.
"""

from __future__ import annotations

from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _ml_toy import heteroscedastic, noise_var
from scipy.stats import spearmanr
from scipy.stats import t as student_t

from udbench._validation import UdbenchError
from udbench.methods.base import BaseMethod, standardise_targets
from udbench.methods.nn.backbone import BackboneConfig, features, head_outputs, init_backbone
from udbench.methods.nn.training import predict_members
from udbench.methods.nn_bag import NNBag
from udbench.methods.nn_deup import EU_FLOOR, NNDeup, deup_fold_rows
from udbench.methods.nn_drop import NNDropout
from udbench.methods.nn_edl import NNEvidential, edl_loss, nig_head
from udbench.methods.nn_ens import NNEnsemble
from udbench.methods.nn_swag import NNSwag

METHODS: list[type[BaseMethod]] = [NNBag, NNDropout, NNEvidential, NNDeup, NNSwag]


def _leaves_equal(a: Any, b: Any) -> bool:
    return all(
        np.asarray(u).tobytes() == np.asarray(v).tobytes()
        for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True)
    )


# -- NN-Bag ------------------------------------------------------------------------------


class _BagUnderEnsName(NNBag):
    """NN-Bag drawing its seeds from NN-Ens's streams (seeds derive from ``name``)."""

    name: ClassVar[str] = "nn-ens"


def test_bag_of_full_subsamples_without_replacement_is_nn_ens_member_for_member() -> None:
    X, y = heteroscedastic(n=60)
    small = {**NNEnsemble.smoke_params, "n_epochs": 5}
    ens = NNEnsemble(**small).fit(X, y)
    bag = _BagUnderEnsName(**small, sample_fraction=1.0, replace=False).fit(X, y)
    assert _leaves_equal(ens.params_, bag.params_)
    Xq = np.linspace(-0.5, 1.5, 9)[:, None]
    a, b = ens.predict(Xq), bag.predict(Xq)
    assert a.epistemic.tobytes() == b.epistemic.tobytes()
    assert a.mean.tobytes() == b.mean.tobytes()
    # a real bag (with replacement) differs
    other = _BagUnderEnsName(**small, sample_fraction=1.0, replace=True).fit(X, y)
    assert not np.allclose(other.predict(Xq).mean, a.mean)


@pytest.mark.parametrize("replace", [True, False])
def test_bag_members_get_fixed_subsamples_of_the_declared_size(replace: bool) -> None:
    bag = NNBag(n_members=4, sample_fraction=0.6, replace=replace)
    rows = bag._member_rows(50, np.random.default_rng(0))
    assert rows.shape == (4, 30)
    repeats = [np.unique(r).size < r.size for r in rows]
    assert any(repeats) if replace else not any(repeats)
    assert len({r.tobytes() for r in rows}) == 4  # every member its own subsample


# -- NN-Drop -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dropout_zero_gives_zero_epistemic_exactly(dtype: str) -> None:
    X, y = heteroscedastic(n=60)
    m = NNDropout(**{**NNDropout.smoke_params, "n_epochs": 5}, dropout=0.0, dtype=dtype)
    pred = m.fit(X, y).predict(np.linspace(-1, 2, 13)[:, None])
    assert np.all(pred.epistemic == 0.0)
    assert np.all(pred.aleatoric > 0.0)


def test_dropout_passes_are_members_and_independent_of_the_batch() -> None:
    X, y = heteroscedastic(n=60)
    m = NNDropout(**{**NNDropout.smoke_params, "n_epochs": 5, "n_members": 40}).fit(X, y)
    Xq = np.linspace(-0.5, 1.5, 11)[:, None]
    means, variances = m._predict_members(Xq)
    assert means.shape == (40, 11)
    assert np.unique(means[:, 0]).size > 30  # distinct thinned networks
    pred = m.predict(Xq)
    s2 = m.y_scale_**2
    np.testing.assert_allclose(pred.epistemic, s2 * means.var(0), rtol=1e-10)
    np.testing.assert_allclose(pred.aleatoric, s2 * variances.mean(0), rtol=1e-10)
    part = m.predict(Xq[3:5])  # the same pass masks whatever the batch
    np.testing.assert_allclose(part.mean, pred.mean[3:5], rtol=1e-5)
    np.testing.assert_allclose(part.epistemic, pred.epistemic[3:5], rtol=1e-4)


# -- NN-EDL ------------------------------------------------------------------------------


def test_edl_loss_is_student_t_nll_plus_regulariser_by_hand() -> None:
    cfg = BackboneConfig(in_dim=2, hidden_dim=8, n_blocks=1, n_outputs=4, eps=1e-6)
    rng = np.random.default_rng(0)
    with jax.enable_x64(True):
        params = init_backbone(jax.random.key(0), cfg, jnp.float64)
        params["head"]["b"] = jnp.asarray(rng.normal(size=4))
        xb = jnp.asarray(rng.normal(size=(9, 2)))
        yb = jnp.asarray(rng.normal(size=9))
        mask = jnp.asarray([1.0] * 7 + [0.0] * 2)
        lam = jnp.asarray(0.05)
        loss, state = edl_loss(params, lam, xb, yb, mask, jax.random.key(1), cfg)
        raw = np.asarray(head_outputs(params, features(params, xb, cfg)))
    sp = np.logaddexp(0.0, raw)  # softplus
    mu, v, a, b = raw[:, 0], sp[:, 1] + 1e-6, 1.0 + sp[:, 2] + 1e-6, sp[:, 3] + 1e-6
    y = np.asarray(yb)
    nll = -student_t.logpdf(y, df=2 * a, loc=mu, scale=np.sqrt(b * (1 + v) / (v * a)))
    per = nll + 0.05 * np.abs(y - mu) * (2 * v + a)
    assert float(loss) == pytest.approx(per[:7].mean(), rel=1e-10)
    assert float(state) == 0.05  # the regulariser weight is carried unchanged
    with jax.enable_x64(True):
        m_, v_, a_, b_ = (np.asarray(z) for z in nig_head(jnp.asarray(raw), 1e-6))
    np.testing.assert_allclose([m_, v_, a_, b_], [mu, v, a, b], rtol=1e-12)


def test_edl_outputs_are_the_nig_moments_in_target_units() -> None:
    X, y = heteroscedastic(n=60)
    m = NNEvidential(**{**NNEvidential.smoke_params, "n_epochs": 5}).fit(X, 3.0 * y + 1.0)
    Xq = np.linspace(-0.5, 1.5, 7)[:, None]
    nig, pred = m.predict_nig(Xq), m.predict(Xq)
    s2 = m.y_scale_**2
    au = nig["beta"] / (nig["alpha"] - 1.0)
    np.testing.assert_allclose(pred.aleatoric, s2 * au, rtol=1e-12)
    np.testing.assert_allclose(pred.epistemic, s2 * au / nig["v"], rtol=1e-12)
    np.testing.assert_allclose(pred.mean, m.y_loc_ + m.y_scale_ * nig["mu"], rtol=1e-12)
    assert np.all(nig["alpha"] > 1.0) and np.all(nig["v"] > 0) and np.all(nig["beta"] > 0)


# -- NN-DEUP -----------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "k"), [(11, 3), (20, 5), (3, 5)])
def test_deup_fold_models_never_hold_a_row_of_their_fold(n: int, k: int) -> None:
    fold, rows, mask = deup_fold_rows(n, k, np.random.default_rng(1))
    counts = np.bincount(fold, minlength=k)
    assert counts.max() - counts.min() <= 1 and counts.sum() == n
    for j in range(k):
        held_out = np.flatnonzero(fold == j)
        assert not np.isin(rows[j], held_out).any()  # real entries and padding
        assert mask[j].sum() == n - held_out.size
        assert set(rows[j][mask[j] == 1]) == set(range(n)) - set(held_out)
    np.testing.assert_array_equal(rows[k], np.arange(n))
    assert np.all(mask[k] == 1)


def test_deup_out_of_fold_errors_come_from_models_blind_to_the_point() -> None:
    """Changing the targets of fold 0 leaves fold model 0 bit-identical (it never saw them)
    while the other models change; and the fitted OOF error of each row is the squared
    error of its own fold's model."""
    X, y = heteroscedastic(n=23)
    m = NNDeup(**{**NNDeup.smoke_params, "n_epochs": 4})
    model, train = m._configs(1)
    Xs = (X - X.mean(0)) / X.std(0)
    fold, a, _ = m._train_main(Xs, y, model, train)
    y2 = y.copy()
    y2[fold == 0] += 5.0
    fold2, b, _ = m._train_main(Xs, y2, model, train)
    np.testing.assert_array_equal(fold, fold2)
    member = [jax.tree_util.tree_map(lambda t, i=i: t[i], p) for i in range(4) for p in (a, b)]
    assert _leaves_equal(member[0], member[1])  # fold model 0
    for i in (1, 2, 3):  # fold models 1, 2 and the final model saw fold 0
        assert not _leaves_equal(member[2 * i], member[2 * i + 1])
    fitted = m.fit(X, y)
    ys = standardise_targets(y)[2]
    means, _ = predict_members(fitted.params_, (X - fitted.x_loc_) / fitted.x_scale_, model)
    own = means[fitted.fold_, np.arange(y.size)]
    np.testing.assert_allclose(fitted.oof_errors_, (ys - own) ** 2, rtol=1e-12)


def test_deup_outputs_constant_au_and_excess_error_eu() -> None:
    X, y = heteroscedastic(n=60)
    m = NNDeup(**{**NNDeup.smoke_params, "n_epochs": 5}).fit(X, 2.0 * y)
    Xq = np.linspace(-0.5, 1.5, 9)[:, None]
    pred = m.predict(Xq)
    s2 = m.y_scale_**2
    np.testing.assert_allclose(pred.aleatoric, s2 * m.oof_errors_.mean(), rtol=1e-12)
    err = m.predict_error(Xq)
    expected = np.maximum(err - m.aleatoric_, 0.0) + EU_FLOOR
    np.testing.assert_allclose(pred.epistemic, s2 * expected, rtol=1e-12)
    final, _ = m._predict_members(Xq)
    np.testing.assert_allclose(pred.mean, m.y_loc_ + m.y_scale_ * final[-1], rtol=1e-12)
    assert m.history_.shape == (4, 5)


# -- NN-SWAG -----------------------------------------------------------------------------


def test_swag_moments_are_numpy_moments_of_the_collected_iterates() -> None:
    X, y = heteroscedastic(n=60)
    m = NNSwag(**{**NNSwag.smoke_params, "n_epochs": 5, "swa_epochs": 6, "swa_lr": 1e-2})
    m.fit(X, y)
    with m._precision():
        Xs = (X - m.x_loc_) / m.x_scale_
        iterates, _ = m._swa_iterates(
            m.map_params_, Xs, standardise_targets(y)[2], m.model_config_, m.train_config_
        )
    its = [np.asarray(a, np.float64) for a in jax.tree_util.tree_leaves(iterates)]
    means = jax.tree_util.tree_leaves(m.swag_mean_)
    variances = jax.tree_util.tree_leaves(m.swag_var_)
    assert its[0].shape[0] == 6
    for it, mu, var in zip(its, means, variances, strict=True):
        np.testing.assert_allclose(mu, it.mean(0), rtol=1e-12, atol=1e-15)
        # E[θ²] − E[θ]² against NumPy's two-pass variance (cancellation ~1e-16·θ²)
        np.testing.assert_allclose(var, it.var(0), rtol=0, atol=1e-12 * (it**2).max() + 1e-30)
    assert max(float(v.max()) for v in variances) > 0.0
    # the members are draws around the SWAG mean: M samples per parameter
    assert jax.tree_util.tree_leaves(m.params_)[0].shape[0] == m.n_members


def test_swag_epistemic_vanishes_as_swa_lr_goes_to_zero() -> None:
    X, y = heteroscedastic(n=60)
    base = {**NNSwag.smoke_params, "n_epochs": 5}
    Xq = np.linspace(-0.5, 1.5, 9)[:, None]
    ref = NNSwag(**base, swa_lr=1e-2).fit(X, y).predict(Xq).epistemic
    small = NNSwag(**base, swa_lr=1e-5).fit(X, y).predict(Xq).epistemic
    tiny = NNSwag(**base, swa_lr=1e-9).fit(X, y).predict(Xq).epistemic
    assert np.median(ref) > 0.0
    assert np.median(small) < 1e-3 * np.median(ref)
    assert tiny.max() <= 1e-8 * np.median(ref)


# -- every method on noise growing in x ----------------------------------------------------


@pytest.fixture(scope="module", params=METHODS, ids=lambda c: c.name)
def fitted(request: pytest.FixtureRequest) -> BaseMethod:
    cls = request.param
    X, y = heteroscedastic(n=300)
    return cls(**{**cls.smoke_params, "n_epochs": 60}, random_state=0).fit(X, y)


def test_aleatoric_tracks_the_noise_unless_constant_by_design(fitted: BaseMethod) -> None:
    x = np.linspace(0.0, 1.0, 101)
    au = fitted.predict(x[:, None]).aleatoric
    if fitted.constant_aleatoric:  # NN-DEUP: the held-out residual variance
        assert np.all(au == au[0]) and 0.3 < au[0] / noise_var(x).mean() < 3.0
        return
    rho = spearmanr(au, noise_var(x)).statistic
    assert rho > 0.5, f"{fitted.name}: Spearman rho(AU, sigma^2) = {rho:.3f} (random_state=0)"


def test_epistemic_larger_beyond_the_noisy_end_of_the_training_range(
    fitted: BaseMethod,
) -> None:
    inside = np.median(fitted.predict(np.linspace(0.1, 0.9, 41)[:, None]).epistemic)
    outside = fitted.predict(np.array([[1.5], [2.0]])).epistemic
    assert outside.min() > 2.0 * inside, (fitted.name, outside, inside)


def test_epistemic_larger_beyond_the_quiet_end_of_the_training_range(
    fitted: BaseMethod, request: pytest.FixtureRequest
) -> None:
    if fitted.name in ("nn-edl", "nn-deup"):
        # NN-EDL: EU = AU/v scales with the (small) noise there; NN-DEUP: EU = ê − σ̂²
        # with σ̂² the average noise, so where the noise is below average EU is the floor.
        # Properties of the methods (docs/methods.md); strict: a change must be noticed.
        request.applymarker(pytest.mark.xfail(strict=True, reason="EU follows the noise"))
    inside = np.median(fitted.predict(np.linspace(0.1, 0.9, 41)[:, None]).epistemic)
    outside = fitted.predict(np.array([[-1.0], [-0.5]])).epistemic
    assert outside.min() > 2.0 * inside, (fitted.name, outside, inside)


# -- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "param", "value"),
    [
        (NNBag, "sample_fraction", 1.5),
        (NNBag, "sample_fraction", 0.0),
        (NNBag, "replace", "yes"),
        (NNDropout, "dropout", 1.0),
        (NNDropout, "n_members", 0),
        (NNEvidential, "reg_weight", -1.0),
        (NNDeup, "n_folds", 1),
        (NNSwag, "swa_epochs", 1),
        (NNSwag, "swa_lr", 0.0),
        (NNSwag, "n_members", 2.5),
    ],
)
def test_bad_hyperparameter_is_one_clear_error(cls: type, param: str, value: object) -> None:
    X, y = heteroscedastic(n=20)
    with pytest.raises(UdbenchError, match=rf"^{cls.__name__}: parameter '{param}' must .*got"):
        cls(**{param: value}).fit(X, y)


def test_unknown_hyperparameter_names_the_valid_ones() -> None:
    from udbench.methods import make_method

    with pytest.raises(UdbenchError, match=r"'n_members'.*hyperparameter of 'nn-edl'"):
        make_method("nn-edl:n_members=3")
