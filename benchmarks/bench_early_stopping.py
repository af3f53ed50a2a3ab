"""CPU cost of neural training with early stopping against the fixed 200-epoch default.

Usage::

    uv run python benchmarks/bench_early_stopping.py [--max-epochs 350] [--patience 20]
        [--fixed-epochs 200] [--members 10] [--repeats 3]

On issue 61's toy (n = 500, d = 10, X ~ U[-1, 1], y = sin 3x₁ + x₂² - 0.5x₃ + 0.3x₄x₅ +
0.5ε, standardised), NN-Ens's default network (``--members`` members, hidden 64, 2 blocks,
batch 128, NAdamW lr 1e-3, β₁ 0.9, weight decay 1e-4, float32) is trained two ways in the
same process:

- *fixed*: :func:`udbench.methods.nn.train_members` for ``--fixed-epochs`` epochs on all 500
  rows (today's default);
- *early stopping*: :func:`udbench.methods.nn.training.train_members_early_stopping` with at
  most ``--max-epochs`` epochs and patience ``--patience`` on an 80/20 split (400 training
  rows, 100 held-out rows, the same split for every member).

Each is compiled by a warm-up call first; the CPU seconds (``time.process_time``: all threads
of this process) of the best of ``--repeats`` calls each, the runs alternating. Also printed:
the epochs each member ran and its best epoch. Last line:
``nn_train_cpu_ratio_early_vs_fixed: <x>`` = CPU seconds with early stopping / fixed.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import replace

import jax
import numpy as np

from udbench._seeding import make_rng
from udbench.methods.nn import BackboneConfig, TrainConfig, init_members, train_members
from udbench.methods.nn.training import train_members_early_stopping

N, DIM, N_VAL = 500, 10, 100


def _data() -> tuple[np.ndarray, np.ndarray]:
    rng = make_rng("bench", "early_stopping", "data")
    X = rng.uniform(-1.0, 1.0, size=(N, DIM))
    f = np.sin(3.0 * X[:, 0]) + X[:, 1] ** 2 - 0.5 * X[:, 2] + 0.3 * X[:, 3] * X[:, 4]
    y = f + 0.5 * rng.standard_normal(N)
    return (X - X.mean(0)) / X.std(0), (y - y.mean()) / y.std()


def _best_cpu_of_interleaved(fns: list[Callable[[], None]], repeats: int) -> list[float]:
    """Best CPU seconds of each function; runs alternate (a, b, a, b, ...). Each is compiled
    by a warm-up call first."""
    for fn in fns:
        fn()
    best = [np.inf] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            start = time.process_time()
            fn()
            best[i] = min(best[i], time.process_time() - start)
    return [float(b) for b in best]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-epochs", type=int, default=350)
    parser.add_argument("--patience", type=int, default=20)
    parser.add_argument("--fixed-epochs", type=int, default=200)
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    X, y = _data()
    M = args.members
    model = BackboneConfig(in_dim=DIM, hidden_dim=64, n_blocks=2)
    fixed = TrainConfig(
        n_epochs=args.fixed_epochs, batch_size=128, lr=1e-3, momentum=0.9, weight_decay=1e-4
    )
    early = replace(fixed, n_epochs=args.max_epochs, patience=args.patience)
    params = init_members(jax.random.key(0), model, M)
    keys = jax.random.split(jax.random.key(1), M)
    all_rows = np.tile(np.arange(N), (M, 1))
    split = make_rng("bench", "early_stopping", "split").permutation(N)
    train_rows = np.tile(np.sort(split[N_VAL:]), (M, 1))
    val_rows = np.tile(np.sort(split[:N_VAL]), (M, 1))
    result = []

    def run_fixed() -> None:
        jax.block_until_ready(train_members(params, X, y, all_rows, keys, model, fixed))

    def run_early() -> None:
        out = train_members_early_stopping(
            params, X, y, train_rows, keys, model, early, val_rows=val_rows
        )
        jax.block_until_ready(out)
        result[:] = [out]

    t_fixed, t_early = _best_cpu_of_interleaved([run_fixed, run_early], args.repeats)
    out = result[0]
    print(f"backend: {jax.default_backend()}; n = {N}, d = {DIM}, {M} members, hidden 64")
    print(f"early stopping: epochs run per member {np.asarray(out.n_epochs_run).tolist()}")
    to_best = (np.asarray(out.best_epoch) + 1).tolist()
    print(f"early stopping: epochs to the best per member {to_best}")
    print(
        f"CPU seconds (best of {args.repeats}): fixed {args.fixed_epochs} epochs on {N} rows "
        f"{t_fixed:.3f}; early stopping (max {args.max_epochs}, patience {args.patience}) on "
        f"{N - N_VAL} rows {t_early:.3f}"
    )
    print(f"nn_train_cpu_ratio_early_vs_fixed: {t_early / t_fixed:.3f}")


if __name__ == "__main__":
    main()
