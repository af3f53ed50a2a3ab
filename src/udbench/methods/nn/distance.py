"""Last-hidden-layer features of fitted networks, and how well they preserve local distances.

:func:`distance_preservation` is the local distance-preservation measure of the paper's D.4
(the quantity SN is meant to raise, Liu et al., 2020): for every point, its k = 10 nearest
neighbours in (standardised) input space, the input distances d_in and the distances between
the last hidden layers d_feat to those neighbours, and Spearman's ρ between the two.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from scipy.stats import rankdata
from sklearn.neighbors import NearestNeighbors

from udbench._validation import check_array, param_error
from udbench.methods.nn.backbone import BackboneConfig, features

__all__ = ["distance_preservation", "local_distance_preservation", "member_features"]


@partial(jax.jit, static_argnames=("model",))
def _features_vmapped(params: Any, X: jax.Array, *, model: BackboneConfig) -> jax.Array:
    return jax.vmap(lambda p: features(p, X, model))(params)


def member_features(params: Any, X: Any, model: BackboneConfig) -> np.ndarray:
    """Last hidden layer h^K of every member at standardised inputs ``X`` (m, d).

    Returns
    -------
    numpy.ndarray, shape (M, m, hidden_dim), float64
        Without dropout; with the weights as stored (spectrally normalised ones are already
        normalised after training, :mod:`udbench.methods.nn.spectral`).
    """
    dtype = jax.tree_util.tree_leaves(params)[0].dtype
    out = _features_vmapped(params, jnp.asarray(X, dtype), model=model)
    return np.asarray(out, dtype=np.float64)


def local_distance_preservation(X: Any, H: Any, k: int = 10) -> float:
    """Mean over points of Spearman's ρ between input and feature distances to the k nearest
    input neighbours (paper D.4).

    For each point i, its k nearest neighbours j ≠ i in ``X`` (Euclidean), the distances
    d_in_ij = ‖xᵢ − xⱼ‖ and d_feat_ij = ‖hᵢ − hⱼ‖, and ρᵢ = Spearman(d_in_i·, d_feat_i·) over
    those k pairs (average ranks for ties). Returns the mean of ρᵢ over the points where it
    is defined (both distance vectors non-constant).

    Parameters
    ----------
    X : array, shape (n, d)
        Inputs (as the network sees them: standardised).
    H : array, shape (n, q)
        Features of the same points.
    k : int, default 10
        Neighbours per point, 2 <= k < n.

    Returns
    -------
    float
        In [−1, 1]: 1 when every neighbourhood's distance order is kept (an isometry, any
        monotone map of distances), lower when the map folds or tears space.

    Raises
    ------
    UdbenchError
        Shapes disagree, k out of range, NaN/inf, or ρ undefined at every point (e.g. a
        constant feature map).
    """
    X = check_array("distance_preservation", "X", X, ndim=2)
    H = check_array("distance_preservation", "H", H, ndim=2)
    if H.shape[0] != X.shape[0]:
        raise param_error("distance_preservation", "H", f"have {X.shape[0]} rows", H.shape)
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 2 <= k < X.shape[0]:
        raise param_error("distance_preservation", "k", f"be an int in [2, {X.shape[0] - 1}]", k)
    nn = NearestNeighbors(n_neighbors=int(k) + 1).fit(X)
    d_in, idx = nn.kneighbors(X)
    # drop each point itself (column 0 unless duplicates reorder it: remove by index)
    own = idx == np.arange(X.shape[0])[:, None]
    keep = ~own
    keep[keep.sum(axis=1) > k, -1] = False  # a point not found among its own neighbours
    idx = idx[keep].reshape(X.shape[0], k)
    d_in = d_in[keep].reshape(X.shape[0], k)
    d_feat = np.linalg.norm(H[:, None, :] - H[idx], axis=-1)
    r_in = rankdata(d_in, axis=1)
    r_ft = rankdata(d_feat, axis=1)
    r_in -= r_in.mean(axis=1, keepdims=True)
    r_ft -= r_ft.mean(axis=1, keepdims=True)
    denom = np.sqrt((r_in**2).sum(axis=1) * (r_ft**2).sum(axis=1))
    ok = denom > 0
    if not ok.any():
        raise param_error(
            "distance_preservation", "H", "vary within some neighbourhood (ρ undefined)", "none"
        )
    return float(np.mean((r_in * r_ft).sum(axis=1)[ok] / denom[ok]))


def distance_preservation(method: Any, X: Any, k: int = 10) -> float:
    """Local distance preservation of a fitted neural method at inputs ``X`` (paper D.4).

    Inputs are standardised as the method standardises them (x̃, the space the network
    sees); h is the last hidden layer of the backbone (before the head, or before SNGP's
    random-feature layer). For an ensemble the measure is averaged over the members.

    Parameters
    ----------
    method : fitted udbench neural method
        One built on the shared backbone (``params_``, ``model_config_``, ``x_loc_``,
        ``x_scale_``), e.g. ``nn-ens``, ``nn-lap``, ``sngp-het``.
    X : array, shape (n, d)
        Points to measure at, in the method's input units (e.g. its training inputs).
    k : int, default 10
        Nearest input neighbours per point.

    Returns
    -------
    float
        :func:`local_distance_preservation` of (x̃, h(x)), averaged over members.

    Raises
    ------
    UdbenchError
        ``method`` is not a fitted backbone method, or bad ``X`` / ``k``.
    """
    needed = ("params_", "model_config_", "x_loc_", "x_scale_")
    if not all(hasattr(method, a) for a in needed):
        raise param_error(
            "distance_preservation",
            "method",
            "be a fitted neural method on the shared backbone (fit it first)",
            type(method).__name__,
        )
    X = check_array("distance_preservation", "X", X, ndim=2)
    if X.shape[1] != method.x_loc_.shape[0]:
        raise param_error(
            "distance_preservation", "X", f"have {method.x_loc_.shape[0]} columns", X.shape
        )
    # as the method sees them: constant training columns replaced by 0, then standardised
    inputs = method._inputs(X) if hasattr(method, "_inputs") else X
    Xs = (inputs - method.x_loc_) / method.x_scale_
    ctx = method._precision() if hasattr(method, "_precision") else None
    if ctx is None:
        H = member_features(method.params_, Xs, method.model_config_)
    else:
        with ctx:
            H = member_features(method.params_, Xs, method.model_config_)
    return float(np.mean([local_distance_preservation(Xs, h, k) for h in H]))
