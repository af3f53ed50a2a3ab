"""One short check that the JAX code runs unchanged on an accelerator (and agrees with the CPU).

Run on a machine with a GPU (``python benchmarks/gpu_check.py OUTDIR``). It

1. prints the JAX backend and devices (fails if the default backend is the CPU);
2. generates the smoke GP/BNN/HBART tasks on the embedded ``diabetes`` table (D = 200), on the
   accelerator, and saves their oracle arrays to ``OUTDIR/gpu_tasks.npz`` for a comparison with
   the same tasks generated on a CPU (``--compare FILE`` on the CPU machine);
3. fits the JAX-based methods (``gp``, ``nn-ens``) and ``blr`` with their smoke settings on the
   GP task and scores them against the oracle.

The last line is ``gpu_check: <seconds>`` (wall time of steps 2-3). With ``--compare FILE`` it
instead regenerates the tasks here and prints the largest relative differences of the GP oracle
moments (exact algebra: rounding-level expected) and the MCMC tasks' calibration summaries (chains
differ in floating point, so only summaries are compared); last line ``gpu_cpu_gp_rel_diff: x``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

FAMILIES = ("gp", "bnn", "hbart")


def _tasks() -> dict[str, object]:
    from udbench.tasks import TaskSpec, generate_task

    out = {}
    for family in FAMILIES:
        spec = TaskSpec(
            dataset="diabetes",
            family=family,
            noise="smooth-monotone",
            coverage="balanced",
            seed=0,
            fidelity="smoke",
            n_draws=200,
        )
        t0 = time.perf_counter()
        out[family] = generate_task(spec)
        print(f"generated {family}: {time.perf_counter() - t0:.1f} s", flush=True)
    return out


def _arrays(tasks: dict[str, object]) -> dict[str, np.ndarray]:
    arrays = {}
    for family, task in tasks.items():
        for name in ("post_mean", "post_var", "f_eval", "noise_var_eval", "sbc_rank"):
            value = getattr(task, name, None)
            if value is not None:
                arrays[f"{family}/{name}"] = np.asarray(value)
    return arrays


def main(argv: list[str]) -> None:
    import jax

    if argv and argv[0] == "--compare":
        gpu = np.load(argv[1])
        cpu = _arrays(_tasks())
        worst = 0.0
        for key in sorted(gpu.files):
            a, b = gpu[key].astype(np.float64), cpu[key].astype(np.float64)
            rel = float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))
            print(f"{key}: max |GPU - CPU| / max |CPU| = {rel:.2e}")
            if key.startswith("gp/"):
                worst = max(worst, rel)
        print(f"gpu_cpu_gp_rel_diff: {worst:.2e}")
        return

    allow_cpu = "--allow-cpu" in argv  # to try the script itself on a CPU
    argv = [a for a in argv if a != "--allow-cpu"]
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    print("jax", jax.__version__, "backend", jax.default_backend(), jax.devices(), flush=True)
    if jax.default_backend() == "cpu" and not allow_cpu:
        raise SystemExit("gpu_check: the default JAX backend is the CPU; nothing to check")
    start = time.perf_counter()
    tasks = _tasks()
    np.savez(out / "gpu_tasks.npz", **_arrays(tasks))

    from udbench.evaluation.metrics import spearman
    from udbench.methods import get_method_class, make_method

    task = tasks["gp"]
    for name in ("blr", "gp", "nn-ens"):
        t0 = time.perf_counter()
        params = dict(get_method_class(name).smoke_params)
        method = make_method(name, random_state=0, **params)
        pred = method.fit(task.X_train, task.y_train).predict(task.X_eval)
        eu_var = np.asarray(task.post_var)
        rho = spearman(pred.epistemic, eu_var).value
        finite = all(np.isfinite(v).all() for v in (pred.mean, pred.aleatoric, pred.epistemic))
        print(
            f"method {name}: {time.perf_counter() - t0:.1f} s, finite={finite}, "
            f"spearman(EU, posterior variance)={rho:.3f}",
            flush=True,
        )
    print(f"gpu_check: {time.perf_counter() - start:.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
