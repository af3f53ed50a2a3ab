"""One writer per output folder: the lock every udbench command that owns a folder takes.

A command that writes into a folder (``udbench generate --out``, ``run --out``, ``tune --out``,
``suite --out``, …) holds ``FOLDER/.udbench.lock`` while it works. The file is created
atomically (written under a private name, then hard-linked into place, so it never exists
half-written) and holds the owner's host, process id, process start time and command. A
second command on the same folder is refused in one line naming the owner; a lock whose
process is gone (a killed run) is taken over, so an interrupted command resumes by running it
again. A lock held on another host cannot be checked from here: it is respected, and the
message says which file to delete if nothing runs there any more.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from udbench._validation import UdbenchError

__all__ = ["LOCK_NAME", "folder_lock", "lock_owner"]

#: Name of the lock file inside a locked folder.
LOCK_NAME = ".udbench.lock"


def _start_time(pid: int) -> float | None:
    """Start time of process ``pid`` (seconds since the epoch), or None where unknown."""
    try:
        import psutil  # a dependency of Dask's distributed; optional here

        return float(psutil.Process(pid).create_time())
    except Exception:
        return None


def _me(command: str) -> dict[str, Any]:
    pid = os.getpid()
    return {
        "host": socket.gethostname(),
        "pid": pid,
        "process_started": _start_time(pid),
        "command": command,
        "since": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def _alive(owner: dict[str, Any]) -> bool:
    """Whether the process that wrote ``owner`` may still run (True when it cannot be told)."""
    if owner.get("host") != socket.gethostname():
        return True  # another machine: cannot look, so respect it
    try:
        pid = int(owner["pid"])
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    except (KeyError, TypeError, ValueError, OverflowError):
        return False  # not a lock udbench wrote
    started, now = owner.get("process_started"), _start_time(pid)
    if started is not None and now is not None and abs(float(started) - now) > 1.0:
        return False  # the pid was reused by a later process
    return True


def lock_owner(folder: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The owner recorded in ``folder``'s lock file, or None when there is none (or unreadable)."""
    try:
        owner = json.loads((Path(folder) / LOCK_NAME).read_text())
    except (OSError, ValueError):
        return None
    return owner if isinstance(owner, dict) else None


def _create(path: Path, content: str) -> bool:
    """Create ``path`` holding ``content`` atomically; False if it already exists."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".udbench-lock-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(content)
        try:
            os.link(tmp, path)  # atomic and exclusive, also on NFS
        except FileExistsError:
            return False
        except OSError:  # a file system without hard links: exclusive create instead
            try:
                out = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(out, "w") as fh:
                fh.write(content)
        return True
    finally:
        Path(tmp).unlink(missing_ok=True)


@contextmanager
def folder_lock(folder: str | os.PathLike[str], command: str) -> Iterator[Path]:
    """Hold ``folder``'s lock while the block runs (the folder is made if needed, and removed
    again if the block leaves it empty).

    Parameters
    ----------
    folder : str or Path
        The output folder the command owns.
    command : str
        The command, as named in the messages (``"udbench run"``).

    Yields
    ------
    Path
        The lock file.

    Raises
    ------
    UdbenchError
        Another process holds the lock: one line naming the folder, the owner (command,
        process id, host, since when) and what to do.
    """
    folder = Path(folder)
    # the folders made here only to hold the lock are removed again if the command leaves them
    # empty (a command refused after its checks writes nothing)
    made = [p for p in (folder, *folder.absolute().parents) if not p.exists()]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_NAME
    me = _me(command)
    for _ in range(3):
        if _create(path, json.dumps(me)):
            break
        other = lock_owner(path.parent)
        if other is None and path.exists():
            time.sleep(0.1)  # a lock being replaced right now: read it once more
            other = lock_owner(path.parent)
        if other is not None and _alive(other):
            where = (
                ""
                if other.get("host") == me["host"]
                else f" on host {other.get('host')!r} (if nothing runs there any more, "
                f"delete {str(path)!r})"
            )
            raise UdbenchError(
                f"{command}: {str(folder)!r} is in use by {other.get('command', 'udbench')} "
                f"(pid {other.get('pid')}{where}, since {other.get('since', '?')}): one "
                "command writes a folder at a time; wait for it to finish, or use another "
                "output folder"
            )
        path.unlink(missing_ok=True)  # left by a process that is gone: take it over
    else:  # pragma: no cover - three stale locks in a row
        _remove_empty(made)
        raise UdbenchError(f"{command}: cannot take the lock {str(path)!r}; try again")
    try:
        yield path
    finally:
        owner = lock_owner(folder)
        if owner is not None and owner.get("pid") == me["pid"] and owner.get("host") == me["host"]:
            path.unlink(missing_ok=True)
        _remove_empty(made)


def _remove_empty(made: list[Path]) -> None:
    """Remove the folders of ``made`` (innermost first) that are still empty."""
    for p in made:
        try:
            p.rmdir()
        except OSError:  # not empty (the command wrote there), or gone
            return
