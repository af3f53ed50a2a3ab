"""The runs campaign's tuned configurations: per (method, condition), the shipped tuning
record's configuration that ``udbench run --tuned`` gives the cell
(:mod:`udbench.campaigns.runs`, the ``tuned`` part)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["TUNED_FROM", "tuned_configurations"]

#: Suites whose tuned cells take another suite's shipped records: the non-GP suites of issue 62
#: use the configuration tuned on the GP truth of the same dataset, noise mode and coverage
#: (a tuning transfer across truths, said wherever their tuned results are shown; the rows'
#: ``tuned_record`` names the GP condition).
TUNED_FROM: dict[str, str] = {"hbart-small": "gp-small", "bnn-small": "gp-small"}


def tuned_configurations(
    suite: str, methods: Sequence[Any], specs: Sequence[Any], records: str | Path | None = None
) -> tuple[dict[tuple[str, str], tuple[Any, dict[str, Any]]], list[str]]:
    """The tuned configuration of every (method, condition) with a usable shipped record.

    Parameters
    ----------
    suite : str
        The suite whose shipped records are read (for a suite of :data:`TUNED_FROM`, those of
        the suite it names, at each instance's GP condition).
    methods : sequence of MethodConfig
        The method configurations (the suite's, or those of ``--methods``).
    specs : sequence of TaskSpec
        The suite's instances.
    records : str or Path, optional
        Another records folder (default: :func:`udbench.tuning.shipped.shipped_folder`).

    Returns
    -------
    (chosen, waiting) : tuple
        ``chosen[(config hash, condition key)] = (tuned MethodConfig, row extras)``, as
        ``udbench run --tuned`` configures the cell; ``waiting``: per method, one line for
        its conditions without a record (or whose sweep failed) and one for those whose record
        is stale (:func:`udbench.tuning.records.shipped_staleness`), with how many; each
        condition waits alone, the method's other conditions are not held back.
    """
    import dataclasses

    from udbench.tuning.records import Condition, StaleRecordError, tuned_configurer
    from udbench.tuning.shipped import shipped_folder

    source = TUNED_FROM.get(suite, suite)
    folder = Path(records) if records is not None else shipped_folder(source)
    conditions = {
        Condition.of(s).key: (s if source == suite else dataclasses.replace(s, family="gp"))
        for s in specs
    }
    chosen: dict[tuple[str, str], tuple[Any, dict[str, Any]]] = {}
    waiting: list[str] = []
    for mc in methods:
        missing, stale = 0, []
        for key, spec in conditions.items():
            try:  # per condition: a stale record holds back its own condition's cells only
                configure = tuned_configurer(
                    folder,
                    [mc],
                    [spec],
                    fallback="default",
                    shipped=source,
                    command="campaign runs",
                )
            except StaleRecordError as err:
                stale.append(
                    f"record {err.record} is stale ({err.why}); re-tune it (udbench campaign run "
                    f"tuning --suite {source} --methods {mc.name})"
                )
                continue
            tuned, extra = configure(spec, mc)
            if extra.get("tuned_record") is None:
                missing += 1
            else:
                chosen[(mc.config_hash, key)] = (tuned, extra)
        if missing:
            waiting.append(
                f"{mc.name}: {missing} of {len(conditions)} conditions wait for a tuning record"
            )
        if stale:
            waiting.append(
                f"{mc.name}: {len(stale)} of {len(conditions)} conditions wait for a stale "
                f"record to be re-tuned ({stale[0]}{'; …' if len(stale) > 1 else ''})"
            )
    return chosen, waiting
