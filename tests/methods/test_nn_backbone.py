"""The shared neural backbone and its vectorised training loop (paper App. C.4)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from udbench._validation import UdbenchError
from udbench.methods.nn import (
    BackboneConfig,
    TrainConfig,
    apply_gaussian,
    features,
    gaussian_nll,
    init_backbone,
    init_members,
    make_optimizer,
    train_members,
    train_single,
)


def _toy(n: int = 37, d: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0]) + 0.3 * rng.normal(size=n)
    return X, y


def test_shapes_and_initial_unit_variance() -> None:
    cfg = BackboneConfig(in_dim=3, hidden_dim=8, n_blocks=2)
    params = init_backbone(jax.random.key(0), cfg)
    assert params["input"]["w"].shape == (3, 8)
    assert len(params["blocks"]) == 2 and params["blocks"][1]["w2"].shape == (8, 8)
    assert params["head"]["w"].shape == (8, 2)
    X, _ = _toy()
    assert features(params, jnp.asarray(X, jnp.float32), cfg).shape == (37, 8)
    # with a zero head weight the predictive SD is exactly softplus(b) + eps = 1
    params["head"]["w"] = jnp.zeros_like(params["head"]["w"])
    mean, var = apply_gaussian(params, jnp.asarray(X, jnp.float32), cfg)
    np.testing.assert_allclose(np.asarray(var), 1.0, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(mean), 0.0, atol=0)


def test_gaussian_nll_matches_scipy_and_mask() -> None:
    from scipy.stats import norm

    y = np.array([0.3, -1.2, 2.0, 0.0])
    m = np.array([0.0, -1.0, 1.5, 0.2])
    v = np.array([0.5, 2.0, 0.1, 1.0])
    ref = -np.mean(norm.logpdf(y, m, np.sqrt(v)))
    with jax.enable_x64(True):
        got = float(gaussian_nll(jnp.asarray(m), jnp.asarray(v), jnp.asarray(y)))
        mask = jnp.asarray([1.0, 1.0, 0.0, 0.0])
        got_masked = float(gaussian_nll(jnp.asarray(m), jnp.asarray(v), jnp.asarray(y), mask))
    assert got == pytest.approx(ref, rel=1e-12)
    assert got_masked == pytest.approx(-np.mean(norm.logpdf(y[:2], m[:2], np.sqrt(v[:2]))))


def test_dropout_only_with_key_and_at_declared_positions() -> None:
    cfg = BackboneConfig(in_dim=3, hidden_dim=16, n_blocks=1, dropout=0.5)
    params = init_backbone(jax.random.key(1), cfg)
    x = jnp.asarray(_toy()[0], jnp.float32)
    a = features(params, x, cfg)
    b = features(params, x, cfg)
    c = features(params, x, cfg, dropout_key=jax.random.key(2))
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert not np.allclose(np.asarray(a), np.asarray(c))


def test_weight_transform_hook_sees_every_backbone_weight() -> None:
    cfg = BackboneConfig(in_dim=3, hidden_dim=4, n_blocks=2)
    params = init_backbone(jax.random.key(0), cfg)
    seen: list[str] = []

    def record(path: str, w: jax.Array) -> jax.Array:
        seen.append(path)
        return 0.0 * w

    h = features(params, jnp.ones((2, 3)), cfg, weight_transform=record)
    assert seen == ["input", "blocks/0/w1", "blocks/0/w2", "blocks/1/w1", "blocks/1/w2"]
    np.testing.assert_array_equal(np.asarray(h), 0.0)  # all weights zeroed, biases are 0


def test_optimizer_clips_to_global_norm_one() -> None:
    cfg = TrainConfig(n_epochs=1, batch_size=4, lr=1.0, momentum=0.0, weight_decay=0.0)
    opt = optax.chain(optax.clip_by_global_norm(cfg.clip_norm))
    g = {"a": jnp.asarray([3.0, 4.0])}
    clipped, _ = opt.update(g, opt.init(g))
    np.testing.assert_allclose(np.asarray(clipped["a"]), [0.6, 0.8], rtol=1e-6)
    assert len(make_optimizer(cfg).init(g)) == 2  # clip, then NAdamW


def test_vectorised_members_equal_members_trained_alone() -> None:
    """Each vmapped member gets exactly the updates it would get alone (tol 1e-6, float64).

    n = 37 with batch 8 exercises the padded, masked last batch; a large learning rate and
    clipping make the per-member clipping matter (a joint clip would change the result);
    dropout checks that each member also gets its own dropout masks.
    """
    X, y = _toy()
    cfg = BackboneConfig(in_dim=3, hidden_dim=8, n_blocks=2, dropout=0.2)
    tcfg = TrainConfig(n_epochs=5, batch_size=8, lr=0.05, momentum=0.9, weight_decay=1e-3)
    M = 4
    with jax.enable_x64(True):
        params0 = init_members(jax.random.key(3), cfg, M, jnp.float64)
        keys = jax.random.split(jax.random.key(4), M)
        rows = np.stack([np.arange(37)] * 2 + [np.arange(37)[::-1]] * 2)
        vec, _, hist = train_members(params0, X, y, rows, keys, cfg, tcfg)
        assert hist.shape == (M, 5)
        for m in (0, 3):
            alone0 = jax.tree_util.tree_map(lambda a, m=m: a[m], params0)
            solo, _, solo_hist = train_single(alone0, X, y, rows[m], keys[m], cfg, tcfg)
            for a, b in zip(
                jax.tree_util.tree_leaves(solo), jax.tree_util.tree_leaves(vec), strict=True
            ):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b[m]), rtol=0, atol=1e-6)
            np.testing.assert_allclose(np.asarray(solo_hist), np.asarray(hist[m]), atol=1e-6)
        # members really differ (different init and batch order)
        assert not np.allclose(np.asarray(vec["head"]["w"][0]), np.asarray(vec["head"]["w"][1]))


def test_vectorised_equals_alone_in_float32_over_one_epoch() -> None:
    """float32: equal to 1e-5 after one epoch (over many epochs, float32 rounding differences
    between batched and unbatched matrix products grow; the float64 test above is exact)."""
    X, y = _toy()
    cfg = BackboneConfig(in_dim=3, hidden_dim=8, n_blocks=2)
    tcfg = TrainConfig(n_epochs=1, batch_size=8, lr=0.05, momentum=0.9, weight_decay=1e-3)
    params0 = init_members(jax.random.key(3), cfg, 3)
    keys = jax.random.split(jax.random.key(4), 3)
    rows = np.tile(np.arange(37), (3, 1))
    vec, _, _ = train_members(params0, X, y, rows, keys, cfg, tcfg)
    solo, _, _ = train_single(
        jax.tree_util.tree_map(lambda a: a[2], params0), X, y, rows[2], keys[2], cfg, tcfg
    )
    for a, b in zip(jax.tree_util.tree_leaves(solo), jax.tree_util.tree_leaves(vec), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b[2]), rtol=0, atol=1e-5)


def test_config_errors_name_parameter() -> None:
    with pytest.raises(UdbenchError, match=r"'hidden_dim'.*got 0"):
        BackboneConfig(in_dim=2, hidden_dim=0)
    with pytest.raises(UdbenchError, match="'activation'"):
        BackboneConfig(in_dim=2, activation="sigmoidal")
    with pytest.raises(UdbenchError, match="'lr'"):
        TrainConfig(n_epochs=1, batch_size=1, lr=-1.0, momentum=0.9, weight_decay=0.0)
    with pytest.raises(UdbenchError, match="'rows'"):
        cfg = BackboneConfig(in_dim=3, hidden_dim=4, n_blocks=0)
        tcfg = TrainConfig(n_epochs=1, batch_size=4, lr=1e-3, momentum=0.9, weight_decay=0.0)
        train_members(
            init_members(jax.random.key(0), cfg, 2),
            *_toy(),
            np.zeros((3, 5), int),
            jax.random.split(jax.random.key(0), 2),
            cfg,
            tcfg,
        )
