"""The task grid selected by the options of ``udbench generate`` (and ``udbench plan``)."""

from __future__ import annotations

import importlib
from typing import Any

from udbench._validation import check_int, param_error
from udbench.commands._options import parse_choice_list, parse_seeds
from udbench.priors.base import Fidelity

__all__ = ["expand_grid"]


def expand_grid(
    datasets: str,
    families: str,
    noise: str,
    coverage: str,
    seeds: str,
    fidelity: Fidelity | str,
    draws: int,
    data_dir: str | None = None,
) -> list[Any]:
    """The list of :class:`~udbench.tasks.TaskSpec` selected by the CLI's options.

    ``all`` noise modes means the four of SPEC §4 (``student-t`` only when named).
    ``all`` datasets means the paper's suite (SPEC §2: every dataset with a task design,
    except the embedded ``diabetes`` default and the user's datasets of ``data_dir``
    (default ``$UDBENCH_DATA_DIR``), which must be named).
    """
    from udbench.priors import MCMC_FAMILIES, PRIOR_FAMILIES
    from udbench.tasks.spec import MAX_DRAWS, MIN_DRAWS

    # the options that need no data tables first (pandas, SciPy), and never JAX
    seed_list = parse_seeds(seeds)
    fams = parse_choice_list("generate", "families", families, list(PRIOR_FAMILIES))
    fid = Fidelity.parse("generate", fidelity)
    check_int("generate", "--draws", draws, minimum=MIN_DRAWS, maximum=MAX_DRAWS)
    for family in fams:
        if family not in MCMC_FAMILIES:
            continue
        # D is chains × draws per chain: refused here, not by every instance after the
        # prior fit (the preset tables of the MCMC families import no JAX)
        presets = getattr(importlib.import_module(PRIOR_FAMILIES[family]), "FIDELITY_SETTINGS", {})
        chains = int((presets.get(fid.value) or {}).get("n_chains", 1))
        if draws % chains:
            raise param_error(
                "generate",
                "--draws",
                f"be a multiple of the {chains} chains of {family} at fidelity {fid.value}",
                draws,
            )
    from udbench.data import list_datasets
    from udbench.design import ALL_NOISE_MODES, COVERAGES, NOISE_MODES
    from udbench.tasks import TaskSpec

    designed = [s for s in list_datasets(include_ood=False, data_dir=data_dir)]
    keys = [s.key for s in designed]
    if datasets.strip().lower() == "all":
        ds = [s.key for s in designed if s.source in ("uci", "openml")]
    else:
        ds = parse_choice_list("generate", "datasets", datasets, keys)
    # 'all' is the grid of SPEC §4; a mode outside it (student-t) is generated when named
    if noise.strip().lower() == "all":
        modes = list(NOISE_MODES)
    else:
        modes = parse_choice_list("generate", "noise", noise, list(ALL_NOISE_MODES))
    covs = parse_choice_list("generate", "coverage", coverage, list(COVERAGES))
    return [
        TaskSpec(d, f, m, c, s, fidelity=fid, n_draws=draws)
        for d in ds
        for f in fams
        for m in modes
        for c in covs
        for s in seed_list
    ]
