"""``udbench check --by-dataset``: the pooled figures per dataset are those of each dataset's
files checked on their own."""

from __future__ import annotations

import numpy as np

from udbench.commands.tasks import check_directory
from udbench.priors.gp import GPPrior
from udbench.tasks import TaskSpec, make_task

HYPER = {"kernel_family": "rbf", "parts": [{"kernel": "rbf", "weight": 1.0, "lengthscale": [0.4]}]}


def _save(folder, dataset: str, seed: int) -> None:
    X = np.random.default_rng(seed).random((50, 1))
    spec = TaskSpec(dataset, "gp", "homoscedastic", "balanced", seed, n_draws=40)
    nv = 0.05 if dataset == "alpha" else 0.5
    task = make_task(
        spec,
        GPPrior(HYPER, 1.0),
        X,
        np.arange(20),
        np.arange(20, 50),
        np.full(20, nv),
        np.full(30, nv),
    )
    task.save(folder / f"{spec.task_id}.npz")


def test_by_dataset_pools_each_dataset_like_its_own_folder(tmp_path) -> None:
    for ds, seeds in (("alpha", (0, 1, 2)), ("beta", (3, 4))):
        (tmp_path / ds).mkdir()
        for seed in seeds:
            _save(tmp_path / ds, ds, seed)
    both = check_directory(tmp_path, by_dataset=True)["families"]["gp"]
    assert both["n_instances"] == 5 and set(both["datasets"]) == {"alpha", "beta"}
    for ds in ("alpha", "beta"):
        alone = check_directory(tmp_path / ds)["families"]["gp"]
        alone.pop("seed_replacements")
        assert both["datasets"][ds] == alone
    assert "datasets" not in check_directory(tmp_path)["families"]["gp"]
