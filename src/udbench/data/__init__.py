"""The covariate suite (SPEC §2–§3): dataset registry, sources, cleaning, geometry, split.

Public API: :class:`DatasetSpec`, :func:`list_datasets`, :func:`get_dataset_spec`,
:func:`load_covariates`, :class:`Covariates`, :func:`download_dataset`, :func:`availability`,
:func:`prepare_dataset` and :func:`write_dataset` (a user's table, ``udbench datasets add``).

Names load on first use (``lazy_loader``): ``udbench datasets`` lists the registry without
importing pandas or scikit-learn.
"""

from typing import TYPE_CHECKING

import lazy_loader as _lazy

__getattr__, __dir__, _names = _lazy.attach(
    __name__,
    submod_attrs={
        "cleaning": ["clean_table", "normalise_name"],
        "covariates": ["Covariates", "load_covariates"],
        "geometry": ["N_SHELLS", "SHELL_SHRINKAGE", "CovariateGeometry", "largest_remainder"],
        "registry": ["DatasetSpec", "get_dataset_spec", "list_datasets"],
        "sources": ["availability", "cache_dir", "download_dataset"],
        "user": ["prepare_dataset", "write_dataset"],
    },
)

if TYPE_CHECKING:  # the same names, for type checkers
    from udbench.data.cleaning import clean_table, normalise_name
    from udbench.data.covariates import Covariates, load_covariates
    from udbench.data.geometry import (
        N_SHELLS,
        SHELL_SHRINKAGE,
        CovariateGeometry,
        largest_remainder,
    )
    from udbench.data.registry import DatasetSpec, get_dataset_spec, list_datasets
    from udbench.data.sources import availability, cache_dir, download_dataset
    from udbench.data.user import prepare_dataset, write_dataset

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
    "prepare_dataset",
    "write_dataset",
]
