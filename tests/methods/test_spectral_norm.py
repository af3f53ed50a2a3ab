"""Spectral normalisation as a backbone option (paper C.4, D.4; udbench.methods.nn.spectral)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.base import clone

from udbench._validation import UdbenchError
from udbench.methods._variants import init_with_defaults
from udbench.methods.nn import (
    BackboneConfig,
    TrainConfig,
    init_members,
    train_members,
    train_single,
)
from udbench.methods.nn.spectral import normalise, power_iteration, sn_paths
from udbench.methods.nn_ens import NNEnsemble
from udbench.methods.nn_fsp import NNFSP, NNFSPSN
from udbench.methods.nn_lap import NNLaplace, NNLaplaceSN


def _toy(n: int = 60, d: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=n)


def _weight(params, loc) -> np.ndarray:
    node = params
    for part in loc:
        node = node[part]
    return np.asarray(node)


def _max_singular_values(params, member: int) -> list[float]:
    """Exact largest singular value (SVD) of every constrained layer of one member."""
    one = jax.tree_util.tree_map(lambda a: a[member], params)
    return [
        float(np.linalg.svd(_weight(one, loc), compute_uv=False)[0]) for _, loc in sn_paths(one)
    ]


# Outputs of the code before the option existed (main at 40578a8, CPU, this exact setup),
# as float.hex: NN-Ens, 2 members, hidden 8, 1 block, 3 epochs, batch 16.
_GOLDEN = {
    "float64": [
        ["-0x1.bca2953918610p-3", "0x1.4431a27c50538p-9", "-0x1.6ea10892fe396p-7"],
        ["0x1.b59d455a518e5p+1", "0x1.23f28987a2fe4p-1", "0x1.cacf103acad1dp-1"],
        ["0x1.d7a238438a203p+0", "0x1.0eee1fa7caf10p-14", "0x1.e20f62ad9f39cp-6"],
    ],
    "float32": [
        ["-0x1.a692c14085860p-7", "-0x1.04f40e37ebe49p-7", "0x1.14c0bee806bd4p+0"],
        ["0x1.b377939777130p-1", "0x1.43c1ee5ae353fp-1", "0x1.7158c9c81e13dp-1"],
        ["0x1.94c0592618dbdp-7", "0x1.21127ed8e1eb4p-10", "0x1.6fe158d25366fp+0"],
    ],
}


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="golden bits recorded on CPU")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_sn_off_is_bit_identical_to_the_code_without_the_option(dtype: str) -> None:
    rng = np.random.default_rng(12)
    X = rng.uniform(-1, 1, size=(40, 2))
    y = np.sin(3 * X[:, 0]) + 0.1 * rng.standard_normal(40)
    Xq = np.array([[-0.5, 0.2], [0.0, 0.0], [0.7, -0.9]])
    m = NNEnsemble(n_members=2, hidden_dim=8, n_blocks=1, n_epochs=3, batch_size=16, dtype=dtype)
    assert m.get_params()["spectral_norm"] is False  # the default
    p = m.fit(X, y).predict(Xq)
    got = [[float(v).hex() for v in a] for a in (p.mean, p.aleatoric, p.epistemic)]
    assert got == _GOLDEN[dtype]


@pytest.mark.parametrize("coeff", [0.5, 2.0])
def test_every_constrained_layer_within_bound_after_training(coeff: float) -> None:
    """Exact SVD of every dense backbone layer <= c·1.01 (issue 16), and the bound is active."""
    X, y = _toy()
    cfg = BackboneConfig(in_dim=3, hidden_dim=16, n_blocks=2, spectral_norm=True, sn_coeff=coeff)
    tcfg = TrainConfig(n_epochs=15, batch_size=16, lr=1e-2, momentum=0.9, weight_decay=1e-4)
    params0 = init_members(jax.random.key(0), cfg, 3)
    params, state, hist = train_members(
        params0,
        X,
        y,
        np.tile(np.arange(60), (3, 1)),
        jax.random.split(jax.random.key(1), 3),
        cfg,
        tcfg,
    )
    assert hist.shape == (3, 15) and state.shape == (3,)  # the caller's own state comes back
    for m in range(3):
        sv = _max_singular_values(params, m)
        assert len(sv) == 5 and max(sv) <= coeff * 1.01, sv
    if coeff == 0.5:  # the initial input layer (He scaling, 3 x 16) is far above 0.5
        assert max(_max_singular_values(params0, 0)) > 1.0
        assert min(_max_singular_values(params, 0)) > 0.45  # the constraint binds


def test_method_option_bounds_the_fitted_network() -> None:
    X, y = _toy()
    m = NNEnsemble(
        n_members=2,
        hidden_dim=16,
        n_blocks=1,
        n_epochs=10,
        batch_size=16,
        spectral_norm=True,
        sn_coeff=0.7,
    ).fit(X, y)
    assert m.model_config_.spectral_norm and m.model_config_.sn_coeff == 0.7
    for member in range(2):
        assert max(_max_singular_values(m.params_, member)) <= 0.7 * 1.01
    assert np.all(np.isfinite(m.predict(X[:5]).mean))


def test_inactive_bound_trains_exactly_as_without_sn() -> None:
    """With c far above every σ̂ the factor min(1, c/σ̂) is 1: same training (float64)."""
    X, y = _toy()
    tcfg = TrainConfig(n_epochs=4, batch_size=16, lr=1e-2, momentum=0.9, weight_decay=1e-4)
    with jax.enable_x64(True):
        plain = BackboneConfig(in_dim=3, hidden_dim=8, n_blocks=2)
        sn = BackboneConfig(in_dim=3, hidden_dim=8, n_blocks=2, spectral_norm=True, sn_coeff=1e6)
        p0 = init_members(jax.random.key(0), plain, 2, jnp.float64)
        rows, keys = np.tile(np.arange(60), (2, 1)), jax.random.split(jax.random.key(1), 2)
        a, _, ha = train_members(p0, X, y, rows, keys, plain, tcfg)
        b, _, hb = train_members(p0, X, y, rows, keys, sn, tcfg)
    np.testing.assert_allclose(np.asarray(ha), np.asarray(hb), rtol=0, atol=1e-12)
    for la, lb in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(la), np.asarray(lb), rtol=0, atol=1e-12)


def test_power_iteration_converges_to_the_largest_singular_value() -> None:
    rng = np.random.default_rng(3)
    W = rng.normal(size=(20, 12))
    sigma_max = np.linalg.svd(W, compute_uv=False)[0]
    with jax.enable_x64(True):
        u0 = jnp.asarray(rng.normal(size=12))
        _, _, s1 = power_iteration(jnp.asarray(W), u0, 1)
        _, _, s200 = power_iteration(jnp.asarray(W), u0, 200)
    assert float(s1) <= sigma_max + 1e-12  # an under-estimate
    assert float(s200) == pytest.approx(sigma_max, rel=1e-8)


def test_normalise_rescales_only_backbone_weights_above_the_bound() -> None:
    cfg = BackboneConfig(in_dim=3, hidden_dim=6, n_blocks=1)
    with jax.enable_x64(True):
        params = init_members(jax.random.key(2), cfg, 1, jnp.float64)
        one = jax.tree_util.tree_map(lambda a: a[0], params)
        state = {path: jnp.ones(6) / np.sqrt(6) for path, _ in sn_paths(one)}
        out, _, sig = normalise(one, state, 0.5, n_iter=300)
    for path, loc in sn_paths(one):
        w, got = _weight(one, loc), _weight(out, loc)
        s = np.linalg.svd(w, compute_uv=False)[0]
        assert float(sig[path]) == pytest.approx(s, rel=1e-8)
        np.testing.assert_allclose(got, w * min(1.0, 0.5 / s), rtol=1e-8)
    np.testing.assert_array_equal(np.asarray(out["head"]["w"]), np.asarray(one["head"]["w"]))


def test_bad_sn_settings_name_the_parameter() -> None:
    with pytest.raises(UdbenchError, match=r"'sn_coeff'.*got 0"):
        BackboneConfig(in_dim=2, spectral_norm=True, sn_coeff=0.0)
    with pytest.raises(UdbenchError, match="'spectral_norm'"):
        BackboneConfig(in_dim=2, spectral_norm="yes")  # type: ignore[arg-type]
    X, y = _toy(n=20)
    with pytest.raises(UdbenchError, match=r"NNEnsemble: parameter 'sn_coeff' must .*got -1"):
        NNEnsemble(spectral_norm=True, sn_coeff=-1.0).fit(X, y)
    with pytest.raises(UdbenchError, match=r"NNEnsemble: parameter 'spectral_norm' must"):
        NNEnsemble(spectral_norm=1).fit(X, y)  # type: ignore[arg-type]


@pytest.mark.parametrize(("plain", "sn"), [(NNLaplace, NNLaplaceSN), (NNFSP, NNFSPSN)])
def test_sn_variants_are_the_plain_method_with_other_defaults(plain, sn) -> None:
    assert issubclass(sn, plain) and sn.name == plain.name + "-sn"
    assert sn().get_params() == {**plain().get_params(), "spectral_norm": True}
    assert sn(sn_coeff=2.0, lr=0.01).get_params()["sn_coeff"] == 2.0
    assert sn(spectral_norm=False).spectral_norm is False  # still a hyperparameter
    assert clone(sn(sn_coeff=0.7)).get_params() == sn(sn_coeff=0.7).get_params()
    extra = {k: v for k, v in sn.search_space.items() if k not in plain.search_space}
    assert extra == {
        "spectral_norm": {"type": "categorical", "choices": [True]},
        "sn_coeff": {"type": "float", "low": 0.5, "high": 3.0, "log": True},
    }


def test_init_with_defaults_rejects_unknown_keyword() -> None:
    with pytest.raises(TypeError, match="no parameters"):
        init_with_defaults(NNLaplace.__init__, not_a_param=1)


def test_single_member_routine_with_sn_equals_its_vectorised_member() -> None:
    X, y = _toy(n=37)
    cfg = BackboneConfig(in_dim=3, hidden_dim=8, n_blocks=1, spectral_norm=True, sn_coeff=0.6)
    tcfg = TrainConfig(n_epochs=3, batch_size=8, lr=0.05, momentum=0.9, weight_decay=1e-3)
    with jax.enable_x64(True):
        p0 = init_members(jax.random.key(3), cfg, 2, jnp.float64)
        keys = jax.random.split(jax.random.key(4), 2)
        rows = np.tile(np.arange(37), (2, 1))
        vec, _, _ = train_members(p0, X, y, rows, keys, cfg, tcfg)
        one = jax.tree_util.tree_map(lambda a: a[1], p0)
        solo, _, _ = train_single(one, X, y, rows[1], keys[1], cfg, tcfg)
    for a, b in zip(jax.tree_util.tree_leaves(solo), jax.tree_util.tree_leaves(vec), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b[1]), rtol=0, atol=1e-6)
    assert np.linalg.svd(np.asarray(solo["input"]["w"]), compute_uv=False)[0] <= 0.6 * (1 + 1e-9)


# -- the option on the other neural methods (nn-bag, nn-drop, nn-edl, nn-deup, nn-swag) --

#: Small settings per method (one network or a few members, a handful of epochs).
_SMALL = {
    "nn-bag": {"n_members": 3},
    "nn-drop": {"n_members": 8, "dropout": 0.2},
    "nn-edl": {},
    "nn-deup": {"n_folds": 3},
    "nn-swag": {"n_members": 5, "swa_epochs": 4},
}

# sha256 (first 16 hex) of mean, AU, EU (float64 bytes) from the code before these methods
# took the option (main at be9655f, CPU): hidden 8, 1 block, 4 epochs, batch 16, _SMALL.
_GOLDEN_HASH = {
    ("nn-bag", "float32"): "cbb8454cb49b0b6b",
    ("nn-bag", "float64"): "ee9c1b9de06f066b",
    ("nn-drop", "float32"): "2b0f6ab3ba23de6a",
    ("nn-drop", "float64"): "d303ee95f25abb2e",
    ("nn-edl", "float32"): "375c397d7c9dbbe7",
    ("nn-edl", "float64"): "8a7ba9463ea58d1e",
    ("nn-deup", "float32"): "7059ea9b3ed646a8",
    ("nn-deup", "float64"): "b6c95f8d6be5373a",
    ("nn-swag", "float32"): "e035fcb95713a3db",
    ("nn-swag", "float64"): "c90d4e6483c81e90",
}


def _all_max_singular_values(params) -> list[float]:
    """Exact largest singular value of every constrained layer of every member (float64 SVD)."""
    n = jax.tree_util.tree_leaves(params)[0].shape[0]
    as64 = jax.tree_util.tree_map(lambda a: np.asarray(a, np.float64), params)
    return [s for member in range(n) for s in _max_singular_values(as64, member)]


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="golden bits recorded on CPU")
@pytest.mark.parametrize("name", list(_SMALL))
def test_sn_off_leaves_the_other_neural_methods_bit_identical(name: str) -> None:
    import hashlib

    from udbench.methods.registry import get_method_class

    rng = np.random.default_rng(3)
    X = rng.normal(size=(70, 3))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=70)
    Xq = rng.normal(size=(9, 3))
    for dtype in ("float32", "float64"):
        m = get_method_class(name)(
            hidden_dim=8, n_blocks=1, n_epochs=4, batch_size=16, dtype=dtype, **_SMALL[name]
        )
        assert m.get_params()["spectral_norm"] is False  # the default
        p = m.fit(X, y).predict(Xq)
        data = b"".join(
            np.ascontiguousarray(a, dtype=np.float64).tobytes()
            for a in (p.mean, p.aleatoric, p.epistemic)
        )
        assert hashlib.sha256(data).hexdigest()[:16] == _GOLDEN_HASH[name, dtype], dtype


@pytest.mark.parametrize("name", list(_SMALL))
@pytest.mark.parametrize("coeff", [0.5, pytest.param(2.0, marks=pytest.mark.slow)])
def test_every_neural_method_bounds_its_fitted_networks(name: str, coeff: float) -> None:
    """‖W‖₂ ≤ c (exact SVD, 1e-5 relative) for every dense layer of every network the method
    fitted: members, the MC-dropout network, DEUP's K + 1 models and error predictor,
    SWAG's sampled weight vectors; the bound is active (some layer at c)."""
    from udbench.methods.registry import get_method_class

    X, y = _toy()
    m = get_method_class(name)(
        hidden_dim=16,
        n_blocks=2,
        n_epochs=8,
        batch_size=16,
        lr=1e-2,
        spectral_norm=True,
        sn_coeff=coeff,
        **_SMALL[name],
    ).fit(X, y)
    assert m.model_config_.spectral_norm and m.model_config_.sn_coeff == coeff
    sv = _all_max_singular_values(m.params_)
    if name == "nn-deup":
        assert m.error_config_.spectral_norm and m.error_config_.sn_coeff == coeff
        sv += _all_max_singular_values(m.error_params_)
    if name == "nn-swag":  # the SWAG mean of bounded iterates is bounded (convexity)
        mean = jax.tree_util.tree_map(lambda a: a[None], m.swag_mean_)
        assert max(_all_max_singular_values(mean)) <= coeff * (1 + 1e-5)
    assert max(sv) <= coeff * (1 + 1e-5), sv
    assert max(sv) >= coeff * (1 - 1e-3)  # the input layer starts above 2 (He, 3 x 16)
    p = m.predict(X[:7])
    assert all(np.all(np.isfinite(a)) for a in (p.mean, p.aleatoric, p.epistemic))


def test_padding_never_reaches_the_loss_under_sn() -> None:
    """SN with a row mask (NN-DEUP's folds): which row a padded entry names, and its target,
    change nothing (bitwise), and a mask of ones trains as the unmasked SN loop (1e-12)."""
    X, y = _toy(n=37)
    cfg = BackboneConfig(in_dim=3, hidden_dim=8, n_blocks=1, spectral_norm=True, sn_coeff=0.6)
    tcfg = TrainConfig(n_epochs=3, batch_size=8, lr=0.05, momentum=0.9, weight_decay=1e-3)
    with jax.enable_x64(True):
        p0 = init_members(jax.random.key(3), cfg, 3, jnp.float64)
        keys = jax.random.split(jax.random.key(4), 3)
        full = np.tile(np.arange(37), (3, 1))
        ref, _, ref_hist = train_members(p0, X, y, full, keys, cfg, tcfg)
        ones, _, ones_hist = train_members(
            p0, X, y, full, keys, cfg, tcfg, row_mask=np.ones((3, 37))
        )
        real = np.arange(20)
        rows_a = np.stack([np.r_[real, np.full(17, 0)], np.arange(37), np.arange(37)])
        rows_b = np.stack([np.r_[real, np.arange(20, 37)], np.arange(37), np.arange(37)])
        mask = np.ones((3, 37))
        mask[0, 20:] = 0.0
        y_b = y.copy()
        y_b[20:] += 100.0
        a, _, _ = train_members(p0, X, y, rows_a, keys, cfg, tcfg, row_mask=mask)
        b, _, _ = train_members(p0, X, y_b, rows_b, keys, cfg, tcfg, row_mask=mask)
    for u, v in zip(jax.tree_util.tree_leaves(ref), jax.tree_util.tree_leaves(ones), strict=True):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(ref_hist), np.asarray(ones_hist), rtol=1e-12)
    for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True):
        assert np.asarray(u)[0].tobytes() == np.asarray(v)[0].tobytes()
    assert max(_all_max_singular_values(a)) <= 0.6 * (1 + 1e-9)


def test_iterates_under_sn_are_bounded_and_end_at_the_returned_parameters() -> None:
    from udbench.methods.nn.training import train_members_with_iterates

    X, y = _toy(n=37)
    cfg = BackboneConfig(in_dim=3, hidden_dim=8, n_blocks=1, spectral_norm=True, sn_coeff=0.6)
    tcfg = TrainConfig(n_epochs=4, batch_size=8, lr=0.05, momentum=0.9, weight_decay=1e-3)
    with jax.enable_x64(True):
        p0 = init_members(jax.random.key(3), cfg, 2, jnp.float64)
        keys = jax.random.split(jax.random.key(4), 2)
        rows = np.tile(np.arange(37), (2, 1))
        ref, _, ref_hist = train_members(p0, X, y, rows, keys, cfg, tcfg)
        got, _, hist, its = train_members_with_iterates(p0, X, y, rows, keys, cfg, tcfg)
    np.testing.assert_allclose(np.asarray(ref_hist), np.asarray(hist), rtol=1e-12)
    for r, g, it in zip(
        jax.tree_util.tree_leaves(ref),
        jax.tree_util.tree_leaves(got),
        jax.tree_util.tree_leaves(its),
        strict=True,
    ):
        assert it.shape[:2] == (2, 4)
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=0, atol=1e-12)
        np.testing.assert_allclose(np.asarray(it[:, -1]), np.asarray(g), rtol=0, atol=1e-12)
    for epoch in range(4):  # every collected iterate is a normalised network
        one = jax.tree_util.tree_map(lambda a, e=epoch: a[:, e], its)
        assert max(_all_max_singular_values(one)) <= 0.6 * (1 + 1e-9)
    first = jax.tree_util.tree_map(lambda a: a[:, 0], its)
    assert max(_all_max_singular_values(first)) >= 0.6 * (1 - 1e-6)  # the cap is active


def test_cap_exact_projects_only_the_backbone_weights_above_the_bound() -> None:
    from udbench.methods.nn.spectral import cap_exact

    cfg = BackboneConfig(in_dim=3, hidden_dim=8, n_blocks=1)
    with jax.enable_x64(True):
        p = jax.tree_util.tree_map(lambda a: a[0], init_members(jax.random.key(0), cfg, 1))
        p = jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float64), p)
        p["blocks"][0]["w1"] = p["blocks"][0]["w1"] * 1e-3  # far below the bound
        p["head"]["w"] = p["head"]["w"] * 100.0  # the head is never constrained
        out = cap_exact(p, 0.5)
    s_in = np.linalg.svd(np.asarray(p["input"]["w"]), compute_uv=False)
    got = np.linalg.svd(np.asarray(out["input"]["w"]), compute_uv=False)
    np.testing.assert_allclose(got, s_in * 0.5 / s_in[0], rtol=1e-12)  # rescaled to c
    np.testing.assert_array_equal(np.asarray(out["blocks"][0]["w1"]), p["blocks"][0]["w1"])
    np.testing.assert_array_equal(np.asarray(out["head"]["w"]), p["head"]["w"])


@pytest.mark.slow
@pytest.mark.parametrize("name", list(_SMALL))
def test_conformance_battery_passes_with_sn_on(name: str) -> None:
    from udbench.methods import check_method

    report = check_method(name, params={"spectral_norm": True, "sn_coeff": 0.8})
    assert not report.failed(), [(c.name, c.message) for c in report.failed()]
    assert sum(r.status == "passed" for r in report.results) >= 10
