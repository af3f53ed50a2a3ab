"""``udbench campaign run --workers N``: N runs of one campaign started together.

Each worker is a separate ``udbench campaign run`` process with the same options (one unit at
a time, one XLA thread, ``--nice``), so the runs share the campaign's units through their
claims (:mod:`udbench.campaigns._claims`) exactly as runs started by hand do
(docs/campaigns.md, "More than one core"). This module builds their command lines, starts
them, prefixes their output lines with ``[k]``, passes a stop signal on, combines their exit
statuses, and (in each worker) ends the worker when the command that started it is gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "PARENT_ENV",
    "WORKER_OPTIONS",
    "combined_status",
    "run_workers",
    "split_units",
    "start_workers",
    "watch_parent",
    "worker_commands",
    "workers_line",
]


#: ``campaign run``'s options (Python names) that each worker is given, by their flags.
_FLAGS = {
    "parts": "--parts", "layouts": "--layouts", "suite": "--suite", "methods": "--methods",
    "pruner": "--pruner", "trials": "--trials", "records": "--records", "work": "--work",
    "max_hours": "--max-hours", "finish_within": "--finish-within", "nice": "--nice",
    "unit_timeout": "--unit-timeout",
    "data_dir": "--data-dir", "only": "--only",
}  # fmt: skip
#: The names :func:`worker_commands` reads from ``options``.
WORKER_OPTIONS = frozenset({"campaign", "max_units", *_FLAGS})


def split_units(max_units: int | None, workers: int) -> list[int | None]:
    """Each worker's share of ``--max-units``: ``max_units`` in all, as even as possible.

    Parameters
    ----------
    max_units : int or None
        The whole command's cap on units run (None: no cap).
    workers : int
        Number of runs started, >= 1.

    Returns
    -------
    list of (int or None)
        One cap per worker (None each when ``max_units`` is None). A worker whose share is
        0 is not started: ``--max-units 1 --workers 4`` runs one process.
    """
    if max_units is None:
        return [None] * workers
    base, extra = divmod(max_units, workers)
    return [base + (1 if k < extra else 0) for k in range(workers)]


def worker_commands(
    options: dict[str, Any], workers: int, elapsed_s: float = 0.0
) -> list[list[str]]:
    """The argument lists (after ``udbench``) of the ``workers`` runs.

    Parameters
    ----------
    options : dict
        ``campaign run``'s options as parsed: ``campaign`` and every option by its Python
        name (``max_units``, ``finish_within``, ...); None means "not given".
    workers : int
        Number of runs, >= 2.
    elapsed_s : float
        Seconds since the command started (s): ``--max-hours`` and ``--finish-within``
        count from the command's start, so each worker gets what is left of them.

    Returns
    -------
    list of list of str
        One argument list per worker that has units to run (see :func:`split_units`), each
        without ``--workers``; paths made absolute.
    """
    hours_used = elapsed_s / 3600.0
    common = ["campaign", "run", str(options["campaign"])]
    for name, flag in _FLAGS.items():
        value = options.get(name)
        if value is None:
            continue
        if isinstance(value, Path):
            value = value.resolve()
        elif name in ("max_hours", "finish_within"):
            value = max(float(value) - hours_used, 1e-6)
        common += [flag, str(value)]
    out = []
    for share in split_units(options.get("max_units"), workers):
        if share == 0:
            continue
        out.append(common + ([] if share is None else ["--max-units", str(share)]))
    return out


def combined_status(statuses: Sequence[int]) -> int:
    """The exit status of the whole command from its workers' statuses.

    0 when every worker exited 0; 2 when one refused its input (a user error, the CLI's
    status 2); else 130 when one was interrupted (Ctrl-C, the CLI's status 130); else 124
    when one ended on a unit it hard-stopped (``--unit-timeout``:
    :data:`udbench.campaigns._timeout.HARD_STOP_STATUS`; the others went on); otherwise 1
    (a missing input, a crash, or a worker killed by a signal, whose status
    :mod:`subprocess` gives as ``-signum``).
    """
    if all(s == 0 for s in statuses):
        return 0
    for status in (2, 130, 124):
        if status in statuses:
            return status
    return 1


#: Environment variable through which a worker learns the process id of the command that
#: started it (:func:`watch_parent`).
PARENT_ENV = "UDBENCH_CAMPAIGN_PARENT"


def _pump(k: int, stream: Any, emit: Callable[[str], None], lock: threading.Lock) -> None:
    """Copy worker ``k``'s output lines to ``emit``, each prefixed with ``[k]``.

    Reads to the end even when ``emit`` fails (a closed pipe, a full disk): a pipe that is
    no longer read would block the worker once its buffer is full.
    """
    relay = True
    for line in iter(stream.readline, ""):
        if not relay:
            continue
        try:
            with lock:
                emit(f"[{k}] {line.rstrip()}")
        except Exception:  # the command's own output is gone: keep the worker unblocked
            relay = False
    stream.close()


def run_workers(
    commands: Sequence[Sequence[str]],
    emit: Callable[[str], None],
    executable: Sequence[str] | None = None,
) -> list[int]:
    """Start one process per argument list, relay their output, wait for all of them.

    Parameters
    ----------
    commands : sequence of sequence of str
        Argument lists after ``udbench`` (:func:`worker_commands`).
    emit : callable
        Called with each output line, prefixed ``[k]`` (k = 1..N), stdout and stderr merged.
    executable : sequence of str, optional
        The command that runs udbench (default: this Python, ``-m udbench``).

    Returns
    -------
    list of int
        The exit statuses of the workers started, in order (negative: killed by that
        signal).

    Notes
    -----
    On POSIX each worker runs in a process group of its own, so a Ctrl-C at the terminal
    reaches this process only, once. A SIGTERM or SIGINT to this process is passed on to
    the workers, and no further worker is started; a worker stops as a killed run does (the
    unit in progress leaves no record; its claim is released, the claim file stays until a
    later run removes it). Each worker is given this process's id (:data:`PARENT_ENV`) and
    ends itself when this process is gone, however it ended (:func:`watch_parent`).
    """
    base = list(executable) if executable is not None else [sys.executable, "-m", "udbench"]
    env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="200")
    env[PARENT_ENV] = str(os.getpid())
    own_group: dict[str, Any] = {"process_group": 0} if os.name == "posix" else {}
    procs: list[subprocess.Popen[str]] = []
    lock = threading.Lock()
    pumps = []
    stopping: list[int] = []

    def forward(signum: int, frame: Any) -> None:
        stopping.append(signum)
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signum)

    main_thread = threading.current_thread() is threading.main_thread()
    old = {}
    if main_thread:
        old = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        for k, args in enumerate(commands, start=1):
            if stopping:  # stopped while the workers were being started
                break
            proc = subprocess.Popen(
                [*base, *args],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
                env=env,
                **own_group,
            )
            procs.append(proc)
            pump = threading.Thread(target=_pump, args=(k, proc.stdout, emit, lock), daemon=True)
            pump.start()
            pumps.append(pump)
        statuses = [proc.wait() for proc in procs]
        for pump in pumps:
            pump.join()
    finally:
        for proc in procs:  # an error here (e.g. a worker could not be started) ends them all
            if proc.poll() is None:
                proc.terminate()
                proc.wait()
        for s, handler in old.items():
            signal.signal(s, handler)
    return statuses


def watch_parent(interval_s: float = 2.0) -> None:
    """In a worker of ``--workers``: end this process (SIGTERM to itself) when the command
    that started it is gone, checked every ``interval_s`` seconds by a daemon thread.

    Does nothing in a run started otherwise (no :data:`PARENT_ENV`). The variable is
    removed from this process's environment, so processes it starts do not inherit it.
    A worker ends as a killed run does: its unit in progress leaves no record. Without
    this, a worker whose command was killed (SIGKILL) would run on with nobody reading its
    output, and the first line it wrote would end it anyway.
    """
    value = os.environ.pop(PARENT_ENV, None)
    if not value:
        return
    parent = int(value)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval_s)
        os.kill(os.getpid(), signal.SIGTERM)

    if os.getppid() != parent:  # gone before this worker got here
        os.kill(os.getpid(), signal.SIGTERM)
    threading.Thread(target=watch, name="udbench-watch-parent", daemon=True).start()


def workers_line(statuses: Sequence[int]) -> str:
    """One line on how the workers ended, for the end of the command's output."""
    shown = ", ".join(str(s) if s >= 0 else f"killed by signal {-s}" for s in statuses)
    return f"{len(statuses)} worker run(s) ended, exit status {shown}"


def start_workers(options: dict[str, Any], workers: int, elapsed_s: float) -> int:
    """Run ``campaign run`` as ``workers`` processes (``--workers``); return the exit status.

    Parameters
    ----------
    options : dict
        ``campaign run``'s parsed options (:data:`WORKER_OPTIONS`).
    workers : int
        Number of runs, >= 2.
    elapsed_s : float
        Seconds since the command started (s).

    Returns
    -------
    int
        :func:`combined_status` of the workers' exit statuses.
    """
    from udbench.commands._console import make_console

    console = make_console(highlight=False)
    commands = worker_commands(options, workers, elapsed_s)

    def emit(line: str) -> None:
        console.print(line, markup=False, soft_wrap=True)

    statuses = run_workers(commands, emit)
    console.print(workers_line(statuses), markup=False)
    return combined_status(statuses)
