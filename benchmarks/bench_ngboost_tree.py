"""NGBoost's base learner: ``LeanTreeRegressor`` against scikit-learn's ``DecisionTreeRegressor``.

Usage::

    uv run python benchmarks/bench_ngboost_tree.py [--n 1000] [--d 5] [--members 2]
        [--repeats 3]

NGBoost-Bag (default boosting settings: 500 iterations, depth 4, minibatch and column
fractions 0.75) with ``--members`` members is fitted and then predicts on 500 points, on
synthetic data of ``--n`` rows and ``--d`` uniform covariates (a smooth target plus noise),
once with the stock tree and once with the lean one, alternating, in the same process (this
machine is noisy); CPU seconds of the process, best of ``--repeats`` each. The two fits'
outputs are checked to be the same bit for bit. NGBoost-NIG and ngboost-cat-bag use the same
tree. Last line: ``ngboost_lean_tree_speedup: <x>`` (stock / lean).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.tree import DecisionTreeRegressor

from udbench._seeding import make_rng
from udbench.methods import _ngboost, make_method


def _fit_predict(spec: str, X: np.ndarray, y: np.ndarray, Xe: np.ndarray) -> tuple[float, tuple]:
    c0 = time.process_time()
    pred = make_method(spec).fit(X, y).predict(Xe)
    return time.process_time() - c0, (pred.mean, pred.aleatoric, pred.epistemic)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--d", type=int, default=5)
    ap.add_argument("--members", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rng = make_rng("bench", "ngboost-tree")
    X = rng.uniform(size=(args.n, args.d))
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.3 * rng.normal(size=args.n)
    Xe = rng.uniform(size=(500, args.d))
    spec = f"ngboost-bag:n_regressors={args.members}"
    lean_class = _ngboost.lean_tree_class
    make_method("ngboost-bag:n_regressors=1,n_estimators=10").fit(X, y)  # imports, caches
    times: dict[str, list[float]] = {"stock": [], "lean": []}
    outputs: dict[str, tuple] = {}
    for _ in range(args.repeats):
        for name in ("stock", "lean"):
            _ngboost.lean_tree_class = (  # type: ignore[assignment]
                (lambda: DecisionTreeRegressor) if name == "stock" else lean_class
            )
            seconds, outputs[name] = _fit_predict(spec, X, y, Xe)
            times[name].append(seconds)
    _ngboost.lean_tree_class = lean_class  # type: ignore[assignment]
    same = all(np.array_equal(a, b) for a, b in zip(outputs["stock"], outputs["lean"], strict=True))
    stock, lean = min(times["stock"]), min(times["lean"])
    print(f"NGBoost-Bag, {args.members} members, n = {args.n}, d = {args.d}: fit + predict")
    for label, t in (("stock DecisionTreeRegressor", stock), ("LeanTreeRegressor", lean)):
        print(f"  {label:28s} {t:.2f} CPU s ({t / args.members:.2f} per member)")
    print(f"  outputs identical bit for bit: {same}")
    if not same:
        raise SystemExit("the lean tree changed NGBoost-Bag's outputs")
    print(f"ngboost_lean_tree_speedup: {stock / lean:.2f}")


if __name__ == "__main__":
    main()
