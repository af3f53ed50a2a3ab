"""Bring your own covariates: a user's table becomes a dataset of the suite.

:func:`add_dataset` is what ``udbench datasets add`` runs: :func:`udbench.data.user.prepare_dataset`
(cleaning, feasibility, design), the GP kernel family (type-II maximum likelihood among the
SPEC's families when the table has a target,
:func:`udbench.priors.gp.fit.select_kernel_family`; else the stated default), and
:func:`udbench.data.user.write_dataset` (the data folder).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from udbench._seeding import derive_seed, make_rng
from udbench.data.registry import DatasetSpec
from udbench.data.user import (
    DEFAULT_KERNEL_FAMILY,
    prepare_dataset,
    spec_kernel_families,
    user_dataset_root,
    write_dataset,
)
from udbench.priors.base import Fidelity

__all__ = ["FIT_COST", "AddedDataset", "add_dataset"]

#: What the kernel-family fit costs on a 2-core CPU, per fidelity (measured with
#: ``benchmarks/bench_kernel_family.py``; docs/data.md, "Your own table").
FIT_COST: dict[str, str] = {
    "smoke": "about 2.5 minutes on an idle 2-core CPU (longer on a busy one)",
    "standard": "minutes per family on a 2-core CPU, tens of minutes or more for all",
    "paper": "minutes per family on a 2-core CPU, tens of minutes or more for all",
}


@dataclass(frozen=True)
class AddedDataset:
    """What :func:`add_dataset` registered.

    Attributes
    ----------
    spec : DatasetSpec
        The registry entry (``registry_file`` says where it lives).
    messages : tuple of str
        What cleaning and design did, and how the kernel family was chosen.
    warnings : tuple of str
        Things to look at (id-like columns, few rows per covariate).
    kernel_lml : dict of str to float
        Maximised log marginal likelihood of each candidate family (empty without a fit).
    """

    spec: DatasetSpec
    messages: tuple[str, ...]
    warnings: tuple[str, ...]
    kernel_lml: dict[str, float] = field(default_factory=dict)


def add_dataset(
    table: str | os.PathLike[str] | pd.DataFrame,
    name: str,
    *,
    target: str | None = None,
    drop: Sequence[str] = (),
    covariates: Sequence[str] | None = None,
    duplicates: str = "error",
    n_train: int | None = None,
    rho: float | None = None,
    kernel_family: str | None = None,
    fidelity: Fidelity | str = Fidelity.STANDARD,
    data_dir: str | os.PathLike[str] | None = None,
    force: bool = False,
    on_fit: Callable[[str], None] | None = None,
) -> AddedDataset:
    """Clean, check, design and register a user's table as dataset ``name``.

    Parameters
    ----------
    table, name, target, drop, covariates, duplicates, n_train, rho, force
        See :func:`udbench.data.user.prepare_dataset`.
    kernel_family : str, optional
        The GP kernel family (``+``-joined parts, e.g. ``"rq+linear"``). Default: with a
        ``target``, the family of SPEC §2's table
        (:func:`~udbench.data.user.spec_kernel_families`) with the largest maximised marginal
        likelihood on at most ``max_rows`` candidate rows (the rows and settings the GP
        prior's own fit uses at ``fidelity``); without one,
        :data:`~udbench.data.user.DEFAULT_KERNEL_FAMILY` (``rbf``). JAX is imported only
        when a family is fitted or checked.
    fidelity : Fidelity or str, default "standard"
        Fit settings of the family selection (``smoke``: 200 rows, 2 × 50 iterations).
    data_dir : path-like, optional
        The user's data folder (default ``$UDBENCH_DATA_DIR``; one of the two is required).
    on_fit : callable, optional
        Called with one line saying what is fitted and what it costs, just before the
        kernel-family fit starts (the only slow step; ``udbench datasets add`` prints it).

    Returns
    -------
    AddedDataset

    Raises
    ------
    UdbenchError
        No data folder; every error of :func:`~udbench.data.user.prepare_dataset`; an
        unknown kernel part.
    """
    user_dataset_root(data_dir)  # before any work: where it will be written
    fid = Fidelity.parse("udbench datasets add", fidelity)
    if kernel_family is not None:
        from udbench.priors.gp.kernels import parse_kernel_family

        parse_kernel_family(kernel_family)
    prepared = prepare_dataset(
        table,
        name,
        target=target,
        drop=drop,
        covariates=covariates,
        duplicates=duplicates,
        n_train=n_train,
        rho=rho,
        data_dir=data_dir,
        force=force,
    )
    messages = list(prepared.messages)
    lml: dict[str, float] = {}
    if kernel_family is not None:
        family, rule = kernel_family, "given (--kernel)"
    elif prepared.spec.target:
        from udbench.priors.gp.fit import FIT_SETTINGS, select_kernel_family

        settings = FIT_SETTINGS[fid.value]
        cand = np.asarray(prepared.cand_idx)
        rng = make_rng("gp-fit-rows", name)  # the rows the GP prior's fit uses
        rows = np.sort(rng.choice(cand, size=min(settings["max_rows"], cand.size), replace=False))
        if on_fit is not None:
            on_fit(
                f"fitting the GP kernel family to {prepared.spec.target!r}: "
                f"{len(spec_kernel_families())} families by marginal likelihood on {rows.size} "
                f"rows ({fid.value} settings: {settings['restarts']} starts × "
                f"{settings['maxiter']} iterations); {FIT_COST[fid.value]} (docs/data.md); "
                "--kernel FAMILY skips the fit"
            )
        family, lml = select_kernel_family(
            prepared.X[rows],
            prepared.y_real[rows],
            spec_kernel_families(),
            seed=derive_seed("gp-fit", name),
            restarts=settings["restarts"],
            maxiter=settings["maxiter"],
        )
        rule = (
            f"largest maximised log marginal likelihood among SPEC's families "
            f"({fid.value} fit settings, {rows.size} rows)"
        )
    else:
        family, rule = DEFAULT_KERNEL_FAMILY, "default (no target column to fit)"
    messages.append(f"GP kernel family: {family} ({rule})")
    spec = write_dataset(
        prepared, family, kernel_rule=rule, kernel_lml=lml or None, data_dir=data_dir
    )
    messages.append(f"registered {spec.key!r} in {spec.registry_file}")
    return AddedDataset(spec, tuple(messages), prepared.warnings, lml)
