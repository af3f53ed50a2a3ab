"""Checks and parsers of command-line options shared by several sub-commands.

One place for the options that more than one command takes (``--out``, ``--data-dir``,
``--seeds``, comma lists of choices), so that every command checks them the same way and
reports a bad value with the same message (:func:`udbench._validation.param_error`: the
command, the option, the rule and the value received). Command modules import from here,
never from each other (``udbench._layers``).
"""

from __future__ import annotations

import os
from pathlib import Path

from udbench import _validation
from udbench._validation import param_error
from udbench.tasks.grid import parse_choice_list, parse_seeds

__all__ = [
    "DATA_DIR_HELP",
    "MAX_RESAMPLES",
    "check_data_dir",
    "check_level",
    "check_out_dir",
    "check_resamples",
    "out_path",
    "parse_choice_list",
    "parse_seeds",
    "split_tasks_and_methods",
]

#: Help text of every ``--data-dir`` option.
DATA_DIR_HELP = "Local data folder laid out as <key>/<key>.csv.gz (default: $UDBENCH_DATA_DIR)."

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
    name a registered method move to the method list.

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
    from udbench.methods.registry import parse_method_spec

    keep: list[str] = []
    extra: list[str] = []
    for item in tasks:
        if Path(item).exists() or glob.has_magic(item):
            keep.append(item)
            continue
        try:
            get_method_class(parse_method_spec(item)[0])
        except Exception:
            keep.append(item)
        else:
            extra.append(item)
    specs = [s for text in methods for s in text.split()] + extra
    return keep, specs
