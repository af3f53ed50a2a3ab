"""One compute thread per cell, so a cell's result does not depend on where it runs.

A cell's numbers depend on how many threads its linear algebra uses: XLA's CPU backend
splits reductions and matrix products over its intra-op thread pool, and OpenBLAS splits
Cholesky factorisations and triangular solves over its own threads, so a sum is added up in
another order with another pool size. Measured on the quickstart tasks (jax 0.10, 2 cores):
the GP's marginal-likelihood gradient differed by 4e-15 between a 1-core and a 2-core
process, the L-BFGS-B path then diverged (another local optimum on a diabetes task:
log ML −140.80 vs −142.08) and ρ(EU, EU*_risk) moved by up to 2.5e-2. XLA sizes that pool from
the CPU affinity of the process when JAX creates its CPU backend; ``XLA_FLAGS`` such as
``--xla_cpu_multi_thread_eigen=false`` did not make the results thread-count independent.

So every cell runs with exactly :data:`CELL_THREADS` = 1 compute thread wherever it runs (a
pinned or unpinned local worker with any share of cores, a remote worker, or in-process):

- :func:`fix_xla_threads` creates JAX's backends while the calling thread is pinned to one
  of its cores (so XLA's intra-op pool has one thread), then restores every thread's
  affinity. It runs once per process, before the first cell.
- :func:`cell_threads` caps the BLAS/OpenMP pools loaded in the process (numpy's and
  SciPy's OpenBLAS, which JAX's CPU LAPACK kernels call) at one thread with threadpoolctl
  for the duration of a cell.

Parallelism comes from running cells side by side (one worker process per core by default),
not from threads inside a cell. Guarantee (tested in ``tests/evaluation/test_placement.py``):
on one machine and software stack (Linux, CPU backend) a cell's metrics are the same,
bitwise in practice and asserted to 1e-12, for any number of workers, with pinning on or
off, and in-process, provided udbench creates the JAX backend (see :func:`fix_xla_threads`).
Different CPUs or library versions may still differ in the last bits (and, through an
optimiser, by more).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = [
    "CELL_THREADS",
    "MAP_COUNT_SHARE",
    "RSS_GROWTH_SHARE",
    "cell_threads",
    "fix_xla_threads",
    "memory_map_counts",
    "release_compiled_programs",
    "release_compiled_programs_if_crowded",
    "resident_share",
    "single_threaded",
]

#: Compute threads of one cell (XLA intra-op pool and every BLAS/OpenMP pool).
CELL_THREADS = 1

_lock = threading.Lock()
_xla_state: bool | None = None  # None: not tried yet; True: one-thread pool; False: unknown

F = TypeVar("F", bound=Callable[..., Any])


def _thread_affinities() -> dict[int, set[int]]:
    out: dict[int, set[int]] = {}
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:  # pragma: no cover - no procfs
        tids = []
    for tid in tids:
        try:
            out[tid] = set(os.sched_getaffinity(tid))
        except OSError:  # a thread that ended meanwhile
            pass
    return out


def _backends_initialized() -> bool:
    """Whether JAX has already created its backends (False if JAX is not imported)."""
    if "jax" not in sys.modules:
        return False
    try:
        from jax._src import xla_bridge

        return bool(xla_bridge.backends_are_initialized())
    except (ImportError, AttributeError):  # pragma: no cover - other JAX layout
        return True


def fix_xla_threads() -> bool:
    """Create JAX's backends with a one-thread XLA CPU intra-op pool (once per process).

    XLA sizes the pool of its CPU client from the CPU affinity of the thread that creates
    it, and the pool cannot be resized later. This pins the calling thread to its lowest
    core, creates the backends (``jax.devices()``), and gives every thread of the process
    back its former affinity (threads created meanwhile get the caller's), so the
    worker's core pinning (:mod:`udbench.execution.cluster`) is unchanged.

    Returns
    -------
    bool
        True if the pool has one thread (made here, or the process may use only one core),
        True as well where JAX is not installed (nothing to fix); False if JAX had already
        created its backends before udbench could (e.g. a notebook that used JAX before
        calling ``run_benchmark(..., workers=0)``): in-process cells then use the pool
        JAX made, and a one-time :class:`RuntimeWarning` says so. Not Linux (no
        ``sched_setaffinity``): False, with the same warning.
    """
    global _xla_state
    if _xla_state is not None:
        return _xla_state
    with _lock:
        if _xla_state is not None:
            return _xla_state
        _xla_state = _make_single_threaded_backend()
        if not _xla_state:
            warnings.warn(
                "udbench could not fix JAX's CPU thread pool at one thread (JAX created "
                "its backends before, or the OS has no sched_setaffinity): cells run in "
                "this process may differ in the last bits, and through an optimiser by "
                "more, from the same cells run on udbench's Dask workers",
                RuntimeWarning,
                stacklevel=3,
            )
        return _xla_state


def _make_single_threaded_backend() -> bool:
    if not hasattr(os, "sched_setaffinity"):  # pragma: no cover - not Linux
        return False
    try:
        import jax
    except ImportError:  # pragma: no cover - JAX is a dependency
        return True
    mine = set(os.sched_getaffinity(0))
    if _backends_initialized():
        return len(mine) == 1
    before = _thread_affinities()
    os.sched_setaffinity(0, {min(mine)})
    try:
        jax.devices()
    finally:
        for tid in _thread_affinities():
            try:
                os.sched_setaffinity(tid, before.get(tid, mine))
            except OSError:  # a thread that ended meanwhile
                pass
        os.sched_setaffinity(0, mine)
    return True


@contextmanager
def cell_threads() -> Iterator[None]:
    """Run the enclosed code with :data:`CELL_THREADS` compute threads.

    Fixes XLA's pool (:func:`fix_xla_threads`, once per process), loads SciPy's LAPACK
    (whose OpenBLAS JAX's CPU linear algebra calls) and caps every BLAS/OpenMP pool loaded
    in the process at one thread with ``threadpoolctl`` until the block ends (the former
    limits are restored; libraries loaded inside the block start with the worker's
    ``OMP_NUM_THREADS``-style variables, set to 1 for local workers). The limits are
    process-wide: run one cell at a time per process (udbench's workers do).
    """
    import scipy.linalg  # noqa: F401  (loads SciPy's OpenBLAS so the limit reaches it)
    from threadpoolctl import threadpool_limits

    from udbench._cache import enable_compile_cache

    enable_compile_cache()  # programs compiled by another process are loaded, not rebuilt
    fix_xla_threads()
    with threadpool_limits(limits=CELL_THREADS):
        yield


def single_threaded(fn: F) -> F:
    """Decorator: run ``fn`` inside :func:`cell_threads` (the runner's cell function)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with cell_threads():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def release_compiled_programs() -> None:
    """Drop JAX's compiled programs and collect garbage, between units of work of one process.

    Every compiled XLA program keeps memory maps for its code. A long process that compiles
    programs of many shapes and methods (a campaign running unit after unit, the test suite
    module after module) passes the kernel's ``vm.max_map_count`` (65530 by default) and
    LLVM fails with "Cannot allocate memory" (issue 36: a tuning run died so after eight
    neural-network units). Called between units that share nothing compiled worth keeping:
    by the campaign engine after each unit and by the test suite after each module. JAX is
    not imported for this: a process that never used it pays only the garbage collection.
    """
    import gc

    jax = sys.modules.get("jax")
    if jax is not None:
        jax.clear_caches()
    gc.collect()


#: Share of the kernel's ``vm.max_map_count`` past which
#: :func:`release_compiled_programs_if_crowded` drops the compiled programs. One unit of the
#: runs campaign adds about 500-1000 maps per method and dataset, a tuning sweep of a neural
#: network up to about 8000 (eight of them passed the default limit of 65530).
MAP_COUNT_SHARE = 0.5
#: Growth of the process's resident memory since its last drop, as a share of the memory it
#: may use (the machine's, or its cgroup's limit where lower), past which
#: :func:`release_compiled_programs_if_crowded` drops the compiled programs: about 20 MiB per
#: new shape of an NN method (measured), so a 24 GiB machine keeps about 60 shapes a process
#: (the runs campaign's method-dataset pairs of several methods). Per process: ``--workers N``
#: lets N processes grow by as much each.
RSS_GROWTH_SHARE = 0.05

_rss_since: list[float] = []  # the resident share after the last drop (or at the first look)


def memory_map_counts() -> tuple[int, int] | None:
    """The process's memory maps (lines of ``/proc/self/maps``) and the kernel's limit
    (``/proc/sys/vm/max_map_count``); None where either cannot be read (not Linux)."""
    try:
        with open("/proc/self/maps", "rb") as fh:
            n = sum(1 for _ in fh)
        with open("/proc/sys/vm/max_map_count") as fh:
            limit = int(fh.read().strip())
    except (OSError, ValueError):
        return None
    return n, limit


def resident_share() -> float | None:
    """The process's resident memory (``/proc/self/statm``) as a share of the memory it may
    use: the machine's physical memory, or its cgroup's ``memory.max`` where that is lower;
    None where it cannot be read."""
    try:
        with open("/proc/self/statm") as fh:
            page = os.sysconf("SC_PAGE_SIZE")
            used = int(fh.read().split()[1]) * page
        total = float(os.sysconf("SC_PHYS_PAGES") * page)
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    try:
        with open("/sys/fs/cgroup/memory.max") as fh:
            text = fh.read().strip()
        if text.isdigit():
            total = min(total, float(text))
    except OSError:
        pass
    return used / total


def _trim_heap() -> None:
    """Give freed heap pages back to the system (glibc's ``malloc_trim``; elsewhere nothing):
    after the programs are dropped, glibc kept most of their memory (655 → 648 MiB without,
    400 MiB with, measured)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        if libc is not None and hasattr(libc, "malloc_trim"):
            libc.malloc_trim(0)
    except OSError:
        pass


def release_compiled_programs_if_crowded(
    share: float = MAP_COUNT_SHARE, rss_growth: float = RSS_GROWTH_SHARE
) -> bool:
    """:func:`release_compiled_programs` only once the process's memory maps pass ``share`` of
    the kernel's limit (:func:`memory_map_counts`) or its resident memory has grown by
    ``rss_growth`` of the memory it may use since the last drop (:func:`resident_share`), and
    always where either cannot be read; True when it dropped them (and trimmed the heap).

    Dropping the programs after every unit made every cell compile its programs again: an
    ``nn-lap`` cell of gp-small took 2.0 CPU seconds so against 0.16-0.20 s with the programs
    of the previous cell of the same dataset kept (``sngp-het`` about 1 s, ``nn-ens`` 1.5 s
    kept; measured 2026-12-04; the persistent compilation cache keeps only programs that took
    over a second to compile). A kept program is the same executable, so a unit's metrics are
    the same; its timings (``fit_time_s``, CPU seconds) include compiling only where it is the
    first of its shape in the process.
    """
    counts, rss = memory_map_counts(), resident_share()
    if counts is not None and rss is not None:
        if not _rss_since:
            _rss_since.append(rss)
        if counts[0] <= share * counts[1] and rss - _rss_since[0] <= rss_growth:
            return False
    release_compiled_programs()
    _trim_heap()
    after = resident_share()
    _rss_since[:] = [] if after is None else [after]
    return True
