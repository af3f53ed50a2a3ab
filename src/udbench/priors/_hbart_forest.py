"""The BART tree-ensemble prior of :mod:`udbench.priors.hbart`, sampled and evaluated in NumPy.

The threshold grid and the binning of inputs onto it, the depth-wise split probabilities
base·(1 + depth)^(−power), and a vectorised sampler and evaluator of forests of complete
binary trees (SPEC §5, paper B.2). Re-exported by :mod:`udbench.priors.hbart`, whose prior
draws these are and whose conditioning hands bartz exactly the same prior.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from udbench._validation import check_array

__all__ = [
    "Forest",
    "bin_inputs",
    "evaluate_forests",
    "sample_forests",
    "split_probabilities",
    "threshold_grid",
]


def threshold_grid(n_thresholds: int = 255) -> np.ndarray:
    """The split-value grid: t_s = s / (n_thresholds + 1), s = 1..n_thresholds (SPEC §5).

    Returns
    -------
    ndarray, shape (n_thresholds,), float64
        Equally spaced thresholds strictly inside [0, 1] (255 → multiples of 1/256).
    """
    return np.arange(1, n_thresholds + 1, dtype=np.float64) / (n_thresholds + 1)


def bin_inputs(X: np.ndarray, n_thresholds: int = 255) -> np.ndarray:
    """Bin index of every input coordinate on the threshold grid, in float64.

    b(x) = number of thresholds strictly below x, so a node with cut point s (1-based)
    sends x left iff b(x) < s, i.e. iff x ≤ t_s (bartz's convention).

    Parameters
    ----------
    X : ndarray, shape (m, d)
        Inputs scaled to [0, 1].

    Returns
    -------
    ndarray, shape (m, d), uint8 (uint16 for more than 255 thresholds)
    """
    X = check_array("bin_inputs", "X", X, ndim=2)
    dtype = np.uint8 if n_thresholds <= 255 else np.uint16
    return np.searchsorted(threshold_grid(n_thresholds), X, side="left").astype(dtype)


def split_probabilities(max_depth: int = 6, base: float = 0.95, power: float = 2.0) -> np.ndarray:
    """Prior probability that a node at depth k splits: base·(1+k)^−power, 0 at max_depth.

    Source: Chipman, George & McCulloch (2010); SPEC §5. Root at depth 0; a node at
    ``max_depth`` is always a leaf (the deepest leaves have depth ``max_depth``). The
    probability is conditional on the node's cell admitting a split on the grid, which
    with 255 thresholds and depth ≤ 6 fails only with negligible probability.

    Returns
    -------
    ndarray, shape (max_depth + 1,)
    """
    k = np.arange(max_depth + 1, dtype=np.float64)
    p = base * (1.0 + k) ** (-power)
    p[max_depth] = 0.0
    return p


@dataclass(frozen=True)
class Forest:
    """A batch of sum-of-trees ensembles stored as heaps (root at index 1, children of
    node i at 2i and 2i+1).

    Attributes
    ----------
    var : ndarray, shape (n_forests, n_trees, 2**max_depth), int
        Split covariate of each decision node (index 0 unused).
    split : ndarray, shape (n_forests, n_trees, 2**max_depth), int
        Cut point s in 1..n_thresholds of each decision node, 0 for a leaf or unused
        node; x goes left iff x ≤ s / (n_thresholds + 1).
    leaf : ndarray, shape (n_forests, n_trees, 2**(max_depth + 1)), float64
        Leaf values (meaningful only at leaves), N(0, a²/n_trees).
    """

    var: np.ndarray
    split: np.ndarray
    leaf: np.ndarray

    @property
    def max_depth(self) -> int:
        """Deepest possible leaf depth."""
        return int(np.log2(self.split.shape[-1]))


def sample_forests(
    rng: np.random.Generator,
    n_forests: int,
    n_features: int,
    *,
    leaf_sd: float,
    n_trees: int = 200,
    max_depth: int = 6,
    base: float = 0.95,
    power: float = 2.0,
    n_thresholds: int = 255,
) -> Forest:
    """Draw ``n_forests`` ensembles of ``n_trees`` trees from the BART prior (SPEC §5).

    Level by level, vectorised over all trees: a node at depth k that exists splits with
    probability base·(1+k)^−power (never at ``max_depth``) if its cell admits a cut;
    the covariate is uniform among those with a grid threshold strictly inside the
    node's cell, and the cut point uniform among those thresholds (Chipman et al. 1998;
    the same prior as ``bartz.debug.sample_prior``). Leaves are N(0, leaf_sd²).

    Parameters
    ----------
    rng : numpy.random.Generator
    n_forests, n_features : int
    leaf_sd : float
        Leaf SD, a / √n_trees for the HBART prior.
    n_trees, max_depth, base, power, n_thresholds
        Tree prior (defaults: SPEC §5).

    Returns
    -------
    Forest
    """
    n = int(n_forests) * int(n_trees)
    half = 2**max_depth
    var = np.zeros((n, half), dtype=np.int16)
    split = np.zeros((n, half), dtype=np.int16)
    p_split = split_probabilities(max_depth, base, power)
    exists = np.ones((n, 1), dtype=bool)
    lower = np.zeros((n, 1, n_features), dtype=np.int16)
    upper = np.full((n, 1, n_features), n_thresholds, dtype=np.int16)
    for k in range(max_depth):
        width = 2**k
        avail = lower < upper  # cut points lower+1..upper exist
        n_avail = avail.sum(axis=-1)
        u_var, u_cut, u_split = rng.random((3, n, width))
        j = np.floor(u_var * n_avail).astype(np.int64)
        v = np.argmax(np.cumsum(avail, axis=-1) > j[..., None], axis=-1)
        lo = np.take_along_axis(lower, v[..., None], axis=-1)[..., 0].astype(np.int64)
        hi = np.take_along_axis(upper, v[..., None], axis=-1)[..., 0].astype(np.int64)
        s = lo + 1 + np.floor(u_cut * (hi - lo)).astype(np.int64)
        splits = exists & (n_avail > 0) & (u_split < p_split[k])
        var[:, width : 2 * width] = np.where(splits, v, 0)
        split[:, width : 2 * width] = np.where(splits, s, 0)
        if k + 1 < max_depth:
            lower = np.repeat(lower, 2, axis=1)
            upper = np.repeat(upper, 2, axis=1)
            rows = np.repeat(np.arange(n), width)
            cols = np.tile(np.arange(width), n)
            vv, ss = v.reshape(-1), s.reshape(-1)
            upper[rows, 2 * cols, vv] = (ss - 1).astype(np.int16)
            lower[rows, 2 * cols + 1, vv] = ss.astype(np.int16)
            exists = np.repeat(splits, 2, axis=1)
    leaf = leaf_sd * rng.standard_normal((n, 2 * half))
    shape = (int(n_forests), int(n_trees))
    return Forest(
        var=var.reshape(*shape, half),
        split=split.reshape(*shape, half),
        leaf=leaf.reshape(*shape, 2 * half),
    )


def evaluate_forests(forest: Forest, X_binned: np.ndarray) -> np.ndarray:
    """Sum-of-trees values f(x) of every forest at binned inputs.

    Parameters
    ----------
    forest : Forest
        ``n_forests`` ensembles.
    X_binned : ndarray, shape (m, d)
        Output of :func:`bin_inputs`.

    Returns
    -------
    ndarray, shape (n_forests, m), float64
    """
    Xb = np.asarray(X_binned).astype(np.int16)
    m = Xb.shape[0]
    cols = np.arange(m)[None, :]
    out = np.empty((forest.split.shape[0], m), dtype=np.float64)
    for i in range(forest.split.shape[0]):
        var, split, leaf = forest.var[i], forest.split[i], forest.leaf[i]
        node = np.ones((var.shape[0], m), dtype=np.int64)
        for _ in range(forest.max_depth):
            s = np.take_along_axis(split, node, axis=1)
            v = np.take_along_axis(var, node, axis=1)
            right = Xb[cols, v] >= s
            node = np.where(s > 0, 2 * node + right, node)
        out[i] = np.take_along_axis(leaf, node, axis=1).sum(axis=0)
    return out
