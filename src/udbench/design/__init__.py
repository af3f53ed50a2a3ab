"""Task design (SPEC §3–§4): noise models and coverage scenarios on top of the covariates."""

from udbench.design.coverage import (
    COVERAGE_SHARES,
    COVERAGES,
    select_training_inputs,
    shell_quotas,
)
from udbench.design.noise import NOISE_MODES, NoiseModel

__all__ = [
    "COVERAGES",
    "COVERAGE_SHARES",
    "NOISE_MODES",
    "NoiseModel",
    "select_training_inputs",
    "shell_quotas",
]
