"""Provenance of a campaign record: the code version and machine that made it, and values
made JSON-ready (:mod:`udbench.campaigns.engine` re-exports these)."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from pathlib import Path
from typing import Any

from udbench import __version__


def code_version() -> dict[str, Any]:
    """The udbench version and, where the package runs from a git checkout, its commit."""
    out: dict[str, Any] = {"udbench": __version__}
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return out
    out["commit"] = commit
    out["dirty"] = bool(dirty)
    return out


def machine_facts() -> dict[str, Any]:
    """Host name, processor, cores and the 1-minute load average (for cost figures)."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {
        "host": socket.gethostname(),
        "processor": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "load_1min": load,
    }


def jsonable(value: Any) -> Any:
    """``value`` with NumPy scalars and arrays as Python numbers and lists (for records).

    Dict keys become strings and tuples lists; other values are returned as they are.
    """
    import numpy as np

    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value
