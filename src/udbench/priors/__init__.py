"""Reference prior families Π₀ over ground-truth functions (SPEC §5).

See :mod:`udbench.priors.base` for the protocol every family implements.
"""

from udbench.priors.base import (
    DEFAULT_FIDELITY,
    PRIOR_FAMILIES,
    Fidelity,
    Posterior,
    Prior,
    list_prior_families,
    make_prior,
    scale_from_unit_draws,
)

__all__ = [
    "DEFAULT_FIDELITY",
    "PRIOR_FAMILIES",
    "Fidelity",
    "Posterior",
    "Prior",
    "list_prior_families",
    "make_prior",
    "scale_from_unit_draws",
]
