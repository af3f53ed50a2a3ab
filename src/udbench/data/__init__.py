"""The covariate suite (SPEC §2–§3): dataset registry, sources, cleaning, geometry, split.

Public API: :class:`DatasetSpec`, :func:`list_datasets`, :func:`get_dataset_spec`,
:func:`load_covariates`, :class:`Covariates`, :func:`download_dataset`, :func:`availability`.
"""

from udbench.data.cleaning import clean_table, normalise_name
from udbench.data.covariates import Covariates, load_covariates
from udbench.data.geometry import N_SHELLS, SHELL_SHRINKAGE, CovariateGeometry, largest_remainder
from udbench.data.registry import DatasetSpec, get_dataset_spec, list_datasets
from udbench.data.sources import availability, cache_dir, download_dataset

__all__ = [
    "N_SHELLS",
    "SHELL_SHRINKAGE",
    "CovariateGeometry",
    "Covariates",
    "DatasetSpec",
    "availability",
    "cache_dir",
    "clean_table",
    "download_dataset",
    "get_dataset_spec",
    "largest_remainder",
    "list_datasets",
    "load_covariates",
    "normalise_name",
]
