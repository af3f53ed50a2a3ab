"""The GP prior's package layout: kernel-part table, fit defaults, L-BFGS-B driver, linalg.

Values are closed forms (kernel formulas, the documented initial values, a quadratic's
minimum) or the documented rules (jitter ladder); nothing here needs a real dataset.
"""

from __future__ import annotations

import importlib

import jax
import numpy as np
import pytest
import scipy.linalg

import udbench.priors.gp as gp_pkg
from udbench.priors.gp.fit import _constrain, _init_theta, fit_kernel
from udbench.priors.gp.kernels import KERNEL_PARTS, PARTS, kernel_matrix
from udbench.priors.gp.linalg import JITTER_MAX, JITTER_START, chol_jitter, tri_matmul_T

#: Everything ``udbench.priors.gp`` exported before it became a package (issue 12 item 5).
OLD_PUBLIC = [
    "FIT_SETTINGS",
    "KERNEL_PARTS",
    "GPPrior",
    "KernelFit",
    "build_prior",
    "fit_cache_path",
    "fit_kernel",
    "kernel_matrix",
    "log_marginal_likelihood",
    "parse_kernel_family",
]

#: Added since (each family module names its prior class for the numerics version, issue 34).
NEW_PUBLIC = ["PRIOR_CLASS"]


def test_public_names_stay_importable_from_udbench_priors_gp() -> None:
    assert sorted(gp_pkg.__all__) == sorted(OLD_PUBLIC + NEW_PUBLIC)
    assert gp_pkg.PRIOR_CLASS is gp_pkg.GPPrior
    module = importlib.import_module("udbench.priors.gp")
    for name in OLD_PUBLIC:
        assert getattr(module, name) is not None, name
    # the family table still resolves the GP family to a module with build_prior
    from udbench.priors.base import PRIOR_FAMILIES

    assert importlib.import_module(PRIOR_FAMILIES["gp"]).build_prior is gp_pkg.build_prior


def test_kernel_table_lists_each_part_with_its_shape_parameters() -> None:
    assert KERNEL_PARTS == {
        "matern12": ("lengthscale",),
        "matern32": ("lengthscale",),
        "matern52": ("lengthscale",),
        "rbf": ("lengthscale",),
        "rq": ("lengthscale", "alpha"),
        "powexp": ("lengthscale", "power"),
        "periodic": ("lengthscale", "period"),
        "linear": (),
        "arccosine": ("weight_variance", "bias_variance"),
    }
    assert PARTS["arccosine"].orders == (0, 1, 2)
    assert all(not p.orders for name, p in PARTS.items() if name != "arccosine")


@pytest.mark.parametrize("part", ["matern12", "matern52", "rbf", "rq", "powexp", "periodic"])
def test_each_table_row_builds_its_closed_form_kernel(part: str) -> None:
    # hand formulas (R&W 2006 ch. 4; GPJax's parameterisations), ARD lengthscales
    rng = np.random.default_rng(3)
    X1, X2 = rng.uniform(size=(5, 2)), rng.uniform(size=(4, 2))
    ls = np.array([0.4, 0.9])
    spec = {"kernel": part, "weight": 0.7, "lengthscale": ls.tolist()}
    spec.update({"alpha": 1.5, "power": 1.3, "period": [0.6, 0.8]})
    spec = {k: v for k, v in spec.items() if k in ("kernel", "weight", *KERNEL_PARTS[part])}
    K = np.asarray(kernel_matrix({"kernel_family": part, "parts": [spec]}, X1, X2))
    diff = X1[:, None, :] - X2[None, :, :]
    r = np.sqrt(np.sum((diff / ls) ** 2, axis=-1))
    expected = {
        "matern12": np.exp(-r),
        "matern52": (1 + np.sqrt(5) * r + 5 / 3 * r**2) * np.exp(-np.sqrt(5) * r),
        "rbf": np.exp(-0.5 * r**2),
        "rq": (1 + r**2 / (2 * 1.5)) ** -1.5,
        "powexp": np.exp(-(r**1.3)),
        "periodic": np.exp(
            -0.5 * np.sum((np.sin(np.pi * diff / np.array([0.6, 0.8])) / ls) ** 2, axis=-1)
        ),
    }[part]
    np.testing.assert_allclose(K, 0.7 * expected, rtol=1e-12, atol=1e-14)


def test_restart_zero_starts_from_the_documented_defaults() -> None:
    # lengthscales √d/2 (periodic: 1), periods 1, RQ α 1, power 1, arc-cosine variances 1,
    # equal part variances, noise 0.1 (+ the 1e-6 floor)
    d = 4
    parts = ("rq", "powexp", "periodic", "arccosine", "linear")
    with jax.enable_x64(True):
        theta = _init_theta(parts, d)
        specs, variances, noise = _constrain(theta, parts, (0, 0, 0, 2, 0))
    # key order fixes the order in which restarts draw their perturbations
    assert list(theta) == [
        "log_noise",
        "0.log_variance",
        "0.log_lengthscale",
        "0.log_alpha",
        "1.log_variance",
        "1.log_lengthscale",
        "1.logit_power",
        "2.log_variance",
        "2.log_lengthscale",
        "2.log_period",
        "3.log_variance",
        "3.log_weight_variance",
        "3.log_bias_variance",
        "4.log_variance",
    ]
    np.testing.assert_allclose(np.asarray(variances, dtype=float), 0.2, rtol=1e-15)
    assert float(noise) == pytest.approx(0.1 + 1e-6, rel=1e-15)
    np.testing.assert_allclose(specs[0]["lengthscale"], np.full(d, 1.0), rtol=1e-15)  # √4/2
    assert float(specs[0]["alpha"]) == 1.0 and float(specs[1]["power"]) == 1.0
    np.testing.assert_array_equal(specs[2]["lengthscale"], np.ones(d))
    np.testing.assert_array_equal(specs[2]["period"], np.ones(d))
    assert specs[3]["order"] == 2 and list(specs[3]) == [
        "kernel",
        "order",
        "weight_variance",
        "bias_variance",
    ]
    assert list(specs[4]) == ["kernel"]


def test_fit_records_restart_zero_defaults_as_initial() -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(30, 3))
    y = np.sin(4 * X[:, 0]) + 0.1 * rng.standard_normal(30)
    fit = fit_kernel(X, y, "matern32+linear", restarts=1, maxiter=5)
    init = fit.initial
    assert [p["weight"] for p in init["parts"]] == [0.5, 0.5]
    np.testing.assert_allclose(init["parts"][0]["lengthscale"], [np.sqrt(3) / 2] * 3, rtol=1e-14)
    assert init["total_variance"] == pytest.approx(1.0, rel=1e-14)
    assert init["noise_variance"] == pytest.approx(0.1 + 1e-6, rel=1e-14)


def test_jitter_ladder_starts_at_1e_10_and_multiplies_by_10() -> None:
    # [[1, 1], [1, 1]] is singular (second pivot exactly 0): no jitter fails, the first rung
    # 1e-10·mean(diag) works; a matrix needing more climbs by factors of 10
    A = np.ones((2, 2))
    L, jitter = chol_jitter(A, start=None)
    assert jitter == JITTER_START
    np.testing.assert_allclose(L @ L.T, A + jitter * np.eye(2), rtol=1e-15, atol=0)
    B = 4.0 * np.array([[1.0, 1.0], [1.0, 1.0 - 5e-8]])  # needs jitter ≳ 2.5e-8·mean(diag)
    L, jitter = chol_jitter(B, start=JITTER_START)
    assert jitter == pytest.approx(1e-7 * float(np.mean(np.diag(B))), rel=1e-12)
    # a well-conditioned matrix takes no jitter with start=None
    C = A + np.eye(2)
    L, jitter = chol_jitter(C, start=None)
    assert jitter == 0.0
    np.testing.assert_allclose(L, scipy.linalg.cholesky(C, lower=True), rtol=1e-14)


def test_jitter_ladder_gives_up_above_the_maximum() -> None:
    from udbench._validation import UdbenchError

    A = np.diag([1.0, -1.0])  # indefinite: no jitter up to 1e-4·mean(diag) helps
    with pytest.raises(UdbenchError, match=f"{JITTER_MAX:g}"):
        chol_jitter(A + 1.0, start=JITTER_START)


def test_triangular_product_equals_dense_product() -> None:
    rng = np.random.default_rng(1)
    L = np.tril(rng.standard_normal((6, 6)))
    z = rng.standard_normal((4, 6))
    np.testing.assert_allclose(tri_matmul_T(z, L), z @ L.T, rtol=1e-12, atol=1e-12)
