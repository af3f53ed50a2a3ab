"""The suite-run campaign's ``transfer`` part (issue 36, item 4): each tuned cell scored under
alternative oracles and losses into its record, so the transfer tables are rebuilt from
records alone, also on a machine that did not keep the predictions."""

from __future__ import annotations

import json

import numpy as np
import pytest

from _fakes import fake_concrete_generate, tiny_runs_suite
from _results import fabricate_results
from udbench.campaigns import Unit, run_campaign, runs
from udbench.campaigns._runs_transfer import transfer_summary
from udbench.campaigns.engine import record_file

SUITE = tiny_runs_suite("tiny-transfer", seeds="0-1", methods="blr")
COND = "concrete__gp__homoscedastic__balanced"


_generate = fake_concrete_generate


pytestmark = pytest.mark.usefixtures("runs_env")


def test_transfer_units_score_the_tuned_predictions_and_redo_them_on_a_fresh_machine(
    tmp_path, tuning
) -> None:
    """Per tuned cell: the correct oracle's figures from the same predictions equal the tuned
    row's; the refitted-RBF oracle's are finite; an oracle that fails is recorded with its
    reason and the unit is done. Without the predictions (another machine) the cell is
    evaluated again: same checksum, same figures."""
    work = tmp_path / "work"
    oracles = ("gp:rbf", "family:hbart")  # no data folder: the HBART oracle fails
    units = runs.campaign_units(
        work_dir=work, suite=SUITE, records=tuning, generate=_generate, transfer_oracles=oracles
    )
    ids = [u.unit_id for u in units]
    assert ids == [
        f"{p}/{COND}__s{s}/blr" for p in runs.PARTS[1:] for s in range(2)
    ]  # no generate unit: GP
    unit = units[4]
    assert unit.kind == "transfer" and unit.settings["oracles"] == list(oracles)
    assert unit.settings["losses"] == ["crps", "log"]
    assert unit.settings["config_hash"] == units[2].settings["config_hash"]  # the tuned cell's
    assert [r.unit_id for r in unit.requires] == [units[2].unit_id]  # started once it is done
    alone = runs.campaign_units(
        ["transfer"], work_dir=work, suite=SUITE, records=tuning, generate=_generate
    )
    assert [u.kind for u in alone] == ["transfer"] * 2 and alone[0].requires[0] == units[2]
    assert alone[0].estimate_seconds == 0.9  # scoring and a share of the oracles' fits
    records = tmp_path / "records"
    assert run_campaign(units, records)["done"] == 6
    tuned = json.loads(record_file(records, units[2].unit_id).read_text())["result"]
    rec = json.loads(record_file(records, unit.unit_id).read_text())["result"]
    assert rec["predictions_sha256"] == tuned["predictions_sha256"]
    assert rec["evaluated_here"] is False
    for k in ("rho_eu_risk", "rho_eu_var"):
        assert rec["own"][k] == pytest.approx(tuned["row"][k], rel=1e-12)
        assert -1.0 <= rec["own"][f"{k}_crps"] <= 1.0 and -1.0 <= rec["own"][f"{k}_log"] <= 1.0
    rbf = rec["oracles"]["gp:rbf"]
    assert rbf["status"] == "ok" and rbf["error"] is None
    assert set(rbf["metrics"]) == set(rec["own"])
    assert all(np.isfinite(v) and -1.0 <= v <= 1.0 for v in rbf["metrics"].values())
    assert rbf["metrics"]["rho_eu_risk"] != rec["own"]["rho_eu_risk"]  # another oracle
    assert len(rbf["fit_sha256"]) == 16  # the refitted kernel's checksum
    hb = rec["oracles"]["family:hbart"]
    assert hb["status"] == "failed" and hb["error"] and "fit_sha256" not in hb
    assert list((work / "transfer-oracles" / "gp-rbf").glob(f"{COND}__s0__*.npz"))
    # a fresh machine: no predictions, no oracle cache
    preds = runs.predictions_path(work, "tuned", f"{COND}__s0", "blr", unit.settings["config_hash"])
    preds.unlink()
    for f in (work / "transfer-oracles").rglob("*.npz"):
        f.unlink()
    record_file(records, unit.unit_id).unlink()
    assert run_campaign(units, records)["done"] == 1
    again = json.loads(record_file(records, unit.unit_id).read_text())["result"]
    assert again["evaluated_here"] is True
    assert again["predictions_sha256"] == tuned["predictions_sha256"]
    for k, v in rec["own"].items():
        assert again["own"][k] == pytest.approx(v, rel=1e-9)
    for k, v in rbf["metrics"].items():  # the oracle refitted: same data, same seeded fit
        assert again["oracles"]["gp:rbf"]["metrics"][k] == pytest.approx(v, abs=1e-6)
    assert again["oracles"]["gp:rbf"]["fit_sha256"] == rbf["fit_sha256"]  # one machine


def test_an_instance_scored_under_two_fits_of_an_oracle_is_noted() -> None:
    from udbench.campaigns._runs_transfer import _oracle_fit_note, oracle_fit_checksum

    assert oracle_fit_checksum({"sampler": "x"}) is None  # a family oracle fits nothing
    one = oracle_fit_checksum({"kernel": {"parts": [1]}, "scale": 2.0})
    two = oracle_fit_checksum({"kernel": {"parts": [1]}, "scale": 2.0000001})
    assert one is not None and two is not None and one != two

    def rec(task, method, fit):
        entry = {"status": "ok"} | ({"fit_sha256": fit} if fit else {})
        return {"unit_id": f"transfer/{task}/{method}", "result": {"oracles": {"gp:rbf": entry}}}

    same = [rec("t1", "a", one), rec("t1", "b", one), rec("t2", "a", two), rec("t2", "b", None)]
    assert _oracle_fit_note(same) is None  # a record without a checksum is not counted
    note = _oracle_fit_note([*same, rec("t1", "c", two)])
    assert note is not None and note.startswith(
        "transfer: 1 (instance, oracle) pair(s) were scored under more than one fit of the "
        "oracle (made on other machines; first t1 under gp:rbf)"
    )


def _fabricated_records(tmp_path, *, fail: str | None = None, untuned_only: str | None = None):
    """Tuned and transfer records of three methods on 4 instances: under the alternative
    oracle ``gp:x`` every ρ is 1 − ρ (the ordering reversed); under CRPS (correct oracle)
    the squared-error figures (the ordering kept)."""
    rows = fabricate_results(
        n_datasets=1,
        priors=("gp",),
        noises=("homoscedastic", "step"),
        coverages=("balanced",),
        n_seeds=2,
        methods={"a": ("nn", False), "b": ("nn", False), "c": ("trees", True)},
    )
    units = []
    for r in rows.to_dict("records"):
        row = {k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()}
        cell = f"{row['task_id']}/{row['method']}"
        own = {}
        for k in ("rho_eu_risk", "rho_eu_var"):
            for suffix in ("", "_crps", "_log"):
                own[k + suffix] = row[k]
        alt = {k: 1.0 - v for k, v in own.items()}
        result = {"own": own, "oracles": {"gp:x": {"status": "ok", "metrics": alt}}}

        def work_t(row=row):
            return {"row": row}

        def work_x(result=result, method=row["method"]):
            if method == fail:
                raise RuntimeError("oracle crashed")
            return result

        units.append(Unit(f"untuned/{cell}", "untuned", {"c": cell}, {}, work_t))
        if row["method"] == untuned_only and row["noise"] == "step":
            continue  # its condition waits for a tuning record: no tuned nor transfer unit
        units.append(Unit(f"tuned/{cell}", "tuned", {"c": cell}, {}, work_t))
        units.append(Unit(f"transfer/{cell}", "transfer", {"c": cell}, {}, work_x))
    run_campaign(units, tmp_path / "records")
    return units


def test_transfer_summary_rebuilds_the_tables_from_records(tmp_path) -> None:
    units = _fabricated_records(tmp_path)
    out = transfer_summary(tmp_path / "records", units, n_resamples=50)
    assert out["methods"] == ["a", "b", "c"]
    tau = out["tau"].set_index(["oracle", "loss", "metric", "factor"])["tau"]
    for loss in ("squared", "crps", "log"):
        assert tau[("gp:x", loss, "rho_eu_risk", "all")] == pytest.approx(-1.0)
    for loss in ("crps", "log"):  # squared against the loss, correct oracle: same ordering
        assert tau[("own", loss, "rho_eu_var", "all")] == pytest.approx(1.0)
    ranks = out["ranks"]
    a = ranks[
        (ranks["oracle"] == "gp:x")
        & (ranks["loss"] == "squared")
        & (ranks["factor"] == "all")
        & (ranks["metric"] == "rho_eu_risk")
        & (ranks["method"] == "a")
    ].iloc[0]
    assert (a["rank_correct"], a["rank_alternative"]) == (1.0, 3.0)
    assert "| `gp:x` | squared | -1.000" in out["markdown"]
    assert "| `gp:x` | squared | `a` | 1 → 3 |" in out["markdown"]


def test_a_method_with_a_failed_transfer_unit_waits(tmp_path) -> None:
    units = _fabricated_records(tmp_path, fail="b")
    out = transfer_summary(tmp_path / "records", units, n_resamples=50)
    assert out["methods"] == ["a", "c"]
    assert "transfer: no unit done yet for 1 method(s): b" in out["markdown"]
    # without units: the records alone (the failed one still holds its method back)
    assert transfer_summary(tmp_path / "records", n_resamples=50)["methods"] == ["a", "c"]
    # two methods: no τ (an ordering of two says too little), no table of NaN
    assert out["tau"].empty and "needs 3 or more" in out["markdown"]
    one = transfer_summary(tmp_path / "none", [], n_resamples=50)
    assert one["tau"].empty and "no comparison yet" in one["markdown"]


def test_a_method_tuned_on_part_of_its_conditions_is_not_compared(tmp_path) -> None:
    """Its mean ρ would be over other instances than the others' (the review of 0acb2f0)."""
    units = _fabricated_records(tmp_path, untuned_only="c")
    out = transfer_summary(tmp_path / "records", units, n_resamples=50)
    assert out["methods"] == ["a", "b"]
    assert "transfer: c not compared: 2 of its 4 cells" in out["markdown"]
    assert transfer_summary(tmp_path / "records", n_resamples=50)["methods"] == ["a", "b"]


def test_the_recorded_figures_are_udbench_transfers_on_the_exported_cells(tmp_path, tuning):
    """Per cell, the record's figures equal what ``udbench transfer`` computes from the
    exported tuned results folder: under the oracle (squared and CRPS) and, for CRPS, under
    the task's own moments (the "correct" side of ``--loss crps``)."""
    from udbench.analyses.transfer import run_transfer
    from udbench.campaigns.tuning import condition_task_folder

    work, records, out = tmp_path / "work", tmp_path / "records", tmp_path / "out"
    units = runs.campaign_units(
        work_dir=work, suite=SUITE, records=tuning, generate=_generate, transfer_oracles=("gp:rbf",)
    )
    run_campaign(units, records)
    runs.export_results(records, out, work, units, tuning=tuning)
    res = run_transfer(
        out / "tuned",
        ["gp:rbf"],
        loss="crps",
        n_resamples=10,
        task_dirs=[condition_task_folder(work, "gp")],
        out=tmp_path / "tr",
    )
    cells = res.cells["gp:rbf"].set_index("task_id")
    for s in range(2):
        rec = json.loads(record_file(records, f"transfer/{COND}__s{s}/blr").read_text())["result"]
        cell = cells.loc[f"{COND}__s{s}"]
        for k in ("rho_eu_risk", "rho_eu_var", "rho_eu_risk_crps", "rho_eu_var_crps"):
            assert rec["oracles"]["gp:rbf"]["metrics"][k] == pytest.approx(cell[k], abs=1e-12)
        for k in ("rho_eu_risk_crps", "rho_eu_var_crps"):
            assert rec["own"][k] == pytest.approx(cell[f"own_{k}"], abs=1e-12)


def test_instances_run_on_two_versions_of_their_task_file_are_named(tmp_path) -> None:
    """The rows' task_sha256 tell when one task id's cells were made on different task files
    (another machine's GP fit): the summary page says so instead of pooling them silently."""
    from udbench.campaigns._runs_analyses import task_versions_section

    rows = fabricate_results(
        n_datasets=2, priors=("gp",), noises=("homoscedastic",), coverages=("balanced",),
        n_seeds=1, methods={"a": ("nn", False), "b": ("nn", False)},
    )  # fmt: skip
    units = []
    for r in rows.to_dict("records"):
        row = {k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()}
        other = row["dataset"] == "ds01" and row["method"] == "b"
        row["task_sha256"] = f"{row['task_id']}-{'v2' if other else 'v1'}"

        def work(row=row) -> dict:
            return {"row": row}

        units.append(Unit(f"untuned/{row['task_id']}/{row['method']}", "untuned", {}, {}, work))
    run_campaign(units, tmp_path)
    text, per = task_versions_section(tmp_path, units)
    assert per == {"ds01": 1}
    assert "**1 of 2 instances** (ds01 1)" in text and "`ds01-gp-homoscedastic-balanced-s0`" in text
    assert task_versions_section(tmp_path, units[:2]) == ("", {})  # ds00 only: one version


def test_oracle_fit_units_commit_one_fit_that_every_method_is_scored_against(
    tmp_path, tuning, monkeypatch
) -> None:
    """With the campaign's records folder, each (instance, gp:KERNEL oracle) has one
    ``oracle-fit`` unit, before the instance's first transfer unit; the transfer units require
    it and condition on its committed fit, also where this machine's own fit (its cache)
    differs; a fit that fails is recorded and the transfer records that oracle as failed."""
    from udbench._validation import UdbenchError
    from udbench.campaigns._runs_transfer import (
        ORACLE_FIT_KIND,
        fits_kernel,
        oracle_fit_checksum,
    )
    from udbench.campaigns.engine import stale_reason, unit_status

    work, records = tmp_path / "work", tmp_path / "records"
    assert fits_kernel("gp:rq+linear") and fits_kernel("gp:rbf")
    assert not fits_kernel("gp:prior") and not fits_kernel("family:hbart")  # no fit unit
    oracles = ("gp:rbf",)
    units = runs.campaign_units(
        work_dir=work,
        suite=SUITE,
        records=tuning,
        generate=_generate,
        transfer_oracles=oracles,
        campaign_records=records,
    )
    ids = [u.unit_id for u in units]
    fit0, fit1 = (f"oracle-fit/{COND}__s{s}/gp-rbf" for s in range(2))
    assert ids[4:] == [fit0, f"transfer/{COND}__s0/blr", fit1, f"transfer/{COND}__s1/blr"]
    fit_unit, transfer = units[4], units[5]
    assert fit_unit.kind == ORACLE_FIT_KIND and fit_unit.settings["oracle"] == "gp:rbf"
    assert [r.unit_id for r in transfer.requires] == [units[2].unit_id, fit0]
    alone = runs.campaign_units(
        ["transfer"], work_dir=work, suite=SUITE, records=tuning, generate=_generate,
        transfer_oracles=oracles, campaign_records=records,
    )  # fmt: skip
    assert [u.kind for u in alone] == [ORACLE_FIT_KIND, "transfer"] * 2
    assert run_campaign(units, records)["done"] == 8
    fit = json.loads(record_file(records, fit0).read_text())["result"]
    assert fit["status"] == "ok" and fit["scale"] > 0 and fit["kernel"]["kernel_family"] == "rbf"
    rec = json.loads(record_file(records, transfer.unit_id).read_text())["result"]
    entry = rec["oracles"]["gp:rbf"]
    assert entry["fit_given"] is True and entry["fit_sha256"] == fit["fit_sha256"]
    # another machine's fit, committed: the transfer unit scores against it, not its own
    moved = {**fit, "scale": 1.5 * fit["scale"]}
    moved["fit_sha256"] = oracle_fit_checksum(moved)
    doc = json.loads(record_file(records, fit0).read_text())
    record_file(records, fit0).write_text(json.dumps({**doc, "result": moved}))
    # the transfer record made under the old fit is stale by itself (its fit_sha256)
    status, _ = unit_status(transfer, records)
    assert status == "stale"
    reason = stale_reason(transfer, json.loads(record_file(records, transfer.unit_id).read_text()))
    assert reason is not None and f"than the committed {fit0}" in reason
    assert unit_status(units[7], records)[0] == "done"  # the other instance: its own fit
    assert run_campaign(units, records)["done"] == 1
    again = json.loads(record_file(records, transfer.unit_id).read_text())["result"]
    got = again["oracles"]["gp:rbf"]
    assert got["fit_sha256"] == moved["fit_sha256"] != entry["fit_sha256"]
    assert got["metrics"]["rho_eu_risk"] != pytest.approx(entry["metrics"]["rho_eu_risk"])
    assert again["own"] == rec["own"]  # the task's own moments do not depend on the fit
    # a fit that fails: recorded in the fit unit's result, and the oracle fails in transfer
    import udbench.evaluation.transfer_rescoring as rescoring

    def boom(*args, **kwargs):
        raise OSError("disk full")

    def no_fit(*args, **kwargs):
        raise UdbenchError("the gp:rbf fit gave a prior variance 0.0")

    # anything else than a fit that does not work (udbench's error): a failed unit, retried,
    # and the instance's transfer unit waits for it
    real_fit = rescoring.cached_oracle_moments
    monkeypatch.setattr(rescoring, "cached_oracle_moments", boom)
    for uid in (fit1, f"transfer/{COND}__s1/blr"):
        record_file(records, uid).unlink()
    counts = run_campaign(units, records)
    assert (counts["done"], counts["failed"], counts["left"]) == (0, 1, 1)
    rec1 = json.loads(record_file(records, fit1).read_text())
    assert rec1["status"] == "failed" and "OSError: disk full" in rec1["error"]
    # a fit that does not work: done, its reason kept, the oracle failed in the transfer
    monkeypatch.setattr(rescoring, "cached_oracle_moments", no_fit)
    assert run_campaign(units, records)["done"] == 2
    failed = json.loads(record_file(records, fit1).read_text())["result"]
    assert failed["status"] == "failed" and "prior variance 0.0" in failed["error"]
    bad = json.loads(record_file(records, f"transfer/{COND}__s1/blr").read_text())["result"]
    assert bad["oracles"]["gp:rbf"]["status"] == "failed"
    assert "the oracle's fit failed" in bad["oracles"]["gp:rbf"]["error"]
    # a summary given the units (fits included) lists methods only
    summary = runs.runs_summary(records, units, n_resamples=50)
    assert set(summary["progress"]) == {"blr"}
    assert (
        "transfer: oracle fits: 1 committed with a fit (`oracle-fit` records; 1 of the "
        "campaign's fit units without one: failed, not run or not a fit); the compared "
        "records' gp:KERNEL entries: 1 scored against a committed fit, 0 scored before it was "
        "committed (under a fit with a checksum), 0 from before fit checksums were kept"
    ) in transfer_summary(records, units, n_resamples=50)["notes"]
    # the fit is made later (here: the same fit unit again, now working): the transfer entry
    # that failed for want of it is judged stale and scored against it
    monkeypatch.setattr(rescoring, "cached_oracle_moments", real_fit)
    record_file(records, fit1).unlink()
    s1 = units[7]
    assert unit_status(s1, records)[0] == "done"  # no fit record: not judged yet
    assert run_campaign(units, records)["done"] == 2  # the fit, then the transfer again
    redone = json.loads(record_file(records, s1.unit_id).read_text())["result"]
    now = json.loads(record_file(records, fit1).read_text())["result"]
    assert redone["oracles"]["gp:rbf"]["status"] == "ok"
    assert redone["oracles"]["gp:rbf"]["fit_sha256"] == now["fit_sha256"]
    assert run_campaign(units, records)["done"] == 0  # and it stays done
    # a fit record that is itself not current (another oracle-moments version) judges
    # nothing; made current again, it does
    doc = json.loads(record_file(records, fit0).read_text())
    old_fit = {**doc, "result": fit, "settings": {**doc["settings"], "oracle_moments": "0"}}
    record_file(records, fit0).write_text(json.dumps(old_fit))
    assert unit_status(fit_unit, records)[0] == "stale"
    assert unit_status(transfer, records)[0] == "done"
    record_file(records, fit0).write_text(json.dumps({**old_fit, "settings": doc["settings"]}))
    assert unit_status(fit_unit, records)[0] == "done"
    assert unit_status(transfer, records)[0] == "stale"


def test_fit_check_judges_failed_entries_by_the_fit_they_were_made_under(tmp_path) -> None:
    """An oracle entry that failed under the committed fit (its checksum kept) stays done, so
    a scoring error is not redone on every run; one that failed with no fit (the fit failed
    or was not there) is stale once a fit is committed; an old ok entry without a checksum
    and an oracle the record did not score are not judged."""
    from udbench.campaigns._runs_fits import ORACLE_FIT_KIND, fit_check

    fit = Unit(
        "oracle-fit/t/gp-rbf",
        ORACLE_FIT_KIND,
        {"oracle": "gp:rbf"},
        {"v": 1},
        lambda: {"status": "ok", "fit_sha256": "abcdef0123456789"},
    )
    assert fit_check(None, (fit,)) is None and fit_check(str(tmp_path), ()) is None
    accepts = fit_check(str(tmp_path), (fit,))
    assert accepts is not None

    def rec(**entry):
        return {"result": {"oracles": {"gp:rbf": entry}}}

    failed_bare = rec(status="failed", error="UdbenchError: the oracle's fit failed")
    assert accepts(failed_bare) is None  # no fit record yet: not judged
    run_campaign([fit], tmp_path)
    why = accepts(failed_bare)
    assert why is not None and why.startswith("gp:rbf failed (UdbenchError") and fit.unit_id in why
    same = rec(status="failed", error="ValueError: x", fit_sha256="abcdef0123456789")
    assert accepts(same) is None
    other = rec(status="ok", fit_sha256="0123456789abcdef")
    assert "another fit of gp:rbf (01234567)" in (accepts(other) or "")
    assert accepts(rec(status="ok")) is None  # from before checksums
    assert accepts({"result": {"oracles": {}}}) is None
