"""The task grid selected by the options of ``udbench generate`` (and ``udbench plan``)."""

from __future__ import annotations

from typing import Any

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
    from udbench.data import list_datasets
    from udbench.design import ALL_NOISE_MODES, COVERAGES, NOISE_MODES
    from udbench.priors import PRIOR_FAMILIES
    from udbench.tasks import TaskSpec

    designed = [s for s in list_datasets(include_ood=False, data_dir=data_dir)]
    keys = [s.key for s in designed]
    if datasets.strip().lower() == "all":
        ds = [s.key for s in designed if s.source in ("uci", "openml")]
    else:
        ds = parse_choice_list("generate", "datasets", datasets, keys)
    fams = parse_choice_list("generate", "families", families, list(PRIOR_FAMILIES))
    # 'all' is the grid of SPEC §4; a mode outside it (student-t) is generated when named
    if noise.strip().lower() == "all":
        modes = list(NOISE_MODES)
    else:
        modes = parse_choice_list("generate", "noise", noise, list(ALL_NOISE_MODES))
    covs = parse_choice_list("generate", "coverage", coverage, list(COVERAGES))
    fid = Fidelity.parse("generate", fidelity)
    return [
        TaskSpec(d, f, m, c, s, fidelity=fid, n_draws=draws)
        for d in ds
        for f in fams
        for m in modes
        for c in covs
        for s in parse_seeds(seeds)
    ]
