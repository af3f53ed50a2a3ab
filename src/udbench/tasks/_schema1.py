"""The retired schema-1 task-file layout, written for tests and the storage benchmark only:
this udbench refuses such a file on load (:mod:`udbench.tasks.taskfile`)."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from udbench.tasks._checksum import _canonical
from udbench.tasks.taskfile import _ZIP_DATE, ARRAY_NAMES, Task, _npy_bytes, is_draws_array

__all__ = ["write_schema1"]


def write_schema1(task: Task, path: str | Path) -> Path:
    """Write ``task`` in the retired schema-1 layout (tests and the storage benchmark only).

    Schema 1: every array float64 (draws upcast from float32), members uncompressed. This
    udbench rejects such a file on load; it exists to measure the old size and test that error.
    """
    path = Path(path)
    members: list[tuple[str, bytes]] = []
    hashes: dict[str, str] = {}
    for name in ARRAY_NAMES:
        arr = task._get(name)
        if arr is None:
            continue
        arr = np.asarray(arr)
        if is_draws_array(name):
            arr = arr.astype(np.float64)
        data = _npy_bytes(arr)
        hashes[name] = hashlib.sha256(data).hexdigest()
        members.append((f"{name}.npy", data))
    meta: dict[str, Any] = {
        "format": "udbench-task",
        "schema_version": 1,
        "udbench_version": "0.1.0",
        "task_id": task.spec.task_id,
        "spec": task.spec.to_dict(),
        "prior": task.prior,
        "diagnostics": task.diagnostics,
        "array_sha256": hashes,
    }
    meta["content_sha256"] = hashlib.sha256(_canonical(meta)).hexdigest()
    members.append(("meta.json", json.dumps(meta, indent=1, sort_keys=True).encode()))
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, data in members:
            zf.writestr(zipfile.ZipInfo(name, date_time=_ZIP_DATE), data)
    return path
