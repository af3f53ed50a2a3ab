"""Lower the CPU priority of a long background run (``udbench campaign run --nice``).

``os.nice`` alone is not enough on Linux kernels with *autogroup* scheduling
(``/proc/sys/kernel/sched_autogroup_enabled`` = 1, the default of many distributions): the
scheduler first shares the CPU fairly between *sessions* (autogroups) and applies a
process's nice value only against the other processes of its own session. A campaign started
in its own session (``setsid``, as docs/campaigns.md does) at nice 19 then still takes a full
session's share against, say, a test run in another terminal — measured here on 2026-12-02:
two ``nice 19`` campaigns held ≈ 60 % of a core each while a CI run's workers got ≈ 30 %.

:func:`lower_priority` therefore also sets the nice value of the process's autogroup
(``/proc/self/autogroup``, see ``sched(7)``, "The autogroup feature") — but only when the
session has no controlling terminal (``setsid``, ``nohup setsid uv run …``, a batch job), so
that it never lowers the interactive shell session it was typed in — and only while it runs:
the autogroup is shared by every process of the session (the shell or script that started the
run among them), so :func:`restore_priority`, registered with :mod:`atexit`, puts the
session's autogroup nice back to what it was when the process ends, unless something else
has changed it meanwhile.
"""

from __future__ import annotations

import atexit
import os
import re
from pathlib import Path

from udbench._validation import param_error

__all__ = ["check_nice", "lower_priority", "restore_priority"]

#: Where Linux exposes a process's autogroup and whether autogroups are on.
AUTOGROUP_FILE = Path("/proc/self/autogroup")
AUTOGROUP_SWITCH = Path("/proc/sys/kernel/sched_autogroup_enabled")


def _has_controlling_terminal() -> bool:
    """Whether this process's session has a controlling terminal (an interactive shell's)."""
    try:
        fd = os.open("/dev/tty", os.O_RDONLY)
    except OSError:
        return False
    os.close(fd)
    return True


#: (autogroup file, nice value found there before, nice value written) while lowered.
_LOWERED: list[tuple[Path, int, int]] = []


def _autogroup_nice(autogroup_file: Path) -> int | None:
    """The nice value in ``/proc/self/autogroup`` (``"/autogroup-7 nice 0"``), or None."""
    try:
        found = re.search(r"nice\s+(-?\d+)", autogroup_file.read_text())
    except OSError:
        return None
    return int(found.group(1)) if found else None


def restore_priority() -> None:
    """Put the session's autogroup nice back to its value before :func:`lower_priority`.

    Run at exit (registered by :func:`lower_priority`); does nothing when nothing was
    lowered, or when the autogroup's nice is no longer the value written (another process
    of the session changed it since: theirs is kept). Never raises.
    """
    while _LOWERED:
        path, before, written = _LOWERED.pop()
        if _autogroup_nice(path) == written:
            try:
                path.write_text(f"{before}\n")
            except OSError:
                pass


def _autogroup_enabled(switch: Path) -> bool:
    try:
        return switch.read_text().strip() == "1"
    except OSError:
        return False


def check_nice(nice: object) -> None:
    """Refuse a ``--nice`` value outside 0 … 19 (:class:`UdbenchError`, naming the option)."""
    if not isinstance(nice, int) or isinstance(nice, bool) or not 0 <= nice <= 19:
        raise param_error("udbench campaign run", "nice", "be an integer in 0..19", nice)


def lower_priority(
    nice: int,
    *,
    autogroup_file: Path = AUTOGROUP_FILE,
    autogroup_switch: Path = AUTOGROUP_SWITCH,
) -> str | None:
    """Raise this process's nice value by ``nice`` and, where the kernel groups by session,
    its session's autogroup nice value to ``nice`` until the process ends
    (:func:`restore_priority`).

    Parameters
    ----------
    nice : int
        0 … 19 (0: nothing is changed).
    autogroup_file, autogroup_switch : Path
        ``/proc/self/autogroup`` and ``/proc/sys/kernel/sched_autogroup_enabled`` (tests
        point them elsewhere).

    Returns
    -------
    str or None
        A one-line note for the console when autogroups are on and the session's priority
        was not lowered (the session has a controlling terminal, or the write was refused);
        None otherwise.

    Raises
    ------
    UdbenchError
        ``nice`` outside 0 … 19.
    """
    check_nice(nice)
    if nice == 0:
        return None
    os.nice(nice)
    if not (autogroup_file.exists() and _autogroup_enabled(autogroup_switch)):
        return None
    hint = (
        f"--nice {nice} lowers this process against its own session only (the kernel "
        "shares CPU between sessions first: sched_autogroup)"
    )
    if _has_controlling_terminal():
        return f"{hint}; start it with setsid to lower it against other sessions too"
    before = _autogroup_nice(autogroup_file)
    try:
        autogroup_file.write_text(f"{nice}\n")
    except OSError as err:
        return f"{hint}; setting the session's autogroup nice failed ({err.strerror})"
    if before is not None and before != nice:
        if not _LOWERED:
            atexit.register(restore_priority)
        _LOWERED.append((autogroup_file, before, nice))
    return None
