"""The generate options' text parsed into lists: seeds, choice lists and ``--classes``.

Each value is checked with the one error template (the command, the option, the rule and
the value received), before any data table or JAX is loaded. Used by
:func:`udbench.tasks.grid.expand_grid`, which re-exports :func:`parse_seeds` and
:func:`parse_choice_list`.
"""

from __future__ import annotations

from udbench._validation import check_choice, param_error
from udbench.priors import MAX_N_CLASSES


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


def _parse_classes(text: str) -> list[int]:
    """``--classes``: a comma list of K from 2 to
    :data:`~udbench.priors.base.MAX_N_CLASSES` (e.g. ``"2,3"``)."""
    rule = f"be a comma list of integers from 2 to {MAX_N_CLASSES}"
    values = [v.strip() for v in str(text).split(",") if v.strip()]
    out: list[int] = []
    for v in values:
        try:
            k = int(v)
        except ValueError:
            k = 0
        if not 2 <= k <= MAX_N_CLASSES:
            raise param_error("generate", "classes", rule, text)
        out.append(k)
    if not out:
        raise param_error("generate", "classes", rule, text)
    return out
