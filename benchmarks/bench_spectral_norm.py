"""Cost of spectral normalisation, and fit + predict times of the SN / Laplace / SNGP methods.

Usage::

    uv run python benchmarks/bench_spectral_norm.py [--skip-methods] [--skip-default]
        [--epochs 20] [--members 10] [--repeats 5]

At kin8nm size (n = 3136 training rows, d = 8, 1500 prediction points; synthetic smooth
target with heteroscedastic noise, uniform covariates as in bench_methods.py):

1. unless ``--skip-methods``: seconds per fit + predict of sngp-het, nn-lap, nn-lap-sn, nn-fsp
   and nn-fsp-sn in their smoke configurations and (unless ``--skip-default``) their
   defaults, one timing each (compilation included, as a user meets it);
2. the SN overhead: the shared network in NN-Ens's default architecture (``--members``
   members, hidden 64, 2 blocks, batch 128) trained for ``--epochs`` epochs by
   :func:`udbench.methods.nn.train_members` with ``spectral_norm=False`` and with
   ``spectral_norm=True`` — same configuration, data, initialisation and keys, same
   process, each compiled by a warm-up call first, best of ``--repeats`` timings each, the
   runs alternating between the two (load on a shared machine hits both alike).

Last line: ``sn_overhead_ratio: <x>`` = time with SN / time without (the issue's target is
≤ 1.3).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import jax
import numpy as np

from udbench._seeding import make_rng
from udbench.methods.nn import BackboneConfig, TrainConfig, init_members, train_members
from udbench.methods.registry import get_method_class

N_TRAIN, N_PRED, DIM = 3136, 1500, 8
METHODS = ("sngp-het", "nn-lap", "nn-lap-sn", "nn-fsp", "nn-fsp-sn")


def _data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = make_rng("bench", "spectral_norm", "data")
    X_all = rng.uniform(size=(N_TRAIN + N_PRED, DIM))
    X, X_pred = X_all[:N_TRAIN], X_all[N_TRAIN:]
    f = np.sin(3.0 * X[:, 0]) + X[:, 1] * X[:, 2] - 0.5 * X[:, 3] ** 2
    y = f + (0.1 + 0.3 * X[:, 4]) * rng.standard_normal(N_TRAIN)
    return X, y, X_pred


def method_timings(X, y, X_pred, skip_default: bool) -> None:
    for name in METHODS:
        cls = get_method_class(name)
        configs = [("smoke", dict(cls.smoke_params))]
        if not skip_default:
            configs.append(("default", {}))
        for label, params in configs:
            start = time.perf_counter()
            cls(**params).fit(X, y).predict(X_pred)
            print(f"{name:10s} {label:7s} fit+predict {time.perf_counter() - start:8.2f} s")


def _best_of_interleaved(fns: list, repeats: int) -> list[float]:
    """Best wall time of each function; runs alternate (a, b, a, b, ...) so that load from
    other processes on a shared machine hits both alike. Each is compiled by a warm-up call."""
    for fn in fns:
        fn()
    best = [np.inf] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - start)
    return [float(b) for b in best]


def sn_overhead(X, y, epochs: int, members: int, repeats: int) -> float:
    plain = BackboneConfig(in_dim=DIM, hidden_dim=64, n_blocks=2)
    sn = replace(plain, spectral_norm=True, sn_coeff=1.0)
    train = TrainConfig(n_epochs=epochs, batch_size=128, lr=1e-3, momentum=0.9, weight_decay=1e-4)
    params = init_members(jax.random.key(0), plain, members)
    keys = jax.random.split(jax.random.key(1), members)
    rows = np.tile(np.arange(X.shape[0]), (members, 1))
    Xs = (X - X.mean(0)) / X.std(0)
    ys = (y - y.mean()) / y.std()

    def run(model: BackboneConfig):
        def go() -> None:
            out = train_members(params, Xs, ys, rows, keys, model, train)
            jax.block_until_ready(out)

        return go

    t_plain, t_sn = _best_of_interleaved([run(plain), run(sn)], repeats)
    steps = epochs * -(-X.shape[0] // 128)
    print(
        f"train_members, {members} members, hidden 64, 2 blocks, {epochs} epochs ({steps} steps): "
        f"without SN {t_plain:.3f} s, with SN {t_sn:.3f} s (best of {repeats})"
    )
    return t_sn / t_plain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skip-methods", action="store_true")
    parser.add_argument("--skip-default", action="store_true")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    X, y, X_pred = _data()
    print(f"backend: {jax.default_backend()}; n = {N_TRAIN}, d = {DIM}, {N_PRED} prediction points")
    if not args.skip_methods:
        method_timings(X, y, X_pred, args.skip_default)
    ratio = sn_overhead(X, y, args.epochs, args.members, args.repeats)
    print(f"sn_overhead_ratio: {ratio:.3f}")


if __name__ == "__main__":
    main()
