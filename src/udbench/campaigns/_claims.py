"""Claims: which run of a campaign works on which unit (:func:`udbench.campaigns.run_campaign`).

A run holds a unit's *claim* while it works on it: an exclusive ``flock`` (BSD file lock) on
``<records>/.claims/<unit id>.claim`` (``/`` written as ``@``, which unit ids do not use).
The kernel drops the lock when the process ends, however it ends, so a killed run's claim
needs no taking over, and no two live runs can hold one claim (over NFS, Linux maps the lock
to a POSIX lock held through the server). The file names its holder (host, process id,
command, since when) for the messages of the other runs and of ``udbench campaign status``,
and is removed when the claim is released: a run that locked a file just removed by its
previous holder sees that the path no longer leads to what it locked, and tries again.

Where ``fcntl`` does not exist (Windows), a claim is the file's exclusive creation instead; a
claim left by a killed run is then respected until its file under ``.claims`` is deleted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from udbench._lock import _alive, _me, lock_owner
from udbench._validation import UdbenchError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "CLAIMS_DIR",
    "UnitBusy",
    "claim_path",
    "claimed_units",
    "refuse_folder_lock",
    "unit_claim",
]

#: Folder under a records folder that holds the claims of the units being worked on.
CLAIMS_DIR = ".claims"
_SUFFIX = ".claim"


class UnitBusy(Exception):
    """Raised by :func:`unit_claim` when another run holds the unit's claim.

    Parameters
    ----------
    path : Path
        The claim file.
    owner : dict
        What the file says of its holder (``host``, ``pid``, ``command``, ``since``); empty
        when it could not be read (a claim being made or released at that moment).
    """

    def __init__(self, path: Path, owner: dict[str, Any]) -> None:
        super().__init__(f"{path} is held by {owner or 'another run'}")
        self.path = path
        self.owner = owner


def claim_path(records: str | Path, unit_id: str) -> Path:
    """The claim file of ``unit_id`` under ``records``.

    Parameters
    ----------
    records : str or Path
        The campaign's records folder.
    unit_id : str
        The unit's id (:class:`udbench.campaigns.Unit`).

    Returns
    -------
    Path
        ``<records>/.claims/<unit id, "/" as "@">.claim``: one flat file per unit, so that
        releasing a claim removes no folder that another claim needs.
    """
    return Path(records) / CLAIMS_DIR / (unit_id.replace("/", "@") + _SUFFIX)


def _read_owner(path: Path) -> dict[str, Any]:
    try:
        owner = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return owner if isinstance(owner, dict) else {}


def _same_file(fd: int, path: Path) -> bool:
    """Whether ``path`` still leads to the open file ``fd`` (not removed or replaced)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


def _lock_fd(path: Path) -> int:
    """Open and lock ``path``; the open descriptor. Raises :class:`UnitBusy` if held."""
    for _ in range(5):
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise UnitBusy(path, _read_owner(path)) from None
        except BaseException:
            os.close(fd)
            raise
        if _same_file(fd, path):
            return fd
        os.close(fd)  # locked a file its holder had just removed: take the new one
    raise UdbenchError(f"udbench campaign run: cannot claim {str(path)!r}; try again")


def _create_fd(path: Path) -> int:  # pragma: no cover - Windows
    """Claim by exclusive creation (no ``fcntl``). Raises :class:`UnitBusy` if it exists."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise UnitBusy(path, _read_owner(path)) from None


@contextmanager
def unit_claim(records: str | Path, unit_id: str, command: str) -> Iterator[Path]:
    """Hold ``unit_id``'s claim while the block runs.

    Parameters
    ----------
    records : str or Path
        The campaign's records folder (made if needed).
    unit_id : str
        The unit.
    command : str
        Named in the claim, for the other runs' messages (``"udbench campaign run"``).

    Yields
    ------
    Path
        The claim file.

    Raises
    ------
    UnitBusy
        Another live run holds the claim.
    UdbenchError
        The claim kept being replaced under this run (five tries).
    OSError
        The claims folder or file cannot be made (permissions, a full disk): raised, never
        taken for a busy unit.
    """
    path = claim_path(records, unit_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = _lock_fd(path) if fcntl is not None else _create_fd(path)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(_me(command)).encode("utf-8"))
        yield path
    finally:
        path.unlink(missing_ok=True)  # while still held: the next run finds a fresh file
        os.close(fd)


def claimed_units(records: str | Path) -> dict[str, dict[str, Any]]:
    """The units that a live run holds the claim of now.

    Read from what each claim file says of its holder, whose process is looked up (the
    files are never locked here, so that asking never makes a run skip a unit); a claim made
    on another host cannot be looked up and is listed.

    Parameters
    ----------
    records : str or Path
        The campaign's records folder.

    Returns
    -------
    dict
        Unit id -> the holder (``host``, ``pid``, ``command``, ``since``).
    """
    out: dict[str, dict[str, Any]] = {}
    base = Path(records) / CLAIMS_DIR
    for path in sorted(base.glob("*" + _SUFFIX)) if base.is_dir() else []:
        owner = _read_owner(path)
        if owner and _alive(owner):  # a killed run's file names a process that is gone
            out[path.name[: -len(_SUFFIX)].replace("@", "/")] = owner
    return out


def refuse_folder_lock(records: str | Path) -> None:
    """Refuse a records folder that a run of an earlier udbench holds whole.

    Such a run took the folder's lock (:func:`udbench._lock.folder_lock`), not the units'
    claims, so it would not see this run's claims and the two would do the same units.

    Parameters
    ----------
    records : str or Path
        The campaign's records folder.

    Raises
    ------
    UdbenchError
        A live process holds the folder's lock.
    """
    owner = lock_owner(records)
    if owner is not None and _alive(owner):
        raise UdbenchError(
            f"udbench campaign run: {str(records)!r} is in use by "
            f"{owner.get('command', 'udbench')} (pid {owner.get('pid')} on "
            f"{owner.get('host')}, since {owner.get('since', '?')}), a run of an earlier "
            "udbench that locks the whole folder; wait for it to finish"
        )
