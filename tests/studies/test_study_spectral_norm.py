"""The spectral-normalisation study (paper D.4): arms, pairing, bootstrap, regressions."""

from __future__ import annotations

import json

import cloudpickle
import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from _fakes import MeanMethod, make_fake_task, save_fake_task
from udbench._validation import UdbenchError
from udbench.evaluation.runner import method_seed, plan_cells, run_benchmark
from udbench.evaluation.store import read_results
from udbench.methods import get_method_class
from udbench.methods.configs import resolve_method, resolve_methods
from udbench.methods.nn.ensemble import NN_SEARCH_SPACE
from udbench.studies import spectral_norm as sn


# ------------------------------------------------------------------------------- arms
def test_arms_are_search_spaces_of_the_same_method():
    base = get_method_class("nn-ens")
    plain, sn_cls, wd_cls = (sn.arm_class(base, a) for a in sn.ARMS)
    assert plain is base
    assert issubclass(sn_cls, base) and issubclass(wd_cls, base)
    assert (sn_cls.name, wd_cls.name) == ("nn-ens+sn", "nn-ens+wd")
    # SN: the base space plus sn_coeff log-uniform in [0.5, 3] and spectral_norm fixed on
    assert sn_cls.search_space["sn_coeff"] == {
        "type": "float",
        "low": 0.5,
        "high": 3.0,
        "log": True,
    }
    assert sn_cls.search_space["spectral_norm"]["choices"] == [True]
    assert {k: v for k, v in sn_cls.search_space.items() if k in base.search_space} == dict(
        base.search_space
    )
    # WD: weight decay in [1e-2, 1] instead of the benchmark's [1e-6, 1e-2]; nothing else
    assert base.search_space["weight_decay"]["high"] == NN_SEARCH_SPACE["weight_decay"]["high"]
    assert wd_cls.search_space["weight_decay"] == {
        "type": "float",
        "low": 1e-2,
        "high": 1.0,
        "log": True,
    }
    others = {k: v for k, v in wd_cls.search_space.items() if k != "weight_decay"}
    assert others == {k: v for k, v in base.search_space.items() if k != "weight_decay"}
    # the fitting code is the method's own (no method of the arm classes overrides it)
    assert sn_cls._fit is base._fit and wd_cls._predict is base._predict
    assert sn_cls().spectral_norm is True and wd_cls().spectral_norm is False
    assert sn.arm_class(base, "sn") is sn_cls  # made once


def test_arm_configs_keep_overrides_and_survive_pickling_and_clone():
    arms = sn.arm_configs(["nn-ens:n_epochs=7"])
    assert [(a.arm, a.base) for a in arms] == [
        ("plain", "nn-ens"),
        ("sn", "nn-ens"),
        ("wd", "nn-ens"),
    ]
    assert [a.label for a in arms] == [
        "nn-ens:n_epochs=7",
        "nn-ens+sn:n_epochs=7",
        "nn-ens+wd:n_epochs=7",
    ]
    assert all(a.estimator.n_epochs == 7 for a in arms)
    assert arms[1].estimator.spectral_norm is True
    assert 1e-2 <= arms[2].estimator.weight_decay <= 1.0  # the default 1e-4 moved into range
    for a in arms:
        back = cloudpickle.loads(cloudpickle.dumps(a.estimator))  # as sent to a worker
        assert back.get_params() == a.estimator.get_params()
        assert type(back).search_space == type(a.estimator).search_space
        assert clone(a.estimator).get_params() == a.estimator.get_params()
    # each arm is its own method in results and tuning folders
    names = [resolve_method(a.estimator).name for a in arms]
    assert names == ["nn-ens", "nn-ens+sn", "nn-ens+wd"]
    assert sn.arm_of("nn-ens+wd") == ("nn-ens", "wd") and sn.arm_of("nn-lap") == ("nn-lap", "plain")


@pytest.mark.parametrize("spec", ["gp", "nn-lap-sn", "sngp-het"])
def test_methods_without_the_sn_option_or_already_sn_are_refused(spec):
    with pytest.raises(UdbenchError, match="spectral-normalisation option"):
        sn.arm_configs([spec])


def test_default_methods_are_the_backbone_methods_with_the_option():
    """D.4 re-tunes eight neural methods: every backbone method takes the option now."""
    names = sn.study_methods()
    assert names == [
        "nn-ens",
        "nn-bag",
        "nn-drop",
        "nn-edl",
        "nn-deup",
        "nn-swag",
        "nn-lap",
        "nn-fsp",
    ]
    assert not {"nn-lap-sn", "nn-fsp-sn", "sngp-het", "gp"} & set(names)


def test_study_specs_are_the_d4_instances():
    specs = sn.study_specs("concrete,airfoil", [0, 1], fidelity="smoke", draws=50)
    assert len(specs) == 2 * 3 * 2
    assert {(s.noise, s.coverage) for s in specs} == {("smooth-monotone", "balanced")}
    assert {s.family for s in specs} == {"gp", "hbart", "bnn"}
    assert len(sn.study_specs("all", sn.FULL_SEEDS)) == 13 * 3 * 5  # the paper's 195
    with pytest.raises(UdbenchError, match="datasets"):
        sn.study_specs("nope", [0])


# --------------------------------------------------------------------- runner hooks
def _measure(est, task):
    return {"center_norm": float(np.linalg.norm(est.center_)), "n_eval_seen": len(task.X_eval)}


def _bad_measure(est, task):
    raise ValueError("no features here")


def test_configure_can_set_the_cell_seed_and_measure_adds_fields(tmp_path):
    path = save_fake_task(make_fake_task(0), tmp_path / "tasks")
    mcs = resolve_methods([MeanMethod(scale=1.0), MeanMethod(scale=2.0)])

    def configure(spec, mc):
        return mc, {"method_seed": 12345, "tag": mc.params["scale"]}

    cells, _ = plan_cells([path], mcs, configure=configure)
    assert [c.seed for c in cells] == [12345, 12345]
    plain, _ = plan_cells([path], mcs)  # without the field: the usual derived seed
    assert plain[0].seed == method_seed(plain[0].task_id, "fake-mean", mcs[0].config_hash)
    assert plain[0].seed != 12345

    run_benchmark(
        [path],
        [MeanMethod(scale=1.0), MeanMethod(scale=2.0)],
        tmp_path / "res",
        workers=0,
        configure=configure,
        measure=_measure,
    )
    rows = read_results(tmp_path / "res")
    assert (rows["method_seed"] == 12345).all() and (rows["status"] == "ok").all()
    assert (rows["n_eval_seen"] == 60).all()
    assert np.isfinite(rows["center_norm"]).all()

    run_benchmark(
        [path], [MeanMethod(scale=3.0)], tmp_path / "bad", workers=0, measure=_bad_measure
    )
    row = read_results(tmp_path / "bad").iloc[0]
    assert row["status"] == "ok"  # the metrics are kept; the reason is in the notes
    assert "measure raised ValueError: no features here" in row["metric_notes"]


def _tuned_hook(source: str, lr: float):
    from udbench.methods.configs import MethodConfig, config_hash

    def hook(spec, mc):
        params = {**mc.params, "lr": lr}
        tuned = MethodConfig(
            f"{mc.label}[tuned]", mc.name, mc.estimator, params, config_hash(mc.name, params)
        )
        return tuned, {"tuned_record": f"{source}/{mc.name}"}

    return hook


def test_paired_configurer_seeds_every_arm_like_the_tuned_plain_cell():
    arms = sn.arm_configs(["nn-ens"])
    mcs = resolve_methods([(a.label, a.estimator) for a in arms])
    names = {mc.name: (a.arm, a.base) for mc, a in zip(mcs, arms, strict=True)}
    bench = _tuned_hook("bench", 0.005)
    conf = sn.PairedConfigurer(_tuned_hook("study", 0.002), names, {"nn-ens": mcs[0]}, bench)
    spec = make_fake_task(0).spec
    outs = [conf(spec, mc) for mc in mcs]
    want = method_seed(spec.task_id, "nn-ens", bench(spec, mcs[0])[0].config_hash)
    assert [e["method_seed"] for _, e in outs] == [want] * 3
    assert [e["sn_arm"] for _, e in outs] == ["plain", "sn", "wd"]
    assert [e["tuned_record"].split("/")[0] for _, e in outs] == ["bench", "study", "study"]
    assert outs[0][0].params["lr"] == 0.005 and outs[1][0].params["lr"] == 0.002


def test_plain_tuning_leaves_the_plain_sweeps_out_of_the_plan(tmp_path):
    specs = sn.study_specs("concrete", [0, 1], ["gp"])
    full = sn.plan_study(specs, ["nn-ens"], tmp_path / "a", trials=3)
    assert full.counts["sweeps"] == 3 and full.counts["trials"] == 9
    (tmp_path / "bench").mkdir()
    reuse = sn.plan_study(
        specs, ["nn-ens"], tmp_path / "b", trials=3, plain_tuning=tmp_path / "bench"
    )
    assert reuse.counts["sweeps"] == 2 and reuse.counts["trials"] == 6
    keys = {(r.stage, r.key) for r in reuse.rows}
    assert ("tune", "nn-ens") not in keys and ("run", "nn-ens") in keys
    assert ("tune", "nn-ens+sn") in keys
    with pytest.raises(UdbenchError, match="plain-tuning"):
        sn.plan_study(specs, ["nn-ens"], tmp_path / "c", plain_tuning=tmp_path / "missing")
    with pytest.raises(UdbenchError, match="measured"):  # a named folder must hold measurements
        sn.plan_study(specs, ["nn-ens"], tmp_path / "c", measured=[tmp_path / "bench"])


def test_a_resumed_study_is_projected_on_what_is_left(tmp_path):
    """Task files, finished sweeps (records) and ok cells already in OUT leave the projection."""
    from udbench.evaluation.store import ResultsStore

    specs = sn.study_specs("concrete", [0, 1], ["gp"])
    out = tmp_path / "study"
    store = ResultsStore(out / "results")
    for i, sp in enumerate(specs):  # both plain nn-ens cells ran (60 s each): measured and done
        store.write_cell(
            {"cell_key": f"c{i}", "status": "ok", "task_id": sp.task_id, "method": "nn-ens",
             "dataset": sp.dataset, "fit_time_s": 60.0, "predict_time_s": 0.0}
        )  # fmt: skip
    (out / "tasks").mkdir(parents=True)
    (out / "tasks" / f"{specs[0].task_id}.npz").write_bytes(b"")  # one instance made
    cond = "concrete__gp__smooth-monotone__balanced"
    assert {f"{s.dataset}__{s.family}__{s.noise}__{s.coverage}" for s in specs} == {cond}
    rec = out / "tuning" / "nn-ens+sn" / f"{cond}.json"
    rec.parent.mkdir(parents=True)
    rec.write_text(json.dumps({"format": "udbench-tuned-config", "method": "nn-ens+sn",
                               "condition": cond, "history": []}))  # fmt: skip
    plan = sn.plan_study(specs, ["nn-ens"], out, trials=3)
    rows = {(r.stage, r.key): r for r in plan.rows}
    assert rows[("run", "nn-ens")].count == 0 and rows[("run", "nn-ens")].cpu_hours == 0
    # the arms borrow nn-ens's 60 s; both of their cells are left
    assert rows[("run", "nn-ens+sn")].count == 2
    assert rows[("run", "nn-ens+sn")].cpu_hours == pytest.approx(2 * 60 / 3600)
    assert rows[("tune", "nn-ens+sn")].count == 0  # its one sweep has a record
    assert rows[("tune", "nn-ens+wd")].count == 3 and rows[("tune", "nn-ens")].count == 3
    assert rows[("generate", "gp")].count == 1
    assert plan.counts["instances"] == 2  # the counts describe the whole selection


# ------------------------------------------------------------------------- pairing
def _rows(values: dict[tuple[str, str, str], tuple[float, float, float, float]]) -> pd.DataFrame:
    """Study rows: (task, base, arm) -> (rho_risk, rho_var, preservation, nmse)."""
    out = []
    for (task, base, arm), (rr, rv, pres, nmse) in values.items():
        params = {
            "n_blocks": 2 if arm == "plain" else 3,
            "hidden_dim": 64,
            "n_epochs": 10,
            "batch_size": 16,
        }
        out.append(
            {
                "task_id": task,
                "dataset": task.split("_")[0],
                "family": "gp",
                "seed": 0,
                "task_sha256": f"sha-{task}",
                "method": base if arm == "plain" else f"{base}+{arm}",
                "sn_arm": arm,
                "sn_base": base,
                "method_seed": 7,
                "status": "ok",
                "n_train": 40,
                "config": json.dumps({"method": base, "params": params}),
                "rho_eu_risk": rr,
                "rho_eu_var": rv,
                "dist_preservation": pres,
                "nmse": nmse,
            }
        )
    return pd.DataFrame(out)


def test_paired_differences_by_hand():
    rows = _rows(
        {
            ("a_t0", "nn-ens", "plain"): (0.2, 0.5, 0.6, 0.5),
            ("a_t0", "nn-ens", "sn"): (0.5, 0.4, 0.9, 0.25),
            ("a_t0", "nn-ens", "wd"): (0.1, 0.5, 0.6, 1.0),
        }
    )
    p = sn.paired_differences(rows).set_index("arm")
    assert p.loc["sn", "delta_rho_eu_risk"] == pytest.approx(0.3, abs=1e-12)
    assert p.loc["sn", "delta_rho_eu_var"] == pytest.approx(-0.1, abs=1e-12)
    assert p.loc["sn", "delta_dist_preservation"] == pytest.approx(0.3, abs=1e-12)
    assert p.loc["sn", "delta_log_nmse"] == pytest.approx(np.log(0.5), abs=1e-12)
    assert p.loc["wd", "delta_log_nmse"] == pytest.approx(np.log(2.0), abs=1e-12)
    assert p.loc["sn", "delta_depth"] == 1.0 and p.loc["sn", "depth"] == 2.0
    assert p.loc["sn", "steps"] == 10 * 3  # 10 epochs × ⌈40 / 16⌉ batches
    assert list(p["sn"]) == [1.0, 0.0]


@pytest.mark.parametrize("column, value", [("method_seed", 8), ("task_sha256", "other")])
def test_a_pair_with_another_seed_or_task_is_an_error(column, value):
    rows = _rows(
        {
            ("a_t0", "nn-ens", "plain"): (0.2, 0.5, 0.6, 0.5),
            ("a_t0", "nn-ens", "sn"): (0.5, 0.4, 0.9, 0.25),
        }
    )
    rows.loc[rows["sn_arm"] == "sn", column] = value
    with pytest.raises(UdbenchError, match="not paired with its plain cell"):
        sn.paired_differences(rows)


# ------------------------------------------------------------------------ bootstrap
def test_the_dataset_bootstrap_resamples_whole_datasets():
    datasets = ["a"] * 3 + ["b"] * 1 + ["c"] * 2
    names, codes, w = sn.dataset_bootstrap(datasets, n_resamples=4000, random_state=1)
    assert names == ["a", "b", "c"]
    for g in range(3):  # every row of a dataset is drawn as often as its dataset
        block = w[:, codes == g]
        assert (block == block[:, :1]).all()
    per_dataset = np.stack([w[:, codes == g][:, 0] for g in range(3)], axis=1)
    assert (per_dataset.sum(axis=1) == 3).all()  # G = 3 datasets drawn per replicate
    assert per_dataset.mean(axis=0) == pytest.approx([1.0, 1.0, 1.0], abs=0.06)
    # a quantity constant within datasets: each replicate mean is a mean of whole datasets
    values = np.array([1.0, 1.0, 1.0, 10.0, 4.0, 4.0])
    reps = (w @ values) / w.sum(axis=1)
    sizes, level = np.array([3, 1, 2]), np.array([1.0, 10.0, 4.0])
    possible = {
        round(float((c * sizes * level).sum() / (c * sizes).sum()), 9)
        for c in (np.array(k) for k in np.ndindex(4, 4, 4))
        if sum(c) == 3
    }
    assert {round(float(r), 9) for r in reps} <= possible
    # P(only dataset b drawn) = (1/3)^3: the replicate mean 10 appears about that often
    assert np.mean(np.isclose(reps, 10.0)) == pytest.approx(1 / 27, abs=0.012)


def test_paired_table_intervals_come_from_the_dataset_bootstrap():
    rows = _rows(
        {
            **{(f"a_t{i}", "nn-ens", "plain"): (0.0, 0.0, 0.5, 1.0) for i in range(3)},
            **{(f"a_t{i}", "nn-ens", "sn"): (0.1, 0.0, 0.5, 1.0) for i in range(3)},
            ("b_t0", "nn-ens", "plain"): (0.0, 0.0, 0.5, 1.0),
            ("b_t0", "nn-ens", "sn"): (0.5, 0.0, 0.5, 1.0),
        }
    )
    t = sn.paired_table(sn.paired_differences(rows), n_resamples=500).iloc[0]
    assert t["delta_rho_eu_risk"] == pytest.approx((3 * 0.1 + 0.5) / 4, abs=1e-12)
    assert t["delta_rho_eu_risk_n"] == 4
    # replicate means: a only (0.1), b only (0.5), or both once (0.2): the interval's ends
    assert t["delta_rho_eu_risk_low"] == pytest.approx(0.1, abs=1e-12)
    assert t["delta_rho_eu_risk_high"] == pytest.approx(0.5, abs=1e-12)
    assert t["delta_rho_eu_var"] == 0.0 and t["delta_rho_eu_var_high"] == 0.0


# ------------------------------------------------------------------------ regressions
def _synthetic_pairs(
    seed: int = 0, n_per: int = 8, datasets: int = 4, depth_coef: float = 0.05
) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for g in range(datasets):
        for i in range(n_per):
            for arm in ("sn", "wd"):
                rows.append(
                    {
                        "dataset": f"d{g}",
                        "task_id": f"d{g}_t{i}",
                        "arm": arm,
                        "delta_dist_preservation": rng.normal(),
                        "delta_log_nmse": rng.normal(),
                        "sn": 1.0 if arm == "sn" else 0.0,
                        "delta_depth": float(rng.integers(-2, 3)),
                    }
                )
    p = pd.DataFrame(rows)
    alpha = {f"d{g}": 0.1 * g for g in range(datasets)}
    for t, k in (("risk", 1.0), ("var", -1.0)):
        p[f"delta_rho_eu_{t}"] = (
            0.5 * p["delta_dist_preservation"]
            - 0.2 * k * p["delta_log_nmse"]
            + 0.3 * p["sn"]
            + depth_coef * p["delta_depth"]
            + p["dataset"].map(alpha)
        )
    return p


def test_regression_recovers_exact_coefficients_with_dataset_effects():
    p = _synthetic_pairs()
    t = sn.regression_table(p, n_resamples=50)
    pooled = t[(t["model"] == "pooled") & (t["target"] == "risk")].set_index("term")
    assert pooled["coef"].to_dict() == pytest.approx(
        {"Δ preservation": 0.5, "Δ log NMSE": -0.2, "1[SN]": 0.3, "Δ depth": 0.05}, abs=1e-10
    )
    # noiseless: every replicate refits the same coefficients
    assert (pooled["coef_high"] - pooled["coef_low"]).abs().max() < 1e-8
    assert (pooled["n_datasets"] == 4).all() and (pooled["n"] == 64).all()
    var = t[(t["model"] == "pooled") & (t["target"] == "var")].set_index("term")
    assert var.loc["Δ log NMSE", "coef"] == pytest.approx(0.2, abs=1e-10)
    # within SN, standardised: β = b · sd(x) / sd(y) on the SN rows (no depth term there)
    p = _synthetic_pairs(depth_coef=0.0)
    t = sn.regression_table(p, n_resamples=20)
    s = p[p["arm"] == "sn"]
    y = s["delta_rho_eu_risk"]
    want = 0.5 * s["delta_dist_preservation"].std(ddof=0) / y.std(ddof=0)
    only = t[(t["model"] == "sn_only") & (t["target"] == "risk")].set_index("term")
    resid = y - 0.5 * s["delta_dist_preservation"] + 0.2 * s["delta_log_nmse"] - 0.3
    assert resid.groupby(s["dataset"]).std().max() < 1e-12  # what is left are dataset effects
    assert only.loc["Δ preservation", "coef"] == pytest.approx(want, abs=1e-9)


def test_a_term_without_variation_is_not_identified_not_zero():
    p = _synthetic_pairs(depth_coef=0.0)
    p["delta_depth"] = 0.0
    t = sn.regression_table(p, n_resamples=20)
    depth = t[(t["model"] == "pooled") & (t["term"] == "Δ depth")]
    assert depth["coef"].isna().all()
    assert depth["note"].str.contains("not identified").all()
    other = t[(t["model"] == "pooled") & (t["term"] == "Δ preservation")]
    assert other["coef"].to_numpy() == pytest.approx([0.5, 0.5], abs=1e-10)


def test_within_dataset_spearman_by_hand():
    x = np.array([1.0, 2.0, 3.0, 10.0, 20.0, 30.0])
    y = np.array([3.0, 2.0, 1.0, 6.0, 5.0, 4.0])
    codes = np.array([0, 0, 0, 1, 1, 1])
    # pooled ranks x: 1..6, y: 3,2,1,6,5,4; minus dataset means (2, 5) -> (-1,0,1) and (1,0,-1)
    assert sn.within_dataset_spearman(x, y, codes) == pytest.approx(-1.0, abs=1e-12)
    # pooled Spearman would be positive here (dataset b is higher on both)
    from scipy.stats import spearmanr

    assert spearmanr(x, y).statistic > 0
    y2 = np.array([1.0, 3.0, 2.0, 4.0, 5.0, 6.0])
    # centred ranks: x (-1,0,1,-1,0,1), y (-1,1,0,-1,0,1): Σ = 1+0+0+1+0+1 = 3, √(4·4) = 4
    assert sn.within_dataset_spearman(x, y2, codes) == pytest.approx(0.75, abs=1e-12)


# ------------------------------------------------------------------------ end to end
@pytest.mark.slow
def test_small_study_end_to_end_pairs_arms_and_resumes(tmp_path, data_dir, monkeypatch):
    """One dataset, one family, one seed, one method, one trial per sweep, on a Dask worker."""
    from udbench.cli import main
    from udbench.tuning.records import load_records

    monkeypatch.setenv("UDBENCH_DATA_DIR", str(data_dir))
    out = tmp_path / "sn"
    args = [
        "study", "spectral-norm", "--out", str(out), "--datasets", "diabetes", "--seeds", "0,1",
        "--families", "gp", "--methods", "nn-lap", "--trials", "1", "--fidelity", "smoke",
        "--draws", "40", "--workers", "1", "--n-resamples", "100", "--no-progress",
    ]  # fmt: skip
    assert main(args) == 2  # nothing measured yet: the cost is unknown, --yes is asked for
    assert not (out / "results").exists()
    assert main([*args, "--yes"]) == 0

    rows = read_results(out / "results")
    assert len(rows) == 2 * 3 and (rows["status"] == "ok").all()
    assert set(rows["method"]) == {"nn-lap", "nn-lap+sn", "nn-lap+wd"}
    records = {r["method"]: r for r in load_records(out / "tuning")}
    assert records["nn-lap+sn"]["search_space"]["sn_coeff"]["low"] == 0.5
    assert records["nn-lap+wd"]["search_space"]["weight_decay"]["low"] == 1e-2
    for task_id, g in rows.groupby("task_id"):
        assert g["task_sha256"].nunique() == 1  # the same instance in every arm
        assert g["method_seed"].nunique() == 1  # and the same training seed
        plain = g[g["sn_arm"] == "plain"].iloc[0]
        assert int(plain["method_seed"]) == method_seed(task_id, "nn-lap", plain["config_hash"])
        sn_row = g[g["sn_arm"] == "sn"].iloc[0]
        params = json.loads(sn_row["config"])["params"]
        assert params["spectral_norm"] is True and 0.5 <= params["sn_coeff"] <= 3.0
        wd = json.loads(g[g["sn_arm"] == "wd"].iloc[0]["config"])["params"]["weight_decay"]
        assert 1e-2 <= wd <= 1.0
    assert rows["dist_preservation"].between(-1, 1).all()
    pairs = pd.read_csv(out / "analysis" / "tables" / "pairs.csv")
    assert len(pairs) == 4 and set(pairs["arm"]) == {"sn", "wd"}
    for name in ("preservation", "paired", "regression", "depth"):
        assert (out / "analysis" / "tables" / f"{name}.tex").is_file()
    assert (out / "analysis" / "figures" / "paired.svg").is_file()

    # resumable: a second run finds every trial and cell done (and now a measured cost)
    before = rows.set_index("cell_key")["finished_at"]
    assert main(args) == 0  # measured now: under an hour, no --yes needed
    after = read_results(out / "results").set_index("cell_key")["finished_at"]
    assert after.sort_index().equals(before.sort_index())


def test_cost_projection_uses_measured_times_and_arms_borrow_their_plain_method(tmp_path):
    folder = tmp_path / "measured"
    folder.mkdir()
    rows = pd.DataFrame(
        {
            "cell_key": ["a", "b", "c"],
            "status": ["ok"] * 3,
            "method": ["nn-ens", "nn-ens", "nn-ens+wd"],
            "dataset": ["concrete"] * 3,
            "fit_time_s": [10.0, 30.0, 4.0],
            "predict_time_s": [0.0, 0.0, 1.0],
        }
    )
    rows.to_parquet(folder / "results.parquet")
    specs = sn.study_specs("concrete,airfoil", [0, 1, 2], ["gp"])
    counts, got, known, unknown = sn.project_cost(
        specs, ["nn-ens", "nn-ens+sn", "nn-ens+wd"], 2, [folder, tmp_path / "absent"]
    )
    run = {r.key: r for r in got if r.stage == "run"}
    assert run["nn-ens"].median_s == 20.0 and run["nn-ens"].count == 6
    assert run["nn-ens+sn"].median_s == 20.0  # borrowed from the plain method
    assert run["nn-ens+wd"].median_s == 5.0  # its own measurement wins
    # a results folder's cells measure wall-clock seconds: wall hours, no CPU-hours
    assert known == pytest.approx((0.0, 6 * (20.0 + 20.0 + 5.0) / 3600.0), rel=1e-12)
    assert sorted(unknown) == ["tune nn-ens", "tune nn-ens+sn", "tune nn-ens+wd"]
    assert counts["sweeps"] == 2 * 3 and counts["trials"] == 2 * 3 * 2
