"""Running batches of independent jobs: inline, on a local Dask cluster, a scheduler or a
cluster file (:mod:`~udbench.execution.executor`, :mod:`~udbench.execution.cluster`), each
job optionally in a child process of its worker (:mod:`~udbench.execution.isolation`).

A low layer (it imports only the ground modules), so that task generation
(:func:`udbench.tasks.grid.generate_grid`), the run loop (:mod:`udbench.evaluation.runner`)
and the tuning driver all use the one executor without reaching up.
"""

from __future__ import annotations

from udbench.execution.executor import (
    DASK_LOG_NAME,
    Executor,
    Failed,
    JobPool,
    call_with_timeout,
    worker_address,
)

__all__ = [
    "DASK_LOG_NAME",
    "Executor",
    "Failed",
    "JobPool",
    "call_with_timeout",
    "worker_address",
]
