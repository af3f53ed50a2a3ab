"""Claims: which run of a campaign works on which unit (:func:`udbench.campaigns.run_campaign`).

A run holds a unit's claim while it works on it: the lock (:func:`udbench._lock.folder_lock`)
of the unit's own folder under ``<records>/.claims``. Other runs skip a claimed unit; a claim
whose process is gone is taken over.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from udbench._lock import _alive, lock_owner
from udbench._validation import UdbenchError

__all__ = ["CLAIMS_DIR", "claim_dir", "claimed_units", "refuse_folder_lock"]

#: Folder under a records folder that holds the claims of the units being worked on.
CLAIMS_DIR = ".claims"


def claim_dir(records: str | Path, unit_id: str) -> Path:
    """The folder whose lock is ``unit_id``'s claim (:func:`run_campaign`).

    One flat folder per unit under ``<records>/.claims`` (``/`` written as ``@``, which unit
    ids do not use), so that releasing a claim removes no folder another claim needs.
    """
    return Path(records) / CLAIMS_DIR / unit_id.replace("/", "@")


def claimed_units(records: str | Path) -> dict[str, dict[str, Any]]:
    """The units a live run is working on now: unit id -> the claim's owner (host, pid,
    command, since), from the claims under ``<records>/.claims`` (:func:`claim_dir`)."""
    out: dict[str, dict[str, Any]] = {}
    base = Path(records) / CLAIMS_DIR
    for folder in sorted(base.iterdir()) if base.is_dir() else []:
        owner = lock_owner(folder)
        if owner is not None and _alive(owner):
            out[folder.name.replace("@", "/")] = owner
    return out


def refuse_folder_lock(records: str | Path) -> None:
    """Refuse a records folder that a run of an earlier udbench holds whole (it took the
    folder's lock, not the units' claims, so it would not see this run's claims)."""
    owner = lock_owner(records)
    if owner is not None and _alive(owner):
        raise UdbenchError(
            f"udbench campaign run: {str(records)!r} is in use by "
            f"{owner.get('command', 'udbench')} (pid {owner.get('pid')} on "
            f"{owner.get('host')}, since {owner.get('since', '?')}), a run of an earlier "
            "udbench that locks the whole folder; wait for it to finish"
        )
