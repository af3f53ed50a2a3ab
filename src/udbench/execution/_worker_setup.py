"""Dask worker preload of udbench's local workers: Ctrl-C is the driver's, logs go to a file.

A terminal's Ctrl-C sends SIGINT to every process of the foreground group: the driver, the
local workers and their cell processes. Left alone, each worker prints its own traceback
(dozens of lines) and dies mid-cell while the driver is still shutting the cluster down in
order. Workers started by :func:`udbench.execution.cluster.dask_client` load this module
(``preload``): it ignores SIGINT in the worker process, and the cell processes it starts
inherit that (an ignored signal stays ignored across fork and exec, and Python installs its
KeyboardInterrupt handler only where SIGINT is not ignored). The driver then stops the run,
closes the cluster (which ends the workers) and prints one line.

When the driver names a log file (environment variable :data:`LOG_ENV`, set for the workers
by ``dask_client(log_file=...)``), the worker's Dask, Tornado and asyncio log records go to
that file instead of the terminal (a heartbeat that timed out under load, with its
traceback, is Dask's business, not the user's): :func:`log_to_file`, run as the module is
imported, before the worker logs its start.
"""

from __future__ import annotations

import logging
import os
import signal
from typing import Any

__all__ = ["DASK_LOGGERS", "LOG_ENV", "dask_setup", "log_to_file"]

#: Environment variable naming the log file of the workers' (and scheduler's) log records.
LOG_ENV = "UDBENCH_DASK_LOG"
#: Loggers whose records go to the log file (Dask configures a stderr handler on the first
#: three; asyncio's records reach the last-resort stderr handler otherwise).
DASK_LOGGERS: tuple[str, ...] = ("distributed", "tornado", "bokeh", "asyncio")
_FORMAT = "%(asctime)s - %(process)d - %(name)s - %(levelname)s - %(message)s"


def log_to_file(path: str | os.PathLike[str]) -> logging.Handler:
    """Send :data:`DASK_LOGGERS`' records (INFO and up) to ``path`` instead of stderr.

    Their handlers that write to a terminal stream are removed (not closed) and one file
    handler (append mode, so several processes can share the file) is added to each; the
    loggers stop propagating to the root logger.

    Returns
    -------
    logging.Handler
        The file handler (close it and give the removed handlers back to undo; see
        :func:`udbench.execution.cluster.dask_logs_to`).
    """
    handler = logging.FileHandler(os.fspath(path), mode="a", encoding="utf-8", delay=True)
    handler.setFormatter(logging.Formatter(_FORMAT))
    handler.setLevel(logging.INFO)
    for name in DASK_LOGGERS:
        log = logging.getLogger(name)
        for h in list(log.handlers):
            if type(h) is logging.StreamHandler:  # stderr / stdout, not a file of the user's
                log.removeHandler(h)
        log.addHandler(handler)
        log.propagate = False
    return handler


_CONFIGURED = False


def _log_from_env() -> None:
    global _CONFIGURED
    path = os.environ.get(LOG_ENV)
    if path and not _CONFIGURED:
        log_to_file(path)
        _CONFIGURED = True


def dask_setup(worker: Any) -> None:
    """Ignore SIGINT in this worker process (Dask calls it when the worker starts)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _log_from_env()


_log_from_env()  # a preload is imported while the worker is built, before it logs its start
