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


def test_datasets_group_data_dir_is_honoured_by_show(tmp_path, monkeypatch, capsys):
    # `udbench datasets --data-dir X show NAME` used to ignore X and show NAME from elsewhere
    monkeypatch.delenv("UDBENCH_DATA_DIR", raising=False)
    missing = tmp_path / "nowhere"
    assert main(["datasets", "--data-dir", str(missing), "show", "diabetes"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert err == (
        "error: udbench datasets show: parameter '--data-dir' must be an existing folder; "
        f"got '{missing}'"
    ), err
    # both given and different: refused, naming both
    other = tmp_path / "other"
    other.mkdir()
    assert (
        main(
            ["datasets", "--data-dir", str(tmp_path), "show", "diabetes", "--data-dir", str(other)]
        )
        == 2
    )
    err = " ".join(capsys.readouterr().err.split())
    assert "parameter '--data-dir' must be given once" in err and str(tmp_path) in err, err
    # the group's folder, when it exists, is the one read
    assert main(["datasets", "--data-dir", str(tmp_path), "show", "diabetes", "--json"]) == 0
    assert '"n_rows": 442' in capsys.readouterr().out
