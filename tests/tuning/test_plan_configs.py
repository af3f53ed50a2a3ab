"""``udbench plan --measured``: cells measured with other settings than the defaults it counts
are named (``nn-ens`` cells with 5 members projected onto the default 10 members)."""

from __future__ import annotations

import json

from udbench.cli import main
from udbench.evaluation.store import ResultsStore
from udbench.methods.configs import canonical_config
from udbench.methods.registry import make_method
from udbench.tasks import TaskSpec
from udbench.tuning.plan import collect_measurements, plan_grid


def _results(folder, members: dict[str, int]) -> None:
    """ok rows of nn-ens cells: task id -> n_members, 10 s each."""
    store = ResultsStore(folder)
    defaults = make_method("nn-ens").get_params(deep=False)
    for task_id, n in members.items():
        params = {**defaults, "n_members": n}
        store.write_cell(
            {
                "cell_key": f"{task_id}|nn-ens|{n}",
                "task_id": task_id,
                "dataset": "diabetes",
                "method": "nn-ens",
                "method_label": "nn-ens",
                "config": canonical_config("nn-ens", params),
                "status": "ok",
                "fit_time_s": 9.5,
                "predict_time_s": 0.5,
                "finished_at": f"2026-01-01T00:00:0{len(task_id) % 10}",
            }
        )


def test_plan_names_measured_cells_run_with_other_settings(tmp_path, capsys):
    _results(tmp_path / "res", {"t0": 5, "t1": 5, "t2": 10})
    measured = collect_measurements([tmp_path / "res"])
    specs = [TaskSpec("diabetes", "gp", "homoscedastic", "balanced", s) for s in range(4)]
    _, rows = plan_grid(specs, ["nn-ens"], 1, measured)
    (run,) = [r for r in rows if r.stage == "run"]
    assert run.n_measured == 3 and run.median_s == 10.0
    assert run.measured_configs == {"n_members=5 (default 10)": 2}
    assert run.config_note() == (
        "run nn-ens: 2 of the 3 measured cells ran other settings than the method's defaults "
        "(n_members=5 (default 10)); the projection applies their time to the default "
        "configuration the plan counts, so scale it by hand (e.g. by the ensemble size) or "
        "measure the defaults"
    )
    args = ["plan", "--datasets", "diabetes", "--families", "gp", "--methods", "nn-ens"]
    assert main([*args, "--measured", str(tmp_path / "res")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "note: run nn-ens: 2 of the 3 measured cells ran other settings" in out
    assert main([*args, "--measured", str(tmp_path / "res"), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    (row,) = [r for r in got["rows"] if r["stage"] == "run"]
    assert row["measured_non_default"] == {"n_members=5 (default 10)": 2}
    # measured at the defaults: no note
    _results(tmp_path / "plain", {"t0": 10})
    _, rows = plan_grid(specs, ["nn-ens"], 1, collect_measurements([tmp_path / "plain"]))
    assert all(r.config_note() is None for r in rows)
