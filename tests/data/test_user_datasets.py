"""A user's own table as a dataset (``udbench.data.user``, ``udbench datasets add``)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from udbench._validation import UdbenchError
from udbench.data import get_dataset_spec, list_datasets, load_covariates
from udbench.data.covariates import stratified_split
from udbench.data.geometry import N_SHELLS
from udbench.data.user import (
    DEFAULT_KERNEL_FAMILY,
    MIN_TRAIN,
    design_train_size,
    min_rows_needed,
    prepare_dataset,
    spec_kernel_families,
    suite_median_rho,
)
from udbench.recipes.own_data import add_dataset


def small_table(n: int = 300, seed: int = 0) -> pd.DataFrame:
    """``n`` rows of 4 continuous covariates and a target (no repeats, no id column)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)) * [1.0, 2.0, 0.5, 3.0] + [0.0, 10.0, -1.0, 5.0]
    frame = pd.DataFrame(X, columns=["temp", "Pressure (bar)", "flow", "depth"])
    frame["yield"] = np.sin(X[:, 0]) + 0.1 * X[:, 1] + 0.1 * rng.normal(size=n)
    return frame


@pytest.fixture
def user_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "mydata"
    folder.mkdir()
    monkeypatch.setenv("UDBENCH_DATA_DIR", str(folder))
    return folder


# --- design rules, by hand ------------------------------------------------------------


def test_suite_median_rho_and_families_come_from_the_registry():
    # SPEC §2's 13 values of ρ sorted: 0.21 0.21 0.23 0.23 0.25 0.28 [0.32] 0.32 0.33 ...
    assert suite_median_rho() == pytest.approx(0.32, abs=1e-12)
    families = spec_kernel_families()
    assert len(families) == 9 and len(set(families)) == 9
    assert families[:3] == ("arccosine", "matern12+linear", "rq+linear")
    assert DEFAULT_KERNEL_FAMILY == "rbf"


def test_design_train_size_by_hand():
    # 30 candidates in every shell: ood needs 25 % of n ≤ 30 -> n_max 120; n = ⌊0.9·120⌋ = 108
    shell = np.repeat(np.arange(N_SHELLS), 30)
    n, n_max = design_train_size(shell, np.arange(shell.size))
    assert (n, n_max) == (108, 120)
    # a small outer shell (10 rows) binds through `balanced`: n = 54 gives 10.8 per shell,
    # floors 10 and the 4 leftover units to shells 0-3 (largest remainder, ties inner), so
    # shell 4 needs 10; n = 55 needs 11 there. n_max 54, n = ⌊0.9·54⌋ = 48
    shell = np.concatenate([np.repeat(np.arange(4), 100), np.full(10, 4)])
    assert design_train_size(shell, np.arange(shell.size)) == (48, 54)
    # plenty of rows: the cap (the suite's median n)
    shell = np.repeat(np.arange(N_SHELLS), 5000)
    assert design_train_size(shell, np.arange(shell.size))[0] == 2000


def test_min_rows_needed_by_hand():
    # N = 140: shells ≥ 28 rows, eval takes ≤ 14 of each -> ≥ 14 candidates, ⌊0.9·4·14⌋ = 50;
    # N = 139: ⌊139/5⌋ − ⌈69/5⌉ = 27 − 14 = 13 -> 46 < 50
    assert MIN_TRAIN == 50 and min_rows_needed() == 140


# --- a built-in dataset exported and added back --------------------------------------


def test_builtin_diamonds_added_back_gives_the_same_design(data_dir, tmp_path):
    """diamonds' row follows the rules of a new dataset (n = 2000 cap, ρ = suite median,
    RBF = the default family without a target): everything but the key-seeded split is equal,
    and the split is SPEC §2's rule for the new key on the same shells."""
    builtin = load_covariates("diamonds", data_dir)
    raw = pd.read_csv(data_dir / "diamonds" / "diamonds.csv.gz")
    csv = tmp_path / "diamonds_export.csv"
    raw.to_csv(csv, index=False)
    user = tmp_path / "user"
    # a categorical column is rejected, every one named
    with pytest.raises(UdbenchError, match=r"non-numeric columns.*cut.*color.*clarity"):
        prepare_dataset(csv, "gems", target="price", data_dir=user)
    added = add_dataset(
        csv, "gems", drop=["cut", "color", "clarity", "price"], duplicates="keep", data_dir=user
    )
    cov = load_covariates("gems", user)
    ref = builtin.spec
    s = added.spec
    assert (s.n_rows, s.n_features, s.n_eval, s.n_train) == (
        ref.n_rows,
        ref.n_features,
        ref.n_eval,
        ref.n_train,
    )
    assert s.rho == ref.rho and s.kernel_family == ref.kernel_family
    assert s.covariates == ref.covariates
    np.testing.assert_array_equal(cov.X, builtin.X)
    np.testing.assert_array_equal(cov.bounds, builtin.bounds)
    np.testing.assert_array_equal(cov.shell, builtin.shell)
    np.testing.assert_array_equal(cov.z, builtin.z)
    eval_idx, cand_idx = stratified_split(builtin.shell, ref.n_eval, "gems")
    np.testing.assert_array_equal(cov.eval_idx, eval_idx)
    np.testing.assert_array_equal(cov.cand_idx, cand_idx)
    assert np.bincount(cov.shell[cov.eval_idx]).tolist() == [300] * 5
    assert np.isnan(cov.y_real).all()  # no target given


def test_builtin_concrete_added_back_with_its_row_values(data_dir, tmp_path):
    """With --n/--rho/--kernel/--target taken from the row, the entry equals the row."""
    builtin = load_covariates("concrete", data_dir)
    ref = builtin.spec
    user = tmp_path / "user"
    added = add_dataset(
        data_dir / "concrete" / "concrete.csv.gz",
        "my-concrete",
        target=ref.target,
        n_train=ref.n_train,
        rho=ref.rho,
        kernel_family=ref.kernel_family,
        duplicates="keep",  # concrete repeats 34 rows of covariates; the suite keeps them
        data_dir=user,
    )
    s = added.spec
    for name in ("n_rows", "n_features", "n_eval", "n_train", "rho", "kernel_family"):
        assert getattr(s, name) == getattr(ref, name), name
    cov = load_covariates("my-concrete", user)
    np.testing.assert_array_equal(cov.X, builtin.X)
    np.testing.assert_array_equal(cov.y_real, builtin.y_real)
    np.testing.assert_array_equal(cov.shell, builtin.shell)
    assert s.source == "user" and s.registry_file == str(user / "my-concrete" / "dataset.toml")


# --- registration ---------------------------------------------------------------------


def test_added_dataset_is_registered_beside_its_table(user_dir):
    added = add_dataset(small_table(), "plant", target="yield", kernel_family="matern32")
    folder = user_dir / "plant"
    assert sorted(p.name for p in folder.iterdir()) == ["dataset.toml", "plant.csv.gz"]
    spec = get_dataset_spec("plant")  # found through $UDBENCH_DATA_DIR
    assert spec == added.spec and spec.registry_file == str(folder / "dataset.toml")
    assert spec.covariates == ("temp", "Pressure (bar)", "flow", "depth")
    assert spec.target == "yield" and spec.kernel_family == "matern32"
    # N = 300: n_eval 150; n is the rule's, below n_max
    assert (spec.n_rows, spec.n_eval) == (300, 150)
    n, n_max = design_train_size(load_covariates("plant").shell, load_covariates("plant").cand_idx)
    assert spec.n_train == n and n <= n_max
    assert "plant" in [s.key for s in list_datasets()]
    assert "plant" not in [s.key for s in list_datasets(data_dir=user_dir.parent)]
    text = (folder / "dataset.toml").read_text()
    assert 'kernel_rule = "given (--kernel)"' in text and "table_sha256" in text
    # a second add of the same name needs --force; a packaged key is never taken
    with pytest.raises(UdbenchError, match="--force"):
        add_dataset(small_table(), "plant")
    add_dataset(small_table(seed=1), "plant", force=True)
    assert not np.array_equal(load_covariates("plant").X, small_table(seed=0).to_numpy()[:, :4])
    with pytest.raises(UdbenchError, match="packaged dataset"):
        add_dataset(small_table(), "concrete")


def test_a_hand_edited_registry_file_in_the_wrong_folder_is_an_error(user_dir):
    add_dataset(small_table(), "plant")
    (user_dir / "other").mkdir()
    (user_dir / "other" / "dataset.toml").write_text(
        (user_dir / "plant" / "dataset.toml").read_text()
    )
    with pytest.raises(UdbenchError, match="folder must be named after the key"):
        list_datasets()


def test_no_data_folder_is_an_error(monkeypatch):
    monkeypatch.delenv("UDBENCH_DATA_DIR", raising=False)
    with pytest.raises(UdbenchError, match=r"--data-dir.*UDBENCH_DATA_DIR"):
        add_dataset(small_table(), "plant")


def test_kernel_family_is_selected_by_marginal_likelihood(user_dir, monkeypatch):
    """With a target the family of largest maximised LML among SPEC's families is chosen;
    the candidates are patched down to two for speed (the rule, not the family list)."""
    import udbench.recipes.own_data as own

    monkeypatch.setattr(own, "spec_kernel_families", lambda: ("linear", "rbf"))
    frame = small_table(150)
    frame["yield"] = np.sin(6.0 * frame["temp"])  # strongly non-linear in the covariates
    said: list[str] = []
    added = add_dataset(frame, "wavy", target="yield", fidelity="smoke", on_fit=said.append)
    # before the slow step, one line says what is fitted, what it costs and how to skip it
    (line,) = said
    assert line.startswith("fitting the GP kernel family to 'yield': 2 families by marginal")
    assert "smoke settings: 2 starts × 50 iterations" in line and "--kernel FAMILY skips" in line
    assert own.FIT_COST["smoke"] in line
    assert set(added.kernel_lml) == {"linear", "rbf"}
    assert added.kernel_lml["rbf"] > added.kernel_lml["linear"]
    assert added.spec.kernel_family == "rbf"
    assert "kernel_log_marginal_likelihood" in (user_dir / "wavy" / "dataset.toml").read_text()


# --- cleaning and feasibility ---------------------------------------------------------


def test_cleaning_counts_missing_rows_and_drops_constant_columns(user_dir):
    frame = small_table(310)
    frame.loc[[3, 50, 51], "flow"] = np.nan
    frame.loc[7, "yield"] = np.nan  # the target counts when given
    frame["site"] = 4.0
    prepared = prepare_dataset(frame, "plant", target="yield")
    text = "\n".join(prepared.messages)
    assert "dropped 4 of 310 rows with a missing value" in text
    assert "dropped constant column(s) ['site']" in text
    assert prepared.spec.n_rows == 306 and prepared.spec.n_features == 4
    assert prepared.X.min() == 0.0 and prepared.X.max() == 1.0
    # without the target, its missing value does not drop a row
    assert prepare_dataset(frame.drop(columns="yield"), "plant").spec.n_rows == 307


def test_near_constant_columns_are_dropped_like_constant_ones(user_dir):
    frame = small_table(300)
    frame["site"] = 4.0
    frame["gauge"] = 1.0 + 1e-12 * (np.arange(300) % 3)  # rounding-level variation
    frame["tiny"] = 1e-12 * (1.0 + np.arange(300) % 7)  # small, but it varies: kept
    prepared = prepare_dataset(frame, "plant", target="yield")
    text = "\n".join(prepared.messages)
    assert "dropped constant column(s) ['site'] (min-max scaling needs max > min)" in text
    assert (
        "dropped near-constant column(s) ['gauge'] (max - min <= 1e-09 × max(|min|, |max|)" in text
    )
    assert prepared.spec.covariates == ("temp", "Pressure (bar)", "flow", "depth", "tiny")
    assert prepared.provenance["columns_dropped_constant"] == ["site", "gauge"]
    np.testing.assert_array_equal(prepared.X.min(axis=0), 0.0)
    np.testing.assert_array_equal(prepared.X.max(axis=0), 1.0)
    # a table of near-constant covariates only: nothing left to scale
    only = pd.DataFrame({"gauge": frame["gauge"], "yield": frame["yield"]})
    with pytest.raises(
        UdbenchError, match=r"every covariate is constant .*gauge in \[1, 1.000000000002\]"
    ):
        prepare_dataset(only, "plant", target="yield")


def test_categorical_columns_are_rejected_with_every_name(user_dir):
    frame = small_table()
    frame["colour"] = np.where(np.arange(300) % 3 == 0, "red", "blue")
    frame["grade"] = ["A", "B", "C", "D"] * 75
    with pytest.raises(UdbenchError) as info:
        prepare_dataset(frame, "plant")
    message = str(info.value)
    assert "colour (2 levels: 'blue', 'red')" in message or "colour (2 levels" in message
    assert "grade (4 levels" in message and "--drop colour,grade" in message
    assert "one-hot" in message
    prepared = prepare_dataset(frame, "plant", drop=["colour", "grade"])
    assert prepared.spec.n_features == 5  # the target is a covariate when not named


def test_too_few_rows_says_how_many_are_needed(user_dir):
    with pytest.raises(UdbenchError, match=r"at least 140 rows.*got '139 rows'"):
        prepare_dataset(small_table(139), "plant")
    for seed in range(3):  # the needed number is enough whatever the table
        assert prepare_dataset(small_table(140, seed), "plant").spec.n_train >= MIN_TRAIN


def test_more_covariates_than_rows_is_an_error_and_few_rows_per_covariate_a_warning(user_dir):
    rng = np.random.default_rng(0)
    wide = pd.DataFrame(rng.normal(size=(150, 160)), columns=[f"x{j}" for j in range(160)])
    with pytest.raises(UdbenchError, match=r"more rows than covariates.*N = 150, d = 160"):
        prepare_dataset(wide, "wide")
    prepared = prepare_dataset(wide.iloc[:, :20], "wide")
    assert any("7.5 rows per covariate" in w for w in prepared.warnings)


def test_duplicate_rows_error_drop_or_keep(user_dir):
    frame = pd.concat([small_table(300), small_table(300).iloc[[5, 9]]], ignore_index=True)
    frame.loc[300, "yield"] = 99.0  # same covariates, other target: still a repeat
    with pytest.raises(UdbenchError, match=r"got 2 rows that repeat.*--duplicates drop"):
        prepare_dataset(frame, "plant", target="yield")
    dropped = prepare_dataset(frame, "plant", target="yield", duplicates="drop")
    assert dropped.spec.n_rows == 300 and dropped.provenance["duplicate_rows"] == 2
    assert prepare_dataset(frame, "plant", target="yield", duplicates="keep").spec.n_rows == 302
    with pytest.raises(UdbenchError, match="--duplicates"):
        prepare_dataset(frame, "plant", duplicates="maybe")


def test_id_like_column_is_warned(user_dir):
    frame = small_table()
    frame.insert(0, "row_id", np.arange(1000, 1300))
    prepared = prepare_dataset(frame, "plant", target="yield")
    assert any("row_id looks like a row id" in w for w in prepared.warnings)
    assert not prepare_dataset(small_table(), "plant", target="yield").warnings


def test_bad_options_are_clear_errors(user_dir):
    frame = small_table()
    for kwargs, pattern in [
        ({"target": "nope"}, "--target"),
        ({"drop": ["nope"]}, "--drop"),
        ({"covariates": ["temp", "nope"]}, "--covariates"),
        ({"rho": -1.0}, "--rho"),
        ({"rho": math.inf}, "--rho"),
        ({"n_train": 10}, r"--n.*from 50 to"),
        ({"n_train": 10_000}, r"--n.*from 50 to"),
    ]:
        with pytest.raises(UdbenchError, match=pattern):
            prepare_dataset(frame, "plant", **kwargs)
    for bad in ("Plant", "my__plant", "", "9plant"):
        with pytest.raises(UdbenchError, match="--name"):
            prepare_dataset(frame, bad)
    frame.loc[4, "flow"] = np.inf
    with pytest.raises(UdbenchError, match="column flow"):
        prepare_dataset(frame, "plant")


def test_covariates_option_keeps_only_those_and_names_match_loosely(user_dir):
    prepared = prepare_dataset(
        small_table(), "plant", target="YIELD", covariates=["pressure", "temp"]
    )
    assert prepared.spec.covariates == ("Pressure (bar)", "temp")
    assert prepared.spec.target == "yield"


def test_parquet_and_csv_give_the_same_dataset(user_dir, tmp_path):
    frame = small_table()
    frame.to_parquet(tmp_path / "t.parquet")
    frame.to_csv(tmp_path / "t.csv.gz", index=False)
    a = prepare_dataset(tmp_path / "t.parquet", "plant", target="yield")
    b = prepare_dataset(tmp_path / "t.csv.gz", "plant", target="yield")
    np.testing.assert_allclose(a.X, b.X, rtol=0, atol=1e-15)  # CSV text round trip
    np.testing.assert_array_equal(a.eval_idx, b.eval_idx)
    with pytest.raises(UdbenchError, match="PATH"):
        prepare_dataset(tmp_path / "t.xlsx", "plant")


def test_tied_distances_that_make_unequal_shells_are_a_clear_error(user_dir):
    # one 0/1 covariate, half and half: every row lies at the same distance from the mean,
    # so all 200 rows fall in shell 0
    frame = pd.DataFrame({"switch": np.arange(200) % 2})
    with pytest.raises(UdbenchError, match=r"n_eval/5 = 20 rows.*\[200, 0, 0, 0, 0\]"):
        prepare_dataset(frame, "grid", duplicates="keep")


def test_repeated_column_names_are_refused_not_renamed(user_dir, tmp_path):
    # pandas reads the header "temp,flow,temp" as temp, flow, temp.1: two covariates
    frame = small_table()
    text = frame.to_csv(index=False).splitlines()
    header = text[0].split(",")
    header[2] = header[0] = "temp"  # 'temp', 'Pressure (bar)', 'temp', 'depth', 'yield'
    header[3] = header[1] = "depth"
    path = tmp_path / "twice.csv"
    path.write_text("\n".join([",".join(header), *text[1:]]) + "\n")
    with pytest.raises(UdbenchError) as info:
        prepare_dataset(path, "plant", target="yield")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(
        "udbench datasets add: parameter 'PATH' must have distinct column names"
    )
    assert message.endswith("got ['depth', 'temp']")
    # one repeat in a gzipped CSV too; distinct names (also 'temp.1' typed by hand) still pass
    frame.columns = ["temp", "temp.1", "flow", "temp", "yield"]
    frame.to_csv(tmp_path / "once.csv.gz", index=False)
    with pytest.raises(UdbenchError, match=r"got \['temp'\]$"):
        prepare_dataset(tmp_path / "once.csv.gz", "plant", target="yield")
    frame.columns = ["temp", "temp.1", "flow", "depth", "yield"]
    frame.to_csv(tmp_path / "fine.csv", index=False)
    assert prepare_dataset(tmp_path / "fine.csv", "plant", target="yield").spec.n_features == 4
