"""Task design (SPEC §3–§4): noise models and coverage scenarios on top of the covariates."""

from udbench.design.coverage import (
    COVERAGE_SHARES,
    COVERAGE_TABLE,
    COVERAGES,
    Coverage,
    select_training_inputs,
    shell_quotas,
)
from udbench.design.noise import (
    ALL_NOISE_MODES,
    NOISE_MODE_TABLE,
    NOISE_MODES,
    STUDENT_T_DF,
    NoiseMode,
    NoiseModel,
    get_noise_mode,
    unit_noise,
)

__all__ = [
    "ALL_NOISE_MODES",
    "COVERAGES",
    "COVERAGE_SHARES",
    "COVERAGE_TABLE",
    "NOISE_MODES",
    "NOISE_MODE_TABLE",
    "STUDENT_T_DF",
    "Coverage",
    "NoiseMode",
    "NoiseModel",
    "get_noise_mode",
    "select_training_inputs",
    "shell_quotas",
    "unit_noise",
]
