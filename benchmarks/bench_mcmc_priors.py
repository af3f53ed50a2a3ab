"""Cost of the MCMC reference posteriors (HBART via bartz, BNN via NumPyro NUTS).

For one instance of kin8nm size (d = 8, n = 3136 training inputs, 1500 evaluation inputs,
uniform inputs, f* drawn from the prior, ρ = 0.33 homoscedastic noise) per family and
fidelity: wall seconds, peak resident memory, chain-iterations per second, pooled
acceptance figures, the function-space R̂ / MCSE summary (with the largest R̂ that independent
draws in the same chain layout give), and a one-instance calibration check (coverage of f* by
the central 90 % intervals; RMSE of the posterior mean over the mean posterior SD). Each
configuration runs in its own process (so peak memory and JAX compilation are per
configuration). In the same run, BNN NUTS with chains vectorised vs run sequentially on
a smaller problem (ratio).

Usage::

    uv run python benchmarks/bench_mcmc_priors.py [--fidelities smoke,standard] [--scale 1.0]
        [--bnn-depths 9,10,11] [--bnn-dense-depths 9] [--skip-chain-methods]

``--bnn-depths`` / ``--bnn-dense-depths`` run the BNN ``standard`` preset with other NUTS
maximum tree depths (and a dense mass matrix) and report the bulk effective sample size of
f(x) per wall second (median and smallest over the evaluation inputs), R̂ and tree depths.

``--scale`` < 1 shrinks n and n_eval (e.g. on a shared machine); the paper fidelity is
long (hours for HBART on 2 CPU cores) and is not in the default list. Last line:
``standard_minutes_per_instance_max: <x>`` (the slower family at standard fidelity).

The full-size BNN sweep of issue 34 is a campaign (``udbench campaign run mcmc --parts
bnn-sweep``, records in ``docs/validation/mcmc/bnn-sweep/``): each NUTS setting on the real
kin8nm task is one unit. ``--sweep-records DIR`` prints its table from the records (ESS of f
per CPU second for every setting tried, the chosen one — the current ``standard`` preset —
marked) and minutes per ``standard`` instance from the campaign's HBART and BNN records;
``--run-sweep`` first runs the missing units (resumable). Last line then:
``bnn_ess_per_second_ratio_new_vs_old: <x>``: the chosen setting's ESS median per second
over the former preset's (max tree depth 9, diagonal mass), at a common cost per leapfrog
step, i.e. the ratio of their ESS per leapfrog step (the sweep's records come from sessions
whose CPU seconds per step differed with the load; the raw per-CPU-second ratio is printed
on the line before).

``--hbart-paper-cost W1,W2`` measures what the HBART ``paper`` preset (250 chains, 5000
warm-up iterations, 4 draws per chain thinned by 25) costs on one instance of full kin8nm size
on this machine, without running it for hours: the preset's layout is run twice with the
warm-up shortened to W1 and to W2 iterations (each in its own process), the difference of the
two gives the seconds per iteration of all 250 chains (bartz's cost per iteration is about
constant at a given n, docs/priors-mcmc.md), and the projection is the fixed part plus that
slope times the preset's 5100 iterations per chain, and times the 30 300 of a SPEC §7
validation instance (preset run, 4x warm-up run, equal-warm-up floor run). Last line then:
``hbart_paper_minutes_per_run: <x>`` (wall minutes of one preset run on this machine).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import time
from typing import Any

import numpy as np

N_TRAIN, N_EVAL, D, RHO = 3136, 1500, 8, 0.33
N_DRAWS = 1000  # D of every instance here


def _instance(
    family: str, fidelity: str, scale: float, overrides: dict[str, Any] | None, out: Any
) -> None:
    import arviz as az

    from udbench.priors.bnn import BNNPrior, choose_reference_rows
    from udbench.priors.hbart import HBARTPrior

    n, m = max(50, int(N_TRAIN * scale)), max(20, int(N_EVAL * scale))
    rng = np.random.default_rng(0)
    X_eval = rng.uniform(size=(m, D))
    X_train = rng.uniform(size=(n, D))
    if family == "hbart":
        prior: Any = HBARTPrior(1.0, fidelity, sampler_kwargs=overrides)
    else:
        X_ref = X_eval[choose_reference_rows(m, "bench")]
        prior = BNNPrior(X_ref, 3.0, fidelity, sampler_kwargs=overrides)
    f = prior.sample(np.vstack([X_train, X_eval]), key=1)[0]
    nv = np.full(n, RHO)
    y = f[:n] + np.sqrt(nv) * rng.standard_normal(n)
    t0, c0 = time.perf_counter(), time.process_time()
    post = prior.condition(X_train, y, nv, X_eval, key=2, n_draws=N_DRAWS)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    d = post.diagnostics
    keep = [
        "n_chains", "n_warmup", "thin", "draws_per_chain", "rhat_max", "rhat_median",
        "rhat_n_above", "rhat_iid_max",
        "mcse_var_max_rel", "mcse_var_median_rel", "chain_iterations_per_second",
        "accept_rate_warmup", "accept_rate_kept", "accept_prob_mean", "n_divergent",
        "tree_depth_mean", "share_at_max_tree_depth",
    ]  # fmt: skip
    res = {k: d[k] for k in keep if k in d}
    mean, f_eval = post.draws_eval.mean(0), f[n:]
    lo, hi = np.quantile(post.draws_eval, [0.05, 0.95], axis=0)
    res["corr_mean_fstar"] = float(np.corrcoef(mean, f_eval)[0, 1])
    # one-instance calibration: share of f* inside the central 90 % interval, and the
    # RMSE of the posterior mean against f* over the mean posterior SD (≈ 1 if calibrated)
    res["coverage90"] = float(np.mean((f_eval >= lo) & (f_eval <= hi)))
    res["rmse_over_sd"] = float(
        np.sqrt(np.mean((mean - f_eval) ** 2) / post.draws_eval.var(0).mean())
    )
    # effective sample size of f(x) (bulk ESS, ArviZ, rank-normalised) over the inputs
    chains = post.draws_eval.reshape(int(d["n_chains"]), int(d["draws_per_chain"]), -1)
    ess = np.asarray(az.ess(az.convert_to_dataset(chains), method="bulk")["x"].values).ravel()
    res["ess_f_median"] = float(np.nanmedian(ess))
    res["ess_f_min"] = float(np.nanmin(ess))
    res["ess_f_median_per_s"] = float(np.nanmedian(ess)) / wall
    res["ess_f_min_per_s"] = float(np.nanmin(ess)) / wall
    res["ess_f_median_per_cpu_s"] = float(np.nanmedian(ess)) / cpu
    if "leapfrog_steps_mean" in d:  # load-independent: ESS per 1000 kept-phase gradients
        grads = d["n_chains"] * d["draws_per_chain"] * d["leapfrog_steps_mean"]
        res["ess_f_median_per_kgrad"] = 1000 * float(np.nanmedian(ess)) / grads
    res["cpu_s"] = cpu
    res["wall_s"] = wall
    res["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out.put(res)


def _bnn_chain_methods(out: Any) -> None:
    """Vectorised vs sequential NUTS chains, 4 chains, small problem, compile excluded."""
    import jax

    from udbench.priors import bnn

    rng = np.random.default_rng(3)
    n, m = 300, 50
    X = rng.uniform(size=(n + m, D))
    cfg = {"n_chains": 4, "n_warmup": 100, "target_accept": 0.9, "max_tree_depth": 10}
    prior = bnn.BNNPrior(X[:65], 3.0, "smoke", sampler_kwargs=cfg)
    f = prior.sample(X, key=1)[0]
    nv = np.full(n, RHO)
    y = f[:n] + np.sqrt(nv) * rng.standard_normal(n)
    times = {}
    for method in ("vectorized", "sequential"):
        t0 = time.perf_counter()
        prior.condition(X[:n], y, nv, X[n:], key=2, n_draws=200, chain_method=method)
        times[method] = time.perf_counter() - t0
    out.put({**times, "devices": len(jax.devices())})


def _run(target: Any, *args: Any) -> dict:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=target, args=(*args, q))
    p.start()
    res = q.get()
    p.join()
    return res


def _sweep_report(records: str, run: bool) -> None:
    """The BNN sweep and the standard minutes per instance from the campaign records."""
    from udbench.campaigns import mcmc, run_campaign
    from udbench.campaigns.engine import load_done_records
    from udbench.priors.bnn import FIDELITY_SETTINGS

    if run:
        run_campaign(mcmc.bnn_sweep_units(), records, progress=print)
    rows, notes = mcmc.bnn_sweep_table(records)
    # records made before the presets named their dtype ran in float64
    standard = FIDELITY_SETTINGS["standard"]
    chosen = next(
        (r for r in rows if {"dtype": "float64", **r["sampler_settings"]} == standard), None
    )
    for r in rows:
        mark = "  <- chosen (standard)" if r is chosen else ""
        print(
            f"bnn {r['setting']}: ESS median {r['ess_bulk_f_median']:.0f}, p5 "
            f"{r['ess_bulk_f_p5']:.0f}, ESS/CPU-s {r['ess_median_per_cpu_second']:.3f} "
            f"(p5 {r['ess_p5_per_cpu_second']:.3f}), per 1000 leapfrog "
            f"{r['ess_median_per_kgrad_kept']:.2f}, ESS/s at equal load "
            f"{r['ess_per_second_ratio_vs_d9'] or float('nan'):.2f}x d9, "
            f"CPU {r['sampler_cpu_seconds'] / 60:.1f} min, "
            f"max R̂ {r['rhat_max']:.3f}, depth {r['tree_depth_mean']:.2f} "
            f"({r['share_at_max_tree_depth']:.0%} at max), coverage {r['coverage_90']:.3f}"
            f"{mark}",
            flush=True,
        )
    for note in notes:
        print(f"left out: {note}")
    done, _ = load_done_records(records)
    for family, kind in (("hbart", "hbart-validation"), ("bnn", "multi-family")):
        walls = [
            float(r["wall_seconds"])
            for r in done
            if r["kind"] == kind
            and str(r["settings"]["task_id"]).startswith(("kin8nm__", "protein__"))
            and f"__{family}__" in str(r["settings"]["task_id"])
            and r["settings"].get("run", "base") == "base"
            and r["settings"]["sampler"] == mcmc._preset(family, "standard", {})
        ]
        if walls:
            print(f"{family} standard at full size: {np.mean(walls) / 60:.1f} min per instance "
                  f"(mean of {len(walls)} campaign records)")  # fmt: skip
    base = next((r for r in rows if r["setting"] == "d9"), None)
    if base is None or chosen is None:
        print("bnn_ess_per_second_ratio_new_vs_old: nan")
        return
    # The records come from different sessions, whose CPU seconds per leapfrog step differed
    # with the machine's load (0.9-1.3 ms here for the same gradient); the headline is the
    # ratio of ESS per leapfrog step times the step's cost ratio to float64 timed in the
    # unit's own process (1 for float64): ESS per second at equal load. The raw ratio is printed.
    raw, ratio = chosen["ess_per_cpu_ratio_vs_d9"], chosen["ess_per_second_ratio_vs_d9"]
    print(f"bnn ESS per CPU second, as measured (load-dependent): {raw:.2f}x the former preset")
    print(f"bnn_ess_per_second_ratio_new_vs_old: {ratio:.2f}")


def _paper_cost(warmups: list[int], scale: float) -> None:
    """Project the HBART ``paper`` preset's cost from two shortened warm-ups (see the module
    docstring); prints one line per run and the projections."""
    from udbench.priors.hbart import FIDELITY_SETTINGS

    if len(warmups) != 2 or not 0 < warmups[0] < warmups[1]:
        raise SystemExit(f"--hbart-paper-cost: need two warm-ups W1 < W2 (> 0), got {warmups}")
    paper = FIDELITY_SETTINGS["paper"]
    kept = N_DRAWS // paper["n_chains"] * paper["thin"]  # iterations per chain after warm-up
    runs = {}
    for w in warmups:
        res = _run(_instance, "hbart", "paper", scale, {"n_warmup": w})
        runs[w] = res
        print(
            f"hbart paper layout, warm-up {w} (+{kept} kept): wall {res['wall_s']:.1f} s, "
            f"CPU {res['cpu_s']:.1f} s, {res['chain_iterations_per_second']:.0f} "
            f"chain-iterations/s, peak RSS {res['peak_rss_mib']:.0f} MiB",
            flush=True,
        )
    (w1, r1), (w2, r2) = runs.items()
    full = paper["n_warmup"] + kept
    validation = full + (4 * paper["n_warmup"] + kept) + full
    for clock in ("wall_s", "cpu_s"):
        slope = (r2[clock] - r1[clock]) / (w2 - w1)  # seconds per iteration of all chains
        fixed = r1[clock] - slope * (w1 + kept)  # compilation, setup, prediction
        print(
            f"paper preset, {clock[:-2]} clock: {slope * 1000:.1f} ms per iteration of the "
            f"{paper['n_chains']} chains, {fixed:.0f} s fixed; one preset run ({full} "
            f"iterations) {(fixed + slope * full) / 60:.1f} min; a validation instance (3 runs, "
            f"{validation} iterations) {(3 * fixed + slope * validation) / 3600:.2f} h",
            flush=True,
        )
    slope = (r2["wall_s"] - r1["wall_s"]) / (w2 - w1)
    fixed = r1["wall_s"] - slope * (w1 + kept)
    print(f"hbart_paper_minutes_per_run: {(fixed + slope * full) / 60:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sweep-records", default=None, help="campaign records folder (issue 34)")
    ap.add_argument("--run-sweep", action="store_true", help="run missing sweep units first")
    ap.add_argument("--fidelities", default="smoke,standard")
    ap.add_argument("--families", default="hbart,bnn")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument(
        "--bnn-depths", default="9,10,11", help="BNN standard with these max_tree_depth values"
    )
    ap.add_argument(
        "--bnn-dense-depths", default="", help="... and with a dense mass matrix at these depths"
    )
    ap.add_argument("--skip-chain-methods", action="store_true")
    ap.add_argument(
        "--hbart-paper-cost",
        default=None,
        help="W1,W2: project the HBART paper preset's cost from two shortened warm-ups",
    )
    args = ap.parse_args()
    if args.hbart_paper_cost is not None:
        try:
            warmups = [int(w) for w in args.hbart_paper_cost.split(",")]
        except ValueError:
            raise SystemExit(
                f"--hbart-paper-cost: need two warm-ups W1 < W2 (> 0), got {args.hbart_paper_cost}"
            ) from None
        _paper_cost(warmups, args.scale)
        return
    if args.sweep_records is not None:
        _sweep_report(args.sweep_records, args.run_sweep)
        return
    minutes: dict[str, float] = {}
    for fidelity in filter(None, args.fidelities.split(",")):
        for family in args.families.split(","):
            res = _run(_instance, family, fidelity, args.scale, None)
            print(f"{family} {fidelity}: " + ", ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in res.items()
            ), flush=True)  # fmt: skip
            if fidelity == "standard":
                minutes[family] = res["wall_s"] / 60
    sweep = [{"max_tree_depth": int(k)} for k in filter(None, args.bnn_depths.split(","))]
    sweep += [
        {"max_tree_depth": int(k), "dense_mass": True}
        for k in filter(None, args.bnn_dense_depths.split(","))
    ]
    for overrides in sweep:  # ESS/s of f per NUTS setting (issue 18)
        res = _run(_instance, "bnn", "standard", args.scale, overrides)
        keep = ("wall_s", "cpu_s", "ess_f_median", "ess_f_min", "ess_f_median_per_s",
                "ess_f_min_per_s", "ess_f_median_per_cpu_s", "ess_f_median_per_kgrad", "rhat_max",
                "rhat_n_above", "tree_depth_mean", "share_at_max_tree_depth",
                "accept_prob_mean", "n_divergent", "coverage90")  # fmt: skip
        print(f"bnn standard {overrides}: " + ", ".join(
            f"{k}={res[k]:.4g}" if isinstance(res[k], float) else f"{k}={res[k]}"
            for k in keep if k in res
        ), flush=True)  # fmt: skip
    if args.skip_chain_methods:
        if minutes:
            print(f"standard_minutes_per_instance_max: {max(minutes.values()):.2f}")
        return
    cm = _run(_bnn_chain_methods)
    print(
        f"bnn chains (4, n=300): vectorized {cm['vectorized']:.1f}s, sequential "
        f"{cm['sequential']:.1f}s, sequential/vectorized = "
        f"{cm['sequential'] / cm['vectorized']:.2f} on {cm['devices']} device(s)",
        flush=True,
    )
    if minutes:
        print(f"standard_minutes_per_instance_max: {max(minutes.values()):.2f}")


if __name__ == "__main__":
    main()
