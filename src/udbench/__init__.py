"""udbench: ground-truth benchmark for aleatoric and epistemic uncertainty in regression.

Real tabular covariates get synthetic targets drawn from a known prior plus known
heteroscedastic noise; conditioning the same prior on the training sample gives a
reference posterior that is correct by construction, so every evaluation point has
oracle aleatoric (AU*) and epistemic (EU*, posterior excess risk) targets.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("udbench")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0+unknown"

__all__ = ["__version__"]
