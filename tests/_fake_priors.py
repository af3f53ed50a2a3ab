"""A fake MCMC prior with a warm-up, for the preset-validation and campaign tests.

Kept out of :mod:`_fakes`: importing the GP prior imports GPJax, which creates JAX's
backends, and ``_fakes`` is imported by CLI runs (``-m _fakes:...``) that must still fix
XLA's thread pool themselves.
"""

from __future__ import annotations

import copy
import dataclasses

from udbench._seeding import derive_seed
from udbench.priors import FAMILY_CAPABILITIES, Posterior
from udbench.priors.gp import GPPrior as _GPPrior

WARMUP_HYPER = {
    "kernel_family": "matern32",
    "parts": [{"kernel": "matern32", "weight": 1.0, "lengthscale": [1.0] * 10}],
}


class FakeWarmupPrior(_GPPrior):
    """The exact GP posterior as an "MCMC" prior with a warm-up setting.

    ``mode="exact"``: draws from the exact posterior (new draws for every warm-up and key);
    ``"ignore"``: draws from the prior (they ignore the data); ``"wide"``: the exact
    posterior, but with the SD inflated by 30 % unless the warm-up is >= 400 (an
    unconverged preset)."""

    family = "hbart"
    capabilities = FAMILY_CAPABILITIES["hbart"]  # an MCMC family's, not the GP's it inherits

    def __init__(self, mode: str, n_warmup: int = 100) -> None:
        super().__init__(WARMUP_HYPER, scale=1.0)
        self.mode, self.n_warmup = mode, n_warmup

    @property
    def sampler_settings(self) -> dict:
        return {"n_chains": 1, "n_warmup": self.n_warmup}

    def with_sampler_overrides(self, overrides: dict) -> FakeWarmupPrior:
        twin = copy.copy(self)
        twin.n_warmup = int(overrides["n_warmup"])
        return twin

    def condition(self, X_train, y, noise_var_train, X_eval, key, n_draws):
        k = derive_seed("fake", key, self.n_warmup)
        if self.mode == "ignore":
            return Posterior(draws_eval=self.sample(X_eval, k, n_draws))
        post = super().condition(X_train, y, noise_var_train, X_eval, k, n_draws)
        draws = post.draws_eval
        if self.mode == "wide" and self.n_warmup < 400:
            draws = post.mean + 1.3 * (draws - post.mean)
        return dataclasses.replace(post, draws_eval=draws, mean=None, var=None)
