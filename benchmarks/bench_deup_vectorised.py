"""NN-DEUP's K + 1 main trainings (and NN-Bag's members) vectorised vs one after another.

Usage::

    uv run python benchmarks/bench_deup_vectorised.py [--n-epochs 20] [--n-folds 5]
        [--repeats 2] [--hidden-dim 64] [--n-blocks 2] [--batch-size 128] [--n 3136]

At kin8nm size (n = 3136 training rows, d = 8; the real kin8nm covariates when the data
loader and ``$UDBENCH_DATA_DIR`` are available, else uniform ones; a synthetic smooth target
with heteroscedastic noise), NN-DEUP's first stage is timed two ways in the same process:

- *together*: the K fold models and the final model as one vectorised computation, exactly as
  :class:`udbench.methods.nn_deup.NNDeup` trains them (``train_members`` with a ``row_mask``:
  the fold models' row lists padded to n);
- *one after another*: each of the K + 1 models trained alone by the single-member routine
  (``train_single``) on its own, unpadded rows.

Both are compiled by a warm-up call first; best of ``--repeats`` timings each. Then NN-Bag's
10 members (sample_fraction 0.775, with replacement) the same two ways. Last line:
``deup_vectorised_speedup: <x>`` (one after another / together).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from udbench._seeding import make_rng
from udbench.methods.nn import init_members, train_members, train_single
from udbench.methods.nn_bag import NNBag
from udbench.methods.nn_deup import NNDeup, deup_fold_rows


def _data(n: int) -> tuple[np.ndarray, np.ndarray, str]:
    rng = make_rng("bench", "deup", "data")
    source = "synthetic uniform covariates"
    try:
        from udbench.data import load_covariates  # type: ignore[attr-defined]

        cov = load_covariates("kin8nm")
        X = cov.X[rng.permutation(cov.X.shape[0])[:n]]
        source = "kin8nm covariates"
    except Exception:  # loader not available or data folder not set
        X = rng.uniform(size=(n, 8))
    f = np.sin(3.0 * X[:, 0]) + X[:, 1] * X[:, 2] - 0.5 * X[:, 3] ** 2
    y = f + (0.1 + 0.3 * X[:, 4]) * rng.standard_normal(n)
    Xs = (X - X.mean(0)) / X.std(0)
    return Xs, (y - y.mean()) / y.std(), source


def _best(fn: Callable[[], Any], repeats: int) -> float:
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _compare(
    label: str,
    Xs: np.ndarray,
    ys: np.ndarray,
    rows: np.ndarray,
    mask: np.ndarray | None,
    model: Any,
    train: Any,
    repeats: int,
) -> float:
    M = rows.shape[0]
    params0 = init_members(jax.random.key(0), model, M)
    keys = jax.random.split(jax.random.key(1), M)
    own_rows = [rows[m] if mask is None else rows[m][mask[m] == 1] for m in range(M)]

    def member(m: int) -> Any:
        return jax.tree_util.tree_map(lambda a: a[m], params0)

    def together() -> Any:
        out = train_members(params0, Xs, ys, rows, keys, model, train, row_mask=mask)
        return jax.block_until_ready(out[0])

    def one_after_another() -> list[Any]:
        return [
            jax.block_until_ready(
                train_single(member(m), Xs, ys, own_rows[m], keys[m], model, train)[0]
            )
            for m in range(M)
        ]

    together()  # compile
    for m in sorted({r.size: m for m, r in enumerate(own_rows)}.values()):  # each shape once
        train_single(member(m), Xs, ys, own_rows[m], keys[m], model, train)
    t_vec = _best(together, repeats)
    t_seq = _best(one_after_another, repeats)
    sizes = sorted({r.size for r in own_rows})
    print(
        f"\n{label}: {M} networks (training rows {sizes}), hidden_dim={model.hidden_dim}, "
        f"n_blocks={model.n_blocks}, batch_size={train.batch_size}, n_epochs={train.n_epochs}"
    )
    print(f"together (one vmapped computation), best of {repeats}: {t_vec:8.2f} s")
    print(f"one after another ({M} single runs), best of {repeats}: {t_seq:8.2f} s")
    print(f"speedup: {t_seq / t_vec:.2f}x")
    return t_seq / t_vec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3136)
    parser.add_argument("--n-epochs", type=int, default=20)
    parser.add_argument("--n-folds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--hidden-dim", type=int, default=64)
    parser.add_argument("--n-blocks", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--skip-bag", action="store_true")
    args = parser.parse_args()

    Xs, ys, source = _data(args.n)
    arch = {
        "hidden_dim": args.hidden_dim,
        "n_blocks": args.n_blocks,
        "batch_size": args.batch_size,
        "n_epochs": args.n_epochs,
    }
    print(f"n = {args.n}, d = {Xs.shape[1]} ({source}); JAX backend: {jax.default_backend()}")
    print(f"devices: {jax.devices()}")
    deup = NNDeup(n_folds=args.n_folds, **arch)
    model, train = deup._configs(Xs.shape[1])
    _, rows, mask = deup_fold_rows(args.n, args.n_folds, deup._rng("folds"))
    if not args.skip_bag:
        bag = NNBag(**arch)
        bag_rows = bag._member_rows(args.n, bag._rng("rows"))
        _compare("NN-Bag members", Xs, ys, bag_rows, None, model, train, args.repeats)
    speedup = _compare(
        f"NN-DEUP, {args.n_folds} fold models + final model",
        Xs,
        ys,
        rows,
        mask,
        model,
        train,
        args.repeats,
    )
    print(f"deup_vectorised_speedup: {speedup:.2f}")


if __name__ == "__main__":
    main()
