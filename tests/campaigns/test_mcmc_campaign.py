"""The MCMC campaign's units and summaries (issue 34), without MCMC: the HBART validation
units run on the fake warm-up prior of the validation tests (exact GP posterior), and the
verdict rebuilt from records equals the in-memory ``validate_prior`` record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _fake_priors import FakeWarmupPrior
from udbench._validation import UdbenchError
from udbench.campaigns import mcmc, run_campaign
from udbench.campaigns.engine import record_file
from udbench.campaigns.report import mcmc_summary, write_mcmc_summary
from udbench.tasks import validate_prior

KW = {"max_train": 60, "max_eval": 50}


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("UDBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("UDBENCH_DATA_DIR", raising=False)  # diabetes is embedded


def _factory(fam, ds, fid):
    return FakeWarmupPrior("exact")


def _units(**kw):
    return mcmc.hbart_validation_units(
        {"lean": {}}, datasets=["diabetes"], prior_factory=_factory, **KW, **kw
    )


def test_validation_rebuilt_from_records_equals_the_in_memory_record(tmp_path: Path) -> None:
    units = _units()
    assert len(units) == 8 * 3  # 4 noise modes x 2 coverages x 3 runs
    assert run_campaign(units, tmp_path)["done"] == 24
    by_layout, notes = mcmc.hbart_validation_records(tmp_path)
    assert notes == []
    rebuilt = by_layout["lean"]
    direct = validate_prior(
        "hbart", "standard", ["diabetes"], prior_factory=_factory, n_draws=1000, **KW
    )
    for key in ("per_dataset", "pooled", "passed", "failures", "protocol_issues", "warmup"):
        assert rebuilt[key] == direct[key], key
    assert rebuilt["passed"] and rebuilt["incomplete"] == []
    assert [r["task_id"] for r in rebuilt["instances"]] == sorted(
        r["task_id"] for r in direct["instances"]
    ) or {r["task_id"] for r in rebuilt["instances"]} == {r["task_id"] for r in direct["instances"]}
    # records are small: a few KB each
    sizes = [p.stat().st_size for p in tmp_path.rglob("*.json")]
    assert max(sizes) < 8000


def test_an_incomplete_instance_is_left_out_and_named(tmp_path: Path) -> None:
    units = _units()
    run_campaign(units[:4], tmp_path)  # one instance whole, the next with one run
    rec = mcmc.hbart_validation_records(tmp_path)[0]["lean"]
    assert rec["pooled"]["n_instances"] == 1 and len(rec["incomplete"]) == 1
    assert "diabetes: 1 instances (< 8)" in rec["protocol_issues"]


def test_a_layout_without_a_complete_instance_is_named_plainly(tmp_path: Path) -> None:
    """A layout that has just started (one record) said "combine_validation: parameter 'runs'
    must hold all three runs ..." on the summary page."""
    run_campaign(_units()[:2], tmp_path)  # base and long of the first instance
    by_layout, notes = mcmc.hbart_validation_records(tmp_path)
    assert by_layout == {}
    assert notes == ["layout lean: 2 record(s), no instance with all 3 runs yet"]


def test_a_numerics_change_makes_validation_records_stale(tmp_path: Path, monkeypatch) -> None:
    run_campaign(_units()[:3], tmp_path)
    from udbench.priors.hbart import HBARTPrior

    monkeypatch.setattr(HBARTPrior, "numerics_version", HBARTPrior.numerics_version + 1)
    by_layout, notes = mcmc.hbart_validation_records(tmp_path)
    assert by_layout == {} and len(notes) == 3 and all("numerics" in n for n in notes)
    assert run_campaign(_units()[:3], tmp_path)["done"] == 3  # redone under the new version


def test_summary_page_and_preset_record(tmp_path: Path, monkeypatch) -> None:
    from udbench.priors import validation as pv

    monkeypatch.setattr(pv, "RECORD_DIR", tmp_path / "validations")
    records = tmp_path / "mcmc"
    # a layout equal to the shipped `standard` preset (no overrides)
    units = mcmc.hbart_validation_units(
        {"standard": {}}, datasets=["diabetes"], prior_factory=_factory, **KW
    )
    run_campaign(units[:3], records)
    rec = json.loads(record_file(records, units[0].unit_id).read_text())
    # the fake prior reports its own sampler settings; make the record claim the preset's
    from udbench.priors.hbart import FIDELITY_SETTINGS

    for path in records.rglob("*.json"):
        r = json.loads(path.read_text())
        r["result"]["sampler_settings"] = dict(FIDELITY_SETTINGS["standard"])
        path.write_text(json.dumps(r))
    summary = mcmc_summary(records)
    assert "### `standard`" in summary["markdown"] and "incomplete" in summary["markdown"]
    # the page names the folder it was made from (it said docs/validation/mcmc/ whatever it was)
    assert f"from the records in {records.resolve()}/;" in summary["markdown"]
    cpu_min = json.loads(record_file(records, units[0].unit_id).read_text())["cpu_seconds"] / 60
    line = next(x for x in summary["markdown"].splitlines() if x.startswith("Minutes per"))
    assert line.startswith(f"Minutes per preset run: {cpu_min:.1f} of CPU (one thread), ")
    written = write_mcmc_summary(summary, records)
    assert written[0] == records.with_suffix(".md") and written[0].read_text().startswith("#")
    saved = json.loads((tmp_path / "validations" / "hbart-standard.json").read_text())
    assert saved["numerics_version"] == 1 and saved["fidelity"] == "standard"
    assert rec["settings"]["layout"] == "standard"


def test_unit_lists() -> None:
    units = mcmc.campaign_units(work_dir="w")
    ids = [u.unit_id for u in units]
    assert len(ids) == len(set(ids))
    assert ids[0] == "bnn-sweep/d9"
    # validation instances alternate between the two datasets, runs of one instance together
    val = [u for u in units if u.kind == "hbart-validation"]
    assert [u.settings["run"] for u in val[:3]] == ["base", "long", "floor"]
    assert val[0].settings["task_id"].startswith("kin8nm") and val[3].settings[
        "task_id"
    ].startswith("protein")
    assert len(val) == len(mcmc.HBART_LAYOUTS) * 16 * 3
    multi = [u for u in units if u.kind == "multi-family"]
    assert len(multi) == 2 * 3 * 4 * 2 * 2
    assert multi[0].settings["sampler"] == {} and multi[-1].numerics == {"hbart": 1}
    with pytest.raises(UdbenchError, match="parts"):
        mcmc.campaign_units(["nope"], work_dir="w")
    with pytest.raises(UdbenchError, match="overrides"):
        mcmc.bnn_sweep_units({"x": {"no_such_setting": 1}})


def test_unit_estimates_are_single_thread_cpu_seconds_by_tree_depth_and_layout() -> None:
    """status projected the 6 missing sweep settings (depths 9-11) at 900 s each, d6's cost
    (their records took 157-1676 CPU s), and HBART at idle multi-threaded wall times."""
    units = {u.unit_id: u for u in mcmc.campaign_units(work_dir="w")}
    sweep = {k.split("/")[1]: u.estimate_seconds for k, u in units.items() if "bnn-sweep" in k}
    assert sweep["d8"] == 885.0 and sweep["d9"] == 1770.0 and sweep["d11"] == 8 * 885.0
    assert sweep["d6"] == 885.0 / 4 and sweep["d10"] == 4 * 885.0
    val = [u for u in units.values() if u.kind == "hbart-validation"]
    lean = {u.settings["run"]: u.estimate_seconds for u in val if u.settings["layout"] == "lean"}
    assert lean == {"base": 706.0, "long": 973.0, "floor": 703.0}  # the records' CPU means


def test_bnn_sweep_keeps_its_baseline_when_the_standard_preset_changes(monkeypatch) -> None:
    from udbench.campaigns import mcmc
    from udbench.priors import bnn

    def by_name():
        return {u.settings["setting"]: u for u in mcmc.bnn_sweep_units()}

    before = by_name()
    assert before["d9"].settings["sampler"] == mcmc.BNN_SWEEP_BASE
    # a new standard preset (depth 8, acceptance 0.8): the units' settings are unchanged, so
    # their records stay current, and each unit's work still runs its own absolute setting
    new = {**bnn.FIDELITY_SETTINGS["standard"], "max_tree_depth": 8, "target_accept": 0.8}
    monkeypatch.setitem(bnn.FIDELITY_SETTINGS, "standard", new)
    after = by_name()
    for name, unit in after.items():
        assert unit.settings == before[name].settings
    # (the standard preset runs in float32 since 2026-12-03: the float64 settings say so)
    f64 = {"dtype": "float64"}
    assert after["d9"].work.args[0] == {"max_tree_depth": 9, "target_accept": 0.9, **f64}
    assert after["accept0.8-d8"].work.args[0] == f64
    assert after["d7"].work.args[0] == {"max_tree_depth": 7, "target_accept": 0.9, **f64}
    assert after["f32-accept0.8-d8"].work.args[0] == {}


def test_bnn_sweep_table_ratios_by_hand(tmp_path) -> None:
    from udbench.campaigns import mcmc
    from udbench.campaigns.engine import _write_atomic

    version = {"bnn": mcmc.numerics_versions()["bnn"]}
    units = {u.settings["setting"]: u for u in mcmc.bnn_sweep_units()}
    # (ESS per CPU-s, ESS per 1000 steps, float64 step cost over the setting's)
    figures = {"d9": (0.5, 2.0, None), "d8": (1.5, 3.0, None), "f32-accept0.8-d8": (2, 4, 1.8)}
    for name, (per_cpu, per_step, cost) in figures.items():
        unit = units[name]
        result = {"ess_median_per_cpu_second": per_cpu, "ess_median_per_kgrad_kept": per_step}
        if cost is not None:
            result["step_cost_ratio_f64"] = cost
        _write_atomic(
            tmp_path / f"{unit.unit_id}.json",
            {
                "schema": 1, "unit_id": unit.unit_id, "kind": "bnn-sweep", "status": "done",
                "settings": unit.settings, "numerics": version, "result": result,
            },
        )  # fmt: skip
    rows, notes = mcmc.bnn_sweep_table(tmp_path)
    by = {r["setting"]: r for r in rows}
    assert [r["setting"] for r in rows] == ["d9", "d8", "f32-accept0.8-d8"] and notes == []
    assert by["d8"]["ess_per_cpu_ratio_vs_d9"] == pytest.approx(3.0)
    assert by["d8"]["ess_per_step_ratio_vs_d9"] == pytest.approx(1.5)
    assert by["d9"]["ess_per_step_ratio_vs_d9"] == pytest.approx(1.0)
    # per second at equal load: per step × the step's cost ratio (1 for float64)
    assert by["d8"]["ess_per_second_ratio_vs_d9"] == pytest.approx(1.5)
    assert by["f32-accept0.8-d8"]["ess_per_second_ratio_vs_d9"] == pytest.approx(2.0 * 1.8)
    f32 = units["f32-accept0.8-d8"]
    assert f32.settings["sampler"]["dtype"] == "float32"
    assert f32.work.args[0] == {}  # the standard preset since 2026-12-03
    assert "dtype" not in units["d9"].settings["sampler"]  # the former records stay current


def test_instances_with_stuck_chains_are_named_in_the_validation_record(tmp_path: Path) -> None:
    """protein u-shaped (lean): MCSE of sigma_f^2 0.30 over 20 chains, coverage 0.998, passed
    by the warm-up rule; the summary names it as udbench check does."""
    run_campaign(_units()[:6], tmp_path)  # two whole instances
    files = sorted(tmp_path.rglob("*.json"))
    first = json.loads(files[0].read_text())["settings"]["task_id"]
    from udbench.priors.hbart import FIDELITY_SETTINGS

    for path in files:  # the fake prior has no chains: give every record a layout of 20
        rec = json.loads(path.read_text())
        stuck = rec["settings"]["task_id"] == first
        rec["settings"]["sampler"] = rec["result"]["sampler_settings"] = dict(
            FIDELITY_SETTINGS["standard"]
        )
        rec["result"]["mcse_var_median_rel"] = 0.30 if stuck else 0.09
        path.write_text(json.dumps(rec))
    by_layout, _ = mcmc.hbart_validation_records(tmp_path)
    assert by_layout["lean"]["stuck_chains"] == [first]
    page = mcmc_summary(tmp_path)["markdown"]
    assert "look stuck (MCSE of σ_f² implying ≤ 1.5 effective draws" in page
    assert page.count(first) >= 1 and f"cannot see it): {first}." in page
    # per instance: the base run's MCSE and the ESS per chain it implies, 2 / m^2 / chains
    inst = {r["task_id"]: r for r in by_layout["lean"]["instances"]}
    assert inst[first]["mcse_var_median_rel"] == 0.30
    assert inst[first]["ess_per_chain"] == pytest.approx(2 / 0.30**2 / 20)  # 1.11
    other = next(t for t in inst if t != first)
    assert inst[other]["ess_per_chain"] == pytest.approx(2 / 0.09**2 / 20)  # 12.3
    label = first.replace("__hbart__", " × ").replace("__", " × ")
    assert "| 0.300 | 1.1 | yes |" in page and label in page
    # the verdict without them equals the one rebuilt from the other instance's records alone
    without = by_layout["lean"]["without_stuck_chains"]
    assert without["left_out"] == [first]
    for path in files:
        if json.loads(path.read_text())["settings"]["task_id"] == first:
            path.unlink()
    alone = mcmc.hbart_validation_records(tmp_path)[0]["lean"]
    assert alone["stuck_chains"] == [] and "without_stuck_chains" not in alone
    assert without["per_dataset"]["diabetes"]["n_instances"] == 1
    for key in ("coverage_base", "coverage_change", "sd_change_median", "passed"):
        assert without["per_dataset"]["diabetes"][key] == alone["per_dataset"]["diabetes"][key]
    assert without["passed"] == alone["passed"] and without["failures"] == alone["failures"]
    assert "Without those 1 instance(s) (a sensitivity figure" in page
