"""One executor for every batch of independent jobs: cells of ``udbench run``, task instances of
``udbench generate`` and tuning trials (``udbench tune``).

An :class:`Executor` maps a module-level function over items and yields ``(item, result)``
as each finishes (not in submission order). It runs

- *inline*, in the calling process, in order (``workers=0``; ``udbench generate --workers 1``);
- on *Dask* distributed: a local cluster (``workers``), a running scheduler (``scheduler``),
  a cluster described by a file, e.g. SLURM through dask-jobqueue (``cluster_config``), or a
  :class:`distributed.Client` given by the caller (:func:`udbench.execution.cluster.dask_client`
  says how each is set up and pinned).

With ``isolate=True`` each job runs in a child process of its Dask worker
(:func:`udbench.execution.isolation.run_in_child`): a job that overruns its deadline or ends
its process (``os._exit``, a segfault, the out-of-memory killer) costs that job only, never the
worker, so Dask neither restarts a worker nor runs a job twice. The result is then the
:class:`~udbench.execution.isolation.ChildResult`, for the caller to turn into its own
failed-job record. :meth:`Executor.pool` submits jobs one at a time instead, for a driver
that decides the next job from the results so far (the tuning driver asks Optuna for a trial
only when a worker is free). Jobs are submitted with ``retries=0`` and a fresh key per batch,
so a stale result is never reused, and a result is released as soon as it has been yielded (a
worker lost later must not make Dask run the job again).

:func:`call_with_timeout` is the per-job time limit used inside a job.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Generator, Sequence
from contextlib import ExitStack
from typing import Any, TypeVar

__all__ = [
    "DASK_LOG_NAME",
    "Executor",
    "Failed",
    "JobPool",
    "call_with_timeout",
    "worker_address",
]

T = TypeVar("T")

#: Name of the file, in a command's output folder, that receives Dask's log records (workers,
#: scheduler): the terminal shows udbench's own lines only.
DASK_LOG_NAME = "dask.log"


class Failed:
    """A job that raised outside the function's own error handling (or whose worker was lost).

    Attributes
    ----------
    error : BaseException
        What was raised (in the worker, or by Dask when the worker died).
    """

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def __repr__(self) -> str:
        return f"Failed({self.error!r})"


class Executor:
    """Runs a function over items, inline or on Dask; use as a context manager.

    Parameters
    ----------
    workers : int, optional
        Local Dask workers (default: the number of usable cores); ``0`` runs inline.
    scheduler : str, optional
        Address of a running Dask scheduler to use instead of a local cluster.
    cluster_config : str or Path, optional
        YAML/TOML file describing a cluster object (:mod:`udbench.execution.cluster`).
    pin : bool, optional
        Pin each local worker to its own core(s)
        (:func:`~udbench.execution.cluster.dask_client`).
    client : distributed.Client, optional
        An existing client to submit to (overrides ``workers``/``scheduler``/``cluster_config``;
        not closed on exit).
    log_file : str or Path, optional
        Where Dask's log records (workers, scheduler) go instead of the terminal
        (:func:`~udbench.execution.cluster.dask_client`); the commands give
        ``OUT/dask.log``. Kept as :attr:`log_file`, for messages that point to it.

    Raises
    ------
    UdbenchError
        ``workers < 0``; a bad scheduler address or cluster file (on entering).
    """

    def __init__(
        self,
        *,
        workers: int | None = None,
        scheduler: str | None = None,
        cluster_config: str | os.PathLike[str] | None = None,
        pin: bool | None = None,
        client: Any = None,
        log_file: str | os.PathLike[str] | None = None,
    ) -> None:
        from udbench._validation import check_workers

        self.workers = check_workers("Executor", "workers", workers)
        self.scheduler = scheduler
        self.cluster_config = cluster_config
        self.pin = pin
        self.client = client
        self.log_file = None if log_file is None or self.inline else os.fspath(log_file)
        self._stack = ExitStack()

    @property
    def inline(self) -> bool:
        """Whether jobs run in the calling process."""
        return (
            self.client is None
            and self.workers == 0
            and self.scheduler is None
            and self.cluster_config is None
        )

    def __enter__(self) -> Executor:
        if self.client is None and not self.inline:
            from udbench.execution.cluster import dask_client

            self.client = self._stack.enter_context(
                dask_client(
                    workers=self.workers,
                    scheduler=self.scheduler,
                    cluster_config=self.cluster_config,
                    pin=self.pin,
                    log_file=self.log_file,
                )
            )
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def capacity(self) -> int:
        """How many jobs can run at once: 1 inline, else the Dask cluster's worker threads.

        A cluster that is still scaling up (``adapt``) counts the threads it has now, at
        least 1.
        """
        if self.inline:
            return 1
        try:
            return max(1, int(sum(self.client.nthreads().values())))
        except Exception:
            return 1

    def pool(
        self,
        fn: Callable[..., Any],
        /,
        *,
        isolate: bool = False,
        name: str = "udbench-job",
        **kwargs: Any,
    ) -> JobPool:
        """A :class:`JobPool` running ``fn(item, **kwargs)`` for items submitted one by one.

        Parameters are those of :meth:`map_unordered`; results have the same types.
        """
        return JobPool(self, fn, isolate=isolate, name=name, kwargs=kwargs)

    def map_unordered(
        self,
        fn: Callable[..., Any],
        items: Sequence[T],
        /,
        *,
        isolate: bool = False,
        name: str = "udbench-job",
        **kwargs: Any,
    ) -> Generator[tuple[T, Any], None, None]:
        """Yield ``(item, fn(item, **kwargs))`` for every item, as each finishes.

        Parameters
        ----------
        fn : callable
            A module-level (importable) function.
        items : sequence
            One job per item.
        isolate : bool, default False
            On Dask, run each job in a child process of its worker; the result is then a
            :class:`~udbench.execution.isolation.ChildResult`. Ignored inline.
        name : str, default "udbench-job"
            Prefix of the Dask task keys (shown on the dashboard).
        **kwargs
            Passed to every call.

        Yields
        ------
        item, result
            ``result`` is what ``fn`` returned, a ``ChildResult`` (``isolate``), or
            :class:`Failed` when the job raised on Dask or its worker was lost. Inline, an
            exception raised by ``fn`` propagates (the caller's function is expected to record
            its own errors).
        """
        if self.inline:
            for item in items:
                yield item, fn(item, **kwargs)
            return
        yield from self._map_dask(fn, items, isolate, name, kwargs)

    def _map_dask(
        self,
        fn: Callable[..., Any],
        items: Sequence[T],
        isolate: bool,
        name: str,
        kwargs: dict[str, Any],
    ) -> Generator[tuple[T, Any], None, None]:
        from distributed import as_completed

        from udbench.execution.isolation import dumps_call, run_in_child

        futures = {}
        token = uuid.uuid4().hex[:12]  # a fresh Dask key per batch: never reuse a stale result
        for i, item in enumerate(items):
            key = f"{name}-{token}-{i}"
            if isolate:
                fut = self.client.submit(
                    run_in_child, dumps_call(fn, item, **kwargs), pure=False, retries=0, key=key
                )
            else:
                fut = self.client.submit(fn, item, **kwargs, pure=False, retries=0, key=key)
            futures[fut] = item
        try:
            for fut in as_completed(list(futures)):
                item = futures.pop(fut)
                try:
                    result = fut.result()
                except Exception as err:
                    result = Failed(err)
                # the result is here now: a worker lost later must not make Dask recompute it
                fut.release()
                del fut
                yield item, result
        finally:
            for fut in futures:
                fut.cancel()


class JobPool:
    """Jobs submitted one at a time; results taken back as each finishes.

    Made by :meth:`Executor.pool`. Inline, a job runs when its result is asked for
    (:meth:`next_done`, in submission order); on Dask it starts at once. Use as a context
    manager: jobs still running on exit are cancelled.
    """

    def __init__(
        self,
        executor: Executor,
        fn: Callable[..., Any],
        *,
        isolate: bool,
        name: str,
        kwargs: dict[str, Any],
    ) -> None:
        self._ex = executor
        self._fn = fn
        self._isolate = isolate
        self._name = f"{name}-{uuid.uuid4().hex[:12]}"  # fresh keys: never a stale result
        self._kwargs = kwargs
        self._count = 0
        self._pending: list[Any] = []  # inline: items waiting to run
        self._futures: dict[Any, Any] = {}  # Dask: future -> item
        self._ac: Any = None

    def __len__(self) -> int:
        """Jobs submitted whose results have not been taken yet."""
        return len(self._pending) + len(self._futures)

    def __enter__(self) -> JobPool:
        return self

    def __exit__(self, *exc: object) -> None:
        for fut in self._futures:
            fut.cancel()
        self._futures.clear()
        self._pending.clear()

    def submit(self, item: Any) -> None:
        """Start the job of ``item`` (inline: queue it)."""
        if self._ex.inline:
            self._pending.append(item)
            return
        from distributed import as_completed

        from udbench.execution.isolation import dumps_call, run_in_child

        key = f"{self._name}-{self._count}"
        self._count += 1
        client = self._ex.client
        if self._isolate:
            payload = dumps_call(self._fn, item, **self._kwargs)
            fut = client.submit(run_in_child, payload, pure=False, retries=0, key=key)
        else:
            fut = client.submit(self._fn, item, **self._kwargs, pure=False, retries=0, key=key)
        self._futures[fut] = item
        if self._ac is None:
            self._ac = as_completed([fut])
        else:
            self._ac.add(fut)

    def next_done(self) -> tuple[Any, Any]:
        """Wait for a job to finish; return ``(item, result)``, as :meth:`Executor.map_unordered`.

        Raises
        ------
        LookupError
            If no job is waiting.
        """
        if self._ex.inline:
            if not self._pending:
                raise LookupError("JobPool.next_done: no job submitted")
            item = self._pending.pop(0)
            return item, self._fn(item, **self._kwargs)
        if not self._futures:
            raise LookupError("JobPool.next_done: no job submitted")
        fut = next(self._ac)
        item = self._futures.pop(fut)
        try:
            result = fut.result()
        except Exception as err:
            result = Failed(err)
        fut.release()  # a worker lost later must not make Dask recompute it
        return item, result


def call_with_timeout(
    fn: Callable[[], Any], timeout: float | None, context: Any = None
) -> tuple[bool, Any]:
    """Run ``fn`` under ``timeout``; return (finished, result-or-exception).

    In a child process of :func:`udbench.execution.isolation.run_in_child` (jobs on Dask with
    ``isolate=True``) ``fn`` runs directly and the parent kills the child at the deadline
    (``context``, e.g. a partial row, goes back to the parent for its record of the timeout);
    elsewhere it runs in a daemon thread that is abandoned (not stopped) at the deadline.
    An ``Exception`` raised by ``fn`` is returned, not raised (``KeyboardInterrupt`` and
    ``SystemExit`` stop the caller).
    """
    from udbench.execution import isolation

    if timeout is not None and isolation.in_child():
        with isolation.deadline(timeout, context):
            try:
                return True, fn()
            except Exception as err:
                return True, err
    if timeout is None:
        try:
            return True, fn()
        except Exception as err:  # KeyboardInterrupt / SystemExit stop the run
            return True, err
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as err:
            box["value"] = err

    thread = threading.Thread(target=target, daemon=True, name="udbench-cell")
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        return False, None
    return True, box["value"]


def worker_address() -> str | None:
    """Address of the Dask worker running the caller, or None outside a worker."""
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except Exception:
        return None
