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

Two additive options, off by default (then the computation is bit-identical to the loop
without them, tested):

- ``row_mask`` (M, n_m) of 0/1: which entries of each member's ``rows`` are real. Members
  whose training sets differ in size (NN-DEUP's K fold models and its final model) are padded
  to one length and trained in the same vectorised call: each epoch shuffles a member's real
  rows and puts its padding last, so a member gets ⌈n_real/batch⌉ real steps per epoch, and a
  step whose batch holds no real row leaves parameters, optimiser state and ``state``
  unchanged. A padded entry never reaches the loss (its mask is 0), whatever row it names.
- ``collect_iterates=True`` (:func:`train_members_with_iterates`): also return each member's
  parameters at the end of every epoch (SWAG's moments are taken over them).

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
from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

from udbench._validation import param_error
from udbench.methods.nn import spectral
from udbench.methods.nn.backbone import BackboneConfig, apply_gaussian, gaussian_nll

__all__ = [
    "LossFn",
    "TrainConfig",
    "gaussian_loss",
    "make_optimizer",
    "predict_members",
    "train_members",
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
    """

    n_epochs: int
    batch_size: int
    lr: float
    momentum: float
    weight_decay: float
    clip_norm: float = 1.0

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
    opt = make_optimizer(train)
    opt_state = opt.init(params)
    if valid is None:
        one_epoch = _plain_epoch(rows, X, y, opt, loss_fn=loss_fn, model=model, train=train)
    else:
        one_epoch = _masked_epoch(rows, valid, X, y, opt, loss_fn=loss_fn, model=model, train=train)

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
    leaves = jax.tree_util.tree_leaves(params)
    dtype = leaves[0].dtype
    rows = jnp.asarray(rows)
    n_members = leaves[0].shape[0]
    if rows.ndim != 2 or rows.shape[0] != n_members:
        raise param_error("train_members", "rows", f"have shape ({n_members}, n_m)", rows.shape)
    if state is None:
        state = jnp.zeros((n_members,), dtype)
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


def _check_row_mask(row_mask: Any, shape: tuple[int, ...]) -> jax.Array:
    mask = np.asarray(row_mask)
    if mask.shape != tuple(shape):
        raise param_error("train_members", "row_mask", f"have shape {tuple(shape)}", mask.shape)
    if not np.all((mask == 0) | (mask == 1)):
        raise param_error("train_members", "row_mask", "hold only 0 and 1", mask)
    if not np.all(mask.sum(axis=1) > 0):
        raise param_error("train_members", "row_mask", "mark a real row for every member", mask)
    return jnp.asarray(mask)


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
    leaves = jax.tree_util.tree_leaves(params)
    dtype = leaves[0].dtype
    rows = jnp.asarray(rows)
    n_members = leaves[0].shape[0]
    if rows.ndim != 2 or rows.shape[0] != n_members:
        raise param_error(
            "train_members_with_iterates", "rows", f"have shape ({n_members}, n_m)", rows.shape
        )
    if state is None:
        state = jnp.zeros((n_members,), dtype)
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
