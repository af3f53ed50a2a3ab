"""The runs campaign's ``generate`` part (issue 62): one unit per instance, which makes the task
file where the suite's cells read it and records its SPEC §7 checks; the non-GP suites
``hbart-small`` and ``bnn-small`` are gp-small's design with another truth."""

from __future__ import annotations

import json

import pytest

from udbench.campaigns import run_campaign, runs
from udbench.campaigns.engine import record_file
from udbench.campaigns.tuning import condition_task_folder
from udbench.priors import family_numerics_version
from udbench.recipes.suites import load_suite, suite_grid

pytestmark = pytest.mark.usefixtures("runs_env")


def _suite(family: str) -> dict:
    """One smoke instance of ``family`` on the embedded ``diabetes`` table (no data folder)."""
    return {
        "name": f"tiny-{family}",
        "datasets": "diabetes",
        "families": family,
        "noise": "homoscedastic",
        "coverage": "balanced",
        "seeds": "0",
        "fidelity": "smoke",
        "draws": 40,
        "methods": "blr",
        "method_params": "smoke",
        "keep_predictions": False,
    }


@pytest.mark.parametrize("family", ["hbart", "bnn"])
def test_non_gp_suites_are_gp_smalls_design_with_another_truth(family) -> None:
    gp = suite_grid(load_suite("gp-small"))
    other = suite_grid(load_suite(f"{family}-small"))
    assert len(other) == 120 and {s.family for s in other} == {family}
    # the same (dataset, noise, coverage) conditions, seeds 0-4 of gp-small's 0-9
    assert {(s.dataset, s.noise, s.coverage) for s in other} == {
        (s.dataset, s.noise, s.coverage) for s in gp
    }
    assert sorted({s.seed for s in other}) == [0, 1, 2, 3, 4]
    assert {(str(s.fidelity), s.n_draws) for s in other} == {("standard", 1000)}


def test_generate_units_come_first_and_are_estimated_by_training_size(tmp_path) -> None:
    units = runs.campaign_units(
        ("generate", "untuned"), work_dir=tmp_path / "w", suite="hbart-small", methods=["blr"]
    )
    kinds = [u.kind for u in units]
    assert kinds == ["generate"] * 120 + ["untuned"] * 120
    first = units[0]
    assert first.unit_id == "generate/concrete__hbart__homoscedastic__balanced__s0"
    assert first.numerics == {"hbart": family_numerics_version("hbart")}
    assert first.settings == {
        "suite": "hbart-small",
        "part": "generate",
        "task_id": "concrete__hbart__homoscedastic__balanced__s0",
        "fidelity": "standard",
        "n_draws": 1000,
    }
    # concrete's measured 76 CPU s (n = 348); airfoil (n = 584) scaled linearly
    by_id = {u.unit_id: u.estimate_seconds for u in units[:120]}
    assert by_id[first.unit_id] == pytest.approx(76.0)
    air = "generate/airfoil__hbart__homoscedastic__balanced__s0"
    assert by_id[air] == pytest.approx(76.0 * 584 / 348)


def test_generate_part_records_checks_and_resumes_after_a_kill(tmp_path) -> None:
    """Smoke HBART and BNN instances: the first run is stopped after one unit (what a kill
    leaves: no record, at most a stray temporary file, the save being atomic) and the second
    instance's task file is damaged (a disk fault, a bad copy); the next run redoes only the
    missing unit, remakes the damaged file, and a third run has nothing left to do."""
    work, records = tmp_path / "work", tmp_path / "records"
    units = [
        u
        for family in ("hbart", "bnn")
        for u in runs.campaign_units(("generate",), work_dir=work, suite=_suite(family))
    ]
    assert [u.unit_id for u in units] == [
        "generate/diabetes__hbart__homoscedastic__balanced__s0",
        "generate/diabetes__bnn__homoscedastic__balanced__s0",
    ]
    said: list[str] = []
    first = run_campaign(units, records, max_units=1, progress=said.append)
    assert (first["done"], first["left"]) == (1, 1)
    bnn_file = condition_task_folder(work, "bnn") / "diabetes__bnn__homoscedastic__balanced__s0.npz"
    bnn_file.parent.mkdir(parents=True, exist_ok=True)
    bnn_file.write_bytes(b"PK\x03\x04 half a zip")
    (bnn_file.parent / f".{bnn_file.name}.x1.tmp").write_bytes(b"PK")  # a kill mid-save
    second = run_campaign(units, records)
    assert (second["skipped"], second["done"], second["failed"]) == (1, 1, 0)
    assert run_campaign(units, records)["skipped"] == 2  # nothing done twice

    from udbench.recipes.task_versions import task_arrays_sha256
    from udbench.tasks import Task
    from udbench.tasks.checks import mcmc_summary

    for unit, family in zip(units, ("hbart", "bnn"), strict=True):
        rec = json.loads(record_file(records, unit.unit_id).read_text())
        result = rec["result"]
        assert rec["status"] == "done" and result["family"] == family
        path = condition_task_folder(work, family) / f"{result['task_id']}.npz"
        assert result["task_arrays_sha256"] == task_arrays_sha256(path)
        stored = Task.load(path).diagnostics["checks"]
        assert result["checks"]["coverage_90"] == stored["coverage_90"]
        assert 0.0 <= result["checks"]["coverage_90"] <= 1.0
        assert result["mcmc"] == mcmc_summary(Task.load(path).diagnostics)
    # pooled per family, as the MCMC campaign's multi-family table
    table, notes = runs.generation_table(records)
    assert notes == [] and sorted(table) == ["bnn", "hbart"]
    assert table["hbart"]["n_instances"] == 1


@pytest.mark.parametrize("family", ["hbart", "bnn"])
def test_non_gp_tuned_cells_take_gp_smalls_record_of_the_same_condition(tmp_path, family) -> None:
    from udbench.tuning.records import read_tuned_record
    from udbench.tuning.shipped import shipped_folder

    units = runs.campaign_units(
        ("tuned",), work_dir=tmp_path / "w", suite=f"{family}-small", methods=["blr"]
    )
    assert len(units) == 120 and {u.kind for u in units} == {"tuned"}
    unit = units[0]
    assert unit.settings["task_id"] == f"concrete__{family}__homoscedastic__balanced__s0"
    # the record of the GP truth of the same dataset, noise mode and coverage
    assert unit.settings["tuned_record"] == "blr/concrete__gp__homoscedastic__balanced"
    rec = read_tuned_record(
        shipped_folder("gp-small") / "blr" / "concrete__gp__homoscedastic__balanced.json"
    )
    assert rec["tuned_params"]
    for key, value in rec["tuned_params"].items():
        assert unit.settings["config"][key] == value
    assert unit.settings["method_label"] == "blr[tuned]"
