"""The bootstrap engine (udbench._resampling) and the four bootstraps that call it.

The pinned numbers were computed before the four implementations moved onto the engine
(commit 781ac23): a change in them means a call site no longer draws the same random
numbers in the same order.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest

from udbench._resampling import (
    BOOTSTRAP_UNITS,
    DEFAULT_CONFIDENCE,
    DEFAULT_N_RESAMPLES,
    BootstrapSettings,
    cluster_counts,
    cluster_picks,
    instance_counts,
    percentile_interval,
    picks_to_counts,
    stratified_counts,
)
from udbench._seeding import make_rng
from udbench._validation import UdbenchError
from udbench.analyses._common import Frame, resampling
from udbench.evaluation.metrics import bootstrap_ci
from udbench.studies.spectral_norm._stats import (
    _mean_ci,
    dataset_bootstrap,
    depth_table,
    regression_table,
)
from udbench.studies.wine_ood._stats import _boot_mean, _bootstrap_counts, _interval


def _digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]


# ----------------------------------------------------------------------------- settings
def test_settings_defaults_are_the_module_constants():
    s = BootstrapSettings()
    assert (s.n_resamples, s.confidence, s.random_state, s.unit) == (2000, 0.95, 0, "instance")
    assert (DEFAULT_N_RESAMPLES, DEFAULT_CONFIDENCE) == (2000, 0.95)
    assert BootstrapSettings(n_resamples=np.int64(7)).n_resamples == 7
    assert type(BootstrapSettings(n_resamples=np.int64(7)).n_resamples) is int
    with pytest.raises(AttributeError):
        s.n_resamples = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_resamples": 0}, "'n_resamples' must be an integer >= 1; got 0"),
        ({"n_resamples": 2.5}, "'n_resamples' must be an integer >= 1; got 2.5"),
        ({"n_resamples": True}, "'n_resamples' must be an integer >= 1; got True"),
        ({"confidence": 1.0}, r"'confidence' must be a number in \(0, 1\); got 1.0"),
        ({"confidence": 0}, r"'confidence' must be a number in \(0, 1\); got 0"),
        ({"confidence": float("nan")}, r"'confidence' must be a number in \(0, 1\)"),
        ({"confidence": "0.9"}, r"'confidence' must be a number in \(0, 1\)"),
        ({"random_state": 1.5}, "'random_state' must be an int or a str; got 1.5"),
        ({"random_state": None}, "'random_state' must be an int or a str; got None"),
        ({"unit": "group"}, "'unit' must be one of"),
    ],
)
def test_settings_refuse_bad_values_by_name(kwargs, message):
    with pytest.raises(UdbenchError, match=f"BootstrapSettings: parameter {message}"):
        BootstrapSettings(**kwargs)


def test_settings_units():
    assert BOOTSTRAP_UNITS == ("instance", "dataset")
    assert BootstrapSettings(unit="dataset", random_state="x").unit == "dataset"


# ------------------------------------------------------------------------------- engine
def test_instance_counts_sum_to_n_and_repeat_with_the_seed():
    c = instance_counts(make_rng("t", 1), 9, 50)
    assert c.shape == (50, 9) and c.dtype == float
    assert np.all(c.sum(axis=1) == 9)
    again = instance_counts(make_rng("t", 1), 9, 50)
    assert c.tobytes() == again.tobytes()
    assert c.tobytes() != instance_counts(make_rng("t", 2), 9, 50).tobytes()


def test_stratified_counts_keep_each_group_size():
    codes = np.array([0, 1, 0, 2, 2, 2, 1, 0])
    c = stratified_counts(make_rng("t", 3), codes, 40)
    assert c.shape == (40, 8)
    for g in range(3):
        assert np.all(c[:, codes == g].sum(axis=1) == np.sum(codes == g))
    assert np.all(c.sum(axis=1) == 8)
    assert c.tobytes() == stratified_counts(make_rng("t", 3), codes, 40, 3).tobytes()


def test_cluster_counts_are_constant_within_a_group():
    codes = np.array([0, 1, 0, 2, 2, 2, 1, 0])
    group, c = cluster_counts(make_rng("t", 4), codes, 60)
    assert group.shape == (60, 3) and np.all(group.sum(axis=1) == 3)
    for g in range(3):
        block = c[:, codes == g]
        assert np.all(block == block[:, :1])
        assert np.array_equal(block[:, 0], group[:, g])
    g2, c2 = cluster_counts(make_rng("t", 4), codes, 60, 3)
    assert group.tobytes() == g2.tobytes() and c.tobytes() == c2.tobytes()


def test_cluster_picks_and_their_counts():
    picks = cluster_picks(make_rng("t", 5), 4, 30)
    assert picks.shape == (30, 4) and picks.min() >= 0 and picks.max() <= 3
    counts = picks_to_counts(picks, 4)
    assert np.all(counts.sum(axis=1) == 4)
    assert picks.tobytes() == cluster_picks(make_rng("t", 5), 4, 30).tobytes()


def test_percentile_interval_leaves_nan_out():
    reps = np.array([[1.0, np.nan], [2.0, np.nan], [3.0, np.nan], [np.nan, np.nan], [5.0, 1]])
    lo, hi = percentile_interval(reps, 0.5)
    np.testing.assert_allclose(lo, [1.75, 1.0])
    np.testing.assert_allclose(hi, [3.5, 1.0])
    lo, hi = percentile_interval(np.full(4, np.nan), 0.9)
    assert np.isnan(lo) and np.isnan(hi)
    lo, hi = percentile_interval(np.arange(101.0), 0.9)
    assert (float(lo), float(hi)) == pytest.approx((5.0, 95.0))


# ------------------------------------------------------------- the four call sites, pinned
_X = np.sin(np.arange(40) * 1.3) + 0.1 * np.arange(40)


def test_bootstrap_ci_numbers_are_unchanged():
    r = bootstrap_ci(_X, n_resamples=300, random_state=3)
    assert (r.low, r.high) == (1.5986396907991414, 2.3563639433323527)
    r = bootstrap_ci(_X, statistic=np.median, n_resamples=200, confidence=0.9, random_state="s")
    assert (r.low, r.high) == (1.504508913862555, 2.4642755896784556)
    groups = np.repeat(["a", "b", "c", "d", "e"], 8)
    r = bootstrap_ci(_X, groups=groups, n_resamples=300, random_state=3)
    assert (r.low, r.high) == (1.0939774576630508, 2.8282731085731876)


@pytest.mark.parametrize(
    ("unit", "counts", "group_counts", "ends"),
    [
        (
            "instance",
            "d6913d73f314f4c7",
            None,
            [-0.35086209945718727, -0.336429271876067, 0.311181606151958, 0.2538613511249414],
        ),
        (
            "dataset",
            "f9c1664c5ce0d655",
            "741d91b57814b8c3",
            [-0.192327973253625, -0.251667950365703, 0.1369739675574924, 0.08408806666111361],
        ),
    ],
)
def test_analyses_resampling_numbers_are_unchanged(unit, counts, group_counts, ends):
    inst = pd.DataFrame({"task_id": [f"t{i}" for i in range(12)], "dataset": list("aaaabbbccddd")})
    frame = Frame(rows=pd.DataFrame(), instances=inst, methods=[], constant_au={})
    values = np.cos(np.arange(24.0)).reshape(12, 2)
    rs = resampling(frame, unit=unit, n_resamples=250, confidence=0.9, random_state=5)
    assert _digest(rs.counts) == counts
    assert (None if rs.group_counts is None else _digest(rs.group_counts)) == group_counts
    lo, hi = rs.interval(rs.mean(values))
    assert [float(z) for z in (*lo, *hi)] == ends
    settings = BootstrapSettings(n_resamples=250, confidence=0.9, random_state=5, unit=unit)
    same = resampling(frame, settings=settings)
    assert same.counts.tobytes() == rs.counts.tobytes() and same.confidence == 0.9


def test_spectral_norm_bootstrap_numbers_are_unchanged():
    _, codes, w = dataset_bootstrap(list("aaaabbbccddd"), 250, 7)
    assert (_digest(w), _digest(codes)) == ("622cc08eb52a9491", "425eb3559c18d9f7")
    values = np.cos(np.arange(12.0))
    assert _mean_ci(values, w) == (
        -0.03441850403898793,
        -0.41445289630116083,
        0.2397182143569343,
        12,
    )
    assert _mean_ci(values, w, 0.9)[1:3] == (-0.387261618972438, 0.1959369634324625)
    rng = np.random.default_rng(0)
    n = 24
    pairs = pd.DataFrame(
        {
            "arm": ["sn", "wd"] * 12,
            "dataset": list("aaaabbbbccccddddeeeeffff"),
            "depth": rng.integers(1, 5, n).astype(float),
            "width": rng.integers(8, 64, n).astype(float),
            "epochs": rng.integers(10, 100, n).astype(float),
            "steps": rng.integers(100, 1000, n).astype(float),
            "dist_preservation_plain": rng.random(n),
            "delta_rho_eu_risk": rng.normal(size=n),
            "delta_rho_eu_var": rng.normal(size=n),
            "delta_dist_preservation": rng.normal(size=n),
            "delta_log_nmse": rng.normal(size=n),
            "sn": [1.0, 0.0] * 12,
            "delta_depth": rng.integers(-1, 2, n).astype(float),
        }
    )
    d = depth_table(pairs, n_resamples=150, random_state=2, confidence=0.9)
    assert d[["spearman", "spearman_low", "spearman_high"]].to_numpy().tolist()[0] == [
        -0.5149286505444371,
        -0.890951807971083,
        0.18519003954501337,
    ]
    assert d["spearman_high"].iloc[5] == 0.7736984310929347
    r = regression_table(pairs, n_resamples=100, random_state=2)
    got = r[["coef", "coef_low", "coef_high"]].to_numpy().tolist()
    # least squares through the BLAS: its last bits depend on the kernel (OpenBLAS's
    # SkylakeX gives these exactly, Haswell differs at 1.5e-15); the draws are checked
    # exactly above
    assert got[0] == pytest.approx(
        [0.26088549465670785, -0.2865765644786845, 0.5618169237859512], rel=1e-12, abs=0
    )
    assert got[10] == pytest.approx(
        [-0.04067573741811557, -0.2889800360555281, 2.589410201398818], rel=1e-12, abs=0
    )


def test_wine_ood_bootstrap_numbers_are_unchanged():
    c = _bootstrap_counts(15, 250, 11)
    assert _digest(c) == "7296a357ddad1acb"
    lo, hi = _interval(_boot_mean(np.cos(np.arange(30.0)).reshape(15, 2), c), 0.95)
    assert [float(z) for z in (*lo, *hi)] == [
        -0.3355537679376241,
        -0.3453706889897294,
        0.34702013207734556,
        0.32067824273484424,
    ]
