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
from udbench.priors.diagnostics import (
    RHAT_NOT_A_GATE,
    RHAT_THRESHOLD,
    acceptance,
    batch_means_mcse_var,
    is_accepted,
    rhat_gates,
)
from udbench.priors.validation import (
    COVERAGE_CHANGE_MAX,
    MCMC_FAMILIES,
    RUNS,
    SD_CHANGE_MEDIAN_MAX,
    WARMUP_FACTOR,
    decode_run,
    encode_run,
    load_validation,
    protocol_issues,
    record_path,
    save_validation,
    summarise_instance,
    summarise_run,
    validation_summary,
    warmup_figures,
    warmup_verdict,
)

__all__ = [
    "COVERAGE_CHANGE_MAX",
    "DEFAULT_FIDELITY",
    "MCMC_FAMILIES",
    "PRIOR_FAMILIES",
    "RHAT_NOT_A_GATE",
    "RHAT_THRESHOLD",
    "RUNS",
    "SD_CHANGE_MEDIAN_MAX",
    "WARMUP_FACTOR",
    "Fidelity",
    "Posterior",
    "Prior",
    "acceptance",
    "batch_means_mcse_var",
    "decode_run",
    "encode_run",
    "is_accepted",
    "list_prior_families",
    "load_validation",
    "make_prior",
    "protocol_issues",
    "record_path",
    "rhat_gates",
    "save_validation",
    "scale_from_unit_draws",
    "summarise_instance",
    "summarise_run",
    "validation_summary",
    "warmup_figures",
    "warmup_verdict",
]
