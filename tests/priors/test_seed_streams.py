"""The one rule for seed streams and the prior key, written in the Prior protocol
(``udbench.priors.base``), followed by all three families (issue 12 item 4)."""

from __future__ import annotations

import numpy as np

from udbench._seeding import derive_seed
from udbench.priors.base import call_seed
from udbench.priors.bnn import BNNPrior
from udbench.priors.gp import GPPrior
from udbench.priors.hbart import HBARTPrior

HYPER = {
    "kernel_family": "matern32",
    "parts": [{"kernel": "matern32", "weight": 1.0, "lengthscale": [1.0, 1.0]}],
}


def test_call_seed_rule() -> None:
    assert call_seed("hbart", "prior", 7) == derive_seed("hbart-prior", 7)
    assert call_seed("bnn", "mcmc", 7, bits=32) == derive_seed("bnn-mcmc", 7, bits=32)
    assert call_seed("bnn", "mcmc", 7, bits=32) < 2**32
    assert call_seed("gp", None, 7) == 7  # the direct rule
    assert call_seed("hbart", "prior", 7) != call_seed("hbart", "mcmc", 7)


def test_each_family_follows_the_call_stream_rule() -> None:
    hb = HBARTPrior(1.0, "smoke")
    np.testing.assert_array_equal(
        hb._prior_rng(11).standard_normal(4),
        np.random.default_rng(derive_seed("hbart-prior", 11)).standard_normal(4),
    )
    assert hb._sampler_seed(11) == derive_seed("hbart-mcmc", 11, bits=hb.seed_bits)
    bn = BNNPrior(np.zeros((3, 2)), 1.0, "smoke")
    np.testing.assert_array_equal(
        bn._prior_rng(11).standard_normal(4),
        np.random.default_rng(derive_seed("bnn-prior", 11)).standard_normal(4),
    )
    assert bn._sampler_seed(11) == derive_seed("bnn-mcmc", 11, bits=32)
    # GP: key seeds its one stream of normals directly; draws are z @ Lᵀ with L = chol(K)
    gp = GPPrior(HYPER, scale=1.0)
    X = np.array([[0.0, 0.0], [0.5, 0.1], [1.0, -0.3]])
    z = np.random.default_rng(11).standard_normal((2, 3))
    L = np.linalg.cholesky(gp.covariance(X) + 1e-10 * np.eye(3))
    np.testing.assert_allclose(gp.sample(X, 11, 2), z @ L.T, rtol=1e-6, atol=1e-6)
