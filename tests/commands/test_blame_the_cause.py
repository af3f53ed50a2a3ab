"""Messages that blame the cause (issue 68, item 4): each names the command and setting at fault."""

from __future__ import annotations

import pytest

from udbench.cli import main


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--datasets", "nosuch"], "parameter 'datasets'"),
        (["--seeds", "x"], "parameter 'seeds'"),
        (["--fidelity", "x"], "parameter 'fidelity'"),
    ],
)
def test_plan_errors_name_plan_not_generate(args, says, capsys):
    assert main(["plan", *args]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert err.startswith("error: udbench plan: " + says), err
    assert "generate" not in err
