"""Task design (SPEC §3–§4): noise models and coverage scenarios on top of the covariates."""

from udbench.design.coverage import (
    COVERAGE_SHARES,
    COVERAGE_TABLE,
    COVERAGES,
    Coverage,
    select_training_inputs,
    shell_quotas,
)
from udbench.design.noise import NOISE_MODE_TABLE, NOISE_MODES, NoiseMode, NoiseModel

__all__ = [
    "COVERAGES",
    "COVERAGE_SHARES",
    "COVERAGE_TABLE",
    "NOISE_MODES",
    "NOISE_MODE_TABLE",
    "Coverage",
    "NoiseMode",
    "NoiseModel",
    "select_training_inputs",
    "shell_quotas",
]
