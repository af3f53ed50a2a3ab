"""Which kind each record file holds, remembered per version of the file.

A campaign's summary reads its records folder once per kind it summarises (the runs
campaign: untuned, tuned, transfer, oracle fits), and every record file had to be parsed
each time only to learn its ``kind``. :func:`read_unless_other_kind` remembers the kind of
each file it parsed, keyed by the file's path, inode, modification time and size (records
are replaced whole, by a rename, so a rewritten record has another key), and skips without
parsing a file it knows to hold another kind. Only the kind string is kept: every caller
still gets a freshly parsed record of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["file_version", "read_unless_other_kind"]

_Key = tuple[str, int, int, int]
#: File version -> the ``kind`` its record holds (parsed, readable records only).
_KINDS: dict[_Key, str] = {}
#: Entries kept before the memory is cleared (a few records folders' worth).
_MAX_ENTRIES = 200_000


def file_version(path: Path) -> _Key | None:
    """The version of the file at ``path``: (path, inode, modification time in ns, size),
    None when it cannot be stat'ed. Records are replaced whole, by a rename, so a rewritten
    record has another version."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (str(path), st.st_ino, st.st_mtime_ns, st.st_size)


def read_unless_other_kind(
    path: Path,
    kind: str | None,
    read: Callable[[Path], dict[str, Any] | None],
) -> dict[str, Any] | None:
    """The record at ``path`` as ``read(path)`` gives it, or None without parsing it when
    this version of the file is known to hold a record of another kind than ``kind`` (any
    kind when ``kind`` is None). The file's version is taken before it is read, so a file
    replaced meanwhile is remembered under its old version, which no later call matches."""
    key = file_version(path)
    known = None if key is None else _KINDS.get(key)
    if kind is not None and known is not None and known != kind:
        return None
    record = read(path)
    if key is not None and record is not None and record.get("status") != "corrupt":
        if isinstance(record.get("kind"), str):
            if len(_KINDS) >= _MAX_ENTRIES:
                _KINDS.clear()
            _KINDS[key] = record["kind"]
    return record
