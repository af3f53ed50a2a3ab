"""Task design (SPEC §3–§4): noise models and coverage scenarios on top of the covariates.

:class:`~udbench.design.temperature.TemperatureModel` (the known temperature of a
classification task, docs/classification.md) is exported too, imported on first access:
its module imports the classification prior, and so JAX, which ``import udbench.design``
must not (the noise and coverage tables are read before any JAX is loaded).
"""

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from udbench.design.temperature import TemperatureModel

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
    "TemperatureModel",
    "get_noise_mode",
    "select_training_inputs",
    "shell_quotas",
    "unit_noise",
]


def __getattr__(name: str) -> Any:
    """``TemperatureModel``, imported on first access (module docstring)."""
    if name == "TemperatureModel":
        from udbench.design.temperature import TemperatureModel

        return TemperatureModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
