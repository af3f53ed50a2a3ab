"""Registry contents, column matching and cleaning on tables the tests write themselves."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from udbench._validation import UdbenchError
from udbench.data import get_dataset_spec, list_datasets, load_covariates, normalise_name

# SPEC §2 table: key -> (d, N, n_eval, n, rho, kernel family)
SPEC_TABLE = {
    "abalone": (7, 4177, 1500, 2084, 0.28, "arccosine"),
    "airfoil": (5, 1503, 751, 584, 0.32, "matern12+linear"),
    "concrete": (8, 1030, 515, 348, 0.23, "rq+linear"),
    "cpu_activity": (21, 8192, 1500, 1782, 0.25, "matern52+powexp"),
    "diamonds": (6, 53940, 1500, 2000, 0.32, "rbf"),
    "health_insurance": (4, 22272, 1500, 3279, 0.42, "arccosine"),
    "kin8nm": (8, 8192, 1500, 3136, 0.33, "matern32"),
    "protein": (9, 45730, 1500, 3223, 0.36, "rq+linear"),
    "qsar_fish": (6, 908, 454, 336, 0.41, "matern32"),
    "sarcos": (21, 48933, 1500, 4771, 0.42, "matern52"),
    "seoul_bike": (9, 8760, 1500, 1945, 0.21, "periodic+linear"),
    "space_ga": (6, 3107, 1500, 1260, 0.21, "powexp"),
    "white_wine": (11, 4898, 1500, 2668, 0.23, "rbf"),
}


def test_registry_matches_spec_table():
    keys = [s.key for s in list_datasets()]
    assert keys == [*SPEC_TABLE, "red_wine", "diabetes"]
    assert [s.key for s in list_datasets(include_ood=False)] == [*SPEC_TABLE, "diabetes"]
    for key, (d, n_rows, n_eval, n, rho, kernel) in SPEC_TABLE.items():
        s = get_dataset_spec(key)
        assert (s.n_features, s.n_rows, s.n_eval, s.n_train, s.rho, s.kernel_family) == (
            d,
            n_rows,
            n_eval,
            n,
            rho,
            kernel,
        )
        assert s.n_eval == min(1500, s.n_rows // 2)
        assert len(s.covariates) == d and not s.ood_only
    red = get_dataset_spec("red_wine")
    assert red.ood_only and red.n_rows == 1599 and red.n_eval is None
    assert red.covariates == get_dataset_spec("white_wine").covariates
    assert get_dataset_spec("health_insurance").covariates == (
        "experience",
        "kidslt6",
        "kids618",
        "husby",
    )
    diabetes = get_dataset_spec("diabetes")
    assert (diabetes.source, diabetes.n_rows, diabetes.n_eval) == ("sklearn", 442, 221)


def test_unknown_key_is_a_clear_error():
    with pytest.raises(UdbenchError, match=r"get_dataset_spec: parameter 'key' .*got 'concret'"):
        get_dataset_spec("concret")
    with pytest.raises(UdbenchError, match="got 'concret'"):
        load_covariates("concret")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Temperature(°C)", "temperature"),
        ("Dew point temperature(°C)", "dew_point_temperature"),
        ("fixed_acidity", "fixed_acidity"),
        ("fixed acidity", "fixed_acidity"),
        ("Water  (component 4)(kg in a m^3 mixture)", "water"),
        ("SM1_Dz(Z)", "sm1_dz"),
        ("Whole weight", "whole_weight"),
    ],
)
def test_normalise_name(raw, expected):
    assert normalise_name(raw) == expected


def test_cleaning_a_written_table(tmp_path: Path, make_concrete, write):
    frame = make_concrete()
    write(tmp_path, "concrete", frame)
    cov = load_covariates("concrete", tmp_path)
    kept = frame.drop(index=17)
    raw = kept.iloc[:, 1:].to_numpy()
    expected = (raw - raw.min(0)) / (raw.max(0) - raw.min(0))
    np.testing.assert_allclose(cov.X, expected, rtol=0, atol=1e-14)
    np.testing.assert_array_equal(cov.y_real, kept.iloc[:, 0].to_numpy())
    assert cov.X.shape == (1030, 8) and cov.X.dtype == np.float64
    assert cov.origin == "local"
    assert cov.feature_names[0] == "Cement"
    np.testing.assert_allclose(cov.unscale(cov.X), raw, rtol=1e-12)
    np.testing.assert_allclose(cov.scale(raw[:5]), expected[:5], atol=1e-14)
    assert not cov.X.flags.writeable


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda f: f.drop(columns="Age"), r"'table columns' must contain the column 'Age'"),
        (
            lambda f: f.rename(columns={"Water": "H2O"}),
            r"must contain the column 'Water' .*got \[.*'H2O'",
        ),
        (
            lambda f: f.assign(Cement=5.0),
            r"'covariate Cement' must vary over the kept rows.*got 'the constant value 5.0'",
        ),
        (  # issue 68: scaled, 5 and 5 + 5e-12 became a full-range covariate
            lambda f: f.assign(Cement=5.0 + 5e-12 * (np.arange(len(f)) % 2)),
            r"'covariate Cement' must vary over the kept rows by more than rounding \(min-max "
            r"scaling needs max - min > 1e-09 × max\(\|min\|, \|max\|\)\); "
            r"got 'min 5.0, max 5.000000000005'",
        ),
        (lambda f: f.iloc[:900], r"'table' must clean to SPEC's \(N, d\) = \(1030, 8\).*899, 8"),
        (
            lambda f: f.assign(Age=["x1"] + [1.0] * 1030),
            r"parameter 'column Age' must hold numbers .*got 'x1'",
        ),
        (
            lambda f: f.assign(Water2=f["Water"]).rename(columns={"Water2": "water"}),
            r"must contain exactly one column matching 'Water'",
        ),
        (  # review fix: an inf survived cleaning and min-max scaling made the column NaN
            lambda f: f.assign(Age=np.where(np.arange(len(f)) == 3, -np.inf, f["Age"])),
            r"parameter 'column Age' must hold finite numbers .*got -inf",
        ),
    ],
    ids=[
        "missing",
        "renamed",
        "constant",
        "near-constant",
        "short",
        "non-numeric",
        "ambiguous",
        "infinite",
    ],
)
def test_bad_tables_give_clear_errors(tmp_path: Path, edit, match, make_concrete, write):
    write(tmp_path, "concrete", edit(make_concrete()))
    with pytest.raises(UdbenchError, match=match):
        load_covariates("concrete", tmp_path)


def test_missing_file_says_what_and_how(tmp_path: Path, empty_cache: Path):
    (tmp_path / "sarcos").mkdir()
    (tmp_path / "sarcos" / "sarcos_TEST_SPLIT_ONLY.csv.gz").write_bytes(b"")
    with pytest.raises(UdbenchError) as info:
        load_covariates("sarcos", tmp_path)
    msg = str(info.value)
    assert str(tmp_path / "sarcos" / "sarcos.csv.gz") in msg
    assert "holds only sarcos_TEST_SPLIT_ONLY.csv.gz" in msg
    assert str(empty_cache / "sarcos" / "sarcos.csv.gz") in msg
    assert "udbench datasets download sarcos" in msg and "44976" in msg and "48933" in msg


def test_data_dir_then_cache_then_embedded(
    tmp_path: Path, empty_cache: Path, monkeypatch, make_concrete, write
):
    monkeypatch.delenv("UDBENCH_DATA_DIR", raising=False)
    write(empty_cache, "concrete", make_concrete(seed=1))
    assert load_covariates("concrete").origin == "cached"
    write(tmp_path / "local", "concrete", make_concrete(seed=2))
    monkeypatch.setenv("UDBENCH_DATA_DIR", str(tmp_path / "local"))
    local = load_covariates("concrete")
    assert local.origin == "local"
    assert load_covariates("concrete", empty_cache.parent / "nothing").origin == "cached"
    diabetes = load_covariates("diabetes")
    assert diabetes.origin == "embedded" and diabetes.X.shape == (442, 10)
    np.testing.assert_array_equal(diabetes.X[:, 1], diabetes.X[:, 1].round())  # sex -> 0/1
