"""The runs summary's ranking-stability and proxy-agreement sections (issue 36, item 3): the
untuned and the tuned run side by side, as ``udbench analyze`` computes them on each."""

from __future__ import annotations

import pytest

from _results import fabricate_results
from udbench.analyses.proxies import proxy_agreement_table
from udbench.analyses.tables import stability_table
from udbench.campaigns._runs_analyses import stability_and_proxies_section

METHODS = {"m1": ("nn", False), "m2": ("gp", False), "m3": ("tree", False), "m4": ("nn", True)}


def _runs():
    kw = {"n_datasets": 3, "priors": ("gp",), "n_seeds": 2, "methods": METHODS}
    untuned = fabricate_results(quality={"m1": 0.8, "m2": 0.6, "m3": 0.4, "m4": 0.2}, **kw)
    tuned = fabricate_results(
        quality={"m1": 0.5, "m2": 0.55, "m3": 0.6, "m4": 0.3}, random_state=1, **kw
    )
    # two proxies: NLL follows the oracle (lower is better), ρ(|err|, SD) runs against it
    for frame in (untuned, tuned):
        frame["nll"] = -frame["rho_eu_risk"] + 0.01 * (frame["seed"] - 0.5)
        frame["spearman_err_sd"] = -frame["rho_eu_risk"]
    return untuned, tuned


def test_w_and_tau_rows_are_those_of_analyze_side_by_side_and_undefined_ones_said_once():
    untuned, tuned = _runs()
    md = stability_and_proxies_section(untuned, tuned, n_resamples=50)
    lines = md.splitlines()
    a = stability_table(untuned, n_resamples=50).set_index(["criterion", "factor"])
    b = stability_table(tuned, n_resamples=50).set_index(["criterion", "factor"])
    for factor in ("noise", "coverage", "dataset"):
        x, y = a.loc[("eu", factor)], b.loc[("eu", factor)]
        want = (
            f"| eu | {factor} | {x.W:.3f} [{x.W_low:.3f}, {x.W_high:.3f}] | "
            f"{y.W:.3f} [{y.W_low:.3f}, {y.W_high:.3f}] | 4 |"
        )
        assert want in lines
    # one prior family: W across it is undefined in both runs, said once, not as a row
    assert not any(line.startswith("| eu | family |") for line in lines)
    assert any(line.startswith("- W of eu across family: needs >= 2 levels") for line in lines)
    pa = proxy_agreement_table(untuned, factors=(), n_resamples=50).set_index(
        ["criterion", "proxy"]
    )
    pb = proxy_agreement_table(tuned, factors=(), n_resamples=50).set_index(["criterion", "proxy"])
    x, y = pa.loc[("eu", "nll")], pb.loc[("eu", "nll")]
    want = (
        f"| eu | NLL | {x.tau:.3f} [{x.tau_low:.3f}, {x.tau_high:.3f}] | "
        f"{y.tau:.3f} [{y.tau_low:.3f}, {y.tau_high:.3f}] |"
    )
    assert want in lines
    assert x.tau == 1.0 and y.tau == 1.0  # NLL ranks as the oracle in both runs
    # a proxy label with a pipe is escaped, so the table keeps its columns
    assert any(line.startswith("| eu | ρ(\\|err\\|, SD) | -1.000") for line in lines)
    # proxies not in the rows are undefined in both runs: one line each criterion, no rows
    undefined = [
        line for line in lines if line.startswith("- τ of eu for CRPS, PICP 50%, PICP 90%,")
    ]
    assert len(undefined) == 1 and undefined[0].endswith(
        "AUSE vs f* (EU): not in these results (rows written before proxies were stored)"
    )
    assert "CRPS, PICP" in undefined[0] and ": NLL," not in undefined[0]
    assert not any(line.startswith("| eu | CRPS |") for line in lines)


def test_cost_section_sums_each_methods_records_by_part_with_its_tuning_sweeps(tmp_path):
    """Hand-made records: each method's CPU-hours per part and in all, failed units included
    (their hours were spent); a sweep resumed from its journal adds its earlier trials' CPU
    where known, and its method's figure is marked ``≥`` (a lower bound); a tuning sweep of a
    method the runs do not hold is left out; the oracle fits are a line of their own."""
    import json

    from udbench.campaigns._runs_analyses import cost_section

    def put(folder, uid, kind, cpu, **extra):
        path = folder / f"{uid}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        rec = {"unit_id": uid, "kind": kind, "status": "done", "cpu_seconds": cpu}
        path.write_text(json.dumps({"settings": {}, "numerics": {}, "result": {}, **rec, **extra}))

    runs, tuning = tmp_path / "runs", tmp_path / "tuning"
    for part, a, b in (("untuned", 360, 720), ("tuned", 1800, 36), ("transfer", 3600, 0)):
        put(runs, f"{part}/t0/a", part, a)
        put(runs, f"{part}/t1/a", part, a)
        put(runs, f"{part}/t0/b", part, b)
    put(runs, "oracle-fit/t0/gp-rbf", "oracle-fit", 72)
    put(runs, "untuned/t1/b", "untuned", 360, status="failed", error="boom", result=None)
    sweep = {"kind": "tuning-sweep", "wall_seconds": 10.0}
    put(tuning, "a/c0", cpu=3600, settings={"method": "a"}, **sweep)
    resumed = {"resumed_trials": 3, "resumed_trials_cpu_seconds": 1800.0}
    put(tuning, "a/c1", cpu=1800, settings={"method": "a"}, result=resumed, **sweep)
    put(tuning, "b/c0", cpu=7200, settings={"method": "b"}, result={"resumed_trials": 2}, **sweep)
    put(tuning, "z/c0", cpu=99999, settings={"method": "z"}, **sweep)  # not in the runs
    md, hours = cost_section(runs, None, tuning)
    want = {"untuned": 0.2, "tuned": 1.0, "transfer": 2.0, "tuning": 2.0, "total": 5.2}
    assert hours["a"] == pytest.approx(want, abs=1e-12)
    assert hours["b"]["tuning"] == pytest.approx(2.0, abs=1e-12)
    assert hours["b"]["untuned"] == pytest.approx(0.3, abs=1e-12)  # 0.2 done + 0.1 failed
    assert hours["b"]["total"] == pytest.approx(2.31, abs=1e-12)
    assert set(hours) == {"a", "b"}
    lines = md.splitlines()
    assert "| `a` | 2 | ≥ 2.00 | 0.20 | 1.00 | 2.00 | 5.20 |" in lines
    assert "| `b` | 1 | ≥ 2.00 | 0.30 | 0.01 | 0.00 | 2.31 |" in lines
    assert lines.index("| `a` | 2 | ≥ 2.00 | 0.20 | 1.00 | 2.00 | 5.20 |") < lines.index(
        "| `b` | 1 | ≥ 2.00 | 0.30 | 0.01 | 0.00 | 2.31 |"
    )  # most costly first
    assert "All methods: 7.51 CPU-h; the instances' oracle fits, shared by every method: " in md
    assert "0.02 CPU-h (1 records)." in md
    assert "no tuning folder given" in cost_section(runs, None, None)[0]
