"""Early stopping of the shared neural trainer on held-out rows (issue 61, item 2).

``TrainConfig(patience=p)`` with :func:`train_members_early_stopping`: each member keeps its
best held-out epoch and stops ``p`` epochs after it. Off by default (``patience=None``: the
fixed-epoch loop, unchanged).
"""

from __future__ import annotations

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from udbench._validation import UdbenchError
from udbench.methods.nn import BackboneConfig, TrainConfig, init_members, train_members
from udbench.methods.nn.reporting import train_members_reporting
from udbench.methods.nn.training import (
    gaussian_loss,
    train_members_early_stopping,
    train_members_with_iterates,
    train_single,
)

N_TRAIN, N_VAL, MAX_EPOCHS, PATIENCE, M = 30, 120, 200, 15, 2


def _toy() -> tuple[np.ndarray, np.ndarray]:
    """30 training and 120 held-out points of y = sin 3x + 0.3 ε: a 2-block, 16-unit network
    at learning rate 1e-2 without weight decay overfits the 30 points within ~50 epochs."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1.0, 1.0, size=(N_TRAIN + N_VAL, 1))
    y = np.sin(3.0 * X[:, 0]) + 0.3 * rng.normal(size=N_TRAIN + N_VAL)
    return X, y


def _setup(dropout: float = 0.0, spectral_norm: bool = False):
    cfg = BackboneConfig(
        in_dim=1,
        hidden_dim=16,
        n_blocks=2,
        dropout=dropout,
        spectral_norm=spectral_norm,
        sn_coeff=1.0,
    )
    train = TrainConfig(n_epochs=MAX_EPOCHS, batch_size=10, lr=1e-2, momentum=0.9, weight_decay=0.0)
    params0 = init_members(jax.random.key(0), cfg, M, jnp.float64)
    keys = jax.random.split(jax.random.key(1), M)
    rows = np.tile(np.arange(N_TRAIN), (M, 1))
    val_rows = np.tile(np.arange(N_TRAIN, N_TRAIN + N_VAL), (M, 1))
    return cfg, train, params0, keys, rows, val_rows


def _member(tree, m: int):
    return jax.tree_util.tree_map(lambda t: t[m], tree)


def _bitwise_equal(a, b) -> bool:
    return all(
        np.asarray(u).tobytes() == np.asarray(v).tobytes()
        for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True)
    )


def test_patience_none_is_the_default_and_the_fixed_epoch_loop() -> None:
    """``patience=None`` is the default config (equal, same hash: the same compiled
    program) and ``train_members`` gives the same bits with it spelled out."""
    X, y = _toy()
    with jax.enable_x64(True):
        cfg, train, params0, keys, rows, _ = _setup()
        train = replace(train, n_epochs=5)
        explicit = replace(train, patience=None)
        assert train.patience is None
        assert explicit == train and hash(explicit) == hash(train)
        a = train_members(params0, X, y, rows, keys, cfg, train)
        b = train_members(params0, X, y, rows, keys, cfg, explicit)
    assert _bitwise_equal(a, b)
    assert a[2].shape == (M, 5)


def test_chosen_epoch_is_the_held_out_optimum_and_restores_its_parameters() -> None:
    """On the overfitting toy, the held-out loss curve of a plain 200-epoch run (every
    epoch's iterate evaluated like the trainer does: dropout off, the same loss) has its
    minimum at some epoch e*; early stopping with patience 15 picks exactly e* (the curve
    does not improve within the 15 epochs after it), stops at e* + 16 epochs, records the
    same curve, and returns the parameters of a plain run of e* + 1 epochs, bit for bit.
    The two members (different keys) stop at different epochs."""
    X, y = _toy()
    with jax.enable_x64(True):
        cfg, train, params0, keys, rows, val_rows = _setup()
        _, _, _, iterates = train_members_with_iterates(params0, X, y, rows, keys, cfg, train)
        Xv, yv = jnp.asarray(X[N_TRAIN:]), jnp.asarray(y[N_TRAIN:])

        def held_out(p):
            return gaussian_loss(p, None, Xv, yv, jnp.ones(N_VAL), None, cfg)[0]

        curve = np.asarray(jax.vmap(jax.vmap(held_out))(iterates))  # (M, MAX_EPOCHS)
        optimum = curve.argmin(axis=1)
        # the toy overfits: the optimum is early and the end is far worse
        assert np.all(optimum < MAX_EPOCHS // 2)
        assert np.all(curve[:, -1] > 2.0 * curve.min(axis=1))

        res = train_members_early_stopping(
            params0, X, y, rows, keys, cfg, replace(train, patience=PATIENCE), val_rows=val_rows
        )
        best = np.asarray(res.best_epoch)
        n_run = np.asarray(res.n_epochs_run)
        np.testing.assert_array_equal(best, optimum)
        np.testing.assert_array_equal(n_run, best + 1 + PATIENCE)
        assert n_run[0] != n_run[1]  # members stop independently
        for m in range(M):
            # the recorded curve is the plain run's (to rounding: another compiled program)
            np.testing.assert_allclose(
                np.asarray(res.val_history[m, : n_run[m]]), curve[m, : n_run[m]], atol=1e-12
            )
            assert np.all(np.isnan(np.asarray(res.val_history[m, n_run[m] :])))
            assert np.all(np.isnan(np.asarray(res.history[m, n_run[m] :])))
            ref, ref_state, ref_hist = train_members(
                params0, X, y, rows, keys, cfg, replace(train, n_epochs=int(best[m]) + 1)
            )
            assert _bitwise_equal(_member(res.params, m), _member(ref, m))
            assert _bitwise_equal(_member(res.state, m), _member(ref_state, m))
            # the epoch's mean batch loss is reduced in a differently fused program: to rounding
            np.testing.assert_allclose(
                np.asarray(res.history[m, : best[m] + 1]), np.asarray(ref_hist[m]), atol=1e-12
            )
            # and the iterate of that epoch of the long run is the same network
            assert _bitwise_equal(_member(res.params, m), _member(_member(iterates, m), best[m]))


@pytest.mark.parametrize(
    ("dropout", "spectral_norm", "padded"),
    [(0.0, False, True), (0.2, True, False)],
    ids=["row_mask", "dropout+spectral_norm"],
)
def test_restored_parameters_bitwise_with_options(
    dropout: float, spectral_norm: bool, padded: bool
) -> None:
    """With padded training rows, and with dropout under spectral normalisation (the best
    epoch's start vectors baked like a plain run's final ones), the restored parameters are
    a plain run's of ``best_epoch + 1`` epochs, bit for bit."""
    X, y = _toy()
    with jax.enable_x64(True):
        cfg, train, params0, keys, rows, val_rows = _setup(dropout, spectral_norm)
        train = replace(train, n_epochs=25, patience=5)
        row_mask = None
        if padded:  # member 0 trains on 20 real rows
            row_mask = np.ones(rows.shape)
            row_mask[0, 20:] = 0.0
        res = train_members_early_stopping(
            params0, X, y, rows, keys, cfg, train, val_rows=val_rows, row_mask=row_mask
        )
        for m in range(M):
            b = int(res.best_epoch[m])
            n = int(res.n_epochs_run[m])
            assert n == min(b + 1 + 5, 25)
            assert np.all(np.isfinite(np.asarray(res.val_history[m, :n])))
            plain = replace(train, n_epochs=b + 1, patience=None)
            ref, _, _ = train_members(params0, X, y, rows, keys, cfg, plain, row_mask=row_mask)
            assert _bitwise_equal(_member(res.params, m), _member(ref, m))


def test_held_out_padding_never_reaches_the_loss() -> None:
    """Entries of ``val_rows`` masked out by ``val_mask`` change nothing (bitwise), whatever
    row they name and whatever its target; without the mask they do."""
    X, y = _toy()
    with jax.enable_x64(True):
        cfg, train, params0, keys, rows, val_rows = _setup()
        train = replace(train, n_epochs=8, patience=3)
        val_mask = np.ones(val_rows.shape)
        val_mask[1, 60:] = 0.0
        y_b = y.copy()
        y_b[N_TRAIN + 60 :] += 100.0  # rows masked out for member 1
        a = train_members_early_stopping(
            params0, X, y, rows, keys, cfg, train, val_rows=val_rows, val_mask=val_mask
        )
        b = train_members_early_stopping(
            params0, X, y_b, rows, keys, cfg, train, val_rows=val_rows, val_mask=val_mask
        )
        np.testing.assert_array_equal(np.asarray(a.val_history[1]), np.asarray(b.val_history[1]))
        assert _bitwise_equal(_member(a.params, 1), _member(b.params, 1))
        # member 0 sees the changed targets in its held-out rows
        assert np.all(np.asarray(b.val_history[0, :2]) > 100.0)


def test_patience_and_held_out_rows_are_checked() -> None:
    X, y = _toy()
    with jax.enable_x64(True):
        cfg, train, params0, keys, rows, val_rows = _setup()
    for bad in (0, -3, 1.5):
        with pytest.raises(UdbenchError, match=r"'patience' must be None or an int >= 1"):
            replace(train, patience=bad)
    with pytest.raises(UdbenchError, match=r"'train.patience' must be an int >= 1; got None"):
        train_members_early_stopping(params0, X, y, rows, keys, cfg, train, val_rows=val_rows)
    stopping = replace(train, patience=5)
    for bad_rows, rule in [
        (val_rows[:1], r"have shape \(2, n_val >= 1\); got \(1, 120\)"),
        (val_rows[0], r"have shape \(2, n_val >= 1\); got \(120,\)"),
        (np.zeros((M, 0), int), r"have shape \(2, n_val >= 1\); got \(2, 0\)"),
        (val_rows + 1, r"hold row indices in \[0, 150\)"),
        (val_rows.astype(float), r"hold row indices in \[0, 150\)"),
    ]:
        with pytest.raises(UdbenchError, match=f"'val_rows' must {rule}"):
            train_members_early_stopping(
                params0, X, y, rows, keys, cfg, stopping, val_rows=bad_rows
            )
    for bad_mask, rule in [
        (np.ones((M, 5)), r"have shape \(2, 120\)"),
        (np.full(val_rows.shape, 0.5), "hold only 0 and 1"),
        (np.r_[np.ones((1, N_VAL)), np.zeros((1, N_VAL))], "mark a real row for every member"),
    ]:
        with pytest.raises(UdbenchError, match=f"'val_mask' must {rule}"):
            train_members_early_stopping(
                params0, X, y, rows, keys, cfg, stopping, val_rows=val_rows, val_mask=bad_mask
            )
    # the fixed-epoch trainers refuse a config asking for early stopping
    refusal = r"'train.patience' must be None.*; got 5"
    with pytest.raises(UdbenchError, match=refusal):
        train_members(params0, X, y, rows, keys, cfg, stopping)
    with pytest.raises(UdbenchError, match=refusal):
        train_members_with_iterates(params0, X, y, rows, keys, cfg, stopping)
    with pytest.raises(UdbenchError, match=refusal):
        train_single(_member(params0, 0), X, y, rows[0], keys[0], cfg, stopping)
    with pytest.raises(UdbenchError, match=refusal):
        train_members_reporting(
            params0, X, y, rows, keys, cfg, stopping, checkpoints=(), on_checkpoint=print
        )
