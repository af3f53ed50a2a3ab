"""Cells in a child process: a hard time limit and crash isolation for Dask workers.

A fit that overruns its time limit cannot be stopped inside a thread, and a method that ends
its process (``os._exit``, a segfault, the kernel's out-of-memory killer) takes the Dask
worker with it; Dask then restarts the worker, reschedules the cell on another worker (which
dies too, up to ``distributed.scheduler.allowed-failures`` times) and recomputes the results
that lived on the lost workers. So on Dask every cell runs in a child process of the worker:

- each worker thread hands its cell to a long-lived child (started on the first cell, reused
  while healthy, so imports and JAX compilation are paid once per child, not per cell) and
  waits for the answer;
- code in the child announces a time-limited stretch with :func:`deadline` (the runner does
  this around fit + predict); when the stretch overruns, the worker thread kills the child's
  whole process group (``SIGKILL``) and reports ``timed_out``;
- when the child dies without answering, the worker thread reports why (exit code or
  signal).

Either way the Dask worker itself never dies or restarts, so Dask never reschedules the cell
and finished results stay where they are; the next cell starts a fresh child. The child
inherits the worker's environment (thread caps), CPU affinity (core pinning) and
``sys.path`` (so ``module:Class`` methods import the same way), writes to the worker's
stdout/stderr, and ends by itself within about a second when the worker process goes away.
Uses only POSIX process calls (``start_new_session``, ``killpg``); udbench runs on Linux.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, Pipe
from typing import Any

__all__ = ["ChildResult", "deadline", "dumps_call", "in_child", "run_in_child"]

#: How often (seconds) a waiting worker thread checks that its child is still alive, and how
#: often a child checks that its parent is.
_POLL_S = 0.5

# the child's bootstrap: only the standard library until the parent's sys.path is in place
_BOOTSTRAP = (
    "import sys\n"
    "from multiprocessing.connection import Connection\n"
    "conn = Connection(int(sys.argv[1]))\n"
    "sys.path[:] = conn.recv()\n"
    "from udbench.execution.isolation import _child_main\n"
    "_child_main(conn)\n"
)

#: In a child: the connection to the parent (``None`` elsewhere).
_PARENT: Connection | None = None
_SEND_LOCK = threading.Lock()


@dataclass
class ChildResult:
    """What :func:`run_in_child` observed; values stay pickled (see :func:`run_in_child`).

    Attributes
    ----------
    value : bytes or None
        The pickled return value of the call, when it returned.
    raised : bytes or None
        The pickled exception, when the call raised.
    timed_out : bool
        A :func:`deadline` stretch overran and the child was killed.
    died : str or None
        Why the child ended without answering (``"exit code 3"``, ``"killed by signal
        SIGSEGV"``), else ``None``.
    context : bytes or None
        The pickled ``context`` of the last :func:`deadline` the child entered (e.g. a partial
        row); lets the caller describe a timed-out or dead call.
    in_deadline : bool
        The child was inside a :func:`deadline` stretch when it timed out or died.
    """

    value: bytes | None = None
    raised: bytes | None = None
    timed_out: bool = False
    died: str | None = None
    context: bytes | None = None
    in_deadline: bool = False

    def result(self) -> Any:
        """The call's return value; re-raises its exception.

        Raises
        ------
        BaseException
            What the call raised in the child.
        RuntimeError
            If the call timed out or the child died (nothing to return).
        """
        if self.raised is not None:
            raise pickle.loads(self.raised)
        if self.value is None:
            why = "timed out" if self.timed_out else f"died ({self.died})"
            raise RuntimeError(f"the child process {why}")
        return pickle.loads(self.value)

    def context_value(self) -> Any:
        """The unpickled context of the last deadline, or ``None``."""
        return None if self.context is None else pickle.loads(self.context)


def dumps_call(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> bytes:
    """Pickle a call for :func:`run_in_child` (cloudpickle: functions of a script work too)."""
    import cloudpickle

    return bytes(cloudpickle.dumps((fn, args, kwargs)))


def in_child() -> bool:
    """Whether this process is a child started by :func:`run_in_child`."""
    return _PARENT is not None


#: Exit status of a child whose parent (the worker) is gone.
_ORPHAN_STATUS = 70


def _send(msg: Any) -> None:
    assert _PARENT is not None
    with _SEND_LOCK:
        try:
            _PARENT.send(msg)
        except OSError:  # BrokenPipeError, reset: the worker is gone (a run ending on Ctrl-C);
            os._exit(_ORPHAN_STATUS)  # nobody is left to answer, nor a traceback to print


@contextlib.contextmanager
def deadline(seconds: float, context: Any = None) -> Iterator[None]:
    """Ask the parent to kill this child if the block lasts longer than ``seconds``.

    Parameters
    ----------
    seconds : float
        Wall-clock limit of the block, counted by the parent from when it hears of it.
    context : Any, optional
        Picklable value handed back to the parent's caller in :attr:`ChildResult.context`.

    Raises
    ------
    RuntimeError
        If called outside a child of :func:`run_in_child` (check :func:`in_child`).
    """
    if _PARENT is None:
        raise RuntimeError("deadline() only works in a child of run_in_child()")
    blob = pickle.dumps(context)
    _send(("deadline", float(seconds), blob))
    try:
        yield
    finally:
        _send(("deadline", None, blob))


def _watch_parent(ppid: int) -> None:
    """End the child when its parent process is gone (it would be orphaned, holding a core)."""
    while True:
        time.sleep(_POLL_S)
        if os.getppid() != ppid:
            os._exit(_ORPHAN_STATUS)


def _child_main(conn: Connection) -> None:
    """Serve calls from the parent until it closes the connection."""
    global _PARENT
    _PARENT = conn
    threading.Thread(
        target=_watch_parent, args=(os.getppid(),), daemon=True, name="udbench-parent-watch"
    ).start()
    while True:
        try:
            payload = conn.recv_bytes()
        except (EOFError, OSError):
            return
        try:
            fn, args, kwargs = pickle.loads(payload)
            reply = ("done", pickle.dumps(fn(*args, **kwargs)))
        except BaseException as err:  # report everything; the caller re-raises it
            try:
                reply = ("raised", pickle.dumps(err))
            except Exception:  # an unpicklable exception
                reply = ("raised", pickle.dumps(RuntimeError(f"{type(err).__name__}: {err}")))
        _send(reply)


class _Child:
    """One child process and the parent's end of its connection."""

    def __init__(self) -> None:
        parent_end, child_end = Pipe(duplex=True)
        self.conn = parent_end
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _BOOTSTRAP, str(child_end.fileno())],
                pass_fds=(child_end.fileno(),),
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group: killed as a whole
            )
        finally:
            child_end.close()
        self.conn.send(list(sys.path))

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # the child and what it started
        with contextlib.suppress(ProcessLookupError, OSError):
            self.proc.kill()
        self.proc.wait()
        self.conn.close()

    def why_dead(self) -> str:
        code = self.proc.wait()
        self.conn.close()
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = str(-code)
            hint = " (out of memory?)" if name == "SIGKILL" else ""
            return f"killed by signal {name}{hint}"
        return f"exit code {code}"


_IDLE: list[_Child] = []
_IDLE_LOCK = threading.Lock()


def _take_child() -> _Child:
    with _IDLE_LOCK:
        while _IDLE:
            child = _IDLE.pop()
            if child.alive():
                return child
            child.why_dead()
    return _Child()


def _give_back(child: _Child) -> None:
    with _IDLE_LOCK:
        _IDLE.append(child)


@atexit.register
def _close_idle() -> None:
    with _IDLE_LOCK:
        while _IDLE:
            child = _IDLE.pop()
            with contextlib.suppress(Exception):
                child.conn.close()  # the child sees EOF and exits


def run_in_child(payload: bytes) -> ChildResult:
    """Run a pickled call in a child process; enforce the deadlines it announces.

    The caller's process (a Dask worker) only passes bytes through: the call is unpickled,
    and its result pickled, in the child, so the worker never imports what the call needs.

    Parameters
    ----------
    payload : bytes
        From :func:`dumps_call`.

    Returns
    -------
    ChildResult
        ``value`` (pickled) when the call returned, ``raised`` when it raised, ``timed_out``
        when a :func:`deadline` stretch of the child overran (the child is killed), ``died``
        when the child ended without answering.
    """
    child = _take_child()
    try:
        child.conn.send_bytes(payload)
    except OSError:  # the idle child died between the check and the send
        child.kill()
        child = _Child()
        child.conn.send_bytes(payload)
    limit: float | None = None
    context: bytes | None = None
    while True:
        wait = _POLL_S if limit is None else max(0.0, min(_POLL_S, limit - time.monotonic()))
        try:
            msg = child.conn.recv() if child.conn.poll(wait) else None
        except (EOFError, OSError):
            return ChildResult(
                died=child.why_dead(), context=context, in_deadline=limit is not None
            )
        if msg is None:
            if limit is not None and time.monotonic() >= limit:
                child.kill()
                return ChildResult(timed_out=True, context=context, in_deadline=True)
            if not child.alive():  # e.g. a grandchild holds the connection open
                return ChildResult(
                    died=child.why_dead(), context=context, in_deadline=limit is not None
                )
            continue
        kind = msg[0]
        if kind == "deadline":
            seconds, context = msg[1], msg[2]
            limit = None if seconds is None else time.monotonic() + seconds
        else:
            _give_back(child)
            if kind == "done":
                return ChildResult(value=msg[1])
            return ChildResult(raised=msg[1])
