"""Fabricated long-format results frames for the analyses tests and benchmark.

:func:`fabricate_results` writes the rows ``udbench run`` would store for a grid of
instances (dataset × prior family × noise mode × coverage × seed) and methods, with
metric values drawn from a simple additive model: a method's quality, plus a dataset offset,
plus Gaussian noise. Methods carry a ``method_family`` column, so the analyses do not need
the methods to be registered here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

#: The paper's 19 methods (SPEC §8): name -> (family, AU constant in x).
PAPER_METHODS: dict[str, tuple[str, bool]] = {
    "blr": ("linear", True),
    "gp": ("gp", True),
    "vlgp": ("gp", False),
    "dkl": ("gp", True),
    "sngp-het": ("gp", False),
    "ngboost-nig": ("trees", False),
    "ngboost-bag": ("trees", False),
    "catboost-ps": ("trees", False),
    "catboost-kgb": ("trees", True),
    "nn-bag": ("nn", False),
    "nn-ens": ("nn", False),
    "nn-drop": ("nn", False),
    "nn-edl": ("nn", False),
    "nn-deup": ("nn", False),
    "nn-lap": ("nn", False),
    "nn-lap-sn": ("nn", False),
    "nn-fsp": ("nn", False),
    "nn-fsp-sn": ("nn", False),
    "nn-swag": ("nn", False),
}
NOISES = ("homoscedastic", "smooth-monotone", "u-shaped", "step")


def fabricate_results(
    *,
    n_datasets: int = 13,
    priors: Sequence[str] = ("gp", "hbart", "bnn"),
    noises: Sequence[str] = NOISES,
    coverages: Sequence[str] = ("balanced", "ood"),
    n_seeds: int = 10,
    methods: Mapping[str, tuple[str, bool]] = PAPER_METHODS,
    quality: Mapping[str, float] | None = None,
    noise_sd: float = 0.05,
    random_state: int = 0,
) -> pd.DataFrame:
    """A results frame of every (instance, method) cell, all ``ok``.

    Parameters
    ----------
    n_datasets, priors, noises, coverages, n_seeds
        The instance grid (datasets are named ``ds00``, ``ds01``, ...).
    methods : mapping
        Method name -> (family, constant AU).
    quality : mapping, optional
        Method -> mean ρ(EU, EU*_risk); default evenly spaced from 0.8 down to 0.1 in the
        order of ``methods``.
    noise_sd : float
        SD of the per-cell noise of every ρ.
    random_state : int
        Seed of the noise.
    """
    rng = np.random.default_rng(random_state)
    names = list(methods)
    k = len(names)
    q = np.array([quality[m] for m in names] if quality is not None else np.linspace(0.8, 0.1, k))
    grid = pd.MultiIndex.from_product(
        [
            [f"ds{i:02d}" for i in range(n_datasets)],
            list(priors),
            list(noises),
            list(coverages),
            range(n_seeds),
        ],
        names=["dataset", "family", "noise", "coverage", "seed"],
    ).to_frame(index=False)
    n = len(grid)
    grid["task_id"] = [
        f"{d}-{p}-{z}-{c}-s{s}"
        for d, p, z, c, s in zip(
            grid["dataset"],
            grid["family"],
            grid["noise"],
            grid["coverage"],
            grid["seed"],
            strict=True,
        )
    ]
    ds_offset = rng.normal(0.0, 0.05, n_datasets)
    ds_code = grid["dataset"].str[2:].astype(int).to_numpy()
    rows = grid.loc[np.repeat(np.arange(n), k)].reset_index(drop=True)
    meth = np.tile(np.arange(k), n)
    fam = np.array([methods[m][0] for m in names])[meth]
    const = np.array([methods[m][1] for m in names])[meth]
    hetero = rows["noise"].to_numpy() != "homoscedastic"

    def noisy(base: np.ndarray) -> np.ndarray:
        return np.clip(base + rng.normal(0.0, noise_sd, base.shape), -1.0, 1.0)

    base = q[meth] + ds_offset[np.repeat(ds_code, k)]
    rows["method"] = np.array(names)[meth]
    rows["method_label"] = rows["method"]
    rows["method_family"] = fam
    rows["constant_aleatoric"] = const
    rows["status"] = "ok"
    rows["cell_key"] = rows["task_id"] + "|" + rows["method"] + "|h"
    rows["rho_eu_risk"] = noisy(base)
    rows["rho_eu_var"] = noisy(base + 0.1)
    rows["rho_eu_point"] = noisy(base - 0.2)
    au_ok = hetero & ~const
    rows["rho_au"] = np.where(au_ok, noisy(0.5 + 0.3 * q[meth]), np.nan)
    star_var = np.repeat(rng.uniform(-0.3, 0.3, n), k)
    hat = noisy(0.2 + 0.2 * q[meth])
    for t, shift in (("risk", 0.05), ("var", 0.0), ("point", -0.05)):
        star = np.where(hetero, np.clip(star_var + shift, -1, 1), np.nan)
        rows[f"rho_eu_au_star_{t}"] = star
        rows[f"delta_ent_{t}"] = np.where(au_ok, hat - star, np.nan)
    rows["rho_eu_au"] = np.where(au_ok, hat, np.nan)
    rows["rmse"] = np.abs(noisy(1.0 - q[meth] / 2)) + 0.05
    rows["nmse"] = rows["rmse"] ** 2
    for s in range(5):
        rows[f"rho_eu_risk_shell{s}"] = noisy(base - 0.05 * s)
        rows[f"rho_eu_var_shell{s}"] = noisy(base + 0.1 - 0.05 * s)
    return rows


def kept_predictions_run(folder, *, noises: Sequence[str] = ("homoscedastic", "smooth-monotone")):
    """A real results folder of the paper's 19 method names with kept predictions.

    The methods are fast fakes (:mod:`_fakes`) run by :func:`udbench.evaluation.runner.
    run_benchmark` under the 19 names of :data:`PAPER_METHODS` (constant-AU names run
    ``MeanMethod``, the others ``KnnMethod`` with distinct k), on one small fake task per noise
    mode, inline, with ``keep_predictions=True``: what the quickstart's report reads.

    Returns
    -------
    (Path, Path)
        The tasks folder and the results folder.
    """
    from pathlib import Path

    from _fakes import KnnMethod, MeanMethod, make_fake_task, save_fake_task
    from udbench.evaluation.runner import run_benchmark

    root = Path(folder)
    for seed, noise in enumerate(noises):
        save_fake_task(make_fake_task(seed, noise=noise, n_eval=100), root / "tasks")
    methods = [
        (name, MeanMethod(scale=1.0 + i) if const else KnnMethod(k=2 + i))
        for i, (name, (_, const)) in enumerate(PAPER_METHODS.items())
    ]
    run_benchmark([root / "tasks"], methods, root / "results", workers=0, keep_predictions=True)
    return root / "tasks", root / "results"
