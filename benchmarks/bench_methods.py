"""Speed of the methods at kin8nm size, of the GP objective, and of NN-Ens's vectorised training.

Usage::

    uv run python benchmarks/bench_methods.py [--skip-default] [--gp-max-iter 10]
        [--speedup-epochs 50] [--repeats 3]

Prints, for each available method, seconds per fit + predict on n = 3136 training rows with
d = 8 covariates and 1500 prediction points (kin8nm's training size, SPEC §2), in its smoke
and default configurations. The exact GP is the exception: a fit is L-BFGS-B iterations of
an O(n³) objective, so it is timed with ``max_iter=--gp-max-iter`` and reported as seconds
per iteration, with the smoke (50) and default (200) fits *extrapolated* from that figure
(an upper bound: a fit may converge in fewer iterations). Next, one value + gradient of the
GP's negative log marginal likelihood at n = 1000 and 3136: udbench's objective against
GPJax's ``conjugate_mll`` differentiated as a baseline, in the same process.

The real kin8nm covariates are used when the data loader and
``$UDBENCH_DATA_DIR`` are available; otherwise uniform covariates of the same shape. Targets
are synthetic: a smooth function plus heteroscedastic noise.

Then NN-Ens with 10 members in its smoke and its default architecture: the 10 members
trained in one vectorised computation vs the same 10 members (same initialisations, keys
and batches) trained one after another, each by the single-member routine, in the same
process, both compiled by a warm-up call first; best of ``--repeats`` timings each. Last
line (default architecture): ``ensemble_vectorised_speedup: <x>``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import jax
import numpy as np

from udbench._seeding import make_rng
from udbench.methods.registry import REGISTRY

N_TRAIN, N_PRED, DIM = 3136, 1500, 8

# every method udbench registers, name -> "module:Class" (the registry is the one list)
CANDIDATES = dict(REGISTRY)


def _data() -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    rng = make_rng("bench", "methods", "data")
    source = "synthetic uniform covariates"
    try:
        from udbench.data import load_covariates  # type: ignore[attr-defined]

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


def _load(path: str) -> Any:
    import importlib

    module, name = path.split(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


def _time_fit_predict(cls: Any, params: dict[str, Any], X, y, X_pred) -> float:
    start = time.perf_counter()
    cls(**params).fit(X, y).predict(X_pred)
    return time.perf_counter() - start


def gp_timing(cls: Any, X, y, X_pred, max_iter: int) -> None:
    """GP fit + predict with ``max_iter`` iterations; seconds per iteration, extrapolations."""
    start = time.perf_counter()
    gp = cls(max_iter=max_iter).fit(X, y)
    gp.predict(X_pred)
    secs = time.perf_counter() - start
    per_iter = secs / max(1, gp.n_iter_)
    print(
        f"{'gp':<12} {'iter':<8} {per_iter:9.2f}   (s per L-BFGS-B iteration, measured: "
        f"{secs:.1f} s for {gp.n_iter_} iterations incl. compilation and predict)",
        flush=True,
    )
    for label, iters in (("smoke", cls.smoke_params.get("max_iter", 50)), ("default", 200)):
        print(
            f"{'gp':<12} {label:<8} {per_iter * iters:9.0f}   "
            f"(EXTRAPOLATED: {iters} iterations x {per_iter:.2f} s; upper bound)",
            flush=True,
        )


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


def method_timings(X, y, X_pred, skip_default: bool, gp_max_iter: int) -> None:
    print(f"{'method':<12} {'config':<8} {'seconds':>9}")
    for name, path in CANDIDATES.items():
        cls = _load(path)
        if cls is None:
            print(f"{name:<12} (not available on this branch; skipped)")
            continue
        # warm-up on a few rows: imports and (for JAX) compilation of other shapes
        cls(**cls.smoke_params).fit(X[:50], y[:50]).predict(X_pred[:5])
        if name == "gp":
            gp_timing(cls, X, y, X_pred, gp_max_iter)
            continue
        configs = [("smoke", dict(cls.smoke_params))]
        if not skip_default:
            configs.append(("default", {}))
        for label, params in configs:
            secs = _time_fit_predict(cls, params, X, y, X_pred)
            print(f"{name:<12} {label:<8} {secs:9.2f}", flush=True)
            if name == "nn-ens":  # second call: compiled already
                secs = _time_fit_predict(cls, params, X, y, X_pred)
                print(f"{name:<12} {label + '*':<8} {secs:9.2f}   (* compiled)", flush=True)


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
    from udbench.methods.nn_ens import NNEnsemble

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-default", action="store_true", help="time smoke configs only")
    parser.add_argument("--gp-max-iter", type=int, default=10, help="GP iterations timed")
    parser.add_argument("--speedup-epochs", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    X, y, X_pred, source = _data()
    print(f"data: {source}, n={X.shape[0]}, d={X.shape[1]}, predict at {X_pred.shape[0]}")
    print(f"jax backend: {jax.default_backend()}\n")
    method_timings(X, y, X_pred, args.skip_default, args.gp_max_iter)
    gp_objective_comparison()
    smoke = {k: NNEnsemble.smoke_params[k] for k in ("hidden_dim", "n_blocks", "batch_size")}
    small = ensemble_speedup(X, y, args.speedup_epochs, args.repeats, "smoke", smoke)
    print(f"ensemble_vectorised_speedup (smoke architecture): {small:.2f}")
    speedup = ensemble_speedup(X, y, args.speedup_epochs, args.repeats, "default")
    print(f"ensemble_vectorised_speedup: {speedup:.2f}")


if __name__ == "__main__":
    main()
