"""Campaigns: long work as resumable units with small committed records.

:mod:`udbench.campaigns.engine` runs units and keeps their records (resume, numerics
versions, stale and failed records, one writer per unit); :mod:`udbench.campaigns.mcmc`
is the MCMC reference-posterior campaign (BNN NUTS settings, HBART preset validation at full
size, the multi-family task set); :mod:`udbench.campaigns.tuning` the tuning campaign (SPEC
§9's sweeps of a suite, whose records are udbench's shipped tuned configurations);
:mod:`udbench.campaigns.classification` the classification campaign (the reference
posteriors' checks over the ``clf-small`` instances, and its (instance, classifier) cells);
:mod:`udbench.campaigns.runs` the suite-run campaign (a regression suite's cells with default
and with shipped tuned configurations: the tuned leaderboard). ``udbench campaign`` is the
command line.
"""

from udbench.campaigns.engine import (
    Unit,
    UnitFailed,
    current_records,
    load_done_records,
    read_record,
    record_file,
    run_campaign,
    unit_status,
)

__all__ = [
    "Unit",
    "UnitFailed",
    "current_records",
    "load_done_records",
    "read_record",
    "record_file",
    "run_campaign",
    "unit_status",
]
