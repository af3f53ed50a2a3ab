"""Training loop shared by the neural methods: M members in one vectorised computation.

Each member is trained by the same single-member routine — ``n_epochs`` epochs of shuffled
minibatches, NAdamW (Dozat 2015; Loshchilov & Hutter 2019) after clipping the gradient to a
global norm of ``clip_norm`` — and :func:`jax.vmap` runs the M members side by side
(paper App. C.4). Because the vmapped routine computes each member's loss averaged over
its own batch, differentiates it, clips it and updates that member's optimiser state, the
joint computation is the gradient of the loss *summed over members*, clipped *per member*:
each member gets exactly the update it would get if trained alone
(tests/methods/test_nn_backbone.py checks this to 1e-6).

Generic over the objective: a loss function ``loss_fn(params, state, xb, yb, mask, key,
model_config) -> (loss, new_state)`` for one member on one batch, where ``state`` is a
per-member pytree carried through training (empty for most methods; e.g. power-iteration
vectors for spectral normalisation) and ``key`` is a fresh per-step key (dropout).

Three additive options, off by default (then the computation is bit-identical to the loop
without them, tested):

- ``row_mask`` (M, n_m) of 0/1: which entries of each member's ``rows`` are real. Members
  whose training sets differ in size (NN-DEUP's K fold models and its final model) are padded
  to one length and trained in the same vectorised call: each epoch shuffles a member's real
  rows and puts its padding last, so a member gets ⌈n_real/batch⌉ real steps per epoch, and a
  step whose batch holds no real row leaves parameters, optimiser state and ``state``
  unchanged. A padded entry never reaches the loss (its mask is 0), whatever row it names.
- ``collect_iterates=True`` (:func:`train_members_with_iterates`): also return each member's
  parameters at the end of every epoch (SWAG's moments are taken over them).
- ``TrainConfig(patience=p)`` (:func:`train_members_early_stopping`): early stopping on
  held-out rows. Each member's held-out loss is evaluated after every epoch; a member keeps
  its best epoch's parameters and stops ``p`` epochs after it; ``n_epochs`` is the maximum.
  The epochs are the same as without the option, so the returned parameters are bit for bit
  those of a run of ``best_epoch + 1`` epochs (tested). The fixed-epoch trainers refuse a
  config with ``patience`` set.

Both work with spectral normalisation. With ``row_mask`` the SN start vectors are part of the
carried state, so a step without a real row leaves them unchanged like everything else (the
projection is per member and does not look at the batch). With ``collect_iterates`` every
collected iterate is baked like the final parameters (:func:`~udbench.methods.nn.spectral.bake`
with the member's final start vectors: 3 refinement iterations and the exact SVD cap), so the
iterates are the normalised weights, each with ‖W‖₂ ≤ c.

Spectral normalisation (``BackboneConfig.spectral_norm``, an option of every method): the
trainer wraps the objective in :class:`~udbench.methods.nn.spectral.SpectralNormLoss` and the
state in ``{"sn": start vectors, "inner": state}``, trains as usual, refines the estimate and
returns the *normalised* parameters with the caller's own state
(:func:`udbench.methods.nn.spectral.bake`). With the option off this path is not taken.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from udbench._validation import param_error
from udbench.methods.nn import spectral
from udbench.methods.nn.backbone import BackboneConfig, apply_gaussian, gaussian_nll

__all__ = [
    "EarlyStoppingResult",
    "LossFn",
    "TrainConfig",
    "check_fixed_epochs",
    "gaussian_loss",
    "make_optimizer",
    "predict_members",
    "train_members",
    "train_members_early_stopping",
    "train_members_with_iterates",
    "train_single",
]

LossFn = Callable[..., tuple[jax.Array, Any]]


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings (hashable; paper App. C.4).

    Parameters
    ----------
    n_epochs : int
        Passes over each member's training rows.
    batch_size : int
        Minibatch size (capped at the number of rows); the last batch of an epoch is
        padded and masked, so every row is used exactly once per epoch.
    lr : float
        Constant learning rate of NAdamW.
    momentum : float
        First-moment coefficient β₁ (β₂ = 0.999, ε = 1e-8).
    weight_decay : float
        Decoupled weight decay (applied to every parameter).
    clip_norm : float, default 1.0
        Global-norm gradient clipping threshold, per member.
    patience : int or None, default None
        Early stopping (:func:`train_members_early_stopping`): a member stops after
        ``patience`` epochs without a strictly lower held-out loss, and ``n_epochs`` is the
        maximum number of epochs. None: no early stopping, every member trains ``n_epochs``
        epochs (:func:`train_members`, the original loop).
    """

    n_epochs: int
    batch_size: int
    lr: float
    momentum: float
    weight_decay: float
    clip_norm: float = 1.0
    patience: int | None = None

    def __post_init__(self) -> None:
        for field in ("n_epochs", "batch_size"):
            value = getattr(self, field)
            if not isinstance(value, int | np.integer) or value < 1:
                raise param_error("TrainConfig", field, "be an int >= 1", value)
        if not (np.isfinite(self.lr) and self.lr > 0):
            raise param_error("TrainConfig", "lr", "be > 0", self.lr)
        if not 0.0 <= self.momentum < 1.0:
            raise param_error("TrainConfig", "momentum", "be in [0, 1)", self.momentum)
        if not (np.isfinite(self.weight_decay) and self.weight_decay >= 0):
            raise param_error("TrainConfig", "weight_decay", "be >= 0", self.weight_decay)
        if not self.clip_norm > 0:
            raise param_error("TrainConfig", "clip_norm", "be > 0", self.clip_norm)
        if self.patience is not None and (
            not isinstance(self.patience, int | np.integer) or self.patience < 1
        ):
            raise param_error("TrainConfig", "patience", "be None or an int >= 1", self.patience)


def make_optimizer(config: TrainConfig) -> optax.GradientTransformation:
    """Global-norm clipping followed by NAdamW (``optax.nadamw``), as in paper App. C.4."""
    return optax.chain(
        optax.clip_by_global_norm(config.clip_norm),
        optax.nadamw(
            config.lr, b1=config.momentum, b2=0.999, eps=1e-8, weight_decay=config.weight_decay
        ),
    )


def gaussian_loss(
    params: Any,
    state: Any,
    xb: jax.Array,
    yb: jax.Array,
    mask: jax.Array,
    key: jax.Array,
    model: BackboneConfig,
) -> tuple[jax.Array, Any]:
    """Gaussian NLL of one member on one batch (dropout active when ``model.dropout > 0``)."""
    mean, var = apply_gaussian(params, xb, model, dropout_key=key if model.dropout > 0 else None)
    return gaussian_nll(mean, var, yb, mask), state


def _plain_epoch(
    rows: jax.Array,
    X: jax.Array,
    y: jax.Array,
    opt: optax.GradientTransformation,
    *,
    loss_fn: LossFn,
    model: BackboneConfig,
    train: TrainConfig,
) -> Callable[[Any, jax.Array], tuple[Any, jax.Array]]:
    """One epoch of one member on ``X[rows]`` (all entries real): a function
    ``epoch((params, state, opt_state), epoch key) -> (carry, mean batch loss)``."""
    n_rows = rows.shape[0]
    batch = min(train.batch_size, n_rows)
    n_batches = -(-n_rows // batch)
    pad = n_batches * batch - n_rows
    mask_flat = jnp.concatenate([jnp.ones(n_rows, X.dtype), jnp.zeros(pad, X.dtype)])
    masks = mask_flat.reshape(n_batches, batch)

    def step(carry, inputs):
        params, state, opt_state = carry
        idx, mask, k = inputs
        (loss, state), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            params, state, X[idx], y[idx], mask, k, model
        )
        updates, opt_state = opt.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        return (params, state, opt_state), loss

    def epoch(carry, ekey):
        k_perm, k_steps = jax.random.split(ekey)
        # one argsort of random 32-bit keys: a uniform shuffle (ties have probability
        # ~n²/2³³ and are broken by position), much cheaper under vmap than a multi-round
        # jax.random.permutation
        perm = rows[jnp.argsort(jax.random.bits(k_perm, (n_rows,), jnp.uint32))]
        order = jnp.concatenate([perm, jnp.zeros(pad, perm.dtype)]).reshape(n_batches, batch)
        step_keys = jax.random.split(k_steps, n_batches)
        carry, losses = jax.lax.scan(step, carry, (order, masks, step_keys))
        return carry, jnp.mean(losses)

    return epoch


def _masked_epoch(
    rows: jax.Array,
    valid: jax.Array,
    X: jax.Array,
    y: jax.Array,
    opt: optax.GradientTransformation,
    *,
    loss_fn: LossFn,
    model: BackboneConfig,
    train: TrainConfig,
) -> Callable[[Any, jax.Array], tuple[Any, jax.Array]]:
    """:func:`_plain_epoch` for padded ``rows`` (``valid`` (n_rows,) of 0/1): real rows
    shuffled first, padding last, and no update on a batch without a real row (see the
    module docstring)."""
    n_rows = rows.shape[0]
    batch = min(train.batch_size, n_rows)
    n_batches = -(-n_rows // batch)
    pad = n_batches * batch - n_rows
    valid = valid.astype(X.dtype)
    invalid = (valid <= 0).astype(jnp.int32)

    def step(carry, inputs):
        params, state, opt_state = carry
        idx, mask, k = inputs
        (loss, new_state), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            params, state, X[idx], y[idx], mask, k, model
        )
        updates, new_opt_state = opt.update(grads, opt_state, params)
        new_params = optax.apply_updates(params, updates)
        real = jnp.sum(mask) > 0
        carry = jax.tree_util.tree_map(
            lambda new, old: jnp.where(real, new, old),
            (new_params, new_state, new_opt_state),
            (params, state, opt_state),
        )
        return carry, loss

    def epoch(carry, ekey):
        k_perm, k_steps = jax.random.split(ekey)
        # real rows in a uniformly shuffled order, then the padding (lexsort: last key first)
        order_idx = jnp.lexsort((jax.random.bits(k_perm, (n_rows,), jnp.uint32), invalid))
        perm = rows[order_idx]
        mask_perm = jnp.concatenate([valid[order_idx], jnp.zeros(pad, X.dtype)])
        order = jnp.concatenate([perm, jnp.zeros(pad, perm.dtype)]).reshape(n_batches, batch)
        step_keys = jax.random.split(k_steps, n_batches)
        carry, losses = jax.lax.scan(
            step, carry, (order, mask_perm.reshape(n_batches, batch), step_keys)
        )
        n_real = jnp.sum(mask_perm.reshape(n_batches, batch).sum(1) > 0)
        return carry, jnp.sum(losses) / jnp.maximum(n_real, 1)

    return epoch


def _epoch_of(
    params: Any,
    rows: jax.Array,
    X: jax.Array,
    y: jax.Array,
    valid: jax.Array | None,
    loss_fn: LossFn,
    model: BackboneConfig,
    train: TrainConfig,
) -> tuple[Any, Callable[[Any, jax.Array], tuple[Any, jax.Array]]]:
    """A member's fresh optimiser state and its epoch function: :func:`_plain_epoch`, or
    :func:`_masked_epoch` where ``valid`` marks padded rows."""
    opt = make_optimizer(train)
    opt_state = opt.init(params)  # traced first, as before the epoch's own arrays
    if valid is None:
        one_epoch = _plain_epoch(rows, X, y, opt, loss_fn=loss_fn, model=model, train=train)
    else:
        one_epoch = _masked_epoch(rows, valid, X, y, opt, loss_fn=loss_fn, model=model, train=train)
    return opt_state, one_epoch


def _train_one(
    params: Any,
    state: Any,
    rows: jax.Array,
    key: jax.Array,
    X: jax.Array,
    y: jax.Array,
    valid: jax.Array | None = None,
    *,
    loss_fn: LossFn,
    model: BackboneConfig,
    train: TrainConfig,
    collect_iterates: bool = False,
) -> Any:
    """Train one member on ``X[rows]``; return (params, state, epoch losses (n_epochs,)).

    ``valid`` (n_rows,) of 0/1 marks the real entries of ``rows`` (None: all real; the
    original code path). With ``collect_iterates`` a fourth output holds the parameters at
    the end of every epoch (leading axis n_epochs).
    """
    opt_state, one_epoch = _epoch_of(params, rows, X, y, valid, loss_fn, model, train)

    def epoch(carry, ekey):
        carry, mean_loss = one_epoch(carry, ekey)
        if collect_iterates:
            return carry, (mean_loss, carry[0])
        return carry, mean_loss

    (params, state, _), out = jax.lax.scan(
        epoch, (params, state, opt_state), jax.random.split(key, train.n_epochs)
    )
    if collect_iterates:
        return params, state, out[0], out[1]
    return params, state, out


#: fold_in tag deriving a member's fixed held-out evaluation key from its training key.
_VAL_KEY_TAG = 0xE5


#: Name of the member axis of :func:`_train_early_vmapped` (the stopping rule looks across it).
_MEMBERS = "members"


def _train_one_early(
    params: Any,
    state: Any,
    rows: jax.Array,
    key: jax.Array,
    X: jax.Array,
    y: jax.Array,
    valid: jax.Array | None,
    val_rows: jax.Array,
    val_mask: jax.Array,
    *,
    loss_fn: LossFn,
    model: BackboneConfig,
    train: TrainConfig,
) -> tuple[Any, Any, jax.Array, jax.Array, jax.Array, jax.Array]:
    """Train one member with early stopping, under ``vmap`` over the axis ``"members"``.

    The epochs are :func:`_train_one`'s (same epoch function, epoch ``e`` with key
    ``split(key, n_epochs)[e]``), run by a ``while_loop`` that goes on while any member is
    active (a ``psum`` over the member axis) and for at most ``n_epochs`` epochs. After each
    epoch the held-out loss is evaluated and the best parameters, state and epoch updated;
    the member becomes inactive ``patience`` epochs after its best. An inactive member is
    still stepped (the vectorised loop runs all members alike) but its best, its histories
    and its count no longer change. The loop condition is the same for all members on
    purpose: a per-member condition makes ``vmap`` select every member's carry after every
    epoch, which changes XLA's program and the parameters' last bits.

    Returns (best params, best state, epoch losses (n_epochs,), held-out losses
    (n_epochs,), best epoch (0-based), epochs run); the losses of epochs not run are NaN.
    See :func:`train_members_early_stopping`.
    """
    assert train.patience is not None  # checked by the caller
    patience = train.patience
    opt_state, one_epoch = _epoch_of(params, rows, X, y, valid, loss_fn, model, train)
    ekeys = jax.random.split(key, train.n_epochs)  # as _train_one: epoch e gets ekeys[e]
    val_key = jax.random.fold_in(key, _VAL_KEY_TAG)
    val_model = replace(model, dropout=0.0)
    Xv, yv, vmask = X[val_rows], y[val_rows], val_mask.astype(X.dtype)
    nan = jnp.asarray(jnp.nan, X.dtype)

    def cond(c: Any) -> jax.Array:
        n_active = jax.lax.psum(c["active"].astype(jnp.int32), _MEMBERS)
        return (c["e"] < train.n_epochs) & (n_active > 0)

    def body(c: Any) -> Any:
        e, active = c["e"], c["active"]
        carry, loss = one_epoch(c["carry"], ekeys[e])
        v, _ = loss_fn(carry[0], carry[1], Xv, yv, vmask, val_key, val_model)
        v_cmp = jnp.where(jnp.isnan(v), jnp.inf, v)  # a NaN loss never improves
        improved = active & ((v_cmp < c["best_loss"]) | (e == 0))
        best = jax.tree_util.tree_map(
            lambda new, old: jnp.where(improved, new, old), (carry[0], carry[1]), c["best"]
        )
        best_epoch = jnp.where(improved, e, c["best_epoch"])
        return {
            "e": e + 1,
            "carry": carry,
            "best": best,
            "best_epoch": best_epoch,
            "best_loss": jnp.where(improved, v_cmp, c["best_loss"]),
            # stop once `patience` epochs have passed without a strictly lower loss
            "active": active & (e - best_epoch < patience),
            "n_run": c["n_run"] + active.astype(jnp.int32),
            "history": c["history"].at[e].set(jnp.where(active, loss, nan)),
            "val_history": c["val_history"].at[e].set(jnp.where(active, v, nan)),
        }

    init: dict[str, Any] = {
        "e": jnp.asarray(0, jnp.int32),
        "carry": (params, state, opt_state),
        "best": (params, state),
        "best_epoch": jnp.asarray(0, jnp.int32),
        "best_loss": jnp.asarray(jnp.inf, X.dtype),
        "active": jnp.asarray(True),
        "n_run": jnp.asarray(0, jnp.int32),
        "history": jnp.full((train.n_epochs,), nan),
        "val_history": jnp.full((train.n_epochs,), nan),
    }
    c: dict[str, Any] = jax.lax.while_loop(cond, body, init)
    best_params, best_state = c["best"]
    return best_params, best_state, c["history"], c["val_history"], c["best_epoch"], c["n_run"]


@partial(jax.jit, static_argnames=("loss_fn", "model", "train"))
def _train_early_vmapped(
    params, state, rows, keys, X, y, valid, val_rows, val_mask, *, loss_fn, model, train
):
    fn = partial(_train_one_early, loss_fn=loss_fn, model=model, train=train)
    if valid is None:
        return jax.vmap(
            lambda p, s, r, k, vr, vm: fn(p, s, r, k, X, y, None, vr, vm), axis_name=_MEMBERS
        )(params, state, rows, keys, val_rows, val_mask)
    return jax.vmap(fn, in_axes=(0, 0, 0, 0, None, None, 0, 0, 0), axis_name=_MEMBERS)(
        params, state, rows, keys, X, y, valid, val_rows, val_mask
    )


@partial(jax.jit, static_argnames=("loss_fn", "model", "train"))
def _train_vmapped(params, state, rows, keys, X, y, *, loss_fn, model, train):
    fn = partial(_train_one, loss_fn=loss_fn, model=model, train=train)
    return jax.vmap(fn, in_axes=(0, 0, 0, 0, None, None))(params, state, rows, keys, X, y)


@partial(jax.jit, static_argnames=("loss_fn", "model", "train", "collect_iterates"))
def _train_vmapped_masked(
    params, state, rows, keys, X, y, valid, *, loss_fn, model, train, collect_iterates
):
    fn = partial(
        _train_one, loss_fn=loss_fn, model=model, train=train, collect_iterates=collect_iterates
    )
    if valid is None:
        return jax.vmap(lambda p, s, r, k: fn(p, s, r, k, X, y))(params, state, rows, keys)
    return jax.vmap(fn, in_axes=(0, 0, 0, 0, None, None, 0))(params, state, rows, keys, X, y, valid)


@partial(jax.jit, static_argnames=("loss_fn", "model", "train"))
def _train_unvmapped(params, state, rows, key, X, y, *, loss_fn, model, train):
    return _train_one(params, state, rows, key, X, y, loss_fn=loss_fn, model=model, train=train)


def train_members(
    params: Any,
    X: Any,
    y: Any,
    rows: Any,
    keys: jax.Array,
    model: BackboneConfig,
    train: TrainConfig,
    *,
    loss_fn: LossFn = gaussian_loss,
    state: Any = None,
    row_mask: Any = None,
) -> tuple[Any, Any, jax.Array]:
    """Train M members in one vectorised (``vmap``-ed, ``jit``-compiled) computation.

    Parameters
    ----------
    params : pytree
        Member-stacked parameters (leading axis M), e.g. from
        :func:`~udbench.methods.nn.backbone.init_members`.
    X : array, shape (n, d)
        Training inputs (already standardised), cast to the parameters' dtype.
    y : array, shape (n,)
        Training targets (standardised).
    rows : int array, shape (M, n_m)
        The rows of ``X`` each member trains on (``arange(n)`` for every member of a deep
        ensemble; a resample for bagging). Each epoch visits a member's rows once, in an
        order shuffled by that member's key.
    keys : jax.Array, shape (M,) of PRNG keys
        One key per member (shuffling and dropout).
    model : BackboneConfig
    train : TrainConfig
    loss_fn : callable, default :func:`gaussian_loss`
        Per-member, per-batch objective (see module docstring); must be a hashable
        module-level function (it is a static argument of ``jit``).
    state : pytree or None
        Member-stacked extra state carried through training (default: none).
    row_mask : array of 0/1, shape (M, n_m), optional
        Which entries of ``rows`` are real; the others are padding that never reaches the
        loss (members with training sets of different sizes; module docstring). Default:
        all real, and the computation is the original one, bit for bit.

    Returns
    -------
    params : pytree
        Trained member-stacked parameters.
    state : pytree
        Final member-stacked state.
    history : jax.Array, shape (M, n_epochs)
        Mean batch loss of every epoch, per member (over the batches holding a real row).

    Raises
    ------
    UdbenchError
        ``rows`` or ``row_mask`` of the wrong shape, or a member without a real row.
    """
    dtype, rows, state = _members("train_members", params, rows, state)
    check_fixed_epochs("train_members", train)
    if model.spectral_norm:  # additive option; with it off the calls below are unchanged
        trainer: Callable[..., Any] = _train_vmapped
        if row_mask is not None:
            trainer = _masked_trainer(_check_row_mask(row_mask, rows.shape), False)
        return _train_spectral(  # type: ignore[return-value]
            trainer, params, state, rows, keys, X, y, dtype, loss_fn, model, train, True
        )
    if row_mask is not None:
        return _train_vmapped_masked(  # type: ignore[no-any-return]
            params,
            state,
            rows,
            keys,
            jnp.asarray(X, dtype),
            jnp.asarray(y, dtype),
            _check_row_mask(row_mask, rows.shape),
            loss_fn=loss_fn,
            model=model,
            train=train,
            collect_iterates=False,
        )
    return _train_vmapped(
        params,
        state,
        rows,
        keys,
        jnp.asarray(X, dtype),
        jnp.asarray(y, dtype),
        loss_fn=loss_fn,
        model=model,
        train=train,
    )


def _members(component: str, params: Any, rows: Any, state: Any) -> tuple[Any, jax.Array, Any]:
    """The member-stacked trainers' shared checks: the parameters' dtype, ``rows`` as an
    (M, n_m) array (refused in one line otherwise) and ``state`` (zeros (M,) when None)."""
    leaves = jax.tree_util.tree_leaves(params)
    dtype, n_members = leaves[0].dtype, leaves[0].shape[0]
    rows = jnp.asarray(rows)
    if rows.ndim != 2 or rows.shape[0] != n_members:
        raise param_error(component, "rows", f"have shape ({n_members}, n_m)", rows.shape)
    return dtype, rows, jnp.zeros((n_members,), dtype) if state is None else state


def _check_row_mask(
    row_mask: Any,
    shape: tuple[int, ...],
    component: str = "train_members",
    parameter: str = "row_mask",
) -> jax.Array:
    mask = np.asarray(row_mask)
    if mask.shape != tuple(shape):
        raise param_error(component, parameter, f"have shape {tuple(shape)}", mask.shape)
    if not np.all((mask == 0) | (mask == 1)):
        raise param_error(component, parameter, "hold only 0 and 1", mask)
    if not np.all(mask.sum(axis=1) > 0):
        raise param_error(component, parameter, "mark a real row for every member", mask)
    return jnp.asarray(mask)


def check_fixed_epochs(component: str, train: TrainConfig) -> None:
    """Refuse a ``TrainConfig`` asking for early stopping in a fixed-epoch trainer.

    Raises
    ------
    UdbenchError
        ``train.patience`` is set (one line naming ``component`` and the early-stopping
        trainer, :func:`train_members_early_stopping`).
    """
    if train.patience is not None:
        raise param_error(
            component,
            "train.patience",
            "be None here (early stopping: train_members_early_stopping)",
            train.patience,
        )


def train_members_with_iterates(
    params: Any,
    X: Any,
    y: Any,
    rows: Any,
    keys: jax.Array,
    model: BackboneConfig,
    train: TrainConfig,
    *,
    loss_fn: LossFn = gaussian_loss,
    state: Any = None,
    row_mask: Any = None,
) -> tuple[Any, Any, jax.Array, Any]:
    """:func:`train_members`, also returning every member's parameters after every epoch.

    Same arguments and first three outputs as :func:`train_members` (the same computation);
    the fourth output ``iterates`` is the parameter pytree with leading axes
    (M, n_epochs): ``iterates`` at epoch ``e`` are the parameters after ``e + 1`` epochs (the
    last equals the returned ``params``). Used by SWAG (Maddox et al., 2019), which takes the
    moments of the iterates collected once per epoch.
    """
    dtype, rows, state = _members("train_members_with_iterates", params, rows, state)
    check_fixed_epochs("train_members_with_iterates", train)
    valid = None if row_mask is None else _check_row_mask(row_mask, rows.shape)
    if model.spectral_norm:  # iterates baked like the final parameters (module docstring)
        return _train_spectral(  # type: ignore[return-value]
            _masked_trainer(valid, True),
            params,
            state,
            rows,
            keys,
            X,
            y,
            dtype,
            loss_fn,
            model,
            train,
            True,
        )
    return _train_vmapped_masked(  # type: ignore[no-any-return]
        params,
        state,
        rows,
        keys,
        jnp.asarray(X, dtype),
        jnp.asarray(y, dtype),
        valid,
        loss_fn=loss_fn,
        model=model,
        train=train,
        collect_iterates=True,
    )


class EarlyStoppingResult(NamedTuple):
    """What :func:`train_members_early_stopping` returns (M members).

    Attributes
    ----------
    params : pytree
        Member-stacked parameters of each member's best epoch (leading axis M).
    state : pytree
        Member-stacked state at each member's best epoch.
    history : jax.Array, shape (M, n_epochs)
        Mean batch loss of every epoch run, per member; NaN after a member stopped.
    val_history : jax.Array, shape (M, n_epochs)
        Held-out loss after every epoch run, per member; NaN after a member stopped.
    best_epoch : jax.Array of int32, shape (M,)
        0-based epoch whose end parameters are returned: the member's parameters after
        ``best_epoch + 1`` epochs.
    n_epochs_run : jax.Array of int32, shape (M,)
        Epochs each member trained (``min(best_epoch + 1 + patience, n_epochs)``).
    """

    params: Any
    state: Any
    history: jax.Array
    val_history: jax.Array
    best_epoch: jax.Array
    n_epochs_run: jax.Array


def train_members_early_stopping(
    params: Any,
    X: Any,
    y: Any,
    rows: Any,
    keys: jax.Array,
    model: BackboneConfig,
    train: TrainConfig,
    *,
    val_rows: Any,
    val_mask: Any = None,
    loss_fn: LossFn = gaussian_loss,
    state: Any = None,
    row_mask: Any = None,
) -> EarlyStoppingResult:
    """:func:`train_members` with early stopping on held-out rows (patience, restore best).

    Each member trains as in :func:`train_members` (same epochs: minibatch order, keys and
    updates) for at most ``train.n_epochs`` epochs. After every epoch its held-out loss is
    ``loss_fn`` evaluated once on the member's held-out rows as one batch (the loss mean
    over them, with ``val_mask`` as the batch mask), deterministically: dropout off
    (``model`` with ``dropout=0``) and a fixed key per member, ``fold_in(key, 0xE5)``; it
    includes whatever else ``loss_fn`` adds (a regulariser), and under spectral
    normalisation it is the training-time normalised network's. The member keeps the
    parameters and state of its epoch with the lowest held-out loss (the first of ties;
    epoch 0 always counts, a NaN loss never improves) and stops once ``train.patience``
    epochs have passed without a strictly lower one (early stopping with restoration of
    the best weights: Prechelt, "Early stopping — but when?", 1998; Goodfellow, Bengio &
    Courville, *Deep Learning*, 2016, Alg. 7.1). Training ends when every member has
    stopped or after ``train.n_epochs`` epochs (a ``jax.lax.while_loop``: no compute after
    the last member stops). While others go on, a stopped member is still stepped by the
    vectorised loop, but its returned parameters, state, best epoch and histories no longer
    change.

    The returned parameters are bit for bit those of :func:`train_members` run for
    ``best_epoch + 1`` epochs with the same arguments (its epoch keys are a prefix of
    those of a longer run; tested on CPU).

    Parameters
    ----------
    params, X, y, rows, keys, model, loss_fn, state, row_mask
        As :func:`train_members`.
    train : TrainConfig
        With ``patience`` set (an int >= 1); ``n_epochs`` is the maximum.
    val_rows : int array, shape (M, n_val)
        Each member's held-out rows of ``X`` / ``y`` (for a fair held-out loss, rows the
        member does not train on; not checked).
    val_mask : array of 0/1, shape (M, n_val), optional
        Which entries of ``val_rows`` are real (members with held-out sets of different
        sizes, padded to one length); default all real.

    Returns
    -------
    EarlyStoppingResult
        Best parameters and state, the loss histories (M, n_epochs), the best epoch and the
        epochs run per member.

    Raises
    ------
    UdbenchError
        ``train.patience`` None; ``rows``, ``row_mask``, ``val_rows`` or ``val_mask`` of the
        wrong shape; ``val_rows`` outside ``[0, n)``; a mask that is not 0/1 or leaves a
        member without a real row.
    """
    name = "train_members_early_stopping"
    dtype, rows, state = _members(name, params, rows, state)
    n_members = rows.shape[0]
    if train.patience is None:
        raise param_error(name, "train.patience", "be an int >= 1", train.patience)
    n = np.shape(X)[0]
    vrows = np.asarray(val_rows)
    if vrows.ndim != 2 or vrows.shape[0] != n_members or vrows.shape[1] < 1:
        raise param_error(name, "val_rows", f"have shape ({n_members}, n_val >= 1)", vrows.shape)
    if not np.issubdtype(vrows.dtype, np.integer) or vrows.min() < 0 or vrows.max() >= n:
        raise param_error(name, "val_rows", f"hold row indices in [0, {n})", vrows)
    vmask = (
        jnp.ones(vrows.shape, dtype)
        if val_mask is None
        else _check_row_mask(val_mask, vrows.shape, name, "val_mask")
    )
    valid = None if row_mask is None else _check_row_mask(row_mask, rows.shape, name)
    wrapped, objective = state, loss_fn
    if model.spectral_norm:  # as _train_spectral, baking each member's best epoch
        wrapped = {"sn": _sn_init_vmapped(params, keys), "inner": state}
        objective = spectral.SpectralNormLoss(loss_fn)
    out = _train_early_vmapped(
        params,
        wrapped,
        rows,
        keys,
        jnp.asarray(X, dtype),
        jnp.asarray(y, dtype),
        valid,
        jnp.asarray(vrows),
        vmask,
        loss_fn=objective,
        model=model,
        train=train,
    )
    best_params, best_state = out[0], out[1]
    if model.spectral_norm:
        best_params = _sn_bake_vmapped(best_params, best_state["sn"], model.sn_coeff)
        best_state = best_state["inner"]
    return EarlyStoppingResult(best_params, best_state, *out[2:])


def train_single(
    params: Any,
    X: Any,
    y: Any,
    rows: Any,
    key: jax.Array,
    model: BackboneConfig,
    train: TrainConfig,
    *,
    loss_fn: LossFn = gaussian_loss,
    state: Any = None,
) -> tuple[Any, Any, jax.Array]:
    """Train one member alone (no member axis): the reference for :func:`train_members`.

    Same arguments as :func:`train_members` without the leading member axis
    (``rows`` shape (n_m,), one ``key``); returns (params, state, history (n_epochs,)).
    """
    dtype = jax.tree_util.tree_leaves(params)[0].dtype
    check_fixed_epochs("train_single", train)
    if state is None:
        state = jnp.zeros((), dtype)
    if model.spectral_norm:
        return _train_spectral(
            _train_unvmapped, params, state, rows, key, X, y, dtype, loss_fn, model, train, False
        )
    return _train_unvmapped(
        params,
        state,
        jnp.asarray(rows),
        key,
        jnp.asarray(X, dtype),
        jnp.asarray(y, dtype),
        loss_fn=loss_fn,
        model=model,
        train=train,
    )


def _train_spectral(
    trainer: Callable[..., tuple[Any, Any, jax.Array]],
    params: Any,
    state: Any,
    rows: Any,
    keys: jax.Array,
    X: Any,
    y: Any,
    dtype: Any,
    loss_fn: LossFn,
    model: BackboneConfig,
    train: TrainConfig,
    vmapped: bool,
) -> tuple[Any, ...]:
    """Train with spectral normalisation (module docstring); return baked params.

    A trainer returning a fourth output (the per-epoch iterates, axes (M, n_epochs)) gets
    them baked too, each with its member's final start vectors.
    """
    init, bake = (_sn_init_vmapped, _sn_bake_vmapped) if vmapped else (_sn_init, _sn_bake)
    wrapped = {"sn": init(params, keys), "inner": state}
    iterates: list[Any]  # [] or [the per-epoch parameters]
    params, wrapped, history, *iterates = trainer(
        params,
        wrapped,
        jnp.asarray(rows),
        keys,
        jnp.asarray(X, dtype),
        jnp.asarray(y, dtype),
        loss_fn=spectral.SpectralNormLoss(loss_fn),
        model=model,
        train=train,
    )
    out = (bake(params, wrapped["sn"], model.sn_coeff), wrapped["inner"], history)
    if iterates:
        return (*out, _sn_bake_iterates(iterates[0], wrapped["sn"], model.sn_coeff))
    return out


def _masked_trainer(valid: Any, collect_iterates: bool) -> Callable[..., Any]:
    """:func:`_train_vmapped_masked` with ``valid`` and ``collect_iterates`` bound, called
    like :func:`_train_vmapped` (the trainer argument of :func:`_train_spectral`)."""

    def trainer(params, state, rows, keys, X, y, **kwargs):  # type: ignore[no-untyped-def]
        return _train_vmapped_masked(
            params, state, rows, keys, X, y, valid, collect_iterates=collect_iterates, **kwargs
        )

    return trainer


_sn_init = jax.jit(spectral.init_sn_state)
_sn_init_vmapped = jax.jit(jax.vmap(spectral.init_sn_state))
_sn_bake = jax.jit(spectral.bake)
_sn_bake_vmapped = jax.jit(jax.vmap(spectral.bake, in_axes=(0, 0, None)))
# iterates (M, n_epochs, ...): every epoch's parameters baked with the member's final vectors
_sn_bake_iterates = jax.jit(
    jax.vmap(jax.vmap(spectral.bake, in_axes=(0, None, None)), in_axes=(0, 0, None))
)


@partial(jax.jit, static_argnames=("model",))
def _predict_vmapped(params, X, *, model):
    return jax.vmap(lambda p: apply_gaussian(p, X, model))(params)


def predict_members(params: Any, X: Any, model: BackboneConfig) -> tuple[np.ndarray, np.ndarray]:
    """Per-member predictive means and variances at ``X`` (m, d), standardised units.

    Returns
    -------
    mean, var : numpy.ndarray, each shape (M, m), float64
    """
    dtype = jax.tree_util.tree_leaves(params)[0].dtype
    mean, var = _predict_vmapped(params, jnp.asarray(X, dtype), model=model)
    return np.asarray(mean, dtype=np.float64), np.asarray(var, dtype=np.float64)
