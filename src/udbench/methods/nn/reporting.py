"""Training that stops at checkpoints: :func:`train_members_reporting` (pruned tuning).

The training of :func:`udbench.methods.nn.training.train_members` run one epoch per call of a
jitted function, so that the caller sees the parameters after chosen epochs
(:mod:`udbench.methods._progress` reports them to a tuning sweep, which may stop the trial).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import optax

from udbench._validation import param_error
from udbench.methods.nn.backbone import BackboneConfig
from udbench.methods.nn.training import (
    LossFn,
    TrainConfig,
    check_fixed_epochs,
    gaussian_loss,
    make_optimizer,
)

__all__ = ["train_members_reporting"]


def _make_traced_optimizer(hyper: Any, clip_norm: float) -> optax.GradientTransformation:
    """:func:`make_optimizer` with learning rate, β₁ and weight decay as run-time values."""
    return optax.chain(
        optax.clip_by_global_norm(clip_norm),
        optax.nadamw(
            hyper["lr"],
            b1=hyper["momentum"],
            b2=0.999,
            eps=1e-8,
            weight_decay=hyper["weight_decay"],
        ),
    )


def _epoch_one(
    carry: Any,
    rows: jax.Array,
    ekey: jax.Array,
    X: jax.Array,
    y: jax.Array,
    hyper: Any,
    *,
    loss_fn: LossFn,
    model: BackboneConfig,
    batch_size: int,
    clip_norm: float,
) -> tuple[Any, jax.Array]:
    """One epoch of one member: the body of :func:`_train_one`'s epoch scan."""
    n_rows = rows.shape[0]
    batch = min(batch_size, n_rows)
    n_batches = -(-n_rows // batch)
    pad = n_batches * batch - n_rows
    opt = _make_traced_optimizer(hyper, clip_norm)
    masks = jnp.concatenate([jnp.ones(n_rows, X.dtype), jnp.zeros(pad, X.dtype)]).reshape(
        n_batches, batch
    )

    def step(carry: Any, inputs: Any) -> Any:
        params, state, opt_state = carry
        idx, mask, k = inputs
        (loss, state), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            params, state, X[idx], y[idx], mask, k, model
        )
        updates, opt_state = opt.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), state, opt_state), loss

    k_perm, k_steps = jax.random.split(ekey)
    perm = rows[jnp.argsort(jax.random.bits(k_perm, (n_rows,), jnp.uint32))]
    order = jnp.concatenate([perm, jnp.zeros(pad, perm.dtype)]).reshape(n_batches, batch)
    carry, losses = jax.lax.scan(step, carry, (order, masks, jax.random.split(k_steps, n_batches)))
    return carry, jnp.mean(losses)


@partial(jax.jit, static_argnames=("loss_fn", "model", "batch_size", "clip_norm"))
def _epoch_vmapped(carry, rows, ekeys, X, y, hyper, *, loss_fn, model, batch_size, clip_norm):
    fn = partial(
        _epoch_one, loss_fn=loss_fn, model=model, batch_size=batch_size, clip_norm=clip_norm
    )
    return jax.vmap(fn, in_axes=(0, 0, 0, None, None, None))(carry, rows, ekeys, X, y, hyper)


@partial(jax.jit, static_argnames=("n_epochs",))
def _epoch_keys(keys: jax.Array, n_epochs: int) -> jax.Array:
    """Every member's epoch keys, (M, n_epochs): those :func:`_train_one` scans over."""
    return jax.vmap(lambda k: jax.random.split(k, n_epochs))(keys)


def train_members_reporting(
    params: Any,
    X: Any,
    y: Any,
    rows: Any,
    keys: jax.Array,
    model: BackboneConfig,
    train: TrainConfig,
    *,
    checkpoints: tuple[int, ...],
    on_checkpoint: Callable[[int, Any], None],
    loss_fn: LossFn = gaussian_loss,
    state: Any = None,
) -> tuple[Any, Any, jax.Array]:
    """:func:`train_members`, calling ``on_checkpoint(epoch, params)`` after the epochs in
    ``checkpoints`` (which may stop training by raising).

    The same training (members, minibatch order, keys, NAdamW after per-member clipping),
    run one epoch per call of a jitted function, with the learning rate, β₁ and weight decay
    passed as run-time values instead of compile-time constants: one compiled program then
    serves every such configuration of a shape in the process (the trials of a sweep). The
    results agree with :func:`train_members` up to floating-point rounding of those
    constants (tested with a tolerance), not bit for bit. Not for spectral normalisation,
    masked rows or early stopping (the callers do not report then).

    Returns
    -------
    params, state, history
        As :func:`train_members` (history (M, n_epochs) of mean batch losses).
    """
    if model.spectral_norm:
        raise param_error("train_members_reporting", "model", "not use spectral_norm", model)
    check_fixed_epochs("train_members_reporting", train)
    leaves = jax.tree_util.tree_leaves(params)
    dtype = leaves[0].dtype
    rows = jnp.asarray(rows)
    n_members = leaves[0].shape[0]
    if rows.ndim != 2 or rows.shape[0] != n_members:
        raise param_error(
            "train_members_reporting", "rows", f"have shape ({n_members}, n_m)", rows.shape
        )
    if state is None:
        state = jnp.zeros((n_members,), dtype)
    Xj, yj = jnp.asarray(X, dtype), jnp.asarray(y, dtype)
    hyper = {
        k: jnp.asarray(float(getattr(train, k)), dtype) for k in ("lr", "momentum", "weight_decay")
    }
    opt = make_optimizer(train)
    opt_state = jax.vmap(opt.init)(params)
    ekeys = _epoch_keys(keys, train.n_epochs)
    carry = (params, state, opt_state)
    wanted = set(checkpoints)
    losses = []
    for e in range(train.n_epochs):
        carry, loss = _epoch_vmapped(
            carry,
            rows,
            ekeys[:, e],
            Xj,
            yj,
            hyper,
            loss_fn=loss_fn,
            model=model,
            batch_size=train.batch_size,
            clip_norm=train.clip_norm,
        )
        losses.append(loss)
        if e + 1 in wanted and e + 1 < train.n_epochs:
            on_checkpoint(e + 1, carry[0])
    return carry[0], carry[1], jnp.stack(losses, axis=1)
