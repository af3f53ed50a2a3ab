"""Where the time of ``udbench datasets add --target y --fidelity smoke`` goes: the kernel fit.

``datasets add`` with a target picks the GP kernel family by type-II maximum likelihood over
SPEC §2's nine families (:func:`udbench.priors.gp.fit.select_kernel_family`). This times, in
one process, on scikit-learn's bundled diabetes table (442 rows, 10 covariates; the fit's
rows and seed as ``add_dataset`` picks them):

- the import of JAX and the GP code (``datasets add`` pays it once);
- the cleaning and design (``prepare_dataset``);
- each family's fit at the chosen fidelity (restarts × L-BFGS-B iterations, its JAX
  compilations included; arc-cosine fits each of its three orders);

and prints each family's seconds and its ratio to the RBF family's (the baseline, same
process).

    uv run python benchmarks/bench_kernel_family.py [--fidelity smoke]

Last line: ``kernel_family_fit_seconds: <x>``, the nine fits together.
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fidelity", default="smoke", choices=["smoke", "standard"])
    args = parser.parse_args()

    start = time.perf_counter()
    import numpy as np
    from sklearn.datasets import load_diabetes

    from udbench._seeding import derive_seed, make_rng
    from udbench.data.user import prepare_dataset, spec_kernel_families
    from udbench.priors.gp.fit import FIT_SETTINGS, fit_kernel

    imported = time.perf_counter() - start
    frame = load_diabetes(as_frame=True, scaled=False).frame
    start = time.perf_counter()
    prepared = prepare_dataset(frame, "bench", target="target", data_dir=".")
    design = time.perf_counter() - start
    settings = FIT_SETTINGS[args.fidelity]
    cand = np.asarray(prepared.cand_idx)
    rng = make_rng("gp-fit-rows", "bench")
    rows = np.sort(rng.choice(cand, size=min(settings["max_rows"], cand.size), replace=False))
    X, y = prepared.X[rows], prepared.y_real[rows]
    seconds: dict[str, float] = {}
    for family in spec_kernel_families():
        start = time.perf_counter()
        fit_kernel(
            X,
            y,
            family,
            seed=derive_seed("gp-fit", "bench"),
            restarts=settings["restarts"],
            maxiter=settings["maxiter"],
        )
        seconds[family] = time.perf_counter() - start
    base = seconds.get("rbf") or min(seconds.values())
    print(f"import JAX + udbench GP code: {imported:.1f} s; cleaning and design: {design:.1f} s")
    print(f"{args.fidelity} fit settings: {settings}, {rows.size} rows")
    for family, s in sorted(seconds.items(), key=lambda kv: -kv[1]):
        print(f"  {family:<18} {s:7.1f} s  ({s / base:.2f} × rbf)")
    total = sum(seconds.values())
    print(f"kernel_family_fit_seconds: {total:.1f}")


if __name__ == "__main__":
    main()
