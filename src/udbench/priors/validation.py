"""Validation of an MCMC fidelity preset by warm-up sensitivity (SPEC §7), and its records.

HBART pools many short chains after a tempered warm-up; split-R̂ cannot judge such a
layout (docs/priors-mcmc.md), so SPEC §7 validates the *preset* instead: the same
instances are conditioned at the preset and with a :data:`WARMUP_FACTOR` times longer
warm-up, and the preset is accepted when that changes

- the pooled coverage of f* by the central 90 % posterior intervals by less than
  :data:`COVERAGE_CHANGE_MAX` (strictly), and
- the posterior SD by at most :data:`SD_CHANGE_MEDIAN_MAX` (median over evaluation points
  of |SD_long − SD| / SD), and by at most :data:`FLOOR_FACTOR` times the Monte Carlo noise
  floor: the same median for a second run with the preset's warm-up and another seed.

udbench adds one guard that SPEC §7 lists among the per-instance checks: the median over
instances of corr(posterior mean, f*) must be at least :data:`CORR_MIN`. Draws that ignore
the data are calibrated against f* (f* is a prior draw) and insensitive to the warm-up, so
without the guard they would pass; their mean does not depend on f*, so the correlation is
about 0.

The protocol of SPEC §7 is protein and kin8nm at full size, D = 1000 and at least
:data:`MIN_INSTANCES_PER_DATASET` instances per dataset; a run that departs from it (a
smaller training set, fewer instances) still gets a verdict on its figures, and the record
lists the departures (``protocol_issues``) so that nobody mistakes it for the full
validation.

This module holds the arithmetic (:func:`summarise_instance`, :func:`warmup_figures`,
:func:`warmup_verdict`) and the records (:func:`save_validation`, :func:`load_validation`,
:func:`validation_summary`); :func:`udbench.tasks.validation.validate_prior` runs the
instances. Records of the shipped presets live in the package folder :data:`RECORD_DIR`
(``<family>-<fidelity>.json``) and are summarised in docs/priors-mcmc.md.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from udbench._resampling import (
    DEFAULT_N_RESAMPLES,
    cluster_picks,
)
from udbench._seeding import make_rng
from udbench._validation import check_array, param_error

__all__ = [
    "CORR_MIN",
    "COVERAGE_CHANGE_MAX",
    "FLOOR_FACTOR",
    "MCMC_FAMILIES",
    "MIN_INSTANCES_PER_DATASET",
    "NO_RECORD_NEEDED",
    "RECORD_DIR",
    "RUNS",
    "SD_CHANGE_MEDIAN_MAX",
    "VALIDATION_DATASETS",
    "VALIDATION_N_DRAWS",
    "WARMUP_FACTOR",
    "WARMUP_VALIDATED_FAMILIES",
    "decode_run",
    "encode_run",
    "load_validation",
    "no_record_verdict",
    "preset_validation_status",
    "protocol_issues",
    "record_path",
    "save_validation",
    "summarise_instance",
    "summarise_run",
    "validation_summary",
    "warmup_figures",
    "warmup_verdict",
]

#: The long run's warm-up is this many times the preset's (SPEC §7).
WARMUP_FACTOR: int = 4
#: |pooled 90 % coverage (long warm-up) − pooled coverage (preset)| must be below this.
COVERAGE_CHANGE_MAX: float = 0.005
#: The median relative change of the posterior SD must be at most this.
SD_CHANGE_MEDIAN_MAX: float = 0.05
#: ... and at most this multiple of the same median between two equal-warm-up runs.
FLOOR_FACTOR: float = 1.5
#: Median over instances of corr(posterior mean, f*) must be at least this (guard against
#: draws that ignore the data; an udbench addition, see the module docstring).
CORR_MIN: float = 0.3
#: Datasets, D and instances per dataset of the SPEC §7 protocol.
VALIDATION_DATASETS: tuple[str, ...] = ("protein", "kin8nm")
#: Posterior draws D per instance of the SPEC §7 protocol.
VALIDATION_N_DRAWS: int = 1000
#: Instances per dataset of the SPEC §7 protocol (the fewest the verdict accepts).
MIN_INSTANCES_PER_DATASET: int = 8

#: Families whose presets have a warm-up to validate (the MCMC families).
MCMC_FAMILIES: tuple[str, ...] = ("hbart", "bnn")
#: Families whose presets SPEC §7 accepts by warm-up sensitivity (a preset without a passing
#: record is not validated); the others (BNN: four long NUTS chains) are gated per instance by
#: split-R̂, so a record of theirs is information, not a requirement.
WARMUP_VALIDATED_FAMILIES: tuple[str, ...] = ("hbart",)


#: The verdict on a preset of a family outside :data:`WARMUP_VALIDATED_FAMILIES` without a
#: record; with one, its verdict is shown as ``"not a gate (<verdict>)"``.
NO_RECORD_NEEDED = "not required (split-R̂ gate per instance, SPEC §7)"


def no_record_verdict(family: str) -> str:
    """What ``udbench check`` and the report say of a preset of ``family`` without a
    validation record: "not validated" (HBART), or that none is required (BNN)."""
    return "not validated" if family in WARMUP_VALIDATED_FAMILIES else NO_RECORD_NEEDED


#: Where the records of the shipped presets are kept (package data).
RECORD_DIR: Path = Path(__file__).resolve().parent / "validations"

#: The three runs of one instance.
RUNS: tuple[str, ...] = ("base", "long", "floor")


def summarise_run(f_star: np.ndarray, draws: np.ndarray) -> dict[str, Any]:
    """Per-point reductions of one run's draws (kept instead of the draws).

    Parameters
    ----------
    f_star : ndarray, shape (m,)
        Ground truth at the evaluation points.
    draws : ndarray, shape (D, m)
        Posterior draws of the run.

    Returns
    -------
    dict
        ``covered`` (m,) bool: f* inside the central 90 % interval (empirical 5 % and 95 %
        quantiles); ``sd`` (m,) float64: posterior SD (``ddof=1``); ``corr``: Pearson
        correlation of the posterior mean with f* (0 when either is constant).

    Raises
    ------
    UdbenchError
        ``draws`` not of shape (D, m).
    """
    comp = "summarise_run"
    f_star = check_array(comp, "f_star", f_star, ndim=1)
    d = check_array(comp, "draws", draws, shape=(None, f_star.size))
    lo, hi = np.quantile(d, [0.05, 0.95], axis=0)
    mean = d.mean(axis=0)
    ok = f_star.size > 1 and np.std(mean) > 0 and np.std(f_star) > 0
    return {
        "covered": (f_star >= lo) & (f_star <= hi),
        "sd": d.std(axis=0, ddof=1),
        "corr": float(np.corrcoef(mean, f_star)[0, 1]) if ok else 0.0,
    }


def summarise_instance(f_star: np.ndarray, draws: dict[str, np.ndarray]) -> dict[str, Any]:
    """Per-point reductions of one instance's three runs (kept instead of the draws).

    Parameters
    ----------
    f_star : ndarray, shape (m,)
        Ground truth at the evaluation points.
    draws : dict
        ``{"base", "long", "floor"}`` -> ndarray (D, m): posterior draws at the preset,
        with the long warm-up (same seed) and at the preset with another seed.

    Returns
    -------
    dict
        ``covered_<run>``, ``sd_<run>`` and ``corr_<run>`` of :func:`summarise_run` for
        every run.

    Raises
    ------
    UdbenchError
        A run missing or of the wrong shape.
    """
    out: dict[str, Any] = {}
    for run in RUNS:
        if run not in draws:
            raise param_error(
                "summarise_instance", "draws", f"have the runs {list(RUNS)}", sorted(draws)
            )
        for key, value in summarise_run(f_star, draws[run]).items():
            out[f"{key}_{run}"] = value
    return out


def encode_run(summary: dict[str, Any]) -> dict[str, Any]:
    """A :func:`summarise_run` result as a small JSON-ready record (a few KB).

    ``covered`` is bit-packed; ``sd`` is stored as little-endian float32 (relative rounding
    6e-8, far below the Monte Carlo error of an SD from D = 1000 draws), zlib-compressed;
    both base64. :func:`decode_run` inverts it. A validation run through records and one in
    memory both pass through this encoding, so they give the same figures bit for bit.

    Returns
    -------
    dict
        ``n_points``, ``covered_count``, ``covered`` (str), ``sd_float32`` (str), ``corr``.
    """
    covered = np.asarray(summary["covered"], dtype=bool)
    sd = np.asarray(summary["sd"], dtype="<f4")
    return {
        "n_points": int(covered.size),
        "covered_count": int(covered.sum()),
        "covered": base64.b64encode(np.packbits(covered).tobytes()).decode("ascii"),
        "sd_float32": base64.b64encode(zlib.compress(sd.tobytes(), 9)).decode("ascii"),
        "corr": float(summary["corr"]),
    }


def decode_run(record: dict[str, Any]) -> dict[str, Any]:
    """Invert :func:`encode_run`: ``covered`` (m,) bool, ``sd`` (m,) float64, ``corr``.

    Raises
    ------
    UdbenchError
        A record whose arrays do not have ``n_points`` entries or whose ``covered_count``
        does not match (a damaged record).
    """
    m = int(record["n_points"])
    try:
        bits = np.frombuffer(base64.b64decode(record["covered"]), dtype=np.uint8)
        covered = np.unpackbits(bits, count=m).astype(bool)
        raw = zlib.decompress(base64.b64decode(record["sd_float32"]))
        sd = np.frombuffer(raw, dtype="<f4").astype(np.float64)
    except (ValueError, zlib.error, KeyError) as err:
        raise param_error("decode_run", "record", "hold an encoded run", str(err)) from None
    if covered.size != m or sd.size != m or int(covered.sum()) != int(record["covered_count"]):
        raise param_error(
            "decode_run",
            "record",
            f"hold {m} points and {record.get('covered_count')} covered",
            f"{covered.size} / {sd.size} points, {int(covered.sum())} covered",
        )
    return {"covered": covered, "sd": sd, "corr": float(record["corr"])}


def _rel_change(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(b - a) / np.maximum(a, np.finfo(float).tiny)


def warmup_figures(
    instances: Sequence[dict[str, Any]], *, n_boot: int = DEFAULT_N_RESAMPLES, seed: int = 0
) -> dict[str, Any]:
    """Pooled warm-up sensitivity figures of many instances (SPEC §7).

    Parameters
    ----------
    instances : sequence of dict
        :func:`summarise_instance` outputs.
    n_boot : int, default 2000
        Bootstrap resamples of whole instances (95 % percentile intervals).
    seed : int, default 0
        Seeds the bootstrap stream.

    Returns
    -------
    dict
        ``n_instances``, ``n_points``; ``coverage_base``, ``coverage_long`` (pooled share
        of points covered) with ``coverage_base_ci``, ``coverage_long_ci``;
        ``coverage_change`` (long − base) with a paired bootstrap ``coverage_change_ci``;
        ``coverage_change_floor`` (floor − base); ``sd_change_median``, ``sd_change_p95``
        (|SD_long − SD_base| / SD_base over all points); ``sd_floor_median``,
        ``sd_floor_p95`` (the same for the equal-warm-up run); ``corr_mean_fstar_median``
        (preset run, median over instances).

    Raises
    ------
    UdbenchError
        No instance.
    """
    if not instances:
        raise param_error("warmup_figures", "instances", "hold at least one instance", 0)
    k = len(instances)
    npts = np.array([s["covered_base"].size for s in instances], dtype=np.float64)
    cov = {r: np.array([s[f"covered_{r}"].sum() for s in instances], float) for r in RUNS}
    rng = make_rng("warmup_figures", "bootstrap", seed)
    idx = cluster_picks(rng, k, n_boot)  # whole instances, with replacement
    boot = {r: cov[r][idx].sum(axis=1) / npts[idx].sum(axis=1) for r in RUNS}
    sd_change = np.concatenate([_rel_change(s["sd_base"], s["sd_long"]) for s in instances])
    sd_floor = np.concatenate([_rel_change(s["sd_base"], s["sd_floor"]) for s in instances])

    def ci(x: np.ndarray) -> list[float]:
        # the 2.5 / 97.5 % quantiles as written (percentile_interval's (1 - c) / 2 is 0.025 + 2e-17)
        return [float(np.quantile(x, 0.025)), float(np.quantile(x, 0.975))]

    pooled = {r: float(cov[r].sum() / npts.sum()) for r in RUNS}
    return {
        "n_instances": k,
        "n_points": int(npts.sum()),
        "coverage_base": pooled["base"],
        "coverage_base_ci": ci(boot["base"]),
        "coverage_long": pooled["long"],
        "coverage_long_ci": ci(boot["long"]),
        "coverage_change": pooled["long"] - pooled["base"],
        "coverage_change_ci": ci(boot["long"] - boot["base"]),
        "coverage_change_floor": pooled["floor"] - pooled["base"],
        "sd_change_median": float(np.median(sd_change)),
        "sd_change_p95": float(np.quantile(sd_change, 0.95)),
        "sd_floor_median": float(np.median(sd_floor)),
        "sd_floor_p95": float(np.quantile(sd_floor, 0.95)),
        "corr_mean_fstar_median": float(np.median([s["corr_base"] for s in instances])),
    }


def warmup_verdict(figures: dict[str, Any]) -> tuple[bool, list[str]]:
    """SPEC §7 verdict on :func:`warmup_figures` (plus the data guard :data:`CORR_MIN`).

    Passes when |``coverage_change``| < :data:`COVERAGE_CHANGE_MAX`,
    ``sd_change_median`` <= :data:`SD_CHANGE_MEDIAN_MAX`, ``sd_change_median`` <=
    :data:`FLOOR_FACTOR` × ``sd_floor_median`` and ``corr_mean_fstar_median`` >=
    :data:`CORR_MIN`.

    Returns
    -------
    (passed, failures) : tuple of bool and list of str
        ``failures`` names every rule broken, with the figure, e.g.
        ``"|coverage change| 0.0061 >= 0.005"``.
    """
    failures = []
    dc = float(figures["coverage_change"])
    if not abs(dc) < COVERAGE_CHANGE_MAX:
        failures.append(f"|coverage change| {abs(dc):.4f} >= {COVERAGE_CHANGE_MAX}")
    med, floor = float(figures["sd_change_median"]), float(figures["sd_floor_median"])
    if not med <= SD_CHANGE_MEDIAN_MAX:
        failures.append(f"median SD change {med:.4f} > {SD_CHANGE_MEDIAN_MAX}")
    if not med <= FLOOR_FACTOR * floor:
        failures.append(f"median SD change {med:.4f} > {FLOOR_FACTOR} x noise floor {floor:.4f}")
    corr = float(figures["corr_mean_fstar_median"])
    if not corr >= CORR_MIN:
        failures.append(f"median corr(mean, f*) {corr:.3f} < {CORR_MIN} (draws ignore the data?)")
    return not failures, failures


def protocol_issues(
    datasets: Sequence[str],
    instances_per_dataset: dict[str, int],
    n_draws: int,
    full_size: bool,
    warmup_factor: int,
) -> list[str]:
    """How a validation run departs from the SPEC §7 protocol (empty list: it does not).

    Returns
    -------
    list of str
        E.g. ``"dataset protein missing"``, ``"kin8nm: 4 instances (< 8)"``,
        ``"D = 200 (not 1000)"``, ``"reduced size (training or evaluation subsampled)"``.
    """
    issues = [f"dataset {d} missing" for d in VALIDATION_DATASETS if d not in datasets]
    for d, k in instances_per_dataset.items():
        if k < MIN_INSTANCES_PER_DATASET:
            issues.append(f"{d}: {k} instances (< {MIN_INSTANCES_PER_DATASET})")
    if int(n_draws) != VALIDATION_N_DRAWS:
        issues.append(f"D = {n_draws} (not {VALIDATION_N_DRAWS})")
    if not full_size:
        issues.append("reduced size (training or evaluation inputs subsampled)")
    if int(warmup_factor) != WARMUP_FACTOR:
        issues.append(f"warm-up factor {warmup_factor} (not {WARMUP_FACTOR})")
    return issues


def record_path(family: str, fidelity: str, directory: str | Path | None = None) -> Path:
    """``<directory>/<family>-<fidelity>.json`` (default directory :data:`RECORD_DIR`)."""
    return Path(RECORD_DIR if directory is None else directory) / f"{family}-{fidelity}.json"


def save_validation(record: dict[str, Any], path: str | Path) -> Path:
    """Write ``record`` (a :func:`udbench.tasks.validation.validate_prior` result) as JSON."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return path


def load_validation(
    family: str, fidelity: str, directory: str | Path | None = None
) -> dict[str, Any] | None:
    """The stored validation record of a preset, or None if there is none.

    Raises
    ------
    UdbenchError
        The file exists but is not valid JSON.
    """
    path = record_path(family, fidelity, directory)
    if not path.is_file():
        return None
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, TypeError, ValueError) as err:
        raise param_error("load_validation", "record", "be valid JSON", f"{path}: {err}") from None


def validation_summary(
    record: dict[str, Any], sampler: dict[str, Any] | None, numerics_version: int | None = None
) -> dict[str, Any]:
    """What ``udbench check`` shows of a preset's record for tasks with ``sampler`` settings.

    Parameters
    ----------
    record : dict
        A stored record (:func:`load_validation`).
    sampler : dict or None
        The tasks' ``prior["sampler"]`` settings; the record applies when every sampler
        setting it was made with has the same value there (``settings_match``).
    numerics_version : int, optional
        The family's current :attr:`~udbench.priors.base.Prior.numerics_version`; the
        record applies only if it was made under the same version (``numerics_match``; None
        when the record or the caller does not say: a record without a version then does not
        apply, since it cannot be shown to hold under this one).

    Returns
    -------
    dict
        ``passed``, ``failures``, ``protocol_issues``, ``full_protocol`` (no issues),
        ``settings_match``, ``numerics_version`` (the record's), ``numerics_match``,
        ``applies`` (passed, full protocol, settings and numerics match), ``datasets``,
        ``n_instances``, ``coverage_base``, ``coverage_long``, ``coverage_change``,
        ``sd_change_median``, ``sd_change_p95``, ``sd_floor_median``, ``date``.
    """
    pooled = record.get("pooled", {})
    made_with = record.get("sampler_settings", {})
    match = sampler is not None and all(sampler.get(k) == v for k, v in made_with.items())
    theirs = record.get("numerics_version")
    numerics_match = (
        None if theirs is None or numerics_version is None else int(theirs) == numerics_version
    )
    keys = (
        "coverage_base",
        "coverage_long",
        "coverage_change",
        "sd_change_median",
        "sd_change_p95",
        "sd_floor_median",
        "n_instances",
    )
    full = not record.get("protocol_issues")
    passed = bool(record.get("passed"))
    return {
        "passed": passed,
        "failures": list(record.get("failures", [])),
        "protocol_issues": list(record.get("protocol_issues", [])),
        "full_protocol": full,
        "settings_match": bool(match),
        "numerics_version": theirs,
        "numerics_match": numerics_match,
        # a record that names no version cannot be shown to hold under the caller's
        "applies": passed
        and full
        and bool(match)
        and (numerics_match is True or numerics_version is None),
        "datasets": list(record.get("datasets", [])),
        **{k: pooled.get(k) for k in keys},
        "date": record.get("date"),
    }


def preset_validation_status(
    family: str,
    fidelity: str,
    sampler: dict[str, Any] | None = None,
    directory: str | Path | None = None,
) -> tuple[dict[str, Any] | None, str | None]:
    """The shipped validation record of a preset and, when it does not validate it, a warning.

    Parameters
    ----------
    family, fidelity : str
        An MCMC family and one of its presets.
    sampler : dict, optional
        The tasks' sampler settings (default: the preset's as shipped).
    directory : str or Path, optional
        Where records are kept (default :data:`RECORD_DIR`).

    Returns
    -------
    (summary, warning) : tuple
        ``summary``: :func:`validation_summary` of the record, or None without one;
        ``warning``: None when the record validates these tasks (``applies``), else one line
        naming why not (no record, failed, incomplete protocol, other sampler settings, other
        numerics version). A family outside :data:`WARMUP_VALIDATED_FAMILIES` (BNN) gets no
        warning, with or without a record: SPEC §7 gates its instances by split-R̂ instead,
        so its record is information.
    """
    import importlib

    from udbench.priors.base import PRIOR_FAMILIES, family_numerics_version

    module = importlib.import_module(PRIOR_FAMILIES[family])
    if sampler is None:
        sampler = dict(getattr(module, "FIDELITY_SETTINGS", {}).get(fidelity, {}))
    record = load_validation(family, fidelity, directory)
    name = f"{family} {fidelity}"
    not_ref = "" if fidelity != "smoke" else " (smoke is for tests, never a reference)"
    summary = (
        None
        if record is None
        else validation_summary(record, sampler, family_numerics_version(family))
    )
    if family not in WARMUP_VALIDATED_FAMILIES:  # gated per instance: a record is information
        return summary, None
    if summary is None:
        return None, f"{name}: no validation record for this preset (SPEC §7){not_ref}"
    if summary["applies"]:
        return summary, None
    why = []
    if not summary["passed"]:
        why.append("the record fails: " + "; ".join(summary["failures"]))
    if not summary["full_protocol"]:
        why.append("reduced or incomplete: " + "; ".join(summary["protocol_issues"]))
    if not summary["settings_match"]:
        why.append("the record was made with other sampler settings")
    if summary["numerics_match"] is False:
        why.append(f"the record was made under numerics version {summary['numerics_version']}")
    elif summary["numerics_match"] is None:
        why.append("the record names no numerics version")
    return summary, f"{name}: no passing validation record ({'; '.join(why)}){not_ref}"
