"""The task file: one instance per file, versioned, checksummed, lazily loaded, no pickle.

Format (schema :data:`SCHEMA_VERSION`): a ZIP archive whose array members are
DEFLATE-compressed (:data:`COMPRESSION`, lossless), readable by ``numpy.load`` as an ``.npz``
(every array is a ``<name>.npy`` member written with ``allow_pickle=False``), plus one member
``meta.json`` (stored) holding the schema version, the package version, the
:class:`TaskSpec`, the prior's settings, the diagnostics and a SHA-256 per array (of the
``.npy`` bytes, before compression).

Storage precision (schema 2): arrays of posterior draws — by rule every array named
``draws`` or ``draws_<anything>`` (:func:`is_draws_array`; an optional array added later
follows the same rule) — are held and stored as float32; everything else (f*, y, inputs,
noise variances, the exact posterior moments ``post_mean``/``post_var``, the per-point checks)
stays float64. The acceptance checks are computed from the float64 draws before they are
rounded (stored in the diagnostics); the metrics of ``udbench run`` read the float64 exact
moments, never the draws. ``draws_train`` (draws at the training inputs) is optional: off by
default for the GP, whose checks use its exact posterior (see
:func:`udbench.tasks.make_task`). Schema 1 (float64 draws, uncompressed, ``draws_train``
always) is rejected with a one-line error naming the version: regenerate such files
(``udbench generate`` does it by itself, treating them as damaged).

``content_sha256`` is the SHA-256 of the canonical JSON of the metadata without
itself, so it covers every array's bytes through their hashes: it identifies what a task file
holds (the runner keys results by it).

Timings (schema 3): the MCMC samplers record wall-clock measurements in the diagnostics
(``diagnostics["sampler"]["wall_seconds"]``, ``chain_iterations_per_second``; the GP
classifier's ``sampler_seconds``, ``conditional_seconds``, ``reference_seconds``), which
differ between two generations of one task. A key under ``diagnostics`` is a timing by name
(:func:`udbench.tasks._checksum.is_timing_key`: ``*_seconds`` or ``*_per_second``). A file
whose diagnostics hold one is written as schema 3, whose ``content_sha256`` leaves every
timing out (:func:`udbench.tasks._checksum.content_checksum`), so the same spec, seed and
data give the same checksum however long the sampler took; the timings stay in
``meta.json`` where :mod:`udbench.tuning.plan`
reads them, unprotected by the checksum. A file without timings (every GP regression task)
is written as schema 2, byte for byte as before. Schema-2 files of MCMC families written
before schema 3 (2026-12-04) load unchanged, with their checksum over the timings;
regenerated, such a task gets a new checksum once, then keeps it.

``source`` (optional, added without a schema change) fingerprints the covariate table the task
was drawn from: ``{"dataset", "origin", "n_rows", "n_features", "data_sha256"}`` with
``data_sha256`` = :attr:`udbench.data.Covariates.fingerprint` (SHA-256 of the cleaned table in
row order). Files written before it was recorded load with ``Task.source == {}``.

Query points (optional, added without a schema change): a task may carry a second set of
inputs at which the reference posterior is stored, e.g. the red wines of the wine OOD study
(``docs/studies.md``). The arrays :data:`QUERY_ARRAY_NAMES` (``query_idx``, ``X_query``,
``post_mean_query``, ``post_var_query``, ``draws_query``) are written after the others, and
``diagnostics["query"]`` describes them (``name``: the table they come from, ``n_query``,
``source``: its fingerprint, ``scaling``: how they were scaled). They are all present or all
absent, and checked like the evaluation pool (:func:`check_query_arrays`: shapes against
``X_eval`` and ``draws``, finite values, non-negative variances). A task without them writes
exactly the bytes it wrote before the extension existed.

Classification tasks (optional arrays, added without a schema change; docs/classification.md,
"Classification tasks"): a task whose family's ``PriorCapabilities.task_type`` is
``"classification"`` (``TaskSpec.task_type``) holds :data:`CLASSIFICATION_REQUIRED` instead
of the regression arrays: the integer labels ``y_train`` (n,) and ``y_eval`` (n_eval,), the
known temperatures ``tau_train``/``tau_eval``, the latent ground truth ``f_train`` (n, K) and
``f_eval`` (n_eval, K), the true class probabilities ``pi_star_train``/``pi_star_eval``,
the posterior predictive ``post_mean`` (n_eval, K) = mean of π_F with ``post_var`` its
variance over the draws, the per-(point, class) checks of the latents ``sbc_rank`` and
``mcse_var_rel`` (n_eval, K), and the posterior draws of π at the evaluation pool,
``draws_prob`` (D, n_eval, K) float32 by the draws rule. Their names come after the
regression ones in :data:`ARRAY_NAMES`, so a regression file writes the bytes it wrote before.

- Lazy: :meth:`Task.load` reads ``meta.json`` only; an array is read (and its hash checked)
  on first access. :func:`read_task_meta` gives the summaries without any array.
- Atomic: written to a temporary file in the target folder and renamed over the target;
  ``meta.json`` is the last member, so an interrupted write never leaves a complete-looking
  file.
- Deterministic: fixed member order and timestamps, so the same task gives the same bytes.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import tempfile
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from udbench import __version__
from udbench._validation import UdbenchError, param_error
from udbench.tasks._checksum import content_checksum, has_timings, is_timing_key, json_form
from udbench.tasks.spec import TaskSpec

__all__ = [
    "ARRAY_NAMES",
    "CLASSIFICATION_ARRAY_NAMES",
    "CLASSIFICATION_REQUIRED",
    "COMPRESSION",
    "DRAWS_DTYPE",
    "QUERY_ARRAY_NAMES",
    "READ_SCHEMA_VERSIONS",
    "SCHEMA_VERSION",
    "Task",
    "TaskFileMisnamed",
    "TaskFileUnreadable",
    "check_query_arrays",
    "content_checksum",
    "is_draws_array",
    "is_timing_key",
    "read_task_meta",
    "task_file_is_valid",
    "task_id_in_file_name",
]

#: Newest version of the task-file schema; files with a version outside
#: :data:`READ_SCHEMA_VERSIONS` are rejected.
#: 1: float64 draws, uncompressed; 2: float32 draws, DEFLATE members, draws_train optional;
#: 3: schema 2 whose diagnostics hold timings, left out of ``content_sha256`` (module notes,
#: "Timings"). A file without timings is still written as schema 2.
SCHEMA_VERSION = 3
#: The schema versions :func:`read_task_meta` accepts.
READ_SCHEMA_VERSIONS: tuple[int, ...] = (2, 3)

#: Storage dtype of posterior-draw arrays (:func:`is_draws_array`).
DRAWS_DTYPE = np.float32

#: ZIP compression of the array members (lossless; ``numpy.load`` reads it) and its level.
COMPRESSION = zipfile.ZIP_DEFLATED
COMPRESS_LEVEL = 1

#: The arrays only a classification task has (after the regression ones, in file order).
CLASSIFICATION_ARRAY_NAMES: tuple[str, ...] = (
    "tau_train",
    "pi_star_train",
    "tau_eval",
    "pi_star_eval",
    "y_eval",
    "draws_prob",
)
#: Arrays of a task (in file order); ``draws`` and ``draws_train`` are the large ones.
ARRAY_NAMES: tuple[str, ...] = (
    "train_idx",
    "X_train",
    "y_train",
    "noise_var_train",
    "f_train",
    "eval_idx",
    "X_eval",
    "noise_var_eval",
    "f_eval",
    "shell_eval",
    "post_mean",
    "post_var",
    "sbc_rank",
    "mcse_var_rel",
    "draws",
    "draws_train",
    "query_idx",
    "X_query",
    "post_mean_query",
    "post_var_query",
    "draws_query",
    *CLASSIFICATION_ARRAY_NAMES,
)
#: Every array a classification task must have (module notes, "Classification tasks").
CLASSIFICATION_REQUIRED: tuple[str, ...] = (
    "train_idx",
    "X_train",
    "y_train",
    "f_train",
    "eval_idx",
    "X_eval",
    "f_eval",
    "shell_eval",
    "post_mean",
    "post_var",
    "sbc_rank",
    "mcse_var_rel",
    *CLASSIFICATION_ARRAY_NAMES,
)
#: The optional query-point arrays (all present or all absent; see the module notes).
QUERY_ARRAY_NAMES: tuple[str, ...] = (
    "query_idx",
    "X_query",
    "post_mean_query",
    "post_var_query",
    "draws_query",
)
_OPTIONAL = frozenset({"draws_train", *QUERY_ARRAY_NAMES, *CLASSIFICATION_ARRAY_NAMES})
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def is_draws_array(name: str) -> bool:
    """True for an array of posterior draws (``draws``, ``draws_train``, ``draws_<x>``).

    Such arrays are held and stored as :data:`DRAWS_DTYPE` (float32): the rule is by name, so
    an optional array of draws added later (e.g. draws at extra query points) is compact too.
    """
    return name == "draws" or name.startswith("draws_")


def _storage(name: str, arr: np.ndarray | None) -> np.ndarray | None:
    """``arr`` as stored: floating draw arrays rounded to float32, the rest unchanged."""
    if arr is None:
        return None
    arr = np.asarray(arr)
    if is_draws_array(name) and np.issubdtype(arr.dtype, np.floating):
        return arr.astype(DRAWS_DTYPE, copy=False)
    return arr


def _npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.ascontiguousarray(arr), allow_pickle=False)
    return buf.getvalue()


def _bad(path: Path | str, why: str) -> UdbenchError:
    return UdbenchError(f"Task.load: file {str(path)!r} is not a valid udbench task file: {why}")


class TaskFileUnreadable(UdbenchError):
    """A task file the operating system does not let this process read (permissions).

    The file may be perfectly valid: the remedy is its permissions, not regenerating it.
    """


def _unreadable(path: Path | str, err: OSError) -> TaskFileUnreadable:
    reason = err.strerror or type(err).__name__
    return TaskFileUnreadable(
        f"Task.load: file {str(path)!r} cannot be read ({reason}): give this user read "
        "permission on it (e.g. chmod u+r, or ask its owner); the file itself may be fine"
    )


class TaskFileMisnamed(UdbenchError):
    """A task file whose name is a task id other than the one it holds.

    Task files are named ``<task id>.npz`` (:func:`udbench.tasks.grid.task_path`); a file
    named for one instance (seed, dataset, ...) and holding another would be run, checked and
    stored under the held id while every listing shows the name. The remedy is renaming it
    (or regenerating it), not its content.
    """


#: A task id as a file name: ``<dataset>__<family>__<noise>__<coverage>__s<seed>``.
_SEED_PART = re.compile(r"s[0-9]+")


def task_id_in_file_name(path: str | os.PathLike[str]) -> str | None:
    """The task id that the name of ``path`` says, or None for a name that is not one.

    A name says a task id when, without its ``.npz`` suffix, it has the form of
    :attr:`udbench.tasks.TaskSpec.task_id`: five non-empty parts joined by ``__``, the last
    ``s<seed>`` (split from the right, so a dataset name may hold ``__``). Any other name
    (``my-task.npz``, ``broken.npz``) says nothing and is never compared.

    Parameters
    ----------
    path : str or Path
        A task file's path (only its name is read).

    Returns
    -------
    str or None
        The task id of the name, or None.

    Examples
    --------
    >>> task_id_in_file_name("tasks/diabetes__gp__homoscedastic__balanced__s3.npz")
    'diabetes__gp__homoscedastic__balanced__s3'
    >>> task_id_in_file_name("my-task.npz") is None
    True
    """
    name = Path(path).name
    stem = name[: -len(".npz")] if name.endswith(".npz") else name
    parts = stem.rsplit("__", 4)
    if len(parts) != 5 or not all(parts) or not _SEED_PART.fullmatch(parts[-1]):
        return None
    return stem


def _check_file_name(path: Path, held: str) -> None:
    """Raise :class:`TaskFileMisnamed` when the name of ``path`` is a task id other than
    ``held`` (the id in its metadata); the rule ``udbench generate`` applies to the file it
    would write (:func:`udbench.tasks.provenance.task_file_clash`)."""
    named = task_id_in_file_name(path)
    if named is not None and named != held:
        raise TaskFileMisnamed(
            str(
                param_error(
                    "Task.load",
                    "path",
                    f"hold the task its file name names ({named!r}), but it holds {held!r} "
                    f"(its metadata): rename it to '{held}.npz' (or to a name that is not a "
                    "task id), or regenerate it with udbench generate",
                    str(path),
                )
            )
        )


def check_query_arrays(
    arrays: dict[str, np.ndarray | None], component: str = "Task"
) -> dict[str, np.ndarray] | None:
    """Check a task's optional query-point arrays as the evaluation pool is checked.

    Parameters
    ----------
    arrays : dict
        Must hold ``X_eval`` and ``draws``; the query arrays (:data:`QUERY_ARRAY_NAMES`)
        may all be missing/None (no query points) or must all be given.
    component : str
        Name used in error messages.

    Returns
    -------
    dict or None
        The query arrays as float64/int64 arrays, or None when the task has none.

    Raises
    ------
    UdbenchError
        Some but not all query arrays given; ``X_query`` not (m, d) with the columns of
        ``X_eval``; ``query_idx``, ``post_mean_query``, ``post_var_query`` not of length m;
        ``draws_query`` not (D, m) with the D of ``draws``; non-finite values; a negative
        posterior variance.
    """
    present = [k for k in QUERY_ARRAY_NAMES if arrays.get(k) is not None]
    if not present:
        return None
    if len(present) != len(QUERY_ARRAY_NAMES):
        missing = [k for k in QUERY_ARRAY_NAMES if k not in present]
        raise UdbenchError(
            f"{component}: query arrays must be all present or all absent; missing {missing}"
        )
    q = {k: np.asarray(arrays[k]) for k in QUERY_ARRAY_NAMES}
    x_eval = np.asarray(arrays["X_eval"])
    draws = np.asarray(arrays["draws"])
    X = q["X_query"]
    if X.ndim != 2 or X.shape[1] != x_eval.shape[1] or X.shape[0] < 1:
        raise UdbenchError(
            f"{component}: X_query must have shape (m, {x_eval.shape[1]}) with m >= 1 "
            f"(the columns of X_eval); got {X.shape}"
        )
    m = X.shape[0]
    for k in ("query_idx", "post_mean_query", "post_var_query"):
        if q[k].shape != (m,):
            raise UdbenchError(f"{component}: {k} must have shape ({m},); got {q[k].shape}")
    if q["draws_query"].shape != (draws.shape[0], m):
        raise UdbenchError(
            f"{component}: draws_query must have shape ({draws.shape[0]}, {m}) (the D of "
            f"draws); got {q['draws_query'].shape}"
        )
    for k in ("X_query", "post_mean_query", "post_var_query", "draws_query"):
        if not np.all(np.isfinite(q[k])):
            raise UdbenchError(f"{component}: {k} must be finite; it has NaN or inf values")
    if np.any(q["post_var_query"] < 0):
        raise UdbenchError(
            f"{component}: post_var_query must be >= 0; smallest value "
            f"{float(q['post_var_query'].min())!r}"
        )
    return q


class Task:
    """One benchmark instance with its ground truth and reference posterior (SPEC §6).

    Arrays (read lazily from a loaded file; float64 unless noted):
    ``train_idx (n,) int64``, ``X_train (n, d)``, ``y_train (n,)``, ``noise_var_train (n,)``,
    ``f_train (n,)``, ``eval_idx (n_eval,) int64``, ``X_eval (n_eval, d)``,
    ``noise_var_eval (n_eval,)``, ``f_eval (n_eval,)``, ``shell_eval (n_eval,) int64``,
    ``post_mean (n_eval,)``, ``post_var (n_eval,)`` (variances in target units squared),
    ``sbc_rank (n_eval,) int64``, ``mcse_var_rel (n_eval,)``, ``draws (D, n_eval) float32``,
    ``draws_train (D, n) float32`` or None (posterior draws are float32 by rule,
    :func:`is_draws_array`; a float64 draw array given here is rounded at construction);
    optionally the query points (module notes): ``query_idx (m,) int64``, ``X_query (m, d)``,
    ``post_mean_query (m,)``, ``post_var_query (m,)``, ``draws_query (D, m) float32`` (all
    None for an ordinary task). A classification task (``spec.task_type``) holds the arrays
    of the module notes' "Classification tasks" instead (labels, τ, π*, ``draws_prob``
    (D, n_eval, K) float32) and no ``noise_var_*`` or ``draws``.

    Attributes
    ----------
    spec : TaskSpec
    diagnostics : dict
        Acceptance checks (``udbench.tasks.checks``), sampler diagnostics, seeds, timings.
    prior : dict
        The prior's settings (family, hyperparameters, scale constant a, fidelity).
    version : str
        Package version that wrote the task.
    source : dict
        Fingerprint of the covariate table the task was drawn from (``dataset``, ``origin``,
        ``n_rows``, ``n_features``, ``data_sha256``); ``{}`` for a task file written before
        udbench recorded it.
    content_sha256 : str or None
        SHA-256 of the task file's metadata (which holds every array's SHA-256): what the file
        holds. Set by :meth:`load` and :meth:`save`; None for a task built in memory.
    """

    def __init__(
        self,
        spec: TaskSpec,
        arrays: dict[str, np.ndarray | None],
        diagnostics: dict[str, Any],
        prior: dict[str, Any],
        version: str = __version__,
        source: dict[str, Any] | None = None,
    ) -> None:
        self.spec = spec
        self.diagnostics = diagnostics
        self.prior = prior
        self.version = version
        self.source: dict[str, Any] = dict(source or {})
        self.content_sha256: str | None = None
        self._arrays: dict[str, np.ndarray | None] = {k: _storage(k, v) for k, v in arrays.items()}
        self._path: Path | None = None
        self._hashes: dict[str, str] = {}
        if spec.task_type == "classification":
            missing = [k for k in CLASSIFICATION_REQUIRED if self._arrays.get(k) is None]
        else:
            missing = [k for k in ARRAY_NAMES if k not in self._arrays and k not in _OPTIONAL]
        if arrays and missing:
            raise UdbenchError(f"Task: arrays missing: {missing}")
        if arrays:
            check_query_arrays(self._arrays)

    @property
    def has_query(self) -> bool:
        """Whether the task carries query points (``X_query`` and the posterior there)."""
        return self._arrays.get("X_query") is not None or "X_query" in self._hashes

    def query(self) -> dict[str, np.ndarray] | None:
        """The query-point arrays, read now and checked (:func:`check_query_arrays`).

        Returns
        -------
        dict or None
            ``query_idx (m,) int64``, ``X_query (m, d)``, ``post_mean_query (m,)``,
            ``post_var_query (m,)``, ``draws_query (D, m)``; None for a task without them.
        """
        if not self.has_query:
            return None
        arrays = {k: self._get(k) for k in (*QUERY_ARRAY_NAMES, "X_eval", "draws")}
        where = "Task" if self._path is None else f"Task.load: file {str(self._path)!r}"
        return check_query_arrays(arrays, component=where)

    def __getattr__(self, name: str) -> Any:
        if name in ARRAY_NAMES:
            return self._get(name)
        raise AttributeError(name)

    def __repr__(self) -> str:
        return f"Task({self.spec.task_id!r}, version={self.version!r})"

    @property
    def reference_exact(self) -> bool:
        """False when the reference posterior is approximate (misspecified likelihood).

        Read from ``diagnostics["reference"]["exact"]``, written for a non-Gaussian noise
        mode (:func:`udbench.tasks.provenance.reference_record`); True when absent.
        """
        record = self.diagnostics.get("reference") if isinstance(self.diagnostics, dict) else None
        return bool(record.get("exact", True)) if isinstance(record, dict) else True

    def _get(self, name: str) -> np.ndarray | None:
        if name in self._arrays:
            return self._arrays[name]
        if self._path is None or name not in self._hashes:
            self._arrays[name] = None
            return None
        arr = self._read_member(name)
        self._arrays[name] = arr
        return arr

    def _read_member(self, name: str) -> np.ndarray:
        assert self._path is not None
        try:
            with zipfile.ZipFile(self._path) as zf:
                data = zf.read(f"{name}.npy")
        except PermissionError as err:
            raise _unreadable(self._path, err) from None
        except (OSError, zipfile.BadZipFile, KeyError, zlib.error, EOFError) as err:
            raise _bad(self._path, f"cannot read array {name!r} ({err})") from None
        if hashlib.sha256(data).hexdigest() != self._hashes[name]:
            raise _bad(self._path, f"checksum mismatch for array {name!r}")
        return np.lib.format.read_array(io.BytesIO(data), allow_pickle=False)

    # -- writing -------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write the task to ``path`` atomically (temp file + rename); return the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        members: list[tuple[str, bytes]] = []
        hashes: dict[str, str] = {}
        for name in ARRAY_NAMES:
            arr = _storage(name, self._get(name))
            if arr is None:
                continue
            data = _npy_bytes(arr)
            hashes[name] = hashlib.sha256(data).hexdigest()
            members.append((f"{name}.npy", data))
        meta: dict[str, Any] = {
            "format": "udbench-task",
            "schema_version": 2,
            "udbench_version": self.version,
            "task_id": self.spec.task_id,
            "spec": self.spec.to_dict(),
            "prior": self.prior,
            "diagnostics": self.diagnostics,
            "array_sha256": hashes,
        }
        if self.source:  # absent (not empty) when unknown: older readers see the same layout
            meta["source"] = self.source
        meta = json_form(meta)  # what a reader sees (keys as strings), the bytes unchanged
        # the lowest schema that describes the file: 2 keeps a file without timings byte for
        # byte what it was (module notes, "Timings")
        meta["schema_version"] = 3 if has_timings(meta["diagnostics"]) else 2
        meta["content_sha256"] = content_checksum(meta)
        members.append(("meta.json", json.dumps(meta, indent=1, sort_keys=True).encode()))
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                with zipfile.ZipFile(fh, "w") as zf:
                    for name, data in members:
                        info = zipfile.ZipInfo(name, date_time=_ZIP_DATE)
                        info.external_attr = 0o644 << 16
                        array = name != "meta.json"
                        info.compress_type = COMPRESSION if array else zipfile.ZIP_STORED
                        zf.writestr(info, data, compresslevel=COMPRESS_LEVEL if array else None)
                fh.flush()
                os.fsync(fh.fileno())
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.content_sha256 = meta["content_sha256"]
        return path

    # -- reading -------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path, *, check_name: bool = True) -> Task:
        """Open a task file lazily: metadata now, each array on first access.

        Parameters
        ----------
        path : str or Path
            The task file.
        check_name : bool, default True
            Refuse a file whose name is a task id (:func:`task_id_in_file_name`) other
            than the one it holds. Only a resume check that compares the content with the
            instance it wants itself (``udbench generate``) turns it off.

        Returns
        -------
        Task
            The task, its arrays not yet read.

        Raises
        ------
        UdbenchError
            Missing, truncated or corrupt file, wrong format or schema version, or a
            metadata checksum mismatch (array checksums are checked on first access);
            :class:`TaskFileUnreadable` (a subclass) for a file this process may not read;
            :class:`TaskFileMisnamed` (a subclass) for a file named for another task.
        """
        meta = read_task_meta(path)
        if check_name:
            _check_file_name(Path(path), TaskSpec.from_dict(meta["spec"]).task_id)
        task = cls(
            TaskSpec.from_dict(meta["spec"]),
            {},
            meta["diagnostics"],
            meta["prior"],
            version=meta["udbench_version"],
            source=meta.get("source"),
        )
        task.content_sha256 = meta["content_sha256"]
        task._path = Path(path)
        task._hashes = dict(meta["array_sha256"])
        return task

    def verify(self) -> Task:
        """Read every array and check its checksum; return ``self``.

        Raises
        ------
        UdbenchError
            An array cannot be read or its bytes do not match the SHA-256 in the metadata.
        """
        for name in self._hashes:
            if name not in self._arrays:
                self._get(name)
            else:  # already in memory: check the bytes on disk all the same
                self._read_member(name)
        return self

    def arrays(self) -> dict[str, np.ndarray]:
        """All arrays present, read now."""
        out = {}
        for k in ARRAY_NAMES:
            v = self._get(k)
            if v is not None:
                out[k] = v
        return out


def read_task_meta(path: str | Path) -> dict[str, Any]:
    """Read and check a task file's metadata (summaries, diagnostics) without any array.

    Raises
    ------
    UdbenchError
        As :meth:`Task.load`.
    """
    path = Path(path)
    if not path.is_file():
        raise _bad(path, "no such file")
    try:
        with zipfile.ZipFile(path) as zf:
            names = set(zf.namelist())
            if "meta.json" not in names:
                raise _bad(path, "no metadata (incomplete write?)")
            meta = json.loads(zf.read("meta.json"))
    except PermissionError as err:  # a valid file may be unreadable: say so, not "corrupt"
        raise _unreadable(path, err) from None
    except (
        zipfile.BadZipFile,
        OSError,
        json.JSONDecodeError,
        UnicodeDecodeError,
        zlib.error,
        EOFError,
    ) as err:
        raise _bad(path, f"truncated or corrupt ({err})") from None
    if not isinstance(meta, dict) or meta.get("format") != "udbench-task":
        raise _bad(path, "not a udbench task")
    if meta.get("schema_version") not in READ_SCHEMA_VERSIONS:
        readable = " and ".join(str(v) for v in READ_SCHEMA_VERSIONS)
        raise _bad(
            path,
            f"task format (schema) version {meta.get('schema_version')!r} written by udbench "
            f"{meta.get('udbench_version', '?')}; this udbench reads versions {readable} "
            "only: regenerate it (udbench generate writes it again in place)",
        )
    claimed = meta.pop("content_sha256", None)
    if content_checksum(meta) != claimed:
        raise _bad(path, "metadata checksum mismatch")
    meta["content_sha256"] = claimed
    missing = [f"{k}.npy" for k in meta["array_sha256"] if f"{k}.npy" not in names]
    if missing:
        raise _bad(path, f"arrays missing: {missing}")
    return meta


def task_file_is_valid(path: str | Path, spec: TaskSpec | None = None) -> bool:
    """True if ``path`` is a complete task file that ``udbench run`` would accept and, when
    ``spec`` is given, holds that spec.

    Everything :meth:`Task.verify` checks: the metadata and its checksum, and every array's
    bytes against its SHA-256 (an array rewritten inside a valid ZIP passes the ZIP's CRCs
    but not this), so a resume that skips a valid file skips only what a run can read. The
    file's name is not compared with its content here (``udbench run`` refuses a file named
    for another task, :class:`TaskFileMisnamed`): the resume checks that call this compare
    the content with the instance they want, and call a difference a clash.
    """
    try:
        meta = read_task_meta(path)
        Task.load(path, check_name=False).verify()
    except (UdbenchError, zipfile.BadZipFile, OSError, zlib.error, EOFError, ValueError):
        return False
    return spec is None or TaskSpec.from_dict(meta["spec"]) == spec
