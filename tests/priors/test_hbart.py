"""HBART prior sampler (SPEC §5): tree shape, split rule, leaf variance, grid, determinism.

The conditioning with bartz compiles for about a minute, so its tests are marked slow.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from udbench._validation import UdbenchError
from udbench.priors.hbart import (
    FIDELITY_SETTINGS,
    Forest,
    HBARTPrior,
    bin_inputs,
    build_prior,
    evaluate_forests,
    sample_forests,
    split_probabilities,
    temperature_schedule,
    threshold_grid,
)

BASE, POWER, MAX_DEPTH = 0.95, 2.0, 6


def _node_depth(half: int) -> np.ndarray:
    return np.floor(np.log2(np.maximum(np.arange(half), 1))).astype(int)


def _tree_depths(forest: Forest) -> np.ndarray:
    """Depth of each tree (deepest leaf; root = 0) from the split heap."""
    split = forest.split.reshape(-1, forest.split.shape[-1])
    depth_of = _node_depth(split.shape[-1])
    # a tree's depth is 1 + depth of its deepest decision node (0 if the root is a leaf)
    dec = np.where(split[:, 1:] > 0, depth_of[1:] + 1, 0)
    return dec.max(axis=1)


def _expected_depth_cdf(max_depth: int = MAX_DEPTH) -> np.ndarray:
    """P(tree depth ≤ D), D = 0..max_depth, from p_k = 0.95 (1+k)^-2 (split cells ignored).

    q_k(D): probability that the subtree rooted at a node of depth k stays within depth D:
    q_D = 1 − p_D, q_k = (1 − p_k) + p_k q_{k+1}² for k < D.
    """
    p = split_probabilities(max_depth, BASE, POWER)
    cdf = []
    for D in range(max_depth + 1):
        q = 1.0 - p[D]
        for k in range(D - 1, -1, -1):
            q = (1.0 - p[k]) + p[k] * q * q
        cdf.append(q)
    return np.array(cdf)


def test_split_probabilities_formula() -> None:
    p = split_probabilities(6, 0.95, 2.0)
    np.testing.assert_allclose(p[:6], 0.95 / (1.0 + np.arange(6)) ** 2, rtol=0, atol=1e-15)
    assert p[6] == 0.0


def test_split_rate_per_depth_matches_formula() -> None:
    # 20 000 trees; at each depth, share of existing nodes that split vs 0.95 (1+k)^-2,
    # within 4 binomial standard errors.
    rng = np.random.default_rng(20260101)
    forest = sample_forests(rng, 100, 4, leaf_sd=1.0, n_trees=200)
    split = forest.split.reshape(-1, forest.split.shape[-1])
    half = split.shape[-1]
    depth_of = _node_depth(half)
    exists = np.zeros((split.shape[0], 2 * half), dtype=bool)
    exists[:, 1] = True
    for node in range(1, half):
        exists[:, 2 * node] = exists[:, 2 * node + 1] = exists[:, node] & (split[:, node] > 0)
    p = split_probabilities(MAX_DEPTH, BASE, POWER)
    tested = []
    for k in range(MAX_DEPTH):
        nodes = np.flatnonzero(depth_of == k)
        n_exist = exists[:, nodes].sum()
        n_split = (exists[:, nodes] & (split[:, nodes] > 0)).sum()
        if n_exist < 50:  # depths 5-6 are reached by too few trees to test
            continue
        se = np.sqrt(p[k] * (1 - p[k]) / n_exist)
        assert abs(n_split / n_exist - p[k]) < 4 * se, (k, n_split / n_exist, p[k])
        tested.append(k)
    assert tested[:4] == [0, 1, 2, 3]


def test_tree_depth_distribution_matches_formula() -> None:
    # chi-square goodness of fit of 20 000 tree depths against the exact recursion, level 1e-3
    rng = np.random.default_rng(7)
    forest = sample_forests(rng, 100, 3, leaf_sd=1.0, n_trees=200)
    depths = _tree_depths(forest)
    probs = np.diff(np.concatenate([[0.0], _expected_depth_cdf()]))
    counts = np.bincount(depths, minlength=MAX_DEPTH + 1)
    assert depths.max() <= MAX_DEPTH
    expected = probs * depths.size
    keep = expected >= 5  # pool the rare deepest depths
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    assert stats.chisquare(obs, exp).pvalue > 1e-3
    assert abs(counts[0] / depths.size - 0.05) < 4 * np.sqrt(0.05 * 0.95 / depths.size)


def test_splits_lie_on_grid_inside_the_node_cell() -> None:
    rng = np.random.default_rng(3)
    forest = sample_forests(rng, 20, 2, leaf_sd=1.0, n_trees=200)
    var = forest.var.reshape(-1, 64)
    split = forest.split.reshape(-1, 64)
    assert split.min() >= 0 and split.max() <= 255
    assert np.issubdtype(split.dtype, np.integer)
    # walk every tree: each cut point lies strictly inside the ancestors' cell
    for t in range(0, var.shape[0], 37):
        stack = [(1, np.zeros(2, int), np.full(2, 255))]
        while stack:
            node, lo, hi = stack.pop()
            if node >= 64 or split[t, node] == 0:
                continue
            v, s = var[t, node], split[t, node]
            assert lo[v] + 1 <= s <= hi[v]
            hi_left, lo_right = hi.copy(), lo.copy()
            hi_left[v], lo_right[v] = s - 1, s
            stack += [(2 * node, lo, hi_left), (2 * node + 1, lo_right, hi)]
    grid = threshold_grid()
    assert grid.shape == (255,)
    np.testing.assert_allclose(np.diff(grid), 1 / 256)
    assert grid[0] == 1 / 256 and grid[-1] == 255 / 256


def test_split_rule_left_iff_x_at_most_threshold() -> None:
    # one stump per forest: root splits covariate 1 at s = 128 (threshold 0.5)
    var = np.zeros((1, 1, 64), dtype=np.int16)
    split = np.zeros((1, 1, 64), dtype=np.int16)
    var[0, 0, 1], split[0, 0, 1] = 1, 128
    leaf = np.zeros((1, 1, 128))
    leaf[0, 0, 2], leaf[0, 0, 3] = -1.25, 2.5
    X = np.array([[0.9, 0.5], [0.1, 0.5 + 1e-12], [0.3, 0.0], [0.3, 1.0]])
    np.testing.assert_array_equal(bin_inputs(X)[:, 1], [127, 128, 0, 255])
    out = evaluate_forests(Forest(var, split, leaf), bin_inputs(X))
    np.testing.assert_array_equal(out, [[-1.25, 2.5, -1.25, 2.5]])


def test_leaf_sum_is_gaussian_with_variance_a_squared() -> None:
    # f(x) is a sum of 200 independent N(0, a²/200) leaves, so f(x)/a ~ N(0, 1) exactly:
    # Σ f²/a² ~ χ²(N) (two-sided level 1e-3) and KS against N(0, 1) (level 1e-3), N = 800.
    a = 1.7
    prior = HBARTPrior(a, "smoke")
    X = np.array([[0.1, 0.2], [0.8, 0.4], [0.5, 0.95]])
    draws = prior.sample(X, key=11, n_draws=800)
    for j in range(X.shape[0]):
        z = draws[:, j] / a
        stat = np.sum(z**2)
        assert stats.chi2.ppf(5e-4, z.size) < stat < stats.chi2.ppf(1 - 5e-4, z.size)
        assert stats.kstest(z, "norm").pvalue > 1e-3


def test_same_key_same_bytes_new_key_new_draws() -> None:
    prior = HBARTPrior(1.0, "smoke")
    X = np.random.default_rng(0).uniform(size=(30, 3))
    d1 = prior.sample(X, key=5, n_draws=3)
    d2 = prior.sample(X, key=5, n_draws=3)
    d3 = prior.sample(X, key=6, n_draws=3)
    assert d1.dtype == np.float64 and d1.shape == (3, 30)
    assert d1.tobytes() == d2.tobytes()
    assert not np.array_equal(d1, d3)


def test_temperature_schedule_geometric_ten_stages() -> None:
    temps = temperature_schedule(5000, 3.0, 10, 0.75)
    assert temps.shape == (5000,)
    assert temps[0] == 3.0 and np.all(temps[3750:] == 1.0)
    levels = temps[::375][:10]
    np.testing.assert_allclose(levels, 3.0 ** (1 - np.arange(10) / 9), rtol=1e-12)
    np.testing.assert_allclose(levels[1:] / levels[:-1], 3.0 ** (-1 / 9), rtol=1e-12)
    assert np.all(np.diff(temps) <= 0)
    assert FIDELITY_SETTINGS["paper"] == {
        "n_chains": 250,
        "n_warmup": 5000,
        "thin": 25,
        "temper_start": 3.0,
        "temper_stages": 10,
        "temper_fraction": 0.75,
    }


def test_build_prior_scale_constant_gives_unit_median_sd() -> None:
    rng = np.random.default_rng(1)
    cov = SimpleNamespace(key="toy", X=rng.uniform(size=(120, 3)), eval_idx=np.arange(60))
    prior = build_prior(cov, "smoke")
    from udbench._seeding import derive_seed

    draws = prior.sample(cov.X[:60], derive_seed("scale", "toy", "hbart"), 100)
    np.testing.assert_allclose(np.median(draws.std(axis=1)), 1.0, rtol=1e-12)
    assert prior.settings["fidelity"] == "smoke"
    assert prior.settings["sampler"]["n_chains"] == FIDELITY_SETTINGS["smoke"]["n_chains"]
    assert prior.family == "hbart" and prior.scale > 1.0


def test_condition_rejects_bad_input() -> None:
    prior = HBARTPrior(1.0, "smoke")
    X = np.full((5, 2), 0.5)
    with pytest.raises(UdbenchError, match="n_draws"):
        prior.condition(X, np.zeros(5), np.ones(5), X, 0, 12)
    with pytest.raises(UdbenchError, match="noise_var_train"):
        prior.condition(X, np.zeros(5), -np.ones(5), X, 0, 20)
    with pytest.raises(UdbenchError, match=r"\[0, 1\]"):
        prior.sample(X + 1.0, 0)


@pytest.mark.slow
def test_condition_known_noise_tempering_and_determinism() -> None:
    prior = HBARTPrior(1.0, "smoke")
    rng = np.random.default_rng(4)
    X = rng.uniform(size=(40, 2))
    f = prior.sample(X, key=1)[0]
    nv = np.full(30, 0.05)
    y = f[:30] + np.sqrt(nv) * rng.standard_normal(30)
    p1 = prior.condition(X[:30], y, nv, X[30:], key=2, n_draws=80)
    p2 = prior.condition(X[:30], y, nv, X[30:], key=2, n_draws=80)
    assert p1.draws_eval.shape == (80, 10) and p1.draws_train.shape == (80, 30)
    assert p1.draws_eval.dtype == np.float64
    assert p1.draws_eval.tobytes() == p2.draws_eval.tobytes()
    d = p1.diagnostics
    assert d["error_precision_kept_max_abs_dev"] == 0.0  # noise held at its known value
    assert d["temperature_levels"][0] == 3.0 and d["temperature_levels"][-1] == 1.0
    assert len(d["rhat"]) == 10 and len(d["mcse_var"]) == 10
    assert np.corrcoef(p1.draws_train.mean(0), f[:30])[0, 1] > 0.9


@pytest.mark.slow
def test_bartz_without_information_samples_our_prior() -> None:
    # With noise SD 1e4 the likelihood is flat, so bartz's chains sample the prior it was
    # given. Its trees must match our sampler: mean number of decision nodes per tree within
    # 5 % (ours from 20 000 trees; bartz from 8 chains × 40 kept forests × 200 trees after
    # 300 warm-up steps), and f(x) with variance a² (χ²-based bound on 320 correlated
    # draws, loose factor 1.5 for chain correlation).
    a = 1.3
    prior = HBARTPrior(a, "smoke", sampler_kwargs={"n_chains": 8, "n_warmup": 300, "thin": 10})
    rng = np.random.default_rng(8)
    X = rng.uniform(size=(6, 2))
    post = prior.condition(X, np.zeros(6), np.full(6, 1e8), X, key=4, n_draws=320)
    ours = sample_forests(np.random.default_rng(9), 100, 2, leaf_sd=a / np.sqrt(200))
    ours_nodes = (ours.split > 0).sum(axis=-1).mean()
    bartz_nodes = post.diagnostics["decision_nodes_per_tree_mean"]
    assert abs(bartz_nodes / ours_nodes - 1) < 0.05, (bartz_nodes, ours_nodes)
    var = post.draws_eval.var(axis=0)
    assert np.all((var > a**2 / 1.5) & (var < a**2 * 1.5)), var


def test_condition_does_not_warn_about_the_rhat_rule(monkeypatch) -> None:
    # SPEC §7 (issue 18): HBART's R̂ is a diagnostic, not a gate, so even the paper layout
    # (250 chains x 4 draws, whose independent-draw max R̂ exceeds 1.05) starts silently
    from udbench.priors import hbart

    def stop() -> None:
        raise RuntimeError("stop before bartz")

    monkeypatch.setattr(hbart, "_bartz_extensions", stop)
    rng = np.random.default_rng(0)
    X, X_eval = rng.uniform(size=(5, 2)), rng.uniform(size=(400, 2))
    args = (X, np.zeros(5), np.ones(5), X_eval, 0, 1000)
    for fidelity in ("paper", "standard"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(RuntimeError, match="stop before bartz"):
                HBARTPrior(1.0, fidelity).condition(*args)
    assert HBARTPrior.rhat_gate is False
