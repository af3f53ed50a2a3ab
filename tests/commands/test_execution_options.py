"""The execution options ``--workers/--scheduler/--cluster-config/--pin`` are declared once
(udbench.commands._options) and checked once (:func:`execution_options`) for every command
that takes them (issue 33, item 5)."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest
from test_bad_numbers import HUGE, _run_cases
from typer.main import get_command

from udbench._validation import UdbenchError
from udbench.cli import app
from udbench.commands import _options
from udbench.commands._options import (
    ClusterConfigOpt,
    ExecutionOptions,
    PinOpt,
    SchedulerOpt,
    WorkersOpt,
    execution_options,
)

#: Command → the shared option types its function declares (``generate``'s ``--workers`` has
#: its own default 1 and the ``--jobs`` alias; ``suite``'s its own help: generate's default
#: differs from run's; neither passes ``--pin``).
SHARED: dict[str, dict[str, object]] = {
    "run": {
        "workers": WorkersOpt,
        "scheduler": SchedulerOpt,
        "cluster_config": ClusterConfigOpt,
        "pin": PinOpt,
    },
    "tune": {
        "workers": WorkersOpt,
        "scheduler": SchedulerOpt,
        "cluster_config": ClusterConfigOpt,
        "pin": PinOpt,
    },
    "generate": {"scheduler": SchedulerOpt, "cluster_config": ClusterConfigOpt},
    "suite": {"scheduler": SchedulerOpt, "cluster_config": ClusterConfigOpt},
    "quickstart": {"workers": WorkersOpt},
}


def _callbacks() -> dict[str, typing.Any]:
    return {c.name or c.callback.__name__: c.callback for c in app.registered_commands}


@pytest.mark.parametrize("name", sorted(SHARED))
def test_commands_declare_the_execution_options_through_the_shared_types(name: str) -> None:
    hints = typing.get_type_hints(_callbacks()[name], include_extras=True)
    for param, shared in SHARED[name].items():
        # the same typer.Option object: declared once, not copied (a copy compares unequal)
        assert hints[param] == shared, (name, param)


def test_help_texts_of_the_execution_options_are_the_same_in_every_command() -> None:
    root = get_command(app)
    commands = {n: root.commands[n] for n in ("run", "tune", "generate", "suite")}  # type: ignore[attr-defined]
    for study in ("wine-ood", "spectral-norm"):
        commands[f"study {study}"] = root.commands["study"].commands[study]  # type: ignore[attr-defined]
    helps: dict[str, set[str]] = {}
    for name, cmd in commands.items():
        for p in cmd.params:
            if p.name in ("scheduler", "cluster_config", "pin", "workers"):
                helps.setdefault(p.name, set()).add(p.help)
        assert any(p.name == "scheduler" for p in cmd.params) or name.startswith("study"), name
    assert helps["scheduler"] == {_options.SCHEDULER_HELP}
    assert helps["cluster_config"] == {_options.CLUSTER_CONFIG_HELP}
    assert helps["pin"] == {_options.PIN_HELP}
    assert _options.WORKERS_HELP in helps["workers"]


def test_execution_options_checks_once_and_gives_the_library_keywords(tmp_path: Path) -> None:
    got = execution_options("udbench run", 0, None, tmp_path / "c.toml", False)
    assert got == ExecutionOptions("udbench run", 0, None, tmp_path / "c.toml", False)
    assert got.kwargs() == {
        "workers": 0,
        "scheduler": None,
        "cluster_config": tmp_path / "c.toml",
        "pin": False,
    }
    execution_options("udbench run").check_deployment()  # nothing to check: no Dask import
    with pytest.raises(
        UdbenchError,
        match=r"^udbench tune: parameter '--scheduler' must not be combined with "
        r"--cluster-config; got 'tcp://h:1'$",
    ):
        execution_options("udbench tune", None, "tcp://h:1", tmp_path / "c.toml")
    with pytest.raises(UdbenchError, match=r"'--workers' must be an integer from 0 to"):
        execution_options("udbench run", -1)


#: Both --scheduler and --cluster-config: refused in one line before any heavy import.
BOTH = ["--scheduler", "tcp://127.0.0.1:1", "--cluster-config", "c.toml"]
CASES = [
    ("run", ["{E}", "-m", "blr", *BOTH, "--out", "{O}"], "--scheduler"),
    ("tune", ["{E}", "-m", "blr", *BOTH, "--out", "{O}"], "--scheduler"),
    ("generate", [*BOTH, "--out", "{O}"], "--scheduler"),
    ("suite", ["quickstart", "--out", "{O}", *BOTH], "--scheduler"),
    ("study spectral-norm", ["--out", "{O}", "-w", HUGE], "--workers"),
]


def test_scheduler_with_cluster_config_is_one_line_before_heavy_imports(tmp_path: Path) -> None:
    for (words, _, option), r in zip(CASES, _run_cases(tmp_path, CASES), strict=True):
        lines = [line for line in r["err"].splitlines() if line.strip()]
        assert r["rc"] == 2, (words, r)
        assert len(lines) == 1 and lines[0].startswith("error:") and f"'{option}'" in lines[0]
        assert not r["imported"], (words, r["imported"])
