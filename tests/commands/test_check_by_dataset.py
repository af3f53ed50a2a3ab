"""``udbench check --by-dataset``: the pooled figures per dataset are those of each dataset's
files checked on their own."""

from __future__ import annotations

import numpy as np

from udbench.commands.tasks import check_directory
from udbench.priors.gp import GPPrior
from udbench.tasks import TaskSpec, make_task

HYPER = {"kernel_family": "rbf", "parts": [{"kernel": "rbf", "weight": 1.0, "lengthscale": [0.4]}]}


def _save(folder, dataset: str, seed: int, fidelity: str = "standard") -> None:
    X = np.random.default_rng(seed).random((50, 1))
    spec = TaskSpec(dataset, "gp", "homoscedastic", "balanced", seed, fidelity, n_draws=40)
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
        for key in ("seed_replacements", "family", "fidelities"):  # the group's, not a pool's
            alone.pop(key)
        assert both["datasets"][ds] == alone
    assert "datasets" not in check_directory(tmp_path)["families"]["gp"]


def test_a_family_made_at_two_fidelities_is_pooled_per_fidelity(tmp_path) -> None:
    """One pooled verdict over two presets would describe neither: each fidelity is its own
    row, with the figures of that fidelity's files checked on their own."""
    for fid, seeds in (("smoke", (0, 1)), ("standard", (2, 3, 4))):
        (tmp_path / fid).mkdir()
        for seed in seeds:
            _save(tmp_path / fid, "alpha", seed, fid)
    mixed = check_directory(tmp_path)["families"]
    assert set(mixed) == {"gp (smoke)", "gp (standard)"}
    for fid, n in (("smoke", 2), ("standard", 3)):
        row = mixed[f"gp ({fid})"]
        assert row["n_instances"] == n
        assert row["family"] == "gp" and row["fidelities"] == [fid]
        alone = check_directory(tmp_path / fid)["families"]
        assert set(alone) == {"gp"}  # a single fidelity keeps the family's name
        assert alone["gp"] == row


def test_a_split_row_is_judged_by_its_family_not_its_label() -> None:
    """The validation table of a row "hbart (smoke)" says what HBART's missing record means
    (not validated), not what an unknown family's would (no record needed)."""
    from rich.console import Console

    from udbench.commands._check_tables import _print_validation
    from udbench.priors.validation import NO_RECORD_NEEDED

    console = Console(record=True, width=200)
    rows = {
        "hbart (smoke)": {"family": "hbart", "preset_validation": {"smoke": None}},
        "bnn (smoke)": {"family": "bnn", "preset_validation": {"smoke": None}},
    }
    _print_validation(rows, console)
    text = console.export_text()
    hbart_line = next(line for line in text.splitlines() if "hbart (smoke)" in line)
    bnn_line = next(line for line in text.splitlines() if "bnn (smoke)" in line)
    assert "not validated" in hbart_line and NO_RECORD_NEEDED not in hbart_line
    assert NO_RECORD_NEEDED[:20] in bnn_line


def test_a_split_row_with_a_record_is_gated_by_its_family() -> None:
    """With a record: HBART's verdict is a gate, BNN's is shown as "not a gate (...)" (BNN
    instances are gated by R̂), whatever the row's label."""
    from rich.console import Console

    from udbench.commands._check_tables import _print_validation
    from udbench.priors.validation import load_validation, validation_summary

    record = load_validation("hbart", "smoke")  # shipped with udbench
    assert record is not None
    summary = validation_summary(record, record["sampler_settings"])
    console = Console(record=True, width=250)
    rows = {
        "hbart (smoke)": {"family": "hbart", "preset_validation": {"smoke": summary}},
        "bnn (smoke)": {"family": "bnn", "preset_validation": {"smoke": summary}},
    }
    _print_validation(rows, console)
    lines = console.export_text().splitlines()
    hbart_line = next(line for line in lines if "hbart (smoke)" in line)
    bnn_line = next(line for line in lines if "bnn (smoke)" in line)
    assert "not a gate" in bnn_line and "not a gate" not in hbart_line
