"""The hours-left column of ``udbench campaign status``: per unit, the mean CPU time of the
finished records of the same shape, else the unit's own estimate.

CPU time, not wall time: the units of a campaign run single-threaded at low priority beside
other work, where a unit's wall time grows with the load (HBART validation units: 0.3-1.0 of
their wall time on CPU) while its CPU time does not; the units' own estimates (calibrated fits,
sampler timings on an idle core) are CPU-like too, so the column is hours of one idle core.
A record without ``cpu_seconds`` counts with its wall seconds."""

from __future__ import annotations

import statistics
from typing import Any

from udbench.tuning._measured import record_cpu_seconds


def _shape_means(done: list[dict[str, Any]], clock: str = "cpu") -> dict[tuple[Any, ...], float]:
    """Mean CPU seconds (else wall seconds; ``clock="wall"``: wall seconds) of the finished
    records per shape (:func:`_shape`), made once per status call (per unit it was units ×
    records shape keys: 16 s on the runs folder)."""
    sums: dict[tuple[Any, ...], list[float]] = {}
    for r in done:
        if clock == "cpu" and _undercounted(r):
            continue  # a resumed sweep whose earlier trials' CPU is unknown: far too low
        acc = sums.setdefault(_shape(r["kind"], r["settings"]), [0.0, 0.0])
        cpu = record_cpu_seconds(r) if clock == "cpu" else None
        acc[0] += float(r["wall_seconds"] if cpu is None else cpu)
        acc[1] += 1
    return {key: total / n for key, (total, n) in sums.items()}


def _undercounted(record: dict[str, Any]) -> bool:
    """A tuning sweep resumed from its journal whose earlier trials' CPU is unknown (its
    record's CPU seconds time the last process only: up to 27x too little)."""
    from udbench.tuning._measured import sweep_cpu_seconds, sweep_resumed
    from udbench.tuning.shipped import CAMPAIGN_KIND

    res = record.get("result")
    if record.get("kind") != CAMPAIGN_KIND or not isinstance(res, dict):
        return False
    cpu, wall = record.get("cpu_seconds"), record.get("wall_seconds")
    return sweep_resumed(res, wall)[0] and sweep_cpu_seconds(res, cpu, wall) is None


#: Parts whose units are the same cells under another configuration (the runs campaign's
#: ``untuned`` and ``tuned`` cells of one method and instance): a part without finished
#: units of a shape is projected from the other's measured mean before its own estimate.
SIBLING_KINDS = {"untuned": "tuned", "tuned": "untuned"}
SIBLING_NOTE = "from the other part's mean"


def _estimate(unit: Any, means: dict[tuple[Any, ...], float]) -> tuple[float | None, str | None]:
    """Seconds for ``unit``: the mean of finished records of the same shape (``means``, from
    :func:`_shape_means`), else (runs campaign) the mean of the same cells' other part
    (:data:`SIBLING_KINDS`: the tuned cells of a method cost about what its untuned ones do,
    0.86-1.35x on gp-small's four methods finished in both parts on 2026-12-04, where the
    calibration table's figures were 1.0-2.9x below the NN methods' cells), else its own
    estimate; and the unit's note on that estimate (None for a measured mean)."""
    mean, note = _measured_mean(unit, means)
    if mean is not None:
        return mean, note
    return unit.estimate_seconds, unit.estimate_note


def _measured_mean(
    unit: Any, means: dict[tuple[Any, ...], float]
) -> tuple[float | None, str | None]:
    """The mean of ``unit``'s shape in ``means``, else of its sibling shape
    (:data:`SIBLING_KINDS`, noted :data:`SIBLING_NOTE`), else None."""
    if (mean := means.get(_shape(unit.kind, unit.settings))) is not None:
        return mean, None
    sibling = SIBLING_KINDS.get(unit.kind)
    if sibling is not None and (mean := means.get(_shape(sibling, unit.settings))) is not None:
        return mean, SIBLING_NOTE
    return None, None


def estimate_ratios(pairs: list[tuple[str, float, float]]) -> dict[str, tuple[float, int]]:
    """Per part: the finished units' measured CPU seconds over their own estimates (sum over
    sum, so the costly units weigh most), and how many units; from ``(kind, measured,
    estimated)`` triples of finished units with a positive estimate.

    ``udbench campaign status`` prints it beside the projection, which uses the estimates as
    they are: how far they are off differs by method (the runs campaign's finished NN cells:
    1.0-2.9x; the MCMC campaign's units: 0.7-0.9x), so one factor would not correct them."""
    sums: dict[str, list[float]] = {}
    for kind, measured, estimated in pairs:
        if estimated > 0:
            acc = sums.setdefault(kind, [0.0, 0.0, 0])
            acc[0] += measured
            acc[1] += estimated
            acc[2] += 1
    return {k: (m / e, int(n)) for k, (m, e, n) in sums.items()}


def _hours_left(row: dict[str, Any]) -> str:
    """The status table's hours-left cell: the projection, the units it could not project,
    and how many of its units' figures are guesses (never a bare 0 for unprojected work)."""
    if row["?"] and not row["left"]:
        text = "?"
    elif 0 < row["left"] < 0.05:  # work left that rounds to 0.0: never shown as none
        text = "< 0.1"
    else:
        text = f"{row['left']:.1f}"
    if row["?"]:
        text += f" + {row['?']} unmeasured"
    for note, n in sorted(row["notes"].items()):
        text += f" ({n} {note})"
    return text


def _shape(kind: str, settings: dict[str, Any]) -> tuple[Any, ...]:
    task = str(settings.get("task_id", ""))
    parts = task.split("__")
    dataset, family = (parts[0], parts[1]) if len(parts) > 1 else ("", "")
    return (
        kind,
        settings.get("layout"),
        settings.get("run"),
        dataset,
        family,
        settings.get("method"),
        settings.get("setting"),  # a BNN sweep's settings differ in cost 2x per tree depth
    )


def wall_projection(done: list[dict[str, Any]]) -> Any:
    """``projected(unit)`` for ``udbench campaign run --finish-within``: the mean wall seconds
    of the finished records of the unit's shape (on whatever machines and loads made them),
    else of its sibling shape's (:data:`SIBLING_KINDS`), else the unit's own estimate (CPU
    seconds of one thread) times the median wall / CPU ratio of the finished records (at least
    1; about 1.8 for the MCMC campaign's records on 2026-12-03: a unit's wall time grows with
    the load), else None. A resumed tuning sweep's
    record times its last process only, so it is left out of the per-shape means.
    """
    from udbench.tuning._measured import sweep_resumed
    from udbench.tuning.shipped import CAMPAIGN_KIND

    whole = [
        r
        for r in done
        if r.get("kind") != CAMPAIGN_KIND
        or not sweep_resumed(r.get("result") or {}, r.get("wall_seconds"))[0]
    ]
    means = _shape_means(whole, clock="wall")
    ratios = [
        float(r["wall_seconds"]) / float(r["cpu_seconds"])
        for r in done
        if isinstance(r.get("cpu_seconds"), int | float)
        and isinstance(r.get("wall_seconds"), int | float)
        and r["cpu_seconds"] > 0
    ]
    load = max(1.0, statistics.median(ratios)) if ratios else 1.0

    def projected(unit: Any) -> float | None:
        mean, _ = _measured_mean(unit, means)
        if mean is not None:
            return mean
        return None if unit.estimate_seconds is None else unit.estimate_seconds * load

    return projected
