"""``udbench methods`` and ``udbench check-method`` through the CLI entry point."""

from __future__ import annotations

import json

from udbench.cli import main
from udbench.methods import REGISTRY


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
    assert out.strip().splitlines()[-1] == "blr: 15 passed, 0 failed, 0 skipped"


def test_check_method_exit_1_on_failure(capsys):
    status = main(["check-method", "methods_plugin_example:BrokenFlag", "--json"])
    assert status == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["passed"], report["failed"], report["skipped"]) == (14, 1, 0)
    assert [r["name"] for r in report["results"] if r["status"] == "failed"] == [
        "constant_aleatoric_flag"
    ]


def test_check_method_user_errors_exit_2(capsys):
    assert main(["check-method", "no-such-method"]) == 2
    assert "parameter 'name' must be one of" in capsys.readouterr().err
    assert main(["check-method", "blr", "--params", "max_iter=0"]) == 2
    assert "'max_iter' must be an integer >= 1; got 0" in capsys.readouterr().err
