"""User text is never markup (issue 31, item 2): every printing command with method labels
and paths that look like Rich markup or emoji codes prints them as they are.

Before: a label ``blr [/] v2`` crashed ``udbench leaderboard`` (``MarkupError``), a path with
folders ``a[`` / ``]b`` crashed ``udbench generate``, ``--out '[red]res:smile:'`` printed
``res😄`` and ``[bold]mark[/]`` printed ``mark``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from udbench.cli import main
from udbench.evaluation.runner import run_benchmark
from udbench.tasks.generate import get_prior

#: Labels that are markup or emoji codes to Rich.
LABELS = ("blr [/] v2", "[bold]mark[/]", "x:smile:")
#: Folder names that are markup or an emoji code to Rich.
PARTS = ("a[", "]b", "[red]res:smile:", "[bold]mark")

GRID = ["--datasets", "diabetes", "--families", "gp", "--noise", "homoscedastic"]
GRID += ["--coverage", "all", "--seeds", "0", "--draws", "40", "--fidelity", "smoke"]


def _flat(text: str) -> str:
    """Output without white space and table borders (tables wrap long cells)."""
    return re.sub(r"[\s│┃║|━─┼╇╋┡┩┏┓┗┛┳┻╭╮╰╯]", "", text)


@pytest.fixture(scope="module")
def weird(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("UDBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    mp.delenv("UDBENCH_DATA_DIR", raising=False)
    mp.setenv("COLUMNS", "250")
    get_prior.cache_clear()
    root = tmp_path_factory.mktemp("root").joinpath(*PARTS)
    root.mkdir(parents=True)
    yield root
    get_prior.cache_clear()
    mp.undo()


def _run(capsys, args: list[str]) -> tuple[int, str]:
    capsys.readouterr()
    rc = main(args)
    got = capsys.readouterr()
    return rc, got.out + got.err


def _assert_literal(text: str, *expected: str) -> None:
    flat = _flat(text)
    for want in expected:
        assert _flat(want) in flat, (want, text[-2000:])
    assert "😄" not in text and "Traceback" not in text and "MarkupError" not in text


@pytest.fixture(scope="module")
def results(weird):
    """Task files and a results folder with the labels of :data:`LABELS`, under the path."""
    tasks = weird / "tasks"
    assert main(["generate", *GRID, "--out", str(tasks)]) == 0
    out = weird / "results"
    specs = [(LABELS[0], "blr"), (LABELS[1], "blr:alpha_1=2e-6"), (LABELS[2], "blr:alpha_1=3e-6")]
    summary = run_benchmark(str(tasks), specs, out, workers=0, keep_predictions=True)
    assert summary.n_ok == 6
    return tasks, out


def test_printing_commands_show_paths_and_labels_as_they_are(weird, results, capsys) -> None:
    tasks, out = results
    rc, text = _run(capsys, ["generate", *GRID, "--out", str(tasks)])  # all skipped
    assert rc == 0
    _assert_literal(text, str(tasks))
    rc, text = _run(capsys, ["check", str(tasks)])
    assert rc == 0
    _assert_literal(text, str(tasks))
    rc, text = _run(capsys, ["run", str(tasks), "-m", "blr", "--out", str(out), "--workers", "0"])
    assert rc == 0
    _assert_literal(text, str(out))
    rc, text = _run(capsys, ["leaderboard", str(out), "--n-resamples", "50"])
    assert rc == 0
    _assert_literal(text, *LABELS)
    rc, text = _run(capsys, ["leaderboard", str(out), "--method", LABELS[0], "--n-resamples", "50"])
    assert rc == 0
    _assert_literal(text, LABELS[0])
    rc, text = _run(capsys, ["compare", str(out), str(out), "--n-resamples", "50"])
    assert rc == 0
    _assert_literal(text, *LABELS)
    rc, text = _run(capsys, ["score", str(out), "--loss", "crps"])
    assert rc == 0
    rc, text = _run(capsys, ["tune-summary", str(weird / "no-such[/]tuning")])
    assert rc == 2
    _assert_literal(text, "no-such[/]tuning")
    # an error message quoting a path: printed as it is too
    missing = weird / "missing[/]x:smile:"
    rc, text = _run(capsys, ["check", str(missing)])
    assert rc == 2 and text.count("error:") == 1
    _assert_literal(text, str(missing))
    # a JSON report holds the labels exactly
    rc, text = _run(capsys, ["leaderboard", str(out), "--json", "--n-resamples", "50"])
    assert rc == 0
    assert {r["method"] for r in json.loads(text)} == set(LABELS)


def test_risk_decompose_prints_its_path_as_it_is(weird, capsys) -> None:
    rng = np.random.default_rng(0)
    arrays = weird / "arr[x]:smile:.npz"
    np.savez(
        arrays,
        post_mean=rng.normal(size=5),
        post_var=np.ones(5),
        noise_var=np.ones(5),
        prediction=rng.normal(size=5),
    )
    rc, text = _run(capsys, ["risk", "decompose", str(arrays), "--out", str(weird / "o.csv")])
    assert rc == 0, text
    assert "😄" not in text and "Traceback" not in text


@pytest.mark.slow
def test_slow_printing_commands_show_paths_and_labels_as_they_are(weird, results, capsys):
    tasks, out = results
    rc, text = _run(capsys, ["report", str(out), "--out", str(weird / "report")])
    assert rc == 0
    _assert_literal(text, str(weird / "report"))
    rc, text = _run(
        capsys, ["analyze", str(out), "--out", str(weird / "an"), "--n-resamples", "50"]
    )
    assert rc == 0
    _assert_literal(text, str(weird / "an"))
    tuning = weird / "tuning"
    args = ["tune", str(tasks), "-m", "blr", "--trials", "2", "--out", str(tuning)]
    rc, text = _run(capsys, [*args, "--workers", "0", "--no-progress"])
    assert rc == 0, text
    _assert_literal(text, str(tuning))
    rc, text = _run(capsys, ["tune-summary", str(tuning)])
    assert rc == 0
    rc, text = _run(capsys, ["plan", "--datasets", "diabetes", "--measured", str(out)])
    assert rc == 0
    rc, text = _run(capsys, ["transfer", str(out), "--oracle", "gp:prior"])
    assert rc == 0, text
    _assert_literal(text, str(out / "transfer"))
    toml = weird / "s.toml"
    toml.write_text(
        'datasets = "diabetes"\nfamilies = "gp"\nnoise = "homoscedastic"\ncoverage = "all"\n'
        'seeds = "0"\nfidelity = "smoke"\ndraws = 40\nmethods = "blr"\nmethod_params = "smoke"\n'
    )
    suite = weird / "suite"
    rc, text = _run(
        capsys, ["suite", str(toml), "--out", str(suite), "--no-plan", "--stages", "check"]
    )
    assert rc == 2  # no task file yet: the check stage's user error
    _assert_literal(text, str(suite))


def test_every_console_is_made_with_markup_and_emoji_off() -> None:
    # the rule the sweep relies on: no command module makes its own Rich console
    src = Path(__file__).resolve().parents[2] / "src" / "udbench"
    offenders = [
        str(p.relative_to(src))
        for p in [*src.joinpath("commands").glob("*.py"), src / "cli.py"]
        if p.name != "_console.py" and re.search(r"(?<![\w.])Console\(", p.read_text())
    ]
    assert offenders == []
    from udbench.commands._console import make_console

    console = make_console()
    with console.capture() as cap:
        console.print("res:smile: [bold]mark[/] blr [/] v2")
    assert cap.get().strip() == "res:smile: [bold]mark[/] blr [/] v2"
