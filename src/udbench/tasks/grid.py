"""A task grid from the generate options' text: datasets, families, noise modes, coverages
and seeds (``"all"``, comma lists, seed ranges) expanded into :class:`~udbench.tasks.TaskSpec`.

Shared by the CLI (``udbench generate``, ``plan``, ``suite``) and the campaigns; every value is
checked here, before any data table or JAX is loaded, with the one error template (the
command, the option, the rule and the value received).
"""

from __future__ import annotations

import importlib
from typing import Any

from udbench._validation import check_choice, check_int, param_error
from udbench.priors import Fidelity

__all__ = ["expand_grid", "parse_choice_list", "parse_seeds"]


def parse_seeds(text: str, all_seeds: int = 10, *, command: str = "generate") -> list[int]:
    """Parse ``"0-9"``, ``"0,3,5-7"`` or ``"all"`` (seeds 0..all_seeds-1) into sorted seeds.

    Parameters
    ----------
    text : str
        The value of ``--seeds``.
    all_seeds : int, default 10
        How many seeds ``"all"`` means (SPEC §6: seeds 0-9).
    command : str, default "generate"
        The command, as named in the message.

    Returns
    -------
    list of int
        Sorted distinct seeds, each in ``[0, REPLACEMENT_STRIDE)``.

    Raises
    ------
    UdbenchError
        A malformed item, a negative seed or an empty range (``5-3``), or a seed from
        ``REPLACEMENT_STRIDE`` on (reserved for seed replacements, SPEC §7).
    """
    if text.strip().lower() == "all":
        return list(range(all_seeds))
    from udbench.tasks.replacement import REPLACEMENT_STRIDE

    seeds: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        try:
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                if hi < lo or lo < 0:
                    raise ValueError
            else:
                lo = hi = int(part)
                if lo < 0:
                    raise ValueError
        except ValueError:
            raise param_error(
                command, "seeds", "be 'all', N, A-B or a comma list of those (>= 0)", text
            ) from None
        if hi >= REPLACEMENT_STRIDE:  # checked before the range is built ("0-99999999999")
            # seeds from REPLACEMENT_STRIDE on are reserved for replacements (SPEC §7)
            raise param_error(command, "seeds", f"be < {REPLACEMENT_STRIDE}", text)
        seeds.update(range(lo, hi + 1))
    return sorted(seeds)


def parse_choice_list(command: str, parameter: str, text: str, choices: list[str]) -> list[str]:
    """Parse a comma list of choices, or ``"all"`` (every choice, in the given order).

    Parameters
    ----------
    command, parameter : str
        Named in the message.
    text : str
        The option's value, e.g. ``"homoscedastic,smooth-monotone"``.
    choices : list of str
        The allowed values.

    Returns
    -------
    list of str
        The values named, in the order given.

    Raises
    ------
    UdbenchError
        An empty list or a value that is not one of ``choices``.
    """
    if text.strip().lower() == "all":
        return list(choices)
    values = [v.strip() for v in text.split(",") if v.strip()]
    if not values:
        raise param_error(command, parameter, f"be 'all' or a comma list of {choices}", text)
    for v in values:
        check_choice(command, parameter, v, choices)
    return values


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
