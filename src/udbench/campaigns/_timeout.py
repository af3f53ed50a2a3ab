"""Stopping a campaign unit: its time limit (``udbench campaign run --unit-timeout``), and a
user's interrupt told from a failure (:func:`interrupted`).

A campaign runs unattended for hours; one unit that never ends (an optimiser that does not
converge, a sampler stuck in a loop) would hold the run and its cores until someone looks.
With a limit, :func:`udbench.campaigns.engine.run_campaign` stops a unit that runs past it
and records it as failed (``timed_out_seconds`` in the record), and the run goes on with
the next unit. A later run with a limit no longer than that does not retry it (it would
time out again); a run with a longer limit, or none, does. A unit that keeps its progress
when stopped (:data:`RESUMABLE_KINDS`: a tuning sweep's finished trials are in its journal)
is retried under any limit, and goes on from where it stopped.

The limit is a wall-clock alarm (``SIGALRM``) in the process that runs the unit, so it
stops the unit at its next return to Python. It needs the main thread of a POSIX process,
which each ``udbench campaign run`` (and each of its ``--workers``) is. The process goes on
with the next unit; like a Ctrl-C, the alarm can land between a library's setting of some
process state and its ``try`` that would undo it (a window of microseconds), so a run in
which units time out often is better restarted now and then.

A unit inside one long call into compiled code (an XLA program such as a whole NUTS run)
does not return to Python until the call ends, and one stuck there never does. So
:data:`GRACE_SECONDS` after the alarm a watchdog thread *hard-stops* it: it writes the
unit's failed record itself (with ``timed_out_seconds`` and ``hard_stopped``) and ends the
process with exit status :data:`HARD_STOP_STATUS` (the run ends there; a rerun goes on with
the other units). The watchdog is a Python thread, so it needs the compiled code to release
the GIL, as JAX/XLA does; a call that keeps the GIL is stopped only when it returns.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from udbench._validation import param_error

__all__ = [
    "GRACE_SECONDS",
    "HARD_STOPPED_KEY",
    "HARD_STOP_STATUS",
    "MAX_SECONDS",
    "RESUMABLE_KINDS",
    "TIMED_OUT_KEY",
    "UnitTimedOut",
    "check_unit_timeout",
    "interrupted",
    "limit_in",
    "skip_reason",
    "time_limit",
]

#: The record key of a unit stopped by its time limit: the limit in wall seconds.
TIMED_OUT_KEY = "timed_out_seconds"

#: The record key of a unit that was hard-stopped (True): even a resumable unit is then
#: retried only under a longer limit, so that a rerun does not end on it again.
HARD_STOPPED_KEY = "hard_stopped"

#: Seconds after the alarm before a unit that has not returned to Python is hard-stopped.
GRACE_SECONDS = 60.0

#: Exit status of a run whose unit was hard-stopped (as ``timeout(1)``'s).
HARD_STOP_STATUS = 124

#: The longest limit, in seconds (about 3 years; the alarm timer refuses ~1e10 s).
MAX_SECONDS = 1e8

#: Kinds of units that keep their progress when stopped, retried under any limit: the
#: tuning campaign's sweeps (:data:`udbench.tuning.shipped.CAMPAIGN_KIND`), whose finished
#: trials are in their journal (a test checks the two names agree).
RESUMABLE_KINDS = frozenset({"tuning-sweep"})


class UnitTimedOut(BaseException):
    """A unit ran past its time limit (:func:`time_limit`).

    A ``BaseException``, like ``KeyboardInterrupt``: a library's ``except Exception`` in the
    unit's work must not take it for its own failure and go on.
    """

    def __init__(self, seconds: float) -> None:
        super().__init__(f"timed out after {_span(seconds)} (the run's --unit-timeout)")
        self.seconds = float(seconds)


def _span(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.3g} s"


def check_unit_timeout(component: str, seconds: float | None) -> None:
    """Refuse a limit that is not a finite number of seconds in (0, :data:`MAX_SECONDS`], or
    one this process cannot keep (no ``SIGALRM``, or not the main thread).

    Raises
    ------
    UdbenchError
        Naming ``component``'s ``unit_timeout`` and the value received.
    """
    if seconds is None:
        return
    rule = f"be a number of seconds > 0 and <= {MAX_SECONDS:g}"
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise param_error(component, "unit_timeout", rule, seconds)
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_SECONDS):
        raise param_error(component, "unit_timeout", rule, seconds)
    if not hasattr(signal, "SIGALRM"):
        raise param_error(
            component, "unit_timeout", "be left out on this system (no SIGALRM)", seconds
        )
    if threading.current_thread() is not threading.main_thread():
        raise param_error(
            component,
            "unit_timeout",
            "be left out outside the main thread (a signal alarm)",
            seconds,
        )


# What a hard stop writes: the record's path, the record made before the work (status
# ``failed``) and the atomic writer (a private alias: autodoc cannot format a generic alias).
_HardStop = tuple[Path, dict[str, Any], Callable[[Path, dict[str, Any]], None]]


@contextlib.contextmanager
def time_limit(seconds: float | None, hard_stop: _HardStop | None = None) -> Iterator[None]:
    """Raise :class:`UnitTimedOut` in the block once it has run ``seconds`` of wall time
    (None: no limit); the alarm and the previous ``SIGALRM`` handler are restored on exit,
    however the block ends. An alarm that comes after the block has finished is ignored.
    With ``hard_stop``, a block still running :data:`GRACE_SECONDS` after the alarm (inside
    compiled code) is ended by :func:`_hard_stop` (module notes). Not nestable: an inner
    limit, or a unit that sets ``SIGALRM`` itself, replaces the alarm (the hard stop stays).
    Checked by :func:`check_unit_timeout` first."""
    if seconds is None:
        yield
        return
    lock = threading.Lock()  # the block's end and a hard stop: one of them, never both
    state = {"finished": False}
    completed = False
    t0, c0 = time.perf_counter(), time.process_time()

    def alarm(signum: int, frame: Any) -> None:
        if not state["finished"]:
            raise UnitTimedOut(seconds)

    def watchdog() -> None:
        with lock:
            if not state["finished"] and hard_stop is not None:
                _hard_stop(seconds, hard_stop, time.perf_counter() - t0, time.process_time() - c0)

    timer = threading.Timer(float(seconds) + GRACE_SECONDS, watchdog)
    timer.daemon = True
    previous = signal.signal(signal.SIGALRM, alarm)
    try:
        try:
            signal.setitimer(signal.ITIMER_REAL, float(seconds))
            if hard_stop is not None:
                timer.start()
            yield
            completed = True
        finally:
            state["finished"] = True  # first: the alarm is ignored from here on
    except UnitTimedOut:
        if not completed:  # else an alarm in the clean-up after a finished block: ignored
            raise
    finally:  # always, also when the alarm came in the clean-up above
        with lock:  # a hard stop under way ends the process here
            timer.cancel()
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, previous)


def _hard_stop(seconds: float, hard_stop: _HardStop, wall: float, cpu: float) -> None:
    """Write the unit's failed record and end the process (:data:`HARD_STOP_STATUS`)."""
    path, record, write = hard_stop
    why = (
        f"{UnitTimedOut(seconds)}, and it did not return to Python within "
        f"{GRACE_SECONDS:g} s more (inside compiled code): the run was ended"
    )
    try:
        write(
            path,
            {
                **record,
                "status": "failed",
                "wall_seconds": round(wall, 3),
                "cpu_seconds": round(cpu, 3),
                "error": f"UnitTimedOut: {why}",
                "traceback": "",
                TIMED_OUT_KEY: float(seconds),
                HARD_STOPPED_KEY: True,
            },
        )
        print(f"{record.get('unit_id')}: FAILED ({why}); recorded", flush=True)
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(HARD_STOP_STATUS)


def _in_chain(err: BaseException, kind: type[BaseException]) -> BaseException | None:
    """The first exception of ``kind`` among ``err`` and its causes and contexts."""
    seen: set[int] = set()
    link: BaseException | None = err
    while link is not None and id(link) not in seen:
        if isinstance(link, kind):
            return link
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return None


def limit_in(err: BaseException) -> float | None:
    """The limit in seconds of a :class:`UnitTimedOut` that is ``err`` or among its causes
    and contexts (a library's clean-up may turn it into its own error), else None."""
    found = _in_chain(err, UnitTimedOut)
    return found.seconds if isinstance(found, UnitTimedOut) else None


def skip_reason(unit: Any, record: dict[str, Any] | None, seconds: float | None) -> str | None:
    """Why the failed ``unit`` is not retried under the limit ``seconds``: it timed out under
    a limit at least as long (None: retry it; also without a limit now, and for a unit of
    :data:`RESUMABLE_KINDS` that was not hard-stopped)."""
    limit = (record or {}).get(TIMED_OUT_KEY)
    if seconds is None or not isinstance(limit, int | float) or limit < seconds:
        return None
    if getattr(unit, "kind", None) in RESUMABLE_KINDS and not (record or {}).get(HARD_STOPPED_KEY):
        return None  # it goes on from its journal (a hard-stopped one would end the run)
    return (
        f"timed out under a limit of {_span(float(limit))}; not retried under "
        f"{_span(float(seconds))} (give a longer --unit-timeout, or none, to retry it)"
    )


def interrupted(err: BaseException) -> bool:
    """Whether a KeyboardInterrupt is among ``err``'s causes and contexts: an interrupt that
    landed in a library's clean-up (e.g. a file lock's unlink) may surface as that library's
    error, and must stop the run, not be recorded as the unit's failure."""
    return _in_chain(err, KeyboardInterrupt) is not None
