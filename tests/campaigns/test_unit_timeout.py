"""A time limit per campaign unit (``udbench campaign run --unit-timeout``): a unit that runs
past it is stopped and recorded as failed, the run goes on, and a later run retries it only
under a longer limit (or none)."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import pytest

from udbench._validation import UdbenchError
from udbench.campaigns import Unit, read_record, run_campaign, unit_status
from udbench.campaigns._timeout import TIMED_OUT_KEY, UnitTimedOut, skip_reason, time_limit
from udbench.campaigns.engine import record_file


def _slow(seconds: float, log: list[str], name: str):
    def work() -> dict:
        log.append(name)
        end = time.monotonic() + seconds
        while time.monotonic() < end:  # Python code: stopped at once by the alarm
            time.sleep(0.01)
        return {"slept": seconds}

    return work


def test_a_unit_past_its_limit_is_recorded_failed_and_the_run_goes_on(tmp_path: Path) -> None:
    log: list[str] = []
    units = [
        Unit("slow", "toy", {}, {"toy": 1}, _slow(30.0, log, "slow")),
        Unit("quick", "toy", {}, {"toy": 1}, _slow(0.0, log, "quick")),
    ]
    t0 = time.monotonic()
    counts = run_campaign(units, tmp_path, unit_timeout=0.3)
    assert time.monotonic() - t0 < 10.0  # not the 30 s the unit would take
    assert (counts["failed"], counts["done"]) == (1, 1) and log == ["slow", "quick"]
    rec = read_record(record_file(tmp_path, "slow"))
    assert rec is not None and rec["status"] == "failed"
    assert rec[TIMED_OUT_KEY] == pytest.approx(0.3)
    assert "timed out after 0.3 s (the run's --unit-timeout)" in rec["error"]
    assert 0.25 <= rec["wall_seconds"] < 5.0
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # the alarm is off again
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL  # and its handler restored
    # the same limit, or a shorter one: not retried (it would time out again)
    said: list[str] = []
    again = run_campaign(units, tmp_path, unit_timeout=0.2, progress=said.append)
    assert (again["left"], again["skipped"], again["failed"]) == (1, 1, 0)
    assert log == ["slow", "quick"]
    assert any("timed out under a limit of 0.3 s; not retried under 0.2 s" in s for s in said)
    assert unit_status(units[0], tmp_path)[0] == "failed"  # still counted as failed
    # a longer limit retries it (and it finishes this time)
    units[0] = Unit("slow", "toy", {}, {"toy": 1}, _slow(0.05, log, "slow"))
    assert run_campaign(units, tmp_path, unit_timeout=5.0)["done"] == 1
    rec = read_record(record_file(tmp_path, "slow"))
    assert rec["status"] == "done" and TIMED_OUT_KEY not in rec


def test_without_a_limit_a_timed_out_unit_is_retried_and_a_sweep_always_is() -> None:
    from udbench.campaigns._timeout import RESUMABLE_KINDS
    from udbench.tuning.shipped import CAMPAIGN_KIND

    cell = Unit("c", "untuned", {}, {}, lambda: {})
    record = {"status": "failed", TIMED_OUT_KEY: 60.0}
    assert skip_reason(cell, record, None) is None
    assert skip_reason(cell, record, 61.0) is None
    assert "timed out under a limit of 1.0 min" in (skip_reason(cell, record, 60.0) or "")
    assert skip_reason(cell, {"status": "failed", "error": "x"}, 1.0) is None  # another failure
    # a tuning sweep keeps its finished trials in its journal: retried, it goes on
    assert RESUMABLE_KINDS == {CAMPAIGN_KIND}
    sweep = Unit("m/c", CAMPAIGN_KIND, {}, {}, lambda: {})
    assert skip_reason(sweep, record, 60.0) is None


def test_a_timeout_a_library_turns_into_its_own_error_is_still_a_timeout(tmp_path) -> None:
    def cleanup_fails() -> dict:
        try:
            _slow(30.0, [], "x")()
        finally:
            raise RuntimeError("could not release the pool")  # its context: the timeout
        return {}

    unit = Unit("u", "toy", {}, {"toy": 1}, cleanup_fails)
    assert run_campaign([unit], tmp_path, unit_timeout=0.2)["failed"] == 1
    rec = read_record(record_file(tmp_path, "u"))
    assert rec["error"] == "RuntimeError: could not release the pool"
    assert rec[TIMED_OUT_KEY] == pytest.approx(0.2)  # so not retried under the same limit
    assert run_campaign([unit], tmp_path, unit_timeout=0.2)["left"] == 1


def test_a_library_catching_exception_does_not_swallow_the_timeout() -> None:
    def stubborn() -> None:
        while True:
            try:
                time.sleep(0.01)
            except Exception:  # what a library's broad clean-up does
                pass

    with pytest.raises(UnitTimedOut), time_limit(0.1):
        stubborn()
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), 3.6e10, True, "1"])
def test_a_bad_limit_is_refused_by_name(tmp_path: Path, bad) -> None:
    with pytest.raises(UdbenchError, match="run_campaign: parameter 'unit_timeout' must be"):
        run_campaign([], tmp_path, unit_timeout=bad)


def test_a_limit_outside_the_main_thread_is_refused(tmp_path: Path) -> None:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            run_campaign([], tmp_path, unit_timeout=1.0)
        except BaseException as err:  # reported to the test's thread
            errors.append(err)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert len(errors) == 1 and "outside the main thread" in str(errors[0])


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "1e6"])
def test_the_option_must_be_a_positive_number_of_hours(tmp_path, capsys, value) -> None:
    from udbench.cli import main

    args = ["campaign", "run", "mcmc", "--nice", "0", "--records", str(tmp_path / "r")]
    assert main([*args, "--work", str(tmp_path / "w"), "--unit-timeout", value]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "parameter 'unit-timeout' must be a number of hours > 0 and <= 27777" in err
    assert not (tmp_path / "r").exists()


def test_the_option_reaches_the_run_in_seconds_and_each_worker(tmp_path, monkeypatch) -> None:
    import udbench.campaigns as campaigns
    from udbench.cli import main
    from udbench.commands._campaign_workers import worker_commands

    cmds = worker_commands({"campaign": "mcmc", "unit_timeout": 0.5}, 2)
    assert len(cmds) == 2 and all(c[c.index("--unit-timeout") + 1] == "0.5" for c in cmds)
    seen: dict = {}

    def fake_run(units, records, **kw):
        seen.update(kw, n=len(units))
        return {"skipped": 0, "done": 0, "failed": 0, "left": 0, "unavailable": 0, "busy": 0}

    monkeypatch.setattr(campaigns, "run_campaign", fake_run)
    args = ["campaign", "run", "mcmc", "--parts", "bnn-sweep", "--only", "bnn-sweep/d8"]
    args += ["--nice", "0", "--records", str(tmp_path / "r"), "--work", str(tmp_path / "w")]
    assert main([*args, "--unit-timeout", "0.25"]) == 0
    assert seen["n"] == 1 and seen["unit_timeout"] == pytest.approx(900.0)


_STUCK = """
import signal, sys, time
import udbench.campaigns._timeout as t
from udbench.campaigns import Unit, run_campaign

t.GRACE_SECONDS = 0.5

def stuck():
    # as a unit inside one long compiled call: the alarm's Python handler cannot run
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    time.sleep(60)
    return {}

units = [Unit("stuck", "toy", {}, {"toy": 1}, stuck), Unit("next", "toy", {}, {"toy": 1}, dict)]
run_campaign(units, sys.argv[1], unit_timeout=0.3, progress=print)
print("not reached")
"""


def test_a_unit_that_does_not_return_to_python_is_hard_stopped(tmp_path: Path) -> None:
    """A unit stuck where the alarm cannot reach it (here: SIGALRM blocked, as inside one long
    XLA call) is ended GRACE_SECONDS after the alarm: its failed record is written, with the
    limit, and the run ends with status 124; a rerun under the same limit leaves it and goes
    on with the others."""
    import subprocess
    import sys

    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", _STUCK, str(tmp_path)],
        capture_output=True, text=True, timeout=50,
    )  # fmt: skip
    assert proc.returncode == 124, proc.stderr
    assert time.monotonic() - t0 < 40  # not the 60 s the unit would sleep
    assert "not reached" not in proc.stdout
    assert "stuck: FAILED (timed out after 0.3 s (the run's --unit-timeout), and it did not " in (
        proc.stdout
    )
    rec = read_record(record_file(tmp_path, "stuck"))
    assert rec is not None and rec["status"] == "failed" and rec[TIMED_OUT_KEY] == 0.3
    assert rec["error"].startswith("UnitTimedOut: timed out after 0.3 s")
    assert "within 0.5 s more (inside compiled code): the run was ended" in rec["error"]
    assert 0.7 <= rec["wall_seconds"] < 30 and rec["settings"] == {} and rec["kind"] == "toy"
    assert rec["hard_stopped"] is True
    assert read_record(record_file(tmp_path, "next")) is None  # the run ended there
    units = [
        Unit("stuck", "toy", {}, {"toy": 1}, dict),
        Unit("next", "toy", {}, {"toy": 1}, dict),
    ]
    counts = run_campaign(units, tmp_path, unit_timeout=0.3)
    assert (counts["left"], counts["done"]) == (1, 1)
    # a hard-stopped tuning sweep is not retried under the same limit either (a rerun would
    # end on it again), though a sweep stopped the soft way is
    from udbench.tuning.shipped import CAMPAIGN_KIND

    sweep = Unit("m/c", CAMPAIGN_KIND, {}, {}, dict)
    assert skip_reason(sweep, rec, 0.3) is not None
    assert skip_reason(sweep, {**rec, "hard_stopped": False}, 0.3) is None


def test_an_alarm_in_the_clean_up_after_a_finished_block_is_ignored() -> None:
    """The alarm landing after the block's work returned, as the clean-up begins (raised
    there by a trace function, the way a signal handler would), neither fails the block nor
    leaves the alarm, its handler or the watchdog behind (a review reproduced a late alarm
    that left the watchdog armed to end the run during the next unit)."""
    import inspect
    import sys
    import threading

    import udbench.campaigns._timeout as t

    gen_fn = t.time_limit.__wrapped__
    lines, first = inspect.getsourcelines(gen_fn)
    target = first + next(i for i, line in enumerate(lines) if 'state["finished"] = True' in line)
    fired: list[int] = []

    def tracer(frame, event, arg):
        if frame.f_code is not gen_fn.__code__:
            return None

        def local(frame, event, arg):
            if event == "line" and frame.f_lineno == target and not fired:
                fired.append(frame.f_lineno)
                raise UnitTimedOut(5.0)
            return local

        return local

    before = threading.active_count()
    sys.settrace(tracer)
    try:
        with time_limit(5.0, (Path("/nonexistent"), {}, lambda p, r: None)):
            pass  # the block finished
    finally:
        sys.settrace(None)
    assert fired == [target]  # the late alarm came, and was ignored
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL
    time.sleep(0.05)
    assert threading.active_count() == before  # the watchdog timer is gone
