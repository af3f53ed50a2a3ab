"""The Gaussian-process reference prior family (SPEC §5), in four modules:

- :mod:`~udbench.priors.gp.kernels`: the kernel parts (one table row per part) and the
  unit-kernel matrix;
- :mod:`~udbench.priors.gp.fit`: the marginal-likelihood fit of the kernel's hyperparameters;
- :mod:`~udbench.priors.gp.linalg`: the dense linear algebra (SciPy's LAPACK on CPU, JAX on
  an accelerator) and the jitter rule;
- :mod:`~udbench.priors.gp.prior`: :class:`GPPrior` (exact conditioning, Matheron draws) and
  :func:`build_prior` (cached fit and scale constant for one dataset).

``build_prior(cov, fidelity)`` is the family's entry in
:data:`udbench.priors.base.PRIOR_FAMILIES`.
"""

from udbench.priors.gp.fit import FIT_SETTINGS, KernelFit, fit_kernel, log_marginal_likelihood
from udbench.priors.gp.kernels import KERNEL_PARTS, kernel_matrix, parse_kernel_family
from udbench.priors.gp.prior import PRIOR_CLASS, GPPrior, build_prior, fit_cache_path

__all__ = [
    "FIT_SETTINGS",
    "KERNEL_PARTS",
    "PRIOR_CLASS",
    "GPPrior",
    "KernelFit",
    "build_prior",
    "fit_cache_path",
    "fit_kernel",
    "kernel_matrix",
    "log_marginal_likelihood",
    "parse_kernel_family",
]
