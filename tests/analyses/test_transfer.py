"""``udbench transfer``: alternative oracles for stored predictions (docs/transfer.md).

Real GP tasks on the embedded diabetes table (smoke fidelity), fake methods run in process;
Kendall's τ and its bootstrap interval on fabricated orderings with a known τ.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from _fakes import KnnMethod, MeanMethod
from udbench._validation import UdbenchError
from udbench.analyses.transfer import run_transfer, transfer_sections, transfer_tables
from udbench.cli import main
from udbench.evaluation.losses import LOSS_METRIC_KEYS, loss_column
from udbench.evaluation.runner import run_benchmark
from udbench.evaluation.store import ResultsStore, read_results
from udbench.evaluation.transfer import (
    OWN_PREFIX,
    SCORED_KEYS,
    alternative_moments,
    parse_oracle,
    task_with_moments,
)
from udbench.tasks import Task, TaskSpec, generate_task
from udbench.tasks.generate import get_prior

METHODS = [
    ("mean", MeanMethod()),
    ("knn3", KnnMethod(k=3)),
    ("knn12", KnnMethod(k=12)),
    ("blr", "blr"),
]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """Two smoke GP tasks on diabetes, four methods, predictions kept."""
    mp = pytest.MonkeyPatch()
    mp.setenv("UDBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    mp.delenv("UDBENCH_DATA_DIR", raising=False)  # diabetes is embedded
    get_prior.cache_clear()
    root = tmp_path_factory.mktemp("transfer")
    for noise, seed in (("smooth-monotone", 0), ("homoscedastic", 1)):
        spec = TaskSpec("diabetes", "gp", noise, "balanced", seed, fidelity="smoke", n_draws=40)
        generate_task(spec).save(root / "tasks" / f"{spec.task_id}.npz")
    run_benchmark([root / "tasks"], METHODS, root / "res", workers=0, keep_predictions=True)
    yield root
    get_prior.cache_clear()
    mp.undo()


def _by_key(df: pd.DataFrame) -> pd.DataFrame:
    return df.set_index("cell_key").sort_index()


@pytest.mark.parametrize("oracle", ["gp:prior", "family:gp"])
def test_identical_oracle_reproduces_stored_metrics_and_tau_one(run_dir, oracle) -> None:
    res = run_transfer(run_dir / "res", [oracle], n_resamples=200)
    stored = _by_key(read_results(run_dir / "res"))
    cells = _by_key(res.cells[parse_oracle(oracle).text])
    assert (cells["oracle_status"] == "ok").all() and len(cells) == len(stored) == 8
    # the same kernel, hyperparameters and a, conditioned by GPPrior.moments instead of the
    # Matheron path of task generation: the moments agree to rounding, so every metric
    # (ranks of EU*_risk and EU*_var) is the stored one; tolerance for the other code path
    for key in SCORED_KEYS:
        np.testing.assert_allclose(
            cells[key].to_numpy(float),
            stored[key].to_numpy(float),
            rtol=0,
            atol=1e-12,
            err_msg=key,
        )
    tau = res.tau[parse_oracle(oracle).text]
    defined = tau[tau["n_methods"] >= 3]
    assert len(defined) > 0 and (defined["tau"] == 1.0).all()
    assert (defined["tau_low"] == 1.0).all() and (defined["tau_high"] == 1.0).all()
    ranks = res.ranks[parse_oracle(oracle).text]
    assert (ranks["rank_shift"].dropna() == 0).all()
    folder = run_dir / "res" / "transfer" / parse_oracle(oracle).slug
    written = pd.read_parquet(folder / "cells.parquet")
    assert set(written["cell_key"]) == set(stored.index)  # keyed like the results
    assert (folder / "tau.csv").is_file() and (folder / "ranks.parquet").is_file()


def test_identity_moments_equal_the_task_posterior(run_dir) -> None:
    for path in sorted((run_dir / "tasks").glob("*.npz")):
        task = Task.load(path)
        m = alternative_moments(task, parse_oracle("gp:prior"))
        np.testing.assert_allclose(m.mean, task.post_mean, rtol=0, atol=1e-10)
        np.testing.assert_allclose(m.var, task.post_var, rtol=0, atol=1e-10)
        assert m.info["source"] == "task file" and m.seconds > 0


def test_own_gp_oracle_uses_the_recorded_nugget(run_dir) -> None:
    """gp:prior on a GP task conditions with the task's recorded nugget ν, and with none
    for a file made before the nugget (no ``sampler.nugget``), as its stored moments were."""
    task = Task.load(sorted((run_dir / "tasks").glob("*.npz"))[0])
    nu = task.diagnostics["sampler"]["nugget"]
    new = alternative_moments(task, parse_oracle("gp:prior"))
    del task.diagnostics["sampler"]["nugget"]
    old = alternative_moments(task, parse_oracle("gp:prior"))
    # σ_f² + ν − k'(B + νI)⁻¹k minus σ_f² − k'B⁻¹k = ν(1 + k'B⁻²k) + O(ν²) ∈ [ν, 2ν) here
    d = new.var - old.var
    assert np.all(d >= nu * (1 - 1e-3)) and np.all(d < 2 * nu)
    np.testing.assert_allclose(new.mean, old.mean, rtol=0, atol=1e-8)


def test_misspecified_kernel_moves_the_eu_targets_only(run_dir) -> None:
    res = run_transfer(run_dir / "res", ["gp:matern12"], n_resamples=200)
    stored = _by_key(read_results(run_dir / "res"))
    cells = _by_key(res.cells["gp:matern12"])
    assert (cells["oracle_status"] == "ok").all()
    # EU*_risk and EU*_var change with the posterior ...
    assert np.max(np.abs(cells["rho_eu_var"] - stored["rho_eu_var"])) > 1e-3
    # ... AU* = σ² and EU*_point = (â − f*)² do not, nor accuracy and proxies
    for key in ("rho_au", "rho_eu_point", "rmse", "nmse", "nll", "crps"):
        np.testing.assert_allclose(cells[key], stored[key], rtol=0, atol=0, err_msg=key)
    info = cells["oracle_info"].iloc[0]
    assert '"kernel_family": "matern12"' in info and "lml_final" in info


@pytest.mark.parametrize("loss", ["crps", "log"])
def test_identity_oracle_under_another_loss_is_exact(run_dir, loss) -> None:
    """gp:prior on GP tasks gives the task's own moments, and both sides use the same closed
    form: every loss metric equals its ``own_`` twin, τ = 1, and the tables are under
    OUT/<slug>/<loss>/ with the oracle cache shared."""
    res = run_transfer(run_dir / "res", ["gp:prior"], n_resamples=100, loss=loss)
    cells = _by_key(res.cells["gp:prior"])
    assert (cells["oracle_status"] == "ok").all()
    for key in LOSS_METRIC_KEYS:
        col = loss_column(key, loss)
        np.testing.assert_array_equal(cells[col], cells[OWN_PREFIX + col], err_msg=col)
    assert cells[loss_column("rho_eu_risk", loss)].notna().all()
    folder = run_dir / "res" / "transfer" / "gp-prior"
    assert res.folders["gp:prior"] == folder / loss
    assert (folder / loss / "tau.csv").is_file() and (folder / loss / "cells.parquet").is_file()
    assert not (folder / loss / "oracles").exists()
    tau = res.tau["gp:prior"]
    assert set(tau["metric"]) == {loss_column("rho_eu_risk", loss), loss_column("rho_eu_var", loss)}
    defined = tau[tau["n_methods"] >= 3]
    assert len(defined) > 0 and (defined["tau"] == 1.0).all()
    assert (res.ranks["gp:prior"]["rank_shift"].dropna() == 0).all()


def test_crps_transfer_metrics_by_hand(run_dir) -> None:
    """One cell's ρ(EU_crps, EU*_crps,risk) under gp:matern12 from the closed forms written
    out here (paper A.3), and AU / EU*_point metrics unchanged by the oracle."""
    res = run_transfer(run_dir / "res", ["gp:matern12"], n_resamples=50, loss="crps")
    cells = _by_key(res.cells["gp:matern12"])
    assert (cells["oracle_status"] == "ok").all()
    for key in ("rho_au", "rho_eu_point"):  # neither uses the posterior
        col = loss_column(key, "crps")
        np.testing.assert_allclose(cells[col], cells[OWN_PREFIX + col], rtol=0, atol=1e-12)
    col = loss_column("rho_eu_risk", "crps")
    assert np.max(np.abs(cells[col] - cells[OWN_PREFIX + col])) > 1e-3  # the oracle moves it
    row = cells[cells["method_label"].astype(str).str.startswith("knn3")].iloc[0]
    task = Task.load(row["task_path"])
    cache = run_dir / "res" / "transfer" / "gp-matern12" / "oracles"
    (moments,) = [np.load(p) for p in cache.glob(f"{task.spec.task_id}__*.npz")]
    m, v = moments["mean"], moments["var"]
    pred = ResultsStore(run_dir / "res").read_predictions(row.name)
    mu, au, eu = (pred[c].to_numpy(float) for c in ("mean", "aleatoric", "epistemic"))
    s2, sp = task.noise_var_eval, np.sqrt(np.pi)
    pv = au + eu
    # E|N(m − μ̂, v + σ² + ŝ²)| = s·√(2/π)·e^{−δ²/2s²} + δ(1 − 2Φ(−δ/s)) (folded normal)
    s, delta = np.sqrt(v + s2 + pv), m - mu
    cross = s * np.sqrt(2 / np.pi) * np.exp(-(delta**2) / (2 * s**2)) + delta * (
        1 - 2 * scipy.stats.norm.cdf(-delta / s)
    )
    gv = (np.sqrt(v + s2) - np.sqrt(s2)) / sp
    gap = cross - (np.sqrt(v + s2) + np.sqrt(pv)) / sp
    eu_method = (np.sqrt(pv) - np.sqrt(au)) / sp
    want = scipy.stats.spearmanr(eu_method, gv + gap).statistic
    assert row[col] == pytest.approx(want, abs=1e-10)


def test_rerun_reuses_cached_oracles(run_dir) -> None:
    first = run_transfer(run_dir / "res", ["gp:rbf"], n_resamples=50)
    cache = run_dir / "res" / "transfer" / "gp-rbf" / "oracles"
    files = sorted(cache.glob("*.npz"))
    assert len(files) == 2
    stamp = [f.stat().st_mtime_ns for f in files]
    again = run_transfer(run_dir / "res", ["gp:rbf"], n_resamples=50)
    assert [f.stat().st_mtime_ns for f in files] == stamp
    pd.testing.assert_frame_equal(first.cells["gp:rbf"], again.cells["gp:rbf"])


def test_an_edited_oracle_cache_is_recomputed_and_the_cells_stay(run_dir) -> None:
    """Issue 68: rewriting the mean and variance inside a cache file (still a valid zip) was
    reused silently and turned blr's rho(EU, EU*_risk) from 0.486 to -0.213."""
    from udbench._validation import UdbenchWarning

    first = run_transfer(run_dir / "res", ["gp:rbf"], n_resamples=50)
    cache = run_dir / "res" / "transfer" / "gp-rbf" / "oracles"
    for path in sorted(cache.glob("*.npz")):
        with np.load(path) as z:
            entries = {k: z[k] for k in z.files}
        entries["mean"] = entries["mean"][::-1] * 3.0
        entries["var"] = entries["var"][::-1]
        with open(path, "wb") as fh:
            np.savez(fh, **entries)
    with pytest.warns(UdbenchWarning, match="cached oracle moments .* do not match"):
        again = run_transfer(run_dir / "res", ["gp:rbf"], n_resamples=50)
    a, b = (r.cells["gp:rbf"].drop(columns="oracle_seconds") for r in (first, again))
    pd.testing.assert_frame_equal(a, b)  # the recomputed moments, as before (the clock aside)
    assert again.cells["gp:rbf"]["oracle_seconds"].ne(first.cells["gp:rbf"]["oracle_seconds"]).all()


def test_moments_view_scores_like_the_task(run_dir) -> None:
    task = Task.load(sorted((run_dir / "tasks").glob("*.npz"))[0])
    view = task_with_moments(task, task.post_mean, task.post_var)
    np.testing.assert_array_equal(view.f_eval, task.f_eval)
    assert view.draws is None and view.spec == task.spec


def test_report_section_lists_each_oracle(run_dir) -> None:
    run_transfer(run_dir / "res", ["gp:prior"], n_resamples=50)
    (section,) = transfer_sections(run_dir / "res")
    assert "gp:prior" in section.body and "Kendall" in section.body
    assert transfer_sections(run_dir / "tasks") == []


def test_cli_transfer_and_errors(run_dir, capsys) -> None:
    code = main(["transfer", str(run_dir / "res"), "--oracle", "gp:prior", "--n-resamples", "50"])
    out = capsys.readouterr().out
    assert code == 0 and "Kendall's τ (rho_eu_risk, pooled): 1.000 [1.000, 1.000]" in out
    for bad, why in (
        ("gp", "be KIND:NAME"),
        ("gp:nope", "kernel_family part"),
        ("family:tree", "--oracle family"),
        ("bart:gp", "--oracle kind"),
    ):
        assert main(["transfer", str(run_dir / "res"), "--oracle", bad]) == 2
        err = capsys.readouterr().err
        assert why in err and len(err.strip().splitlines()) == 1
    args = ["transfer", str(run_dir / "res"), "--oracle", "gp:prior", "--metric", "rho_nope"]
    assert main(args) == 2 and "'--metric' must name a metric column" in capsys.readouterr().err
    args = ["transfer", str(run_dir / "res"), "--oracle", "gp:prior", "--n-resamples", "50"]
    assert main([*args, "--loss", "log"]) == 0
    out = capsys.readouterr().out
    assert "Kendall's τ (rho_eu_risk_log, pooled): 1.000 [1.000, 1.000]" in out
    assert main([*args, "--loss", "pinball"]) == 2
    assert "--loss" in capsys.readouterr().err
    assert main([*args, "--loss", "crps", "--metric", "rmse"]) == 2  # not a loss metric
    assert "scored under crps" in capsys.readouterr().err
    assert main([*args, "--metric", "rho_eu_risk_crps"]) == 2  # not rescored: τ = 1 spuriously
    assert "that transfer rescores" in capsys.readouterr().err


def test_loss_transfer_drops_stale_loss_columns_and_keeps_squared(run_dir, tmp_path) -> None:
    """Results scored under crps and log (``udbench score --loss``): a crps transfer
    recomputes the crps columns and leaves the log ones (scored against the task's own
    oracle) out of its rows; the squared-loss metrics are rescored as without --loss."""
    import shutil

    res = tmp_path / "res"
    shutil.copytree(run_dir / "res", res, ignore=shutil.ignore_patterns("transfer"))
    assert main(["score", str(res), "--loss", "crps,log"]) == 0
    out = run_transfer(res, ["gp:rbf"], n_resamples=50, loss="crps", out=tmp_path / "t")
    cells = out.cells["gp:rbf"]
    assert not [c for c in cells.columns if str(c).endswith("_log")]
    assert cells[loss_column("rho_eu_risk", "crps")].notna().all()
    plain = run_transfer(res, ["gp:rbf"], n_resamples=50, out=tmp_path / "t")
    np.testing.assert_array_equal(
        _by_key(cells)["rho_eu_risk"], _by_key(plain.cells["gp:rbf"])["rho_eu_risk"]
    )
    assert not [c for c in plain.cells["gp:rbf"].columns if str(c).endswith(("_log", "_crps"))]


def test_results_without_predictions_is_an_error_before_any_oracle_is_fitted(
    run_dir, tmp_path, monkeypatch
) -> None:
    """A folder without kept predictions fails at once: fitting every task's oracle first
    took minutes on a 240-task campaign export before the same error."""
    import udbench.evaluation.transfer_rescoring as rescoring

    def no_fit(*args, **kwargs):
        raise AssertionError("an oracle was computed for a task with nothing to rescore")

    monkeypatch.setattr(rescoring, "alternative_moments", no_fit)
    run_benchmark([run_dir / "tasks"], METHODS[:1], tmp_path / "res", workers=0)
    with pytest.raises(UdbenchError, match=r"keep-predictions.*campaign summarise runs"):
        run_transfer(tmp_path / "res", ["gp:prior"], n_resamples=10)


def test_missing_task_file_is_a_failed_row(run_dir, tmp_path) -> None:
    import shutil

    shutil.copytree(run_dir / "res", tmp_path / "res")
    shutil.copytree(run_dir / "tasks", tmp_path / "tasks")
    df = read_results(tmp_path / "res")
    one = df["task_id"] == sorted(df["task_id"])[0]  # its file is gone, the other one stays
    df.loc[one, "task_path"] = str(tmp_path / "gone" / "x.npz")
    df.to_parquet(tmp_path / "res" / "results.parquet", index=False)
    res = run_transfer(tmp_path / "res", ["gp:prior"], n_resamples=10, out=tmp_path / "t1")
    cells = res.cells["gp:prior"]
    missing = cells[cells["oracle_status"] == "failed"]
    assert len(missing) == len(METHODS) and set(missing["task_id"]) == {sorted(df["task_id"])[0]}
    assert missing["oracle_error"].str.contains("not found").all()
    assert (cells.loc[cells["oracle_status"] == "ok", "status"] == "ok").sum() == len(METHODS)
    # found again through --tasks
    res = run_transfer(
        tmp_path / "res",
        ["gp:prior"],
        n_resamples=10,
        out=tmp_path / "t2",
        task_dirs=[tmp_path / "tasks"],
    )
    assert (res.cells["gp:prior"]["oracle_status"] == "ok").all()


# ---------------------------------------------------------------- fabricated orderings
def _fabricate(values: dict[str, np.ndarray], noises: list[str], *, seeds: int = 1) -> pd.DataFrame:
    """Rows of ``values[method][instance]`` (ρ(EU, EU*_risk)), one dataset."""
    rows = []
    n = len(noises) * seeds
    for method, v in values.items():
        assert len(v) == n
        for i in range(n):
            noise, seed = noises[i // seeds], i % seeds
            tid = f"ds__gp__{noise}__balanced__s{seed}"
            rows.append(
                {
                    "cell_key": f"{tid}|{method}|h",
                    "task_id": tid,
                    "dataset": "ds",
                    "family": "gp",
                    "noise": noise,
                    "coverage": "balanced",
                    "seed": seed,
                    "method": method,
                    "method_label": method,
                    "constant_aleatoric": False,
                    "status": "ok",
                    "rho_eu_risk": float(v[i]),
                    "rho_eu_var": float(v[i]),
                }
            )
    return pd.DataFrame(rows)


def test_tau_of_fabricated_orderings_with_known_tau() -> None:
    # five methods, the same order on every instance (values 5 > 4 > ... per instance, tiny
    # instance-level noise that never crosses); the alternative swaps the last two at level
    # "u" of the noise factor and reverses the order at level "v"
    rng = np.random.default_rng(0)
    n_per = 6
    base = {
        m: np.full(2 * n_per, q) + rng.uniform(0, 0.01, 2 * n_per)
        for m, q in zip("abcde", (0.5, 0.4, 0.3, 0.2, 0.1), strict=True)
    }
    alt = {m: v.copy() for m, v in base.items()}
    alt["d"][:n_per], alt["e"][:n_per] = base["e"][:n_per], base["d"][:n_per]
    for m, r in zip("abcde", "edcba", strict=True):
        alt[m][n_per:] = base[r][n_per:]
    noises = ["u", "v"]
    correct = _fabricate(base, noises, seeds=n_per)
    alternative = _fabricate(alt, noises, seeds=n_per)
    tau, ranks = transfer_tables(
        correct, alternative, metrics=("rho_eu_risk",), factors=("noise",), n_resamples=500
    )
    t = tau.set_index("level")
    # level u: one discordant pair of 10 -> τ = 1 − 2/10; the order is the same on every
    # instance, so every bootstrap replicate gives it too
    assert t.loc["u", "tau"] == pytest.approx(0.8, abs=1e-12)
    assert (t.loc["u", "tau_low"], t.loc["u", "tau_high"]) == pytest.approx((0.8, 0.8))
    assert t.loc["v", "tau"] == pytest.approx(-1.0) and t.loc["v", "tau_high"] == pytest.approx(-1)
    # pooled: the means over both levels, τ-b as SciPy computes it
    mc = [base[m].mean() for m in "abcde"]
    ma = [alt[m].mean() for m in "abcde"]
    want = scipy.stats.kendalltau(ma, mc).statistic
    assert t.loc["all", "tau"] == pytest.approx(want, abs=1e-12)
    assert t.loc["all", "n_methods"] == 5 and t.loc["all", "n_instances"] == 2 * n_per
    # rank shifts at level u: d and e trade ranks 4 and 5
    ru = ranks[ranks["level"] == "u"].set_index("method")["rank_shift"]
    assert ru.to_dict() == {"a": 0.0, "b": 0.0, "c": 0.0, "d": 1.0, "e": -1.0}
    rv = ranks[ranks["level"] == "v"].set_index("method")["rank_shift"]
    assert rv.to_dict() == {"a": 4.0, "b": 2.0, "c": 0.0, "d": -2.0, "e": -4.0}


def test_bootstrap_interval_of_tau_with_known_replicate_distribution() -> None:
    # three methods, two instances. Correct: 3 > 2 > 1 on both. Alternative: the same order
    # on instance 0, reversed and three times as far apart on instance 1. A replicate draws
    # {0, 0} (p = 1/4, τ = 1), {0, 1} (p = 1/2: means 3, 4, 5 -> reversed, τ = −1) or
    # {1, 1} (p = 1/4, τ = −1): P(τ = −1) = 3/4; the estimate (both instances) is −1.
    correct = _fabricate(
        {"a": np.array([3.0, 3.0]), "b": np.array([2.0, 2.0]), "c": np.array([1.0, 1.0])},
        ["u"],
        seeds=2,
    )
    alternative = _fabricate(
        {"a": np.array([3.0, 3.0]), "b": np.array([2.0, 6.0]), "c": np.array([1.0, 9.0])},
        ["u"],
        seeds=2,
    )
    kw = dict(metrics=("rho_eu_risk",), factors=(), n_resamples=4000)
    tau, _ = transfer_tables(correct, alternative, confidence=0.9, **kw)
    assert tau["tau"].iloc[0] == pytest.approx(-1.0)
    # basic interval [2τ̂ − q_95, 2τ̂ − q_5] of a two-point law with mass 3/4 at −1 and 1/4
    # at 1: q_5 = −1, q_95 = 1, so [−3, −1], clipped to [−1, −1]
    assert (tau["tau_low"].iloc[0], tau["tau_high"].iloc[0]) == pytest.approx((-1.0, -1.0))
    tau, _ = transfer_tables(correct, alternative, confidence=0.2, **kw)  # 40 %, 60 %: −1, −1
    assert (tau["tau_low"].iloc[0], tau["tau_high"].iloc[0]) == pytest.approx((-1.0, -1.0))
    # the same law reflected (estimate +1, mass 3/4 at +1): [2 − 1, 2 − (−1)] -> [1, 1]
    tau, _ = transfer_tables(alternative, alternative, confidence=0.9, **kw)
    assert tau["tau"].iloc[0] == pytest.approx(1.0)


def test_fabricated_failed_alternative_cells_are_left_out_of_both() -> None:
    vals = {
        m: np.array([q, q + 0.01, q + 0.02]) for m, q in zip("abc", (0.3, 0.2, 0.1), strict=True)
    }
    correct = _fabricate(vals, ["u"], seeds=3)
    alternative = correct.copy()
    alternative["oracle_status"] = "ok"
    alternative.loc[0, "oracle_status"] = "failed"
    tau, ranks = transfer_tables(correct, alternative, factors=(), n_resamples=50)
    a = ranks[(ranks["method"] == "a") & (ranks["metric"] == "rho_eu_risk")]
    assert a["n_cells"].iloc[0] == 2
    assert tau["tau"].iloc[0] == pytest.approx(1.0)
    with pytest.raises(UdbenchError, match="no cell is scored under both"):
        transfer_tables(correct, alternative.assign(status="failed"), n_resamples=10)


def test_fit_settings_override_is_used_and_keys_the_cache(run_dir, tmp_path, capsys) -> None:
    import json

    out = tmp_path / "t"
    res = run_transfer(
        run_dir / "res",
        ["gp:rbf"],
        out=out,
        n_resamples=10,
        fit_settings={"restarts": 1, "maxiter": 3, "max_rows": 20},
    )
    info = json.loads(res.cells["gp:rbf"]["oracle_info"].iloc[0])
    assert info["fit_settings"]["maxiter"] == 3 and info["fit_settings"]["n_rows"] == 20
    run_transfer(run_dir / "res", ["gp:rbf"], out=out, n_resamples=10)  # default settings
    assert len(list((out / "gp-rbf" / "oracles").glob("*.npz"))) == 4  # 2 tasks × 2 settings
    code = main(["transfer", str(run_dir / "res"), "--oracle", "gp:rbf", "--fit-iters", "0"])
    assert code == 2 and "'--fit-iters' must be an integer >= 1" in capsys.readouterr().err


def test_udbench_report_shows_the_transfer_section(run_dir, tmp_path) -> None:
    run_transfer(run_dir / "res", ["gp:prior"], n_resamples=20)
    assert main(["report", str(run_dir / "res"), "--out", str(tmp_path / "rep")]) == 0
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "Transfer: rankings under alternative oracles" in page and "gp:prior" in page


@pytest.mark.slow  # HBART generation and sampling: ~40 CPU s, minutes on a loaded machine
def test_gp_oracles_on_an_hbart_task_and_hbart_oracle_on_a_gp_task(run_dir) -> None:
    # a GP oracle on a non-GP truth: gp:prior is the dataset's GP prior (not in the task file)
    spec = TaskSpec("diabetes", "hbart", "homoscedastic", "balanced", 0, fidelity="smoke")
    hb = generate_task(TaskSpec(**{**spec.to_dict(), "n_draws": 40}))
    own = alternative_moments(hb, parse_oracle("gp:prior"))
    assert own.info["source"] == "dataset GP prior"
    gp = get_prior("gp", "diabetes", "smoke")
    want = gp.moments(hb.X_train, hb.y_train, hb.noise_var_train, hb.X_eval)
    np.testing.assert_allclose(own.mean, want[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(own.var, want[1], rtol=0, atol=1e-12)
    # ... and an HBART oracle (MCMC) on a GP task: moments from its draws, which follow the
    # same data as the task's exact GP posterior
    task = Task.load(sorted((run_dir / "tasks").glob("*.npz"))[0])
    alt = alternative_moments(task, parse_oracle("family:hbart"))
    assert alt.mean.shape == alt.var.shape == task.post_mean.shape
    assert np.all(alt.var > 0) and "sampler" in alt.info
    assert np.corrcoef(alt.mean, task.post_mean)[0, 1] > 0.5


def test_a_given_fit_is_used_as_it_is_instead_of_fitting_again(run_dir, monkeypatch) -> None:
    """``fitted`` (a fit made before, e.g. on another machine) reproduces that fit's moments
    exactly and fits nothing; another fit gives other moments; bad values are refused."""
    import json

    import udbench.priors.gp as gp_module

    task = Task.load(next((run_dir / "tasks").glob("*.npz")))
    oracle = parse_oracle("gp:rq+linear")
    fresh = alternative_moments(task, oracle)
    assert fresh.info["fit_source"] == "fitted"
    given = json.loads(json.dumps({"kernel": fresh.info["kernel"], "scale": fresh.info["scale"]}))

    def no_fit(*args, **kwargs):
        raise AssertionError("fitted again")

    monkeypatch.setattr(gp_module, "fit_kernel", no_fit)
    again = alternative_moments(task, oracle, fitted=given)
    assert again.info["fit_source"] == "given" and again.info["kernel"] == given["kernel"]
    np.testing.assert_array_equal(again.mean, fresh.mean)  # the same kernel, the same numbers
    np.testing.assert_array_equal(again.var, fresh.var)
    other = alternative_moments(task, oracle, fitted={**given, "scale": 2 * given["scale"]})
    assert np.max(np.abs(other.var - fresh.var)) > 1e-6
    for bad, name in (
        ({"scale": 1.0}, "fitted"),
        ({"kernel": given["kernel"], "scale": 0.0}, r"fitted\['scale'\]"),
        ({"kernel": given["kernel"], "scale": float("nan")}, r"fitted\['scale'\]"),
    ):
        with pytest.raises(UdbenchError, match=name):
            alternative_moments(task, oracle, fitted=bad)
    with pytest.raises(UdbenchError, match="gp:KERNEL oracle only"):
        alternative_moments(task, parse_oracle("gp:prior"), fitted=given)
