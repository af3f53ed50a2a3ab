"""The suite-run campaign's ``transfer`` part (issue 36, item 4): each tuned cell scored
under alternative oracles and other losses, from records alone.

``udbench transfer`` rescores the predictions a results folder kept; the campaign's predictions
are big artefacts in its work folder, lost with the machine that made them, while its cells are
made over many sessions and machines. So each tuned cell gets a ``transfer`` unit, run right
after the method's tuned cells: it scores the cell's predictions (the tuned unit's file, else
the cell evaluated again) under each of :data:`udbench.campaigns.runs.TRANSFER_ORACLES` (the
oracles' moments cached per instance in ``WORK/transfer-oracles``) and records the few figures
the comparison needs. :func:`transfer_summary` rebuilds ``udbench transfer``'s tables
(:func:`udbench.analyses.transfer.transfer_tables`: Kendall's τ with bootstrap intervals,
pooled and per factor level, and the rank shifts) from those records and the tuned cells' rows.

The ``oracle-fit`` units (one committed fit per instance and oracle) are in
:mod:`udbench.campaigns._runs_fits`.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from udbench._validation import UdbenchError
from udbench.campaigns._runs_fits import (
    MACHINE_ERRORS,
    ORACLE_FIT_KIND,
    TRANSFER_PART,
    _fit_provenance,
    _given_fit,
    _oracle_fit_note,
    fits_kernel,
    oracle_fit_checksum,
)
from udbench.campaigns.engine import jsonable

__all__ = [
    "ORACLE_FIT_KIND",
    "TRANSFER_LOSSES",
    "TRANSFER_ORACLES",
    "TRANSFER_PART",
    "fits_kernel",
    "oracle_fit_checksum",
    "predictions_path",
    "transfer_summary",
    "transfer_unit",
]
#: The alternative oracles of the ``transfer`` part (issue 36, item 4: the three GP kernels
#: of ``udbench transfer``'s examples, each refitted on the instance's training sample).
TRANSFER_ORACLES: tuple[str, ...] = ("gp:rbf", "gp:matern12", "gp:rq+linear")
#: The losses besides squared error under which the ``transfer`` part scores each cell.
TRANSFER_LOSSES: tuple[str, ...] = ("crps", "log")


#: The ``transfer`` part's unit, CPU seconds when the tuned cell's predictions are in the work
#: folder: scoring under three oracles and two more losses (0.1-0.2 s measured on gp-small)
#: plus a share of the instance's three oracle fits (about 9-13 s, cached and shared by its
#: 19 methods).
TRANSFER_UNIT_SECONDS = 0.9


def predictions_path(
    work_dir: str | Path, part: str, task_id: str, method: str, config_hash: str
) -> Path:
    """``WORK/predictions/<part>/<task id>/<method>-<config hash[:12]>.parquet``: a cell's
    per-point predictions (the record holds the file's checksum)."""
    return Path(work_dir) / "predictions" / part / task_id / f"{method}-{config_hash[:12]}.parquet"


def transfer_unit(
    spec: Any,
    mc: Any,
    oracles: Sequence[str],
    tuned: Any,
    work_dir: str,
    data_dir: str | None,
    suite: dict[str, Any] | None = None,
    fit_records: str | None = None,
) -> tuple[dict[str, Any], Any, float]:
    """A ``transfer`` unit of a tuned cell (its task spec and method configuration): its
    extra settings, its work and its estimate (CPU seconds, :data:`TRANSFER_UNIT_SECONDS`).
    ``tuned``: the tuned cell's unit, whose work writes the predictions file
    (:func:`predictions_path`) the transfer unit scores, and which it requires
    (:class:`udbench.campaigns.engine.Unit`). On a machine without the file (the tuned record
    made elsewhere) the unit evaluates the cell again and costs it too: the estimate cannot
    tell that case from the tuned unit still to run here, which writes the file, so it leaves
    it out and ``campaign status`` shows it once such units are measured. With ``suite``
    (the campaign's), a task file in the work folder that is not the suite's reference
    version (:mod:`udbench.recipes.task_versions`) makes the unit evaluate the cell again
    too: the predictions there were made on it. With ``fit_records`` (the campaign's
    records folder) each ``gp:KERNEL`` oracle is conditioned on the fit of its
    ``oracle-fit`` record (module notes), which the caller makes a requirement."""
    import functools

    file = predictions_path(work_dir, "tuned", spec.task_id, mc.name, mc.config_hash)
    work = functools.partial(
        _transfer_work,
        spec,
        mc,
        tuple(oracles),
        file,
        tuned.work,
        work_dir,
        data_dir,
        suite,
        fit_records,
    )
    return _transfer_settings(spec, oracles), work, TRANSFER_UNIT_SECONDS


def _transfer_settings(spec: Any, oracles: Sequence[str]) -> dict[str, Any]:
    """What a ``transfer`` unit's numbers depend on besides its cell: the oracles, their fit
    settings and moments version, the losses and the metrics recorded."""
    from udbench.analyses.transfer import TRANSFER_METRICS
    from udbench.evaluation.transfer import ORACLE_MOMENTS_VERSION, fit_settings_for

    return {
        "oracles": list(oracles),
        "losses": list(TRANSFER_LOSSES),
        "metrics": list(TRANSFER_METRICS),
        "oracle_fit": fit_settings_for(str(spec.fidelity)),
        "oracle_moments": ORACLE_MOMENTS_VERSION,
    }


def _transfer_work(
    spec: Any,
    mc: Any,
    oracles: tuple[str, ...],
    path: Path,
    redo: Any,
    work_dir: str,
    data_dir: str | None,
    suite: dict[str, Any] | None = None,
    fit_records: str | None = None,
) -> dict[str, Any]:
    """Score one tuned cell's predictions under the alternative oracles and losses.

    The predictions are the tuned cell's file in the work folder, else (a machine that did not
    run the cell) the cell evaluated again exactly as the ``tuned`` unit does. The record
    keeps, per oracle, the :data:`~udbench.analyses.transfer.TRANSFER_METRICS` under squared
    error and under each of :data:`TRANSFER_LOSSES` (``<metric>_<loss>``), and the same from
    the task's own moments (``own``: squared by ``udbench run``'s scoring, the other losses by
    the Gaussian closed form that ``udbench transfer --loss`` compares against), all from the
    same predictions, whose checksum it keeps; a failed oracle is kept with its reason.
    With ``fit_records``, a ``gp:KERNEL`` oracle is the fit of its ``oracle-fit`` record
    (``fit_given`` True in the entry).
    """
    import pandas as pd

    from udbench.analyses.transfer import TRANSFER_METRICS
    from udbench.campaigns._runs_versions import is_reference_task
    from udbench.campaigns.tuning import condition_task_folder
    from udbench.evaluation.losses import loss_column, loss_metrics
    from udbench.evaluation.scoring import score_prediction
    from udbench.evaluation.store import prediction_from_frame
    from udbench.evaluation.transfer import parse_oracle, task_with_moments
    from udbench.evaluation.transfer_rescoring import cached_oracle_moments, rescore_prediction
    from udbench.recipes.task_versions import task_arrays_sha256
    from udbench.tasks import Task

    task_file = condition_task_folder(work_dir, spec.family) / f"{spec.task_id}.npz"
    evaluated = not path.is_file() or not task_file.is_file()
    if not evaluated and suite is not None:  # predictions made on an old task file
        evaluated = not is_reference_task(suite, spec, task_file)
    if evaluated:  # made on another machine: the same cell again (the tuned unit's work)
        redo()
    task = Task.load(task_file)
    data = path.read_bytes()  # read once: the checksum is of the very bytes scored
    pred = prediction_from_frame(pd.read_parquet(io.BytesIO(data)), task.eval_idx)
    if pred is None:
        raise UdbenchError(
            f"transfer: the predictions {str(path)!r} are for another evaluation pool than "
            f"task {spec.task_id!r}'s"
        )
    keys = list(TRANSFER_METRICS)
    wanted = keys + [loss_column(k, lo) for lo in TRANSFER_LOSSES for k in keys]
    const = bool(mc.constant_aleatoric)
    # the task's own moments: squared error by udbench run's scoring, the other losses by the
    # Gaussian closed form (what udbench transfer --loss orders the "correct" methods by)
    squared, _ = score_prediction(task, pred, constant_aleatoric=const)
    own = {k: squared[k] for k in keys}
    by_loss, _ = loss_metrics(
        task, pred, TRANSFER_LOSSES, constant_aleatoric=const, reference="gaussian"
    )
    own.update(by_loss)
    by_oracle: dict[str, Any] = {}
    cache = Path(work_dir) / "transfer-oracles"
    for text in oracles:
        oracle = parse_oracle(text, "udbench campaign runs")
        entry: dict[str, Any] = {"status": "ok", "error": None}
        fitted: dict[str, Any] | None = None
        try:
            fitted = _given_fit(fit_records, spec.task_id, text)
            moments = cached_oracle_moments(
                task,
                oracle,
                cache / oracle.slug,
                task.content_sha256,
                data_dir=data_dir,
                fitted=fitted,
            )
            view = task_with_moments(task, moments.mean, moments.var)
            got, _ = rescore_prediction(view, pred, constant_aleatoric=const)
            by, _ = loss_metrics(
                view, pred, TRANSFER_LOSSES, constant_aleatoric=const, reference="gaussian"
            )
            # the figures only: the oracle's fit (kernel, marginal likelihood) is the same for
            # the instance's 19 methods and stays in the cache, not in 19 records
            entry["metrics"] = {k: {**got, **by}.get(k, float("nan")) for k in wanted}
            entry["fit_sha256"] = oracle_fit_checksum(moments.info)
            entry["fit_given"] = fitted is not None
        except MACHINE_ERRORS:  # not the oracle's failure: the unit fails, retried
            raise
        except Exception as err:  # recorded with its reason: the other oracles go on
            why = " ".join(str(err).split())
            entry.update(status="failed", error=f"{type(err).__name__}: {why}")
            if fitted is not None:  # failed under the committed fit: judged as made with it
                entry.update(fit_sha256=oracle_fit_checksum(fitted), fit_given=True)
        by_oracle[text] = entry
    return jsonable(
        {
            "predictions_sha256": hashlib.sha256(data).hexdigest(),
            "task_arrays_sha256": task_arrays_sha256(task_file),
            "evaluated_here": evaluated,
            "own": {k: own.get(k, float("nan")) for k in wanted},
            "oracles": by_oracle,
        }
    )


def _frames(records: str | Path, units: Any) -> tuple[Any, dict[str, Any], list[str], list[str]]:
    """The compared cells: ``correct`` (the tuned rows with the metrics from the transfer
    records' own moments), per oracle its rows (``oracle_status`` from the record), the
    methods compared and the notes."""
    import pandas as pd

    from udbench.campaigns.engine import current_records

    tuned, notes = current_records(records, "tuned", units, include_failed=True)
    done, more = current_records(records, TRANSFER_PART, units, include_failed=True)
    notes += [n for n in more if n not in notes]
    rows = {r["unit_id"].split("/", 1)[1]: r["result"]["row"] for r in tuned}
    mixed = _oracle_fit_note([r for r in done if r.get("status") == "done"])
    notes += [mixed] if mixed else []
    by_method: dict[str, list[dict[str, Any]]] = {}
    for rec in done:
        by_method.setdefault(rec["unit_id"].rsplit("/", 1)[1], []).append(rec)
    # a method is compared on all its instances or not at all (as runs_summary compares
    # the tuned leaderboard): as many transfer units as untuned ones, so no condition waits
    # for a tuning record, every one done, on ok tuned cells
    expected: dict[str, set[str]] = {}
    if units is None:
        untuned, _ = current_records(records, "untuned", None, include_failed=True)
        pairs = [r["unit_id"].split("/", 1)[1] for r in untuned]
    else:
        pairs = [u.unit_id.split("/", 1)[1] for u in units if u.kind == "untuned"]
    for pair in pairs:
        expected.setdefault(pair.rsplit("/", 1)[1], set()).add(pair)
    started = set(by_method) | {
        u.unit_id.rsplit("/", 1)[1] for u in units or [] if u.kind == TRANSFER_PART
    }
    complete, waiting = [], []
    for name in sorted(started):
        recs = by_method.get(name, [])
        ok = {r["unit_id"].split("/", 1)[1] for r in recs if r.get("status") == "done"}
        good = {p for p in ok if rows.get(p, {}).get("status") == "ok"}
        want = expected.get(name, set())
        if good == want:
            complete.append(name)
        elif not recs:
            waiting.append(name)
        else:
            notes.append(
                f"transfer: {name} not compared: {len(good)} of its {len(want)} cells have a "
                "done transfer unit on an ok tuned cell"
            )
    if waiting:
        notes.append(
            f"transfer: no unit done yet for {len(waiting)} method(s): {', '.join(waiting)}"
        )
    correct: list[dict[str, Any]] = []
    per_oracle: dict[str, list[dict[str, Any]]] = {}
    for name in complete:
        for rec in by_method[name]:
            row = dict(rows[rec["unit_id"].split("/", 1)[1]])
            res = rec["result"]
            correct.append({**row, **res["own"]})
            for oracle, entry in res["oracles"].items():
                alt = {**row, **{k: float("nan") for k in res["own"]}}
                alt.update(entry.get("metrics") or {})
                alt["oracle_status"] = entry["status"]
                per_oracle.setdefault(oracle, []).append(alt)
    frames = {o: pd.DataFrame(r) for o, r in per_oracle.items()}
    fits = _fit_provenance(records, units, [r for m in complete for r in by_method[m]])
    notes += [fits] if fits else []
    return pd.DataFrame(correct), frames, complete, notes


def transfer_summary(
    records: str | Path, units: Any = None, *, n_resamples: int = 2000
) -> dict[str, Any]:
    """Kendall's τ between the tuned methods' orderings under the correct oracle and each
    alternative one, per loss, and between squared error and each other loss under the
    correct oracle (issue 36, item 4), from the ``transfer`` records and the tuned rows.

    Parameters
    ----------
    records : str or Path
        The campaign's records folder.
    units : sequence of Unit, optional
        The campaign's units (records of other settings left out; a method enters when
        every one of its transfer units is done and its tuned cells are ok).
    n_resamples : int, default 2000
        Bootstrap replicates (instances resampled within datasets).

    Returns
    -------
    dict
        ``methods`` (compared), ``tau`` and ``ranks`` (DataFrames of
        :func:`udbench.analyses.transfer.transfer_tables` with ``oracle`` and ``loss``
        columns; oracle ``own`` with loss ``crps`` / ``log``: squared error's ordering
        against that loss's, both under the correct oracle), ``notes`` and ``markdown``.
    """
    import pandas as pd

    from udbench.analyses.proxies import MIN_METHODS
    from udbench.analyses.transfer import TRANSFER_METRICS, transfer_tables
    from udbench.evaluation.losses import loss_column

    correct, frames, methods, notes = _frames(records, units)
    taus, ranks = [], []
    if len(methods) >= MIN_METHODS:
        comparisons: list[tuple[str, str, Any, Any, list[str]]] = []
        for oracle, alt in frames.items():
            for loss in ("squared", *TRANSFER_LOSSES):
                keys = [m if loss == "squared" else loss_column(m, loss) for m in TRANSFER_METRICS]
                comparisons.append((oracle, loss, correct, alt, keys))
        for loss in TRANSFER_LOSSES:  # the correct oracle: squared error against this loss
            other = correct.copy()
            for m in TRANSFER_METRICS:
                other[m] = correct[loss_column(m, loss)]
            comparisons.append(("own", loss, correct, other, list(TRANSFER_METRICS)))
        for oracle, loss, c, a, keys in comparisons:
            try:
                tau, rank = transfer_tables(c, a, metrics=keys, n_resamples=n_resamples)
            except UdbenchError as err:  # e.g. an oracle failed on every cell
                notes.append(f"{oracle} / {loss}: {err}")
                continue
            for t in (tau, rank):
                t.insert(0, "loss", loss)
                t.insert(0, "oracle", oracle)
                t["metric"] = t["metric"].str.replace(f"_{loss}$", "", regex=True)
            taus.append(tau)
            ranks.append(rank)
    tau_df = pd.concat(taus, ignore_index=True) if taus else pd.DataFrame()
    rank_df = pd.concat(ranks, ignore_index=True) if ranks else pd.DataFrame()
    return {
        "methods": methods,
        "tau": tau_df,
        "ranks": rank_df,
        "notes": notes,
        "markdown": _markdown(tau_df, rank_df, methods)
        + "".join(f"\n- {n}" for n in notes[:20])
        + ("\n" if notes else ""),
    }


def _markdown(tau: Any, ranks: Any, methods: list[str]) -> str:
    """The page section: pooled τ per (oracle, loss) with the range over factor levels, and
    the largest pooled rank shifts."""
    from udbench.analyses.proxies import MIN_METHODS

    head = "## Transfer: alternative oracles and losses (tuned cells)\n\n"
    if tau.empty:
        return head + (
            f"{len(methods)} method(s) have every transfer unit done: no comparison yet "
            f"(Kendall's τ of an ordering needs {MIN_METHODS} or more).\n"
        )

    def cell(sub: Any) -> str:
        pooled = sub[sub["factor"] == "all"].iloc[0]
        levels = sub[sub["factor"] != "all"]["tau"].dropna()
        span = f"{levels.min():.2f}–{levels.max():.2f}" if len(levels) else "–"
        return f"{pooled['tau']:.3f} [{pooled['tau_low']:.3f}, {pooled['tau_high']:.3f}] ({span})"

    lines = [
        f"Methods compared: {len(methods)} ({', '.join(f'`{m}`' for m in methods)}). Kendall's "
        "τ-b of the method orderings by mean ρ, pooled over the instances with a 95 % bootstrap "
        "interval (instances resampled within datasets), and in brackets its range over the "
        "factor levels. `own`: the correct oracle, squared error's ordering against the "
        "loss's.\n",
        "| oracle | loss | τ, ρ(EU, EU*_risk) (levels) | τ, ρ(EU, EU*_var) (levels) |",
        "|---|---|---|---|",
    ]
    for (oracle, loss), sub in tau.groupby(["oracle", "loss"], sort=False):
        by = {m: s for m, s in sub.groupby("metric")}
        lines.append(
            f"| `{oracle}` | {loss} | {cell(by['rho_eu_risk'])} | {cell(by['rho_eu_var'])} |"
        )
    pooled = ranks[(ranks["factor"] == "all") & (ranks["metric"] == "rho_eu_risk")]
    shifts = pooled.reindex(pooled["rank_shift"].abs().sort_values(ascending=False).index)
    lines += [
        "\nLargest pooled rank shifts by ρ(EU, EU*_risk) (1 = best):\n",
        "| oracle | loss | method | rank correct → alternative | mean ρ correct → alternative |",
        "|---|---|---|---|---|",
    ]
    if not (shifts["rank_shift"] != 0).any():
        none = "\nNo method's pooled rank by ρ(EU, EU*_risk) moved under any oracle or loss.\n"
        lines = [*lines[:-3], none]
    for _, r in shifts[shifts["rank_shift"] != 0].head(10).iterrows():
        lines.append(
            f"| `{r['oracle']}` | {r['loss']} | `{r['method']}` | {r['rank_correct']:.0f} → "
            f"{r['rank_alternative']:.0f} | {r['mean_correct']:.3f} → "
            f"{r['mean_alternative']:.3f} |"
        )
    return head + "\n".join(lines) + "\n"
