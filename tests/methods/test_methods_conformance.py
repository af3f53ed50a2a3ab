"""The conformance battery: every available registered method passes it; broken methods
fail exactly the checks they break; a user's class plugs in by import path."""

from __future__ import annotations

import pytest

from udbench._validation import UdbenchError
from udbench.methods import check_method, list_methods, parametrize_with_checks

AVAILABLE = [info.name for info in list_methods() if info.available]


@parametrize_with_checks(AVAILABLE)
def test_registered_method_passes_battery(method, check):
    # One test per (method, check), id "<method>-<check>", as a user's suite would run it; a
    # skipped check is reported skipped with its reason. JAX compilation is paid once per
    # process and data shape, so only a method's first check is slow.
    check(method)


def test_user_class_by_import_path_passes_battery():
    report = check_method("methods_plugin_example:KNNEnsemble")
    assert report.ok, [(r.name, r.message) for r in report.failed()]
    # A heteroscedastic method skips the constant-AU check, and says so.
    skipped = {r.name: r.message for r in report.results if r.status == "skipped"}
    assert list(skipped) == ["constant_aleatoric_flag"]
    assert "constant_aleatoric=False" in skipped["constant_aleatoric_flag"]
    assert report.summary().endswith("15 passed, 0 failed, 1 skipped")


@pytest.mark.parametrize(
    ("cls_name", "expected_failed"),
    [
        (
            "BrokenNegativeVariance",
            {"nonnegative_variances", "constant_target", "single_feature", "constant_feature"},
        ),
        (
            "BrokenNaN",
            {
                "output_shapes_finite",
                "refit_independence",
                "constant_target",
                "single_feature",
                "constant_feature",
            },
        ),
        (
            "BrokenShape",
            {"output_shapes_finite", "constant_target", "single_feature", "constant_feature"},
        ),
        ("BrokenNondeterministic", {"determinism"}),
        (
            "BrokenMutatesInput",  # y[0] += 1 also makes a tiny constant target non-constant
            {"no_input_mutation", "refit_independence", "target_units", "constant_target"},
        ),
        ("BrokenChangesHyperparameter", {"hyperparameters_unchanged", "refit_independence"}),
        ("BrokenRefit", {"refit_independence"}),
        ("BrokenFlag", {"constant_aleatoric_flag"}),
        ("BrokenNoRandomState", {"hyperparameter_declarations"}),
        ("BrokenAbsoluteFloor", {"target_units", "constant_target"}),
        ("BrokenUncentred", {"target_units", "constant_target"}),
        ("BrokenRawConstantColumn", {"constant_feature"}),
    ],
)
def test_broken_method_fails_the_right_checks(cls_name, expected_failed):
    report = check_method(f"methods_plugin_example:{cls_name}")
    failed = {r.name for r in report.failed()}
    assert failed == expected_failed
    assert not report.ok
    assert report.n_failed == len(expected_failed)
    assert all(r.message for r in report.failed())  # every failure says why


def test_nonnegative_check_reports_the_field_and_value():
    report = check_method("methods_plugin_example:BrokenNegativeVariance")
    result = next(r for r in report.results if r.name == "nonnegative_variances")
    assert result.message.startswith("epistemic has negative entries (min -0.")
    shapes = next(r for r in report.results if r.name == "output_shapes_finite")
    assert shapes.status == "passed"  # one property per check


def test_subset_of_checks_and_report_dict():
    report = check_method("blr", checks=("clone", "determinism"))
    assert [r.name for r in report.results] == ["clone", "determinism"]
    data = report.to_dict()
    assert (data["passed"], data["failed"], data["skipped"]) == (2, 0, 0)
    assert data["params"] == {"max_iter": "100"}


def test_check_method_rejects_unknown_check_and_non_method():
    with pytest.raises(UdbenchError, match="'checks' must contain names from"):
        check_method("blr", checks=("no_such_check",))
    with pytest.raises(UdbenchError, match="'cls_or_name' must be a BaseMethod subclass"):
        check_method(dict)  # type: ignore[arg-type]
    with pytest.raises(UdbenchError, match=r"must name a subclass of udbench\.methods\.BaseMethod"):
        check_method("methods_plugin_example:NotAMethod")
