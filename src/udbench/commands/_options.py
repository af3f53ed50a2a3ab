"""Checks and parsers of command-line options shared by several sub-commands.

One place for the options that more than one command takes (``--out``, ``--data-dir``,
``--seeds``, comma lists of choices, and the execution group ``--workers``/``--scheduler``/
``--cluster-config``/``--pin``: declared once as typer ``Annotated`` types, checked once by
:func:`execution_options`), so that every command checks them the same way and
reports a bad value with the same message (:func:`udbench._validation.param_error`: the
command, the option, the rule and the value received). Command modules import from here,
never from each other (``udbench._layers``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from udbench import _validation
from udbench._validation import param_error
from udbench.tasks.grid import parse_choice_list, parse_seeds

__all__ = [
    "CLUSTER_CONFIG_HELP",
    "DATA_DIR_HELP",
    "MAX_RESAMPLES",
    "PIN_HELP",
    "SCHEDULER_HELP",
    "WORKERS_HELP",
    "ClusterConfigOpt",
    "ExecutionOptions",
    "PinOpt",
    "SchedulerOpt",
    "WorkersOpt",
    "check_data_dir",
    "check_level",
    "check_out_dir",
    "check_resamples",
    "execution_options",
    "out_path",
    "parse_choice_list",
    "parse_seeds",
    "split_tasks_and_methods",
    "workers_option",
]

#: Help text of every ``--data-dir`` option.
DATA_DIR_HELP = "Local data folder laid out as <key>/<key>.csv.gz (default: $UDBENCH_DATA_DIR)."

#: Help text of ``--workers`` where its default is the usable cores (``run``, ``tune``, ...).
WORKERS_HELP = "Local Dask workers (default: usable cores; 0: inline)."
#: Help text of every ``--scheduler`` option.
SCHEDULER_HELP = "Address of a running Dask scheduler (tcp://host:8786)."
#: Help text of every ``--cluster-config`` option.
CLUSTER_CONFIG_HELP = "YAML/TOML file naming a cluster class (e.g. SLURM)."
#: Help text of every ``--pin/--no-pin`` option.
PIN_HELP = (
    "Pin each worker to its own core(s), 1 BLAS thread per core "
    "(default: on for local workers, off otherwise)."
)


def workers_option(help: str = WORKERS_HELP) -> Any:
    """The ``--workers``/``-w`` option (a ``typer.Option`` for ``Annotated``), with another
    help text where the command's default differs (``suite``: generate's and run's)."""
    return typer.Option("--workers", "-w", help=help)


#: ``--workers``/``-w``: local Dask workers (None: the usable cores; 0: in this process).
WorkersOpt = Annotated[int | None, workers_option()]
#: ``--scheduler``: address of a running Dask scheduler.
SchedulerOpt = Annotated[str | None, typer.Option("--scheduler", help=SCHEDULER_HELP)]
#: ``--cluster-config``: a cluster file (:func:`udbench.execution.cluster.load_cluster_config`).
ClusterConfigOpt = Annotated[
    Path | None, typer.Option("--cluster-config", help=CLUSTER_CONFIG_HELP)
]
#: ``--pin/--no-pin``: core pinning of the workers (None: the deployment's default).
PinOpt = Annotated[bool | None, typer.Option("--pin/--no-pin", help=PIN_HELP)]


@dataclass(frozen=True)
class ExecutionOptions:
    """Where a command's work runs: the checked values of the execution options.

    Built by :func:`execution_options`; :meth:`kwargs` gives the keyword arguments of the
    library calls (``run_benchmark``, ``tune``, ``generate_grid``'s executor, ...).

    Attributes
    ----------
    command : str
        The command, as named in messages (``"udbench run"``).
    workers : int or None
        Local Dask workers (None: the library's default; 0: in this process).
    scheduler : str or None
        Address of a running scheduler.
    cluster_config : Path or None
        Cluster file.
    pin : bool or None
        Core pinning (None: the deployment's default).
    """

    command: str
    workers: int | None = None
    scheduler: str | None = None
    cluster_config: Path | None = None
    pin: bool | None = None

    def kwargs(self) -> dict[str, Any]:
        """``workers``, ``scheduler``, ``cluster_config`` and ``pin`` as keyword arguments."""
        return {
            "workers": self.workers,
            "scheduler": self.scheduler,
            "cluster_config": self.cluster_config,
            "pin": self.pin,
        }

    def check_deployment(self) -> None:
        """Fail fast, before any work: a scheduler address where nothing listens (one TCP
        connection, 5 s limit) or a cluster file that cannot be read.

        Imports Dask (seconds), so a command calls it after its cheap checks and
        :func:`execution_options`.

        Raises
        ------
        UdbenchError
            From :func:`udbench.execution.cluster.check_scheduler_address` or
            :func:`udbench.execution.cluster.load_cluster_config`.
        """
        if self.scheduler is None and self.cluster_config is None:
            return
        from udbench.execution.cluster import check_scheduler_address, load_cluster_config

        if self.scheduler is not None:
            check_scheduler_address(self.scheduler)
        if self.cluster_config is not None:
            load_cluster_config(self.cluster_config)


def execution_options(
    command: str,
    workers: int | None = None,
    scheduler: str | None = None,
    cluster_config: Path | None = None,
    pin: bool | None = None,
) -> ExecutionOptions:
    """Check the execution options of a command, without importing anything heavy.

    Parameters
    ----------
    command : str
        The command, as named in messages.
    workers : int, optional
        ``--workers``: None or an integer from 0 to
        :data:`udbench._validation.MAX_WORKERS_PER_CORE` × the usable cores.
    scheduler : str, optional
        ``--scheduler``; not together with ``cluster_config``.
    cluster_config : Path, optional
        ``--cluster-config``.
    pin : bool, optional
        ``--pin/--no-pin``.

    Returns
    -------
    ExecutionOptions
        The checked values (the address and the file are checked by
        :meth:`ExecutionOptions.check_deployment`, which imports Dask).

    Raises
    ------
    UdbenchError
        One line naming the command, the option, the rule and the value: a worker count out
        of range, or both ``--scheduler`` and ``--cluster-config``.
    """
    checked = _validation.check_workers(command, "--workers", workers)
    if scheduler is not None and cluster_config is not None:
        raise param_error(
            command, "--scheduler", "not be combined with --cluster-config", scheduler
        )
    return ExecutionOptions(command, checked, scheduler, cluster_config, pin)


#: Most bootstrap replicates ``--n-resamples`` accepts (each replicate holds one row per
#: instance and method: 10⁵ × 3120 × 19 float64 would be 47 GB).
MAX_RESAMPLES = 100_000


def check_resamples(command: str, value: int, option: str = "--n-resamples") -> int:
    """``--n-resamples``: an integer from 1 to :data:`MAX_RESAMPLES`, checked before any
    import or file read.

    Raises
    ------
    UdbenchError
        Naming the command, the option, the rule and the value.
    """
    out = _validation.check_int(command, option, value, minimum=1, maximum=MAX_RESAMPLES)
    assert out is not None
    return out


def check_level(command: str, option: str, value: float) -> float:
    """A probability strictly between 0 and 1 (``--confidence``).

    Raises
    ------
    UdbenchError
        NaN, infinite, <= 0 or >= 1.
    """
    if not (isinstance(value, (int, float)) and 0.0 < float(value) < 1.0):
        raise param_error(command, option, "be a number in (0, 1)", value)
    return float(value)


def check_out_dir(command: str, out: Path, parameter: str = "--out") -> None:
    """The output folder must be a folder (or not exist yet) that udbench can write to.

    Called by every command that writes, before any work (see
    :func:`udbench._validation.check_writable`: it creates and removes a probe file, so it sees
    permissions, read-only mounts and root squash alike).

    Parameters
    ----------
    command : str
        The command, as named in the message (``"udbench run"``).
    out : Path
        The value of the option.
    parameter : str, default "--out"
        The option, as named in the message.

    Raises
    ------
    UdbenchError
        Naming the command, the option and the path, before anything runs: the path is empty,
        is a file, lies under a file, or no file can be created there.
    """
    _validation.check_writable(command, parameter, out)  # looked up at call time (tests patch it)


def out_path(text: str) -> Path:
    """Typer ``parser`` of output-path options: an empty value is an error, not ``"."``.

    ``Path("")`` is the current folder, so ``--out ""`` (e.g. an unset shell variable) would
    silently write there. Raises ``ValueError``, which click reports as a bad option value
    (exit 2).
    """
    if not str(text).strip():
        raise ValueError("must name a folder or file, not an empty string")
    return Path(text)


def check_data_dir(command: str, data_dir: Path | None) -> None:
    """A data folder named by ``--data-dir`` or ``$UDBENCH_DATA_DIR`` must exist.

    Otherwise a typo would silently fall through to the download cache ("needs download").

    Parameters
    ----------
    command : str
        The command, as named in the message.
    data_dir : Path or None
        The value of ``--data-dir`` (None: the environment variable is checked instead).

    Raises
    ------
    UdbenchError
        Naming the option (or the variable) and the path given.
    """
    from udbench.data.sources import DATA_DIR_ENV

    if data_dir is not None:
        if not Path(data_dir).expanduser().is_dir():
            raise param_error(command, "--data-dir", "be an existing folder", str(data_dir))
        return
    env = os.environ.get(DATA_DIR_ENV)
    if env and not Path(env).expanduser().is_dir():
        raise param_error(command, f"${DATA_DIR_ENV}", "be an existing folder (or unset)", env)


def split_tasks_and_methods(tasks: list[str], methods: list[str]) -> tuple[list[str], list[str]]:
    """Let ``--methods a b c`` work in ``run`` and ``tune``: click gives ``-m`` one value, so
    ``b`` and ``c`` arrive as task arguments; those that are not existing paths or globs but
    name a registered method or classifier move to the method list.

    Parameters
    ----------
    tasks : list of str
        The command's positional arguments.
    methods : list of str
        The ``-m/--methods`` values (each may hold several space-separated specs).

    Returns
    -------
    tasks, method_specs : list of str
    """
    import glob

    from udbench.methods import get_method_class
    from udbench.methods.classifiers import classifier_spec_name
    from udbench.methods.registry import parse_method_spec

    keep: list[str] = []
    extra: list[str] = []
    for item in tasks:
        if Path(item).exists() or glob.has_magic(item):
            keep.append(item)
            continue
        if classifier_spec_name(item) is not None:
            extra.append(item)
            continue
        try:
            get_method_class(parse_method_spec(item)[0])
        except Exception:
            keep.append(item)
        else:
            extra.append(item)
    specs = [s for text in methods for s in text.split()] + extra
    return keep, specs
