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


# -- additive training options (issue 15): off by default, the original loop bit for bit --


def _members(M: int = 3, dropout: float = 0.0):
    cfg = BackboneConfig(in_dim=3, hidden_dim=8, n_blocks=1, dropout=dropout)
    tcfg = TrainConfig(n_epochs=3, batch_size=8, lr=0.05, momentum=0.9, weight_decay=1e-3)
    params0 = init_members(jax.random.key(3), cfg, M)
    keys = jax.random.split(jax.random.key(4), M)
    return cfg, tcfg, params0, keys


def _leaves_equal(a, b) -> bool:
    return all(
        np.asarray(u).tobytes() == np.asarray(v).tobytes()
        for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True)
    )


def test_row_mask_of_ones_reproduces_the_default_loop() -> None:
    """The padded path with every entry real takes the same shuffle, batches and updates as
    the default path (dropout included): equal to 1e-12 in float64 (the two paths compile
    to differently fused XLA programs, so not bitwise; the default path itself is the
    original code, unchanged)."""
    X, y = _toy()
    with jax.enable_x64(True):
        cfg, tcfg, _, keys = _members(dropout=0.2)
        params0 = init_members(jax.random.key(3), cfg, 3, jnp.float64)
        rows = np.tile(np.arange(37), (3, 1))
        ref, _, ref_hist = train_members(params0, X, y, rows, keys, cfg, tcfg)
        got, _, hist = train_members(
            params0, X, y, rows, keys, cfg, tcfg, row_mask=np.ones((3, 37))
        )
        for a, b in zip(
            jax.tree_util.tree_leaves(ref), jax.tree_util.tree_leaves(got), strict=True
        ):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-12)
        np.testing.assert_allclose(np.asarray(ref_hist), np.asarray(hist), rtol=1e-12)


def test_padding_never_reaches_the_loss() -> None:
    """Which row a padded entry names, and that row's target, change nothing (bitwise);
    a member with fewer real rows still trains (its parameters move)."""
    X, y = _toy()
    cfg, tcfg, params0, keys = _members()
    real = np.arange(20)
    rows_a = np.stack([np.r_[real, np.full(17, 0)], np.arange(37), np.arange(37)])
    rows_b = np.stack([np.r_[real, np.arange(20, 37)], np.arange(37), np.arange(37)])
    mask = np.ones((3, 37))
    mask[0, 20:] = 0.0
    y_b = y.copy()
    y_b[20:] += 100.0  # rows 20.. are padding for member 0 only
    a, _, _ = train_members(params0, X, y, rows_a, keys, cfg, tcfg, row_mask=mask)
    b, _, _ = train_members(params0, X, y_b, rows_b, keys, cfg, tcfg, row_mask=mask)
    first = jax.tree_util.tree_map(lambda t: t[0], a)
    assert _leaves_equal(first, jax.tree_util.tree_map(lambda t: t[0], b))
    moved = jax.tree_util.tree_map(lambda t: t[0], params0)
    assert not _leaves_equal(first, moved)
    # member 1 sees rows 20.. in both runs with different targets: it differs
    assert not np.allclose(np.asarray(a["head"]["b"][1]), np.asarray(b["head"]["b"][1]))


def test_row_mask_errors_name_the_parameter() -> None:
    X, y = _toy()
    cfg, tcfg, params0, keys = _members()
    rows = np.tile(np.arange(37), (3, 1))
    for bad, rule in [
        (np.ones((3, 5)), "have shape"),
        (np.full((3, 37), 0.5), "hold only 0 and 1"),
        (np.r_[np.zeros((1, 37)), np.ones((2, 37))], "mark a real row for every member"),
    ]:
        with pytest.raises(UdbenchError, match=f"'row_mask' must {rule}"):
            train_members(params0, X, y, rows, keys, cfg, tcfg, row_mask=bad)


def test_iterates_are_the_epoch_ends_of_the_same_training() -> None:
    from udbench.methods.nn.training import train_members_with_iterates

    X, y = _toy()
    cfg, tcfg, params0, keys = _members()
    rows = np.tile(np.arange(37), (3, 1))
    ref, _, ref_hist = train_members(params0, X, y, rows, keys, cfg, tcfg)
    got, _, hist, its = train_members_with_iterates(params0, X, y, rows, keys, cfg, tcfg)
    assert _leaves_equal(ref, got)
    np.testing.assert_array_equal(np.asarray(ref_hist), np.asarray(hist))
    assert its["head"]["w"].shape == (3, tcfg.n_epochs, 8, 2)
    assert _leaves_equal(jax.tree_util.tree_map(lambda t: t[:, -1], its), ref)
    # the iterates move from epoch to epoch
    assert not _leaves_equal(jax.tree_util.tree_map(lambda t: t[:, 0], its), ref)


def test_shared_dropout_mask_makes_rows_independent_of_the_batch() -> None:
    cfg = BackboneConfig(in_dim=3, hidden_dim=16, n_blocks=2, dropout=0.3)
    params = init_backbone(jax.random.key(1), cfg)
    x = jnp.asarray(_toy()[0], jnp.float32)
    key = jax.random.key(7)
    full = features(params, x, cfg, dropout_key=key, dropout_per_row=False)
    part = features(params, x[:5], cfg, dropout_key=key, dropout_per_row=False)
    np.testing.assert_allclose(np.asarray(full[:5]), np.asarray(part), rtol=1e-5, atol=1e-6)
    # one mask per unit (no blocks: features = dropout of the input layer): each column is
    # either zero for every row or the undropped column / (1 - rate)
    cfg0 = BackboneConfig(in_dim=3, hidden_dim=16, n_blocks=0, dropout=0.5)
    p0 = init_backbone(jax.random.key(1), cfg0)
    h0 = np.asarray(jax.nn.relu(x @ p0["input"]["w"] + p0["input"]["b"]))
    shared = np.asarray(features(p0, x, cfg0, dropout_key=key, dropout_per_row=False))
    kept = np.all(np.isclose(shared, h0 / 0.5, rtol=1e-6), axis=0)
    dropped = np.all(shared == 0.0, axis=0)
    assert np.all(kept | dropped) and kept.any() and (dropped & h0.any(axis=0)).any()
    per_row = np.asarray(features(p0, x, cfg0, dropout_key=key))
    assert not np.all(np.all(per_row == 0.0, axis=0) | np.all(per_row == h0 / 0.5, axis=0))
