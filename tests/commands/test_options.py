"""The CLI option checks shared by the sub-commands (udbench.commands._options)."""

from __future__ import annotations

from pathlib import Path

import pytest

from udbench._validation import UdbenchError
from udbench.commands import _options, datasets, run, tasks
from udbench.commands._options import (
    check_data_dir,
    check_out_dir,
    parse_choice_list,
    parse_seeds,
)
from udbench.tasks.generate import REPLACEMENT_STRIDE


@pytest.mark.parametrize(
    ("text", "seeds"),
    [("0", [0]), ("3-5", [3, 4, 5]), (" 7, 0-1 ,1", [0, 1, 7]), ("all", list(range(10)))],
)
def test_parse_seeds(text: str, seeds: list[int]) -> None:
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize("text", ["", "x", "5-3", "-1", "1,,2", "1-b"])
def test_parse_seeds_rejects_malformed_text_naming_command_and_value(text: str) -> None:
    with pytest.raises(UdbenchError, match=r"tune: parameter 'seeds' must be 'all', N, A-B"):
        parse_seeds(text, command="tune")


def test_parse_seeds_reserves_replacement_seeds() -> None:
    assert parse_seeds(f"{REPLACEMENT_STRIDE - 1}") == [REPLACEMENT_STRIDE - 1]
    with pytest.raises(UdbenchError, match=f"must be < {REPLACEMENT_STRIDE}"):
        parse_seeds(f"0,{REPLACEMENT_STRIDE}")


def test_parse_choice_list() -> None:
    choices = ["a", "b", "c"]
    assert parse_choice_list("generate", "noise", "all", choices) == choices
    assert parse_choice_list("generate", "noise", " c, a ,", choices) == ["c", "a"]
    with pytest.raises(UdbenchError, match=r"generate: parameter 'noise' must be 'all' or a"):
        parse_choice_list("generate", "noise", " , ", choices)
    with pytest.raises(UdbenchError, match=r"'noise'.*'d'"):
        parse_choice_list("generate", "noise", "a,d", choices)


def test_check_out_dir(tmp_path: Path) -> None:
    check_out_dir("udbench run", tmp_path)  # an existing folder
    check_out_dir("udbench run", tmp_path / "new" / "deeper")  # created later
    file = tmp_path / "f.txt"
    file.write_text("x")
    with pytest.raises(UdbenchError, match=r"udbench run: parameter '--out' must be a folder"):
        check_out_dir("udbench run", file)
    with pytest.raises(UdbenchError, match=r"'--out' must lie under a folder, not under a file"):
        check_out_dir("udbench run", file / "sub")


def test_check_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UDBENCH_DATA_DIR", str(tmp_path))
    check_data_dir("generate", None)
    check_data_dir("generate", tmp_path)
    with pytest.raises(UdbenchError, match=r"generate: parameter '--data-dir' must be an exist"):
        check_data_dir("generate", tmp_path / "missing")
    monkeypatch.setenv("UDBENCH_DATA_DIR", str(tmp_path / "missing"))
    with pytest.raises(UdbenchError, match=r"parameter '\$UDBENCH_DATA_DIR' must be an existing"):
        check_data_dir("udbench datasets", None)


def test_commands_use_the_one_shared_check() -> None:
    assert run.check_out_dir is tasks.check_out_dir is _options.check_out_dir
    assert datasets.check_data_dir is tasks.check_data_dir is _options.check_data_dir
