"""Seconds and peak memory per fit + predict of every registered method at kin8nm size.

Usage::

    uv run python benchmarks/bench_methods.py [--methods vlgp,dkl] [--smoke-only]
        [--gp-max-iter 10] [--extras] [--speedup-epochs 50] [--repeats 3]

Every method of the registry (:func:`udbench.methods.list_methods`, so a method registered
later appears here without editing this script; ``--methods`` picks a subset) is fitted on
n = 3136 training rows with d = 8 covariates and predicts at 1500 points (kin8nm's training
size, SPEC §2), in its smoke and default configurations. Each method runs in its own
subprocess, with one compute thread (``udbench._threads``, as the runner computes a cell),
after a warm-up fit on 50 rows (imports; JAX compilation of other shapes — a fit at the
benchmark's shape still compiles once, which the figures include, as a runner cell's first
fit would). Reported per configuration: wall-clock seconds for fit + predict (the figure
summed in the last line), the CPU seconds of the process over the same span (all its
threads; on a loaded shared machine the wall time can be several times the CPU time, and the
CPU time is what the method costs), and the subprocess's peak resident memory
(``ru_maxrss``) after it — cumulative, so the default's figure is at least the smoke's.

The exact GP is the exception: a fit is L-BFGS-B iterations of an O(n³) objective, so it is
timed with ``max_iter=--gp-max-iter`` and reported as seconds per iteration, with the smoke
(50) and default (200) fits *extrapolated* from that figure (an upper bound: a fit may
converge in fewer iterations).

The real kin8nm covariates are used when ``$UDBENCH_DATA_DIR`` (or the download cache) has
them; otherwise uniform covariates of the same shape (the first line says which). Targets
are synthetic: a smooth function plus heteroscedastic noise.

``--extras`` adds, first, the former sections: one value + gradient of the GP objective at
n = 1000 and 3136 (udbench's against GPJax's ``conjugate_mll``), and NN-Ens's vectorised
training against sequential members (``ensemble_vectorised_speedup``).

Last line: ``all_methods_one_instance_minutes: <x>``, the default configurations of all
registered methods on one instance, summed (the GP's extrapolated); ``n/a`` with
``--smoke-only``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import jax
import numpy as np

from udbench._seeding import make_rng

N_TRAIN, N_PRED, DIM = 3136, 1500, 8


def _data() -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    rng = make_rng("bench", "methods", "data")
    source = "synthetic uniform covariates"
    try:
        from udbench.data import load_covariates

        cov = load_covariates("kin8nm")
        rows = rng.permutation(cov.X.shape[0])
        X_all = cov.X[rows[: N_TRAIN + N_PRED]]
        source = "kin8nm covariates"
    except Exception:  # loader not on this branch or data folder not set
        X_all = rng.uniform(size=(N_TRAIN + N_PRED, DIM))
    X, X_pred = X_all[:N_TRAIN], X_all[N_TRAIN:]
    f = np.sin(3.0 * X[:, 0]) + X[:, 1] * X[:, 2] - 0.5 * X[:, 3] ** 2
    y = f + (0.1 + 0.3 * X[:, 4]) * rng.standard_normal(N_TRAIN)
    return X, y, X_pred, source


def _time_fit_predict(cls: Any, params: dict[str, Any], X, y, X_pred) -> tuple[float, float]:
    """Wall-clock and CPU seconds (this process, all threads) of one fit + predict."""
    start, cpu = time.perf_counter(), time.process_time()
    cls(**params).fit(X, y).predict(X_pred)
    return time.perf_counter() - start, time.process_time() - cpu


def gp_objective_comparison(sizes: tuple[int, ...] = (1000, 3136), repeats: int = 2) -> None:
    """Seconds per value + gradient of the GP objective: GPJax's conjugate_mll vs udbench's."""
    import equinox as eqx
    import gpjax as gpx
    import jax.numpy as jnp

    from udbench.methods.gp import GP, _compiled

    @eqx.filter_jit
    def gpjax_value_and_grad(params: Any, static: Any, data: Any) -> Any:
        def neg_mll(p: Any) -> Any:
            return -gpx.objectives.conjugate_mll(eqx.combine(p, static), data)

        return jax.value_and_grad(neg_mll)(params)

    rng = make_rng("bench", "methods", "gp-objective")
    print(f"\nGP objective, one value + gradient (d = 8, float64, best of {repeats} after warm-up)")
    with jax.enable_x64(True):
        for n in sizes:
            Z, yv = rng.standard_normal((n, DIM)), rng.standard_normal(n)
            init = np.r_[np.full(DIM, 0.7), 0.7, 0.1, 0.22]
            model = GP()._build(init[:DIM], *init[DIM:])
            params, static = eqx.partition(model, eqx.is_array)
            data = gpx.Dataset(X=jnp.asarray(Z), y=jnp.asarray(yv)[:, None])
            theta = jnp.asarray(init + np.log(-np.expm1(-init)))
            ours = _compiled("value_and_grad")
            args = (theta, jnp.asarray(Z), jnp.asarray(yv), jnp.asarray(1e-6))
            v_ref, _ = jax.block_until_ready(gpjax_value_and_grad(params, static, data))
            v_ours, _ = jax.block_until_ready(ours(*args))
            t_ref = t_ours = np.inf
            for _ in range(repeats):
                t0 = time.perf_counter()
                jax.block_until_ready(gpjax_value_and_grad(params, static, data))
                t_ref = min(t_ref, time.perf_counter() - t0)
                t0 = time.perf_counter()
                jax.block_until_ready(ours(*args))
                t_ours = min(t_ours, time.perf_counter() - t0)
            A = Z @ Z.T + n * np.eye(n)
            t0 = time.perf_counter()
            np.linalg.cholesky(A)
            t_chol = time.perf_counter() - t0
            print(
                f"n={n:5d}: GPJax conjugate_mll {t_ref:7.3f} s, udbench {t_ours:7.3f} s, "
                f"ratio {t_ref / t_ours:4.1f}; NumPy Cholesky alone {t_chol:6.3f} s; "
                f"|value difference| {abs(float(v_ref) - float(v_ours)):.1e}",
                flush=True,
            )


def _peak_rss_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def worker(name: str, smoke_only: bool, gp_max_iter: int) -> None:
    """Time one method (in this process); print one JSON line per configuration."""
    import json

    from udbench._threads import cell_threads, fix_xla_threads
    from udbench.methods import get_method_class

    fix_xla_threads()
    X, y, X_pred, _ = _data()
    cls = get_method_class(name)
    with cell_threads():
        # warm-up on a few rows: imports and (for JAX) compilation of other shapes
        cls(**cls.smoke_params).fit(X[:50], y[:50]).predict(X_pred[:5])
        if name == "gp":
            start, cpu0 = time.perf_counter(), time.process_time()
            gp = cls(max_iter=gp_max_iter).fit(X, y)
            gp.predict(X_pred)
            secs = time.perf_counter() - start
            per_iter = secs / max(1, gp.n_iter_)
            cpu_per_iter = (time.process_time() - cpu0) / max(1, gp.n_iter_)
            for label, iters in (("smoke", cls.smoke_params.get("max_iter", 50)), ("default", 200)):
                if label == "default" and smoke_only:
                    continue
                row = {
                    "config": label,
                    "seconds": per_iter * iters,
                    "cpu_seconds": cpu_per_iter * iters,
                    "peak_rss_mib": _peak_rss_mib(),
                    "note": f"EXTRAPOLATED: {iters} L-BFGS-B iterations x {per_iter:.2f} s "
                    f"(measured {secs:.1f} s for {gp.n_iter_}); upper bound",
                }
                print(json.dumps(row), flush=True)
            return
        configs = [("smoke", dict(cls.smoke_params))]
        if not smoke_only:
            configs.append(("default", {}))
        for label, params in configs:
            secs, cpu = _time_fit_predict(cls, params, X, y, X_pred)
            row = {
                "config": label,
                "seconds": secs,
                "cpu_seconds": cpu,
                "peak_rss_mib": _peak_rss_mib(),
                "note": "",
            }
            print(json.dumps(row), flush=True)


def method_timings(
    names: list[str], smoke_only: bool, gp_max_iter: int
) -> tuple[float, float] | None:
    """Each method in its own subprocess; print the table; return the default-config sums.

    Returns ``(wall seconds, CPU seconds)`` summed over the default configurations, or None
    with ``smoke_only``.
    """
    import json
    import subprocess
    import sys
    import tempfile

    print(f"{'method':<14} {'config':<8} {'seconds':>9} {'CPU s':>9} {'peak MiB':>9}")
    total, total_cpu, missing = 0.0, 0.0, []
    for name in names:
        cmd = [sys.executable, __file__, "--worker", name, "--gp-max-iter", str(gp_max_iter)]
        if smoke_only:
            cmd.append("--smoke-only")
        # rows are printed as the worker reports them (a long default fit shows its smoke row)
        # stderr to a file (a full pipe would block the worker while stdout is read)
        with (
            tempfile.TemporaryFile(mode="w+") as errfile,
            subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errfile, text=True) as proc,
        ):
            assert proc.stdout is not None
            rows = []
            for line in proc.stdout:
                if not line.startswith("{"):
                    continue
                row = json.loads(line)
                rows.append(row)
                note = f"   ({row['note']})" if row["note"] else ""
                print(
                    f"{name:<14} {row['config']:<8} {row['seconds']:9.2f} "
                    f"{row['cpu_seconds']:9.2f} {row['peak_rss_mib']:9.0f}{note}",
                    flush=True,
                )
                if row["config"] == "default":
                    total += row["seconds"]
                    total_cpu += row["cpu_seconds"]
            proc.wait()
            errfile.seek(0)
            stderr = errfile.read()
        if proc.returncode != 0 or not rows:
            err = (stderr.strip().splitlines() or ["?"])[-1]
            print(f"{name:<14} FAILED: {err}", flush=True)
            missing.append(name)
            continue
        if not smoke_only and not any(r["config"] == "default" for r in rows):
            missing.append(name)
    if missing:
        print(f"not in the sum (failed or unavailable): {', '.join(missing)}")
    return None if smoke_only else (total, total_cpu)


def ensemble_speedup(
    X, y, n_epochs: int, repeats: int, label: str, arch: dict[str, Any] | None = None
) -> float:
    from udbench.methods.nn import init_members, train_members, train_single
    from udbench.methods.nn_ens import NNEnsemble

    est = NNEnsemble(n_members=10, n_epochs=n_epochs, **(arch or {}))
    model, train = est._configs(X.shape[1])
    M = est.n_members
    Xs = (X - X.mean(0)) / X.std(0)
    ys = (y - y.mean()) / y.std()
    params0 = init_members(jax.random.key(0), model, M)
    keys = jax.random.split(jax.random.key(1), M)
    rows = np.tile(np.arange(X.shape[0]), (M, 1))

    def member(m: int) -> Any:
        return jax.tree_util.tree_map(lambda a: a[m], params0)

    def vectorised() -> Any:
        return jax.block_until_ready(train_members(params0, Xs, ys, rows, keys, model, train)[0])

    def sequential() -> list[Any]:
        return [
            jax.block_until_ready(
                train_single(member(m), Xs, ys, rows[m], keys[m], model, train)[0]
            )
            for m in range(M)
        ]

    # warm-up (compilation) on the same shapes, then the best of `repeats` timings of each
    # (the minimum is the least disturbed by other processes on a shared machine)
    vectorised()
    train_single(member(0), Xs, ys, rows[0], keys[0], model, train)
    t_vec = t_seq = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        vec = vectorised()
        t_vec = min(t_vec, time.perf_counter() - t0)
        t0 = time.perf_counter()
        seq = sequential()
        t_seq = min(t_seq, time.perf_counter() - t0)
    leaves = jax.tree_util.tree_leaves
    diff = max(
        float(np.max(np.abs(np.asarray(a[m]) - np.asarray(b))))
        for m, solo in enumerate(seq)
        for a, b in zip(leaves(vec), leaves(solo), strict=True)
    )
    print(
        f"\nNN-Ens, {label} architecture, {M} members, hidden_dim={model.hidden_dim}, "
        f"n_blocks={model.n_blocks}, "
        f"batch_size={train.batch_size}, n_epochs={n_epochs}, n={X.shape[0]}"
    )
    print(f"vectorised (one vmapped computation), best of {repeats}: {t_vec:8.2f} s")
    print(f"sequential ({M} single-member runs), best of {repeats}:  {t_seq:8.2f} s")
    print(
        f"max |vectorised - sequential| parameter difference: {diff:.2e} (float32 rounding, "
        "amplified over training; equal to 1e-6 in float64, see tests/methods)"
    )
    return t_seq / t_vec


def main() -> None:
    from udbench.methods import list_methods

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default="", help="comma-separated names (default: all)")
    parser.add_argument("--smoke-only", action="store_true", help="time smoke configs only")
    parser.add_argument("--skip-default", action="store_true", help="same as --smoke-only")
    parser.add_argument("--gp-max-iter", type=int, default=10, help="GP iterations timed")
    parser.add_argument("--extras", action="store_true", help="GP objective, NN-Ens speedup")
    parser.add_argument("--speedup-epochs", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--worker", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    smoke_only = args.smoke_only or args.skip_default
    if args.worker:
        worker(args.worker, smoke_only, args.gp_max_iter)
        return
    available = [info.name for info in list_methods() if info.available]
    names = [n.strip().lower() for n in args.methods.split(",") if n.strip()] or available
    unknown = sorted(set(names) - set(available))
    if unknown:
        parser.error(f"--methods: not registered or not available here: {unknown}")
    X, y, X_pred, source = _data()
    print(f"data: {source}, n={X.shape[0]}, d={X.shape[1]}, predict at {X_pred.shape[0]}")
    print(f"jax backend: {jax.default_backend()}; methods: {', '.join(names)}\n")
    if args.extras:
        from udbench.methods.nn_ens import NNEnsemble

        gp_objective_comparison()
        smoke = {k: NNEnsemble.smoke_params[k] for k in ("hidden_dim", "n_blocks", "batch_size")}
        small = ensemble_speedup(X, y, args.speedup_epochs, args.repeats, "smoke", smoke)
        print(f"ensemble_vectorised_speedup (smoke architecture): {small:.2f}")
        speedup = ensemble_speedup(X, y, args.speedup_epochs, args.repeats, "default")
        print(f"ensemble_vectorised_speedup: {speedup:.2f}\n")
    total = method_timings(names, smoke_only, args.gp_max_iter)
    if total is None:
        print("all_methods_one_instance_minutes: n/a (--smoke-only)")
    else:
        if len(names) < len(available):
            print(f"(sum over the {len(names)} methods selected, not all {len(available)})")
        print(f"default configurations, CPU time summed: {total[1] / 60.0:.2f} min")
        print(f"all_methods_one_instance_minutes: {total[0] / 60.0:.2f}")


if __name__ == "__main__":
    main()
