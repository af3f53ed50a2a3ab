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


@pytest.mark.filterwarnings("ignore:A network error occurred")
def test_download_all_offline_ends_by_blaming_the_network(tmp_path, monkeypatch, capsys):
    import socket

    def offline(*args, **kwargs):
        raise OSError(101, "Network is unreachable")

    monkeypatch.setenv("UDBENCH_CACHE_DIR", str(tmp_path / "cache"))  # nothing cached
    monkeypatch.setattr(socket.socket, "connect", offline)
    monkeypatch.setattr(socket, "getaddrinfo", offline)
    monkeypatch.setattr(socket, "create_connection", offline)
    import time

    monkeypatch.setattr(time, "sleep", lambda seconds: None)  # the fetchers' retry delays
    from udbench.data.sources import downloadable_keys

    keys = downloadable_keys()
    assert main(["datasets", "download", "all"]) == 2
    err = capsys.readouterr().err
    last = " ".join(err.strip().splitlines()[-1].split())
    assert "parameter 'key'" not in err
    assert last.startswith(
        f"error: udbench datasets download: {len(keys)} of {len(keys)} datasets could not be "
        f"downloaded ({', '.join(keys)}): no network (or the sources are down): their fetches "
        "failed; the reasons are above."
    ), last


def test_status_names_the_setting_that_makes_records_stale(monkeypatch, capsys) -> None:
    """issue 68, item 4c: gp-small's shipped blr sweeps ran 30 trials; a status with
    --trials 50 calls them stale and says why, with the option that counts them."""
    from udbench.cli import main

    monkeypatch.setenv("COLUMNS", "200")
    assert main(["campaign", "status", "tuning", "-m", "blr", "--trials", "50"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "│ blr │ 0 │ 24 │ 0 │ 0 │" in out
    assert (
        "note: 24 stale record(s) were made with trials = 30, where this status has 50 "
        "(give --trials 30 to count them)"
    ) in out


def test_settings_difference_names_settings_and_numerics() -> None:
    from udbench.campaigns.engine import Unit, settings_difference

    unit = Unit("u", "k", {"trials": 50, "seed": 0}, {"gp": 2}, work=dict)
    record = {"settings": {"trials": 30, "seed": 0, "old": 1}, "numerics": {"gp": 1}}
    assert settings_difference(unit, record) == [
        ("old", 1, None),
        ("trials", 30, 50),
        ("numerics.gp", 1, 2),
    ]
    assert (
        settings_difference(unit, {"settings": {"trials": 50, "seed": 0}, "numerics": {"gp": 2}})
        == []
    )
