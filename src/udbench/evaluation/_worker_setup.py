"""Dask worker preload of udbench's local workers: Ctrl-C is the driver's to handle.

A terminal's Ctrl-C sends SIGINT to every process of the foreground group: the driver, the
local workers and their cell processes. Left alone, each worker prints its own traceback
(dozens of lines) and dies mid-cell while the driver is still shutting the cluster down in
order. Workers started by :func:`udbench.evaluation.cluster.dask_client` load this module
(``preload``): it ignores SIGINT in the worker process, and the cell processes it starts
inherit that (an ignored signal stays ignored across fork and exec, and Python installs its
KeyboardInterrupt handler only where SIGINT is not ignored). The driver then stops the run,
closes the cluster (which ends the workers) and prints one line.
"""

from __future__ import annotations

import signal
from typing import Any

__all__ = ["dask_setup"]


def dask_setup(worker: Any) -> None:
    """Ignore SIGINT in this worker process (Dask calls it when the worker starts)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
