"""``udbench methods`` and ``udbench check-method`` through the CLI entry point."""

from __future__ import annotations

import json

from udbench.cli import main
from udbench.methods import REGISTRY
from udbench.methods.conformance import CHECKS


def test_methods_json_lists_registry(capsys):
    assert main(["methods", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    by_name = {r["name"]: r for r in rows}
    # udbench's own methods first, in the registry's order (new methods slot in by family).
    assert list(by_name)[: len(REGISTRY)] == list(REGISTRY)
    first_five = ["blr", "gp", "ngboost-bag", "catboost-ps", "nn-ens"]
    assert [name for name in by_name if name in first_five] == first_five
    assert by_name["gp"]["family"] == "gp" and by_name["gp"]["constant_aleatoric"] is True
    assert by_name["blr"]["available"] is True and by_name["blr"]["error"] is None
    assert {"target", "epistemic_from", "description"} <= set(by_name["nn-ens"])


def test_methods_table(capsys):
    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    for word in ("blr", "gp", "nn-ens", "linear", "constant", "closed form"):
        assert word in out


def test_check_method_passes_with_counts(capsys):
    assert main(["check-method", "blr", "--params", "max_iter=50"]) == 0
    out = capsys.readouterr().out
    assert "passed determinism" in out
    # one line per check of the battery (16 since constant_feature, issue 31 item 4)
    assert len(CHECKS) == 16
    assert out.strip().splitlines()[-1] == f"blr: {len(CHECKS)} passed, 0 failed, 0 skipped"


def test_check_method_exit_1_on_failure(capsys):
    status = main(["check-method", "methods_plugin_example:BrokenFlag", "--json"])
    assert status == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["passed"], report["failed"], report["skipped"]) == (len(CHECKS) - 1, 1, 0)
    assert [r["name"] for r in report["results"] if r["status"] == "failed"] == [
        "constant_aleatoric_flag"
    ]


def test_check_method_user_errors_exit_2(capsys):
    assert main(["check-method", "no-such-method"]) == 2
    assert "parameter 'name' must be one of" in capsys.readouterr().err
    assert main(["check-method", "blr", "--params", "max_iter=0"]) == 2
    assert "'max_iter' must be an integer >= 1; got 0" in capsys.readouterr().err


def test_methods_name_shows_hyperparameters_search_space_and_flags(capsys):
    from udbench.methods.registry import get_method_class

    assert main(["methods", "gp", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    cls = get_method_class("gp")
    assert info["class"] == "udbench.methods.gp:GP" and info["family"] == "gp"
    assert info["constant_aleatoric"] is True and info["epistemic_from"] == "closed_form"
    by_name = {r["name"]: r for r in info["hyperparameters"]}
    assert set(by_name) == set(cls().get_params(deep=False))
    assert by_name["max_iter"]["default"] == cls().max_iter
    assert by_name["max_iter"]["smoke"] == cls.smoke_params["max_iter"]
    assert by_name["init_lengthscale"]["search_space"] == cls.search_space["init_lengthscale"]
    assert main(["methods", "gp"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "family gp · AU constant in x · EU from closed form" in text
    assert "float [0.1, 5.0]" in text and "int [1, ∞)" in text and "float (0.0, ∞)" in text
    assert main(["methods", "no-such-method"]) == 2
    assert "parameter 'name' must be one of" in capsys.readouterr().err


def test_help_shows_flags_without_a_type(capsys):
    assert main(["leaderboard", "--help"]) == 0
    out = capsys.readouterr().out
    assert "<bool>" not in out and "--json" in out
    assert "[low, high]" in out  # square brackets in help texts are not eaten as markup
    assert "<int>" in out  # options with a value keep their type
