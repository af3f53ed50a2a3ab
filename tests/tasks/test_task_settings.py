"""Settings named once (issue 12 item 4): the task spec's defaults and fidelity, and the CLI
defaults taken from the same constants."""

from __future__ import annotations

import inspect
import json

import pytest
from typer.testing import CliRunner

from udbench._validation import UdbenchError
from udbench.cli import app
from udbench.commands.tasks import expand_grid, generate_command
from udbench.priors import DEFAULT_FIDELITY, Fidelity
from udbench.tasks import TaskSpec
from udbench.tasks.replacement import MAX_REPLACEMENTS
from udbench.tasks.spec import DEFAULT_DRAWS, MAX_DRAWS, MIN_DRAWS


def test_spec_defaults_are_the_named_constants() -> None:
    spec = TaskSpec("diabetes", "gp", "step", "ood", 0)
    assert spec.fidelity is DEFAULT_FIDELITY and spec.n_draws == DEFAULT_DRAWS
    assert (DEFAULT_FIDELITY, DEFAULT_DRAWS, MAX_REPLACEMENTS) == ("standard", 1000, 5)


@pytest.mark.parametrize("given", ["smoke", Fidelity.SMOKE])
def test_spec_holds_a_fidelity_and_writes_the_plain_name(given) -> None:
    spec = TaskSpec("diabetes", "gp", "step", "ood", 0, fidelity=given, n_draws=MIN_DRAWS)
    assert spec.fidelity is Fidelity.SMOKE and not spec.fidelity.is_reference
    data = spec.to_dict()
    # the task file format is unchanged: the fidelity is the plain string
    assert type(data["fidelity"]) is str and data["fidelity"] == "smoke"
    assert json.dumps(data, sort_keys=True) == json.dumps(
        {
            "coverage": "ood",
            "dataset": "diabetes",
            "family": "gp",
            "fidelity": "smoke",
            "n_draws": MIN_DRAWS,
            "noise": "step",
            "seed": 0,
        },
        sort_keys=True,
    )
    assert TaskSpec.from_dict(json.loads(json.dumps(data))) == spec
    assert "fidelity='smoke'" in repr(spec)


@pytest.mark.parametrize("bad", [MIN_DRAWS - 1, MAX_DRAWS + 1])
def test_spec_rejects_draws_outside_the_bounds(bad) -> None:
    rule = f"n_draws' must be an integer from {MIN_DRAWS} to {MAX_DRAWS}"
    with pytest.raises(UdbenchError, match=rule):
        TaskSpec("diabetes", "gp", "step", "ood", 0, n_draws=bad)


def test_cli_defaults_come_from_the_constants() -> None:
    params = inspect.signature(generate_command).parameters
    assert params["draws"].default.default == DEFAULT_DRAWS
    assert params["fidelity"].default.default == DEFAULT_FIDELITY.value
    assert params["max_replacements"].default.default == MAX_REPLACEMENTS
    out = CliRunner().invoke(app, ["generate", "--help"], env={"COLUMNS": "200"}).output
    for name in Fidelity:
        assert name.value in out


def test_cli_fidelity_is_checked_where_it_enters() -> None:
    with pytest.raises(UdbenchError, match=r"generate: parameter 'fidelity' must be one of"):
        expand_grid("diabetes", "gp", "step", "ood", "0", "fast", 100)
    (spec,) = expand_grid("diabetes", "gp", "step", "ood", "0", "paper", 100)
    assert spec.fidelity is Fidelity.PAPER
