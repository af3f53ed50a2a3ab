"""The download and fit cache: one folder shared by every layer that caches files.

``$UDBENCH_CACHE_DIR`` (default ``~/.cache/udbench``) holds downloaded raw tables
(``<key>/<key>.csv.gz``, :mod:`udbench.data.sources`), fitted prior hyperparameters
(``priors/gp/``, :mod:`udbench.priors.gp`) and JAX's persistent compilation cache
(``jax/<machine>/``, :func:`enable_compile_cache`). It lives at the ground level so that
neither of those packages has to import the other to find it.

**Compiled programs.** Every process that runs cells, trials or task instances compiles its
JAX programs once per shape and configuration; a new worker process, a new ``udbench run``
or a restarted child would compile them again. :func:`enable_compile_cache` points JAX's
persistent compilation cache (``jax_compilation_cache_dir``) at
``$UDBENCH_CACHE_DIR/jax/<machine>``, so a program compiled by one process is loaded by the
next. A loaded program is the compiled executable itself, so results are the same bit for
bit (tested). ``<machine>`` is a hash of the CPU model, its instruction-set flags and the JAX
version, so nodes of different CPU types sharing a cache folder never load each other's
code. Programs that take under a second to compile are not stored (JAX's default), and the
folder is trimmed to :data:`COMPILE_CACHE_MAX_BYTES` when a process starts using it (the
oldest entries go first).
``UDBENCH_COMPILE_CACHE=off`` turns it off, ``UDBENCH_COMPILE_CACHE=/path`` moves it.

**Checksums.** A cache whose content a result depends on (a GP kernel fit, an oracle's
moments) keeps a content checksum of what it holds, :func:`cache_checksum`, and its reader
recomputes the entry when the checksum is missing or differs (issue 68: an edited cache was
used silently). :func:`seal` adds it to a JSON record, :func:`seal_status` checks it.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "CACHE_CHECKSUM_FIELD",
    "CACHE_DIR_ENV",
    "COMPILE_CACHE_ENV",
    "COMPILE_CACHE_MAX_BYTES",
    "cache_checksum",
    "cache_dir",
    "compile_cache_dir",
    "disable_compile_cache",
    "enable_compile_cache",
    "seal",
    "seal_status",
]

#: Environment variable naming the download cache (default ``~/.cache/udbench``).
CACHE_DIR_ENV = "UDBENCH_CACHE_DIR"


def cache_dir() -> Path:
    """The download cache: ``$UDBENCH_CACHE_DIR``, else ``~/.cache/udbench``.

    Read at every call (not at import), so a test or a user can point it elsewhere by
    setting the variable. The folder is not created here.
    """
    value = os.environ.get(CACHE_DIR_ENV)
    return Path(value).expanduser() if value else Path.home() / ".cache" / "udbench"


#: Field of a JSON cache record that holds its :func:`cache_checksum` (:func:`seal`).
CACHE_CHECKSUM_FIELD = "cache_sha256"


def cache_checksum(entries: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of a cache entry's content, for :func:`seal` and the ``.npz`` caches.

    Parameters
    ----------
    entries : mapping of str to array or JSON value
        What the entry holds: each key with its value, in sorted key order; a NumPy array
        counts by its dtype, shape and bytes, any other value by its canonical JSON (sorted
        keys, no spaces).

    Returns
    -------
    str
        64 hex digits.
    """
    import numpy as np

    h = hashlib.sha256()
    for key in sorted(entries):
        value = entries[key]
        if isinstance(value, np.ndarray):
            a = np.ascontiguousarray(value)
            h.update(f"{key}:{a.dtype.str}:{a.shape}:".encode())
            h.update(a.tobytes())
        else:
            text = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=True)
            h.update(f"{key}={text}".encode())
        h.update(b"\n")
    return h.hexdigest()


def seal(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` (a JSON cache record) with its :func:`cache_checksum` in
    :data:`CACHE_CHECKSUM_FIELD`, taken over the record as JSON reads it back.

    Parameters
    ----------
    record : mapping
        JSON-serialisable; a :data:`CACHE_CHECKSUM_FIELD` already there is replaced.

    Returns
    -------
    dict
        The record in its JSON form, sealed.
    """
    body = {k: v for k, v in record.items() if k != CACHE_CHECKSUM_FIELD}
    body = json.loads(json.dumps(body, allow_nan=True))
    return {**body, CACHE_CHECKSUM_FIELD: cache_checksum(body)}


def seal_status(record: Mapping[str, Any]) -> str:
    """Whether a JSON cache record read back is the one :func:`seal` wrote.

    Parameters
    ----------
    record : mapping
        The record as read from its file.

    Returns
    -------
    str
        ``"ok"`` (its checksum matches), ``"unsealed"`` (no checksum: written before
        checksums were kept) or ``"mismatch"`` (edited or damaged since it was written).
    """
    stored = record.get(CACHE_CHECKSUM_FIELD)
    if not isinstance(stored, str):
        return "unsealed"
    body = {k: v for k, v in record.items() if k != CACHE_CHECKSUM_FIELD}
    return "ok" if cache_checksum(body) == stored else "mismatch"


#: Environment variable: ``off`` (or ``0``) disables the compilation cache, a path moves it.
COMPILE_CACHE_ENV = "UDBENCH_COMPILE_CACHE"
#: Size cap of the compilation cache folder, bytes (JAX evicts least recently used entries).
COMPILE_CACHE_MAX_BYTES = 4 * 2**30

_compile_cache: list[Path | None] = []  # set once per process


def _machine_tag() -> str:
    """Hash of the CPU model and flags and the JAX version (what compiled code depends on)."""
    import hashlib
    import platform

    parts = [platform.machine(), platform.system()]
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "flags", "Features")):
                parts.append(line.split(":", 1)[1].strip())
                if len(parts) >= 4:
                    break
    except OSError:
        parts.append(platform.processor())
    try:
        import jax

        parts.append(jax.__version__)
    except ImportError:  # pragma: no cover - JAX is a dependency
        pass
    return hashlib.blake2b("|".join(parts).encode(), digest_size=6).hexdigest()


def _trim(folder: Path, max_bytes: int) -> None:
    """Delete the least recently modified files of ``folder`` until it holds at most 80 % of
    ``max_bytes`` (JAX's own cap needs the ``filelock`` package; a file another process
    deletes meanwhile is only a cache miss)."""
    try:
        files = [(f.stat().st_mtime, f.stat().st_size, f) for f in folder.rglob("*") if f.is_file()]
    except OSError:
        return
    total = sum(size for _, size, _ in files)
    if total <= max_bytes:
        return
    for _, size, f in sorted(files, key=lambda t: t[0]):
        if total <= 0.8 * max_bytes:
            break
        try:
            f.unlink()
            total -= size
        except OSError:
            pass


def compile_cache_dir() -> Path | None:
    """The folder of JAX's persistent compilation cache, or None when it is off."""
    value = os.environ.get(COMPILE_CACHE_ENV, "").strip()
    if value.lower() in ("0", "off", "false", "no"):
        return None
    root = Path(value).expanduser() if value else cache_dir() / "jax"
    return root / _machine_tag()


def enable_compile_cache() -> Path | None:
    """Use JAX's persistent compilation cache in :func:`compile_cache_dir` (module
    docstring); once per process, and not where the user set ``jax_compilation_cache_dir``
    (or ``JAX_COMPILATION_CACHE_DIR``) already.

    Returns
    -------
    Path or None
        The folder in use (None: off, or chosen by the user's own JAX settings).
    """
    if _compile_cache:
        return _compile_cache[0]
    folder = compile_cache_dir()
    try:
        import jax
    except ImportError:  # pragma: no cover - JAX is a dependency
        folder = None
    else:
        if folder is not None and not getattr(jax.config, "jax_compilation_cache_dir", None):
            _trim(folder, COMPILE_CACHE_MAX_BYTES)
            jax.config.update("jax_compilation_cache_dir", str(folder))
        else:
            folder = None
    _compile_cache.append(folder)
    return folder


def disable_compile_cache() -> None:
    """Keep this process off the compilation cache (a calibration measures compile times).

    Effective when called before :func:`enable_compile_cache` (which it then makes a no-op);
    otherwise it points JAX's cache at nothing and resets it.
    """
    if not _compile_cache:
        _compile_cache.append(None)
        return
    if _compile_cache[0] is not None:
        import jax
        from jax._src import compilation_cache

        jax.config.update("jax_compilation_cache_dir", None)
        compilation_cache.reset_cache()
        _compile_cache[0] = None
