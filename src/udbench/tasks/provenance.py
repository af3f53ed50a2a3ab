"""What a task file records of its origin, and the rule that compares it with a new spec.

:func:`source_fingerprint` (the table a task was drawn from), :func:`task_file_clash` (how an
existing file differs from a spec made from the current data: the resume and clash rule of
``udbench generate``) and :func:`reference_record` (a reference posterior that is not exact).
Re-exported by :mod:`udbench.tasks.generate`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from udbench.tasks.spec import TaskSpec
from udbench.tasks.taskfile import read_task_meta, task_file_is_valid

__all__ = ["reference_record", "source_fingerprint", "task_file_clash"]


def source_fingerprint(cov: Any) -> dict[str, Any]:
    """What a task records about the table it was drawn from (``Task.source``).

    Parameters
    ----------
    cov : udbench.data.Covariates

    Returns
    -------
    dict
        ``{"dataset", "origin", "n_rows", "n_features", "data_sha256"}``; ``data_sha256`` is
        :attr:`udbench.data.Covariates.fingerprint` (the cleaned table in row order).
    """
    return {
        "dataset": str(cov.key),
        "origin": str(cov.origin),
        "n_rows": int(cov.X.shape[0]),
        "n_features": int(cov.X.shape[1]),
        "data_sha256": str(cov.fingerprint),
    }


def task_file_clash(path: str | Path, spec: TaskSpec, data_sha256: str | None) -> str | None:
    """How the existing task file ``path`` differs from ``spec`` made from the current data.

    Used before writing a task file (``udbench generate``, the quickstart recipe) so that a
    file made with other settings or from other data is never reused or replaced silently.

    Parameters
    ----------
    path : str or Path
        Where the task file of ``spec`` is (or would be).
    spec : TaskSpec
        The instance about to be generated.
    data_sha256 : str or None
        Fingerprint of the current covariate table (``Covariates.fingerprint``); None skips
        the data comparison.

    Returns
    -------
    str or None
        None when the file is missing or damaged (it is simply generated); ``""`` when it holds
        the same instance (same spec, fidelity and D, same data fingerprint; a file written
        before fingerprints were recorded is compared on its settings only); else a short
        description of the differences, e.g. ``"n_draws 40 (asked 50)"``.
    """
    path = Path(path)
    if not path.exists() or not task_file_is_valid(path):
        return None
    meta = read_task_meta(path)
    old = TaskSpec.from_dict(meta["spec"])
    diffs = [
        f"{name} {getattr(old, name)!r} (asked {getattr(spec, name)!r})"
        for name in (
            "dataset",
            "family",
            "noise",
            "coverage",
            "seed",
            "fidelity",
            "n_draws",
            "n_classes",
            "difficulty",
        )
        if getattr(old, name) != getattr(spec, name)
    ]
    old_sha = (meta.get("source") or {}).get("data_sha256")
    if old_sha is not None and data_sha256 is not None and old_sha != data_sha256:
        diffs.append(f"data fingerprint {old_sha[:12]}… (current table {data_sha256[:12]}…)")
    return "; ".join(diffs)


def reference_record(noise: str) -> dict[str, Any] | None:
    """What a task records about a reference posterior that is not exact, or None.

    The reference posterior conditions with a Gaussian likelihood of the known variance
    σ²(x). For a noise mode whose law is not Gaussian (``student-t``) that likelihood is
    misspecified, so the posterior, and every oracle target computed from it, is approximate.

    Parameters
    ----------
    noise : str
        The task's noise mode.

    Returns
    -------
    dict or None
        ``{"exact": False, "noise_law", "df", "likelihood", "note"}`` for a non-Gaussian
        mode of :data:`udbench.design.NOISE_MODE_TABLE`; None for a Gaussian one (and for a
        name outside the table, whose noise is Gaussian).
    """
    from udbench.design import ALL_NOISE_MODES, get_noise_mode

    if noise not in ALL_NOISE_MODES:
        return None
    mode = get_noise_mode(noise)
    if mode.gaussian:
        return None
    return {
        "exact": False,
        "noise_law": mode.law,
        "df": mode.df,
        "likelihood": "gaussian",
        "note": (
            f"misspecified: y has {mode.law} noise (df {mode.df:g}) with variance σ²(x), but "
            "the reference posterior conditions with a Gaussian likelihood of that variance; "
            "the posterior and every oracle target from it are approximate"
        ),
    }
