"""Where cells run: a Dask LocalCluster, a running scheduler, or a cluster from a config file.

Workers must not fight over cores. Measured on a 2-core machine, two unpinned JAX processes
ran 3.7× slower than one, and XLA thread flags did not help, while pinning each worker
process to its own core restored full speed. So by default every local worker is pinned to
its own share of the usable cores (``os.sched_setaffinity`` on all of the worker's threads,
in a worker plugin that runs before any cell imports JAX). ``pin=False`` turns pinning off.
Whatever the pinning, every cell computes with one thread (BLAS/OpenMP variables such as
``OMP_NUM_THREADS`` are 1 in local workers, and :mod:`udbench._threads` fixes the
XLA and BLAS pools inside each cell), so a cell's result does not depend on where it runs.

A cluster file (YAML or TOML) names a cluster class, its keyword arguments and how to scale
it, e.g. for SLURM with dask-jobqueue::

    class = "dask_jobqueue.SLURMCluster"
    scale = 20                      # or: adapt = {minimum = 1, maximum = 50}
    pin = false                     # the batch system already isolates jobs
    [kwargs]
    cores = 1
    memory = "4GiB"
    walltime = "04:00:00"
"""

from __future__ import annotations

import importlib
import logging
import os
import signal
import threading
import tomllib
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from distributed import WorkerPlugin

from udbench._threads import CELL_THREADS
from udbench._validation import UdbenchError, UdbenchWarning, param_error

__all__ = [
    "GUARD_ADVICE",
    "THREAD_ENV_VARS",
    "CorePinningPlugin",
    "check_scheduler_address",
    "core_sets",
    "dask_client",
    "dask_logs_to",
    "load_cluster_config",
    "thread_env",
]

#: Environment variables that cap BLAS / OpenMP / numexpr thread pools.
THREAD_ENV_VARS: tuple[str, ...] = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "BLIS_NUM_THREADS",
)


@contextmanager
def dask_logs_to(path: str | os.PathLike[str] | None) -> Iterator[Path | None]:
    """Send this process's Dask (scheduler, nanny, client) log records to ``path``.

    For the life of the context, the records of
    :data:`udbench.execution._worker_setup.DASK_LOGGERS` go to the file (appended; its
    folder is created) instead of the terminal; on exit the terminal handlers are given back.
    ``None`` changes nothing.

    Yields
    ------
    Path or None
        The log file.
    """
    if path is None:
        yield None
        return
    from udbench.execution._worker_setup import DASK_LOGGERS, log_to_file

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    saved = [
        (logging.getLogger(n), list(logging.getLogger(n).handlers), logging.getLogger(n).propagate)
        for n in DASK_LOGGERS
    ]
    handler = log_to_file(target)
    try:
        yield target
    finally:
        for log, handlers, propagate in saved:
            log.removeHandler(handler)
            for h in handlers:
                if h not in log.handlers:
                    log.addHandler(h)
            log.propagate = propagate
        handler.close()


def usable_cores() -> list[int]:
    """The cores this process may run on (its CPU affinity), sorted."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return list(range(os.cpu_count() or 1))


def core_sets(n_workers: int, cores: list[int] | None = None) -> list[list[int]]:
    """Split the usable cores into ``n_workers`` contiguous, disjoint, near-equal sets.

    With more workers than cores, worker i gets core ``cores[i % len(cores)]`` alone.

    Raises
    ------
    UdbenchError
        If ``n_workers < 1``.
    """
    if n_workers < 1:
        raise param_error("core_sets", "n_workers", "be >= 1", n_workers)
    cores = usable_cores() if cores is None else list(cores)
    if n_workers >= len(cores):
        return [[cores[i % len(cores)]] for i in range(n_workers)]
    base, extra = divmod(len(cores), n_workers)
    out, start = [], 0
    for i in range(n_workers):
        size = base + (1 if i < extra else 0)
        out.append(cores[start : start + size])
        start += size
    return out


#: JAX's switch for taking most of a GPU's memory up front; set to "false" for local workers
#: when there are several (they share the device), unless the user set it.
GPU_PREALLOCATE_VAR = "XLA_PYTHON_CLIENT_PREALLOCATE"


def thread_env(n_threads: int) -> dict[str, str]:
    """Environment capping every BLAS/OpenMP pool at ``n_threads`` (set before spawn)."""
    return {name: str(int(n_threads)) for name in THREAD_ENV_VARS}


def _pin_process(cores: list[int]) -> None:
    """Set the CPU affinity of every thread of this process (new threads inherit it)."""
    cpu = set(cores)
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:  # pragma: no cover - no procfs
        tids = [0]
    for tid in tids:
        try:
            os.sched_setaffinity(tid, cpu)
        except OSError:  # a thread that ended meanwhile
            pass
    os.sched_setaffinity(0, cpu)


class CorePinningPlugin(WorkerPlugin):
    """Dask worker plugin that pins worker ``name = i`` to ``core_sets[i % len(core_sets)]``.

    Parameters
    ----------
    core_sets : list of list of int
        One core set per worker (see :func:`core_sets`).

    Notes
    -----
    LocalCluster names its workers 0, 1, …; a worker with a non-integer name is pinned by
    the position of its name in sorted order of its address hash (still one set per worker).
    """

    idempotent = True
    name = "udbench-core-pinning"

    def __init__(self, core_sets: list[list[int]]) -> None:
        self.core_sets = [list(c) for c in core_sets]

    def setup(self, worker: Any) -> None:
        """Pin this worker process (called by Dask in the worker)."""
        if not hasattr(os, "sched_setaffinity"):  # pragma: no cover - not Linux
            return
        name = worker.name
        try:
            idx = int(name)
        except (TypeError, ValueError):
            idx = sum(str(name).encode()) if name is not None else 0
        _pin_process(self.core_sets[idx % len(self.core_sets)])

    def teardown(self, worker: Any) -> None:
        """Nothing to undo: the affinity ends with the process."""


def load_cluster_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a cluster file (``.toml``, ``.yaml`` or ``.yml``).

    Keys: ``class`` (import path, required), ``kwargs`` (mapping), ``scale`` (int or mapping
    of ``Cluster.scale`` arguments), ``adapt`` (mapping of ``Cluster.adapt`` arguments),
    ``pin`` (bool, default false).

    Raises
    ------
    UdbenchError
        Missing file, unknown suffix, unparsable content, missing/unknown keys.
    """
    p = Path(path)
    if not p.is_file():
        raise param_error("cluster config", "path", "be an existing file", str(p))
    data: Any
    try:
        if p.suffix == ".toml":
            data = tomllib.loads(p.read_text())
        elif p.suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(p.read_text())
        else:
            raise param_error("cluster config", "path", "end in .toml, .yaml or .yml", str(p))
    except UdbenchError:
        raise
    except Exception as err:
        raise param_error("cluster config", "path", "hold valid TOML/YAML", f"{p}: {err}") from None
    if isinstance(data, Mapping) and "cluster" in data and isinstance(data["cluster"], Mapping):
        data = data["cluster"]
    if not isinstance(data, Mapping) or not isinstance(data.get("class"), str):
        raise param_error(
            "cluster config",
            "class",
            "name the cluster class (e.g. dask_jobqueue.SLURMCluster)",
            None if not isinstance(data, Mapping) else data.get("class"),
        )
    unknown = set(data) - {"class", "kwargs", "scale", "adapt", "pin"}
    if unknown:
        raise param_error(
            "cluster config", "keys", "be among class, kwargs, scale, adapt, pin", sorted(unknown)
        )
    return dict(data)


def _import_object(path: str) -> Any:
    module, _, attr = path.replace(":", ".").rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError):
        raise param_error(
            "cluster config", "class", "be an importable class (is its package installed?)", path
        ) from None


def _root_cause(err: BaseException) -> str:
    """``Type: message`` of the innermost cause of ``err`` (Dask wraps the useful one)."""
    seen = {id(err)}
    while True:
        nxt = err.__cause__ or err.__context__
        if nxt is None or id(nxt) in seen:
            break
        seen.add(id(nxt))
        err = nxt
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def check_scheduler_address(address: str) -> None:
    """Fail fast on a scheduler address that is malformed or where nothing listens.

    A malformed address (no port, unknown scheme) is rejected by Dask's own parser; for a
    ``tcp://``/``tls://`` address one plain TCP connection (5 s limit) is tried, so a refused
    connection or an unknown host is reported at once instead of after Dask's 20 s of
    retries.

    Raises
    ------
    UdbenchError
        Naming ``scheduler``, the address and the reason.
    """
    import socket

    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import backends

    rule = "be the address of a running scheduler (e.g. tcp://host:8786)"
    try:
        scheme, loc = parse_address(address)
        if scheme not in backends:
            raise ValueError(f"unknown address scheme {scheme!r}; known: {sorted(backends)}")
        if scheme not in ("tcp", "tls"):
            return
        host, port = parse_host_port(loc)
    except (TypeError, ValueError) as err:
        raise param_error("udbench run", "scheduler", rule, f"{address} ({err})") from None
    try:
        with socket.create_connection((host, port), timeout=5):
            pass
    except OSError as err:
        reason = err.strerror or type(err).__name__
        raise param_error("udbench run", "scheduler", rule, f"{address} ({reason})") from None


@contextmanager
def dask_client(
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    cluster_config: str | os.PathLike[str] | None = None,
    pin: bool | None = None,
    threads_per_worker: int = 1,
    log_file: str | os.PathLike[str] | None = None,
) -> Iterator[Any]:
    """Yield a ``distributed.Client`` for a run and close what was started afterwards.

    With ``log_file`` (``udbench run``/``generate``/``tune`` give ``OUT/dask.log``,
    :data:`udbench.execution.executor.DASK_LOG_NAME`) the log records of Dask go to that
    file, not the terminal: this process's (scheduler and nannies of a local cluster, the
    client) for the life of the client (:func:`dask_logs_to`), and the local workers'
    (through their preload, :mod:`udbench.execution._worker_setup`). Without it, errors are
    printed as Dask prints them.

    Parameters
    ----------
    workers : int, optional
        Workers of the LocalCluster (default: number of usable cores). Each runs one cell
        at a time (``threads_per_worker``).
    scheduler : str, optional
        Address of a running scheduler (``tcp://host:8786``); nothing is started.
    cluster_config : str or Path, optional
        Cluster file (see :func:`load_cluster_config`).
    pin : bool, optional
        Pin workers to cores. Default: True for a LocalCluster, the
        file's ``pin`` (default False) for a cluster file, False for a scheduler address.
    threads_per_worker : int, default 1
    log_file : str or Path, optional
        Where Dask's log records go (see above).

    Raises
    ------
    UdbenchError
        More than one of scheduler/cluster_config given, bad worker count, unreachable
        scheduler, bad cluster file.
    """
    with (
        dask_logs_to(log_file),
        _client(
            workers=workers,
            scheduler=scheduler,
            cluster_config=cluster_config,
            pin=pin,
            threads_per_worker=threads_per_worker,
            log_file=log_file,
        ) as client,
    ):
        yield client


@contextmanager
def _client(
    *,
    workers: int | None,
    scheduler: str | None,
    cluster_config: str | os.PathLike[str] | None,
    pin: bool | None,
    threads_per_worker: int,
    log_file: str | os.PathLike[str] | None,
) -> Iterator[Any]:
    """:func:`dask_client` without the log redirection of this process."""
    from distributed import Client, LocalCluster

    from udbench.execution._worker_setup import LOG_ENV

    if scheduler is not None and cluster_config is not None:
        raise param_error(
            "udbench run", "scheduler", "not be combined with --cluster-config", scheduler
        )
    if scheduler is not None:
        check_scheduler_address(scheduler)
        try:
            client = Client(scheduler, timeout="20s")
        except (OSError, TimeoutError, TypeError, ValueError) as err:
            raise param_error(
                "udbench run",
                "scheduler",
                "be the address of a running scheduler",
                f"{scheduler} ({_root_cause(err)})",
            ) from None
        try:
            if pin:
                n = len(client.scheduler_info().get("workers", {})) or 1
                client.register_plugin(CorePinningPlugin(core_sets(n)))
            yield client
        finally:
            client.close()
        return
    if cluster_config is not None:
        cfg = load_cluster_config(cluster_config)
        cls = _import_object(cfg["class"])
        try:
            cluster = cls(**dict(cfg.get("kwargs") or {}))
        except Exception as err:  # the class rejected the file's settings, however it says so
            # (LocalCluster passes unknown keywords on to its workers: "Nanny failed to start")
            raise param_error(
                "cluster config", "kwargs", f"start a {cfg['class']}", _root_cause(err)
            ) from None
        try:
            try:
                if "adapt" in cfg:
                    cluster.adapt(**dict(cfg["adapt"]))
                elif "scale" in cfg:
                    sc = cfg["scale"]
                    cluster.scale(**sc) if isinstance(sc, Mapping) else cluster.scale(int(sc))
                client = Client(cluster)
            except Exception as err:
                key = "adapt" if "adapt" in cfg else "scale" if "scale" in cfg else "class"
                raise param_error(
                    "cluster config", key, f"suit {cfg['class']}", _root_cause(err)
                ) from None
            try:
                if pin if pin is not None else bool(cfg.get("pin", False)):
                    n = len(client.scheduler_info().get("workers", {})) or 1
                    client.register_plugin(CorePinningPlugin(core_sets(n)))
                yield client
            finally:
                client.close()
        finally:
            cluster.close()
        return
    n = len(usable_cores()) if workers is None else int(workers)
    if n < 1:
        raise param_error("udbench run", "workers", "be >= 1 for a Dask cluster", n)
    do_pin = True if pin is None else bool(pin)
    sets = core_sets(n)
    # one compute thread per cell, pinned or not: results must not depend on placement
    env = thread_env(CELL_THREADS)
    # several workers on one GPU: each JAX process would otherwise take 75 % of the device's
    # memory at its first allocation and starve the others (a user's own setting wins)
    if n > 1:
        env[GPU_PREALLOCATE_VAR] = os.environ.get(GPU_PREALLOCATE_VAR, "false")
    if log_file is not None:  # the workers' log records: to the file, by their preload
        env[LOG_ENV] = os.path.abspath(log_file)
    # Dask's nannies leave their OMP/MKL/OpenBLAS cap (and the log file) in this process's
    # environment: put it back as it was
    saved = {k: os.environ.get(k) for k in (*THREAD_ENV_VARS, LOG_ENV)}
    _refuse_in_a_starting_process()
    try:
        with _ctrl_c_held() as held:
            cluster = LocalCluster(
                n_workers=n,
                threads_per_worker=threads_per_worker,
                processes=True,
                dashboard_address=None,
                # the scheduler's small HTTP server (health, metrics) on a free port, not 8787
                scheduler_kwargs={"dashboard_address": ":0"},
                env=env,
                # shutdown chatter ("Worker process still alive after 4.0 seconds, killing") is
                # not the user's concern; errors still show
                silence_logs=logging.ERROR,
                # Ctrl-C is handled by the driver alone (one line, cells kept)
                preload=["udbench.execution._worker_setup"],
            )
    except Exception as err:  # a worker process that did not start: say what usually causes it
        where = f"; Dask's log: {os.path.abspath(log_file)}" if log_file is not None else ""
        raise UdbenchError(
            f"the local Dask workers failed to start ({_root_cause(err)}{where}). " + GUARD_ADVICE
        ) from None
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    try:
        if held:  # a Ctrl-C while the workers started: now that they can be closed
            signal.raise_signal(signal.SIGINT)
        client = Client(cluster)
        try:
            if do_pin:
                client.register_plugin(CorePinningPlugin(sets))
            yield client
        finally:
            client.close()
    finally:
        _close_quietly(cluster)


@contextmanager
def _ctrl_c_held() -> Iterator[list[int]]:
    """Hold a Ctrl-C while local workers start; yield the SIGINTs held (raise them after).

    A Ctrl-C reaches every process of the terminal's foreground group: a worker still
    importing (before its preload ignores SIGINT, :mod:`udbench.execution._worker_setup`)
    prints a traceback, and a cluster interrupted half-built cannot be closed (Dask's exit
    hook prints another). So while the cluster starts, SIGINT is blocked in this thread (the
    threads Dask starts now, and the worker processes they start, inherit the block, so no
    worker sees it) and noted, not raised, here; the caller raises it once the cluster exists
    and can be closed (``signal.raise_signal``: to the handler it was held from). Outside the
    main thread, or where SIGINT is ignored, nothing changes.
    """
    held: list[int] = []
    if threading.current_thread() is not threading.main_thread() or not callable(
        signal.getsignal(signal.SIGINT)
    ):
        yield held
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield held
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a pending SIGINT is noted here
        signal.signal(signal.SIGINT, previous)


#: What a script that starts local workers needs (Python's multiprocessing rule).
GUARD_ADVICE = (
    "A Python script that runs udbench on local workers (workers >= 1, or the default) must "
    'put that code under `if __name__ == "__main__":`, since each worker process imports the '
    "script again; or pass workers=0 to run in this process"
)


def _refuse_in_a_starting_process() -> None:
    """Stop with one line when called while a new process imports the user's script.

    Local workers are started by :mod:`multiprocessing`'s ``spawn``: each imports the main
    script again, and a script without an ``if __name__ == "__main__":`` guard then calls
    udbench again there, which would start workers of its own; Python refuses with a long
    traceback in every worker. This ends such a process with one line instead (the driver
    then reports the workers that did not start, :data:`GUARD_ADVICE`).
    """
    import multiprocessing

    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise SystemExit(
            "udbench: this process was started as a local Dask worker and is importing the "
            "main script again, which calls udbench once more. " + GUARD_ADVICE + "."
        )


def _close_quietly(cluster: Any) -> None:
    """Close a LocalCluster; after an interrupt, without a second traceback at exit.

    A Ctrl-C while workers are still starting leaves them in a state Dask's own close
    asserts against, and its exit hook (``close_clusters``) then prints that traceback
    again. The workers are child processes that end with this one either way, so a failed
    close is reported as a warning of one line and the cluster is marked closed.
    """
    try:
        cluster.close()
    except (Exception, KeyboardInterrupt) as err:  # best effort at shutdown
        from distributed.core import Status

        cluster.status = Status.closed
        warnings.warn(
            f"the local Dask cluster did not close cleanly ({type(err).__name__}); its worker "
            "processes end with this one",
            UdbenchWarning,
            stacklevel=2,
        )
