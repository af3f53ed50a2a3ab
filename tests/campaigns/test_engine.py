"""The campaign engine: records, resume after a kill, numerics versions, failures, the lock."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from udbench._validation import InputUnavailableError, UdbenchError
from udbench.campaigns import Unit, load_done_records, read_record, run_campaign, unit_status
from udbench.campaigns.engine import record_file


def _unit(uid: str, value: int, numerics: int = 1, log: list | None = None) -> Unit:
    def work() -> dict:
        if log is not None:
            log.append(uid)
        return {"value": value}

    return Unit(uid, "toy", {"value": value}, {"toy": numerics}, work)


def test_records_are_written_and_a_rerun_skips_them(tmp_path: Path) -> None:
    log: list[str] = []
    units = [_unit("a/one", 1, log=log), _unit("a/two", 2, log=log)]
    assert run_campaign(units, tmp_path) == {
        "skipped": 0,
        "done": 2,
        "failed": 0,
        "left": 0,
        "unavailable": 0,
        "busy": 0,
    }
    rec = read_record(record_file(tmp_path, "a/two"))
    assert rec is not None and rec["status"] == "done" and rec["result"] == {"value": 2}
    assert rec["numerics"] == {"toy": 1} and rec["settings"] == {"value": 2}
    assert {"udbench", "host", "load_1min"} <= set(rec["code"]) | set(rec["machine"])
    assert rec["cpu_seconds"] >= 0 and rec["wall_seconds"] >= 0
    assert run_campaign(units, tmp_path)["skipped"] == 2
    assert log == ["a/one", "a/two"]  # nothing redone
    assert not (tmp_path / ".udbench.lock").exists()


def test_records_survive_commits_but_not_a_numerics_change(tmp_path: Path) -> None:
    run_campaign([_unit("u", 1)], tmp_path)
    path = record_file(tmp_path, "u")
    rec = json.loads(path.read_text())
    rec["code"] = {"udbench": "0.0.0", "commit": "0" * 40, "dirty": True}  # another commit
    path.write_text(json.dumps(rec))
    assert unit_status(_unit("u", 1), tmp_path)[0] == "done"
    # the sampler's numerics changed: the record is stale, left out of summaries, redone
    assert unit_status(_unit("u", 1, numerics=2), tmp_path)[0] == "stale"
    done, notes = load_done_records(tmp_path, "toy", {"toy": 2})
    assert done == [] and len(notes) == 1 and "numerics" in notes[0]
    log: list[str] = []
    counts = run_campaign([_unit("u", 1, numerics=2, log=log)], tmp_path)
    assert counts["done"] == 1 and log == ["u"]
    assert load_done_records(tmp_path, "toy", {"toy": 2})[0][0]["numerics"] == {"toy": 2}
    # other settings are stale too
    assert unit_status(_unit("u", 5, numerics=2), tmp_path)[0] == "stale"


def test_a_failed_unit_is_recorded_the_run_goes_on_and_a_rerun_retries(tmp_path: Path) -> None:
    def boom() -> dict:
        raise RuntimeError("sampler diverged")

    log: list[str] = []
    units = [Unit("bad", "toy", {}, {"toy": 1}, boom), _unit("good", 1, log=log)]
    counts = run_campaign(units, tmp_path)
    assert counts == {"skipped": 0, "done": 1, "failed": 1, "left": 0, "unavailable": 0, "busy": 0}
    assert log == ["good"]
    rec = read_record(record_file(tmp_path, "bad"))
    assert rec["status"] == "failed" and "sampler diverged" in rec["error"]
    assert unit_status(units[0], tmp_path)[0] == "failed"
    done, notes = load_done_records(tmp_path)
    assert [r["unit_id"] for r in done] == ["good"] and "bad: failed" in notes[0]
    assert run_campaign(units, tmp_path)["failed"] == 1  # retried


def test_a_unit_whose_input_is_missing_writes_no_record_and_runs_once_it_is_there(
    tmp_path: Path,
) -> None:
    """A missing raw table is no failure of the unit: no record (it stays missing), the run
    goes on, the message is said in full once per missing input, then only named."""
    table = tmp_path / "table.csv"

    def needs_table(uid: str) -> Unit:
        def work() -> dict:
            if not table.is_file():
                raise InputUnavailableError(f"no file at {table}; put it there", "the table")
            return {"value": 1}

        return Unit(uid, "toy", {}, {"toy": 1}, work)

    lines: list[str] = []
    units = [needs_table("a"), _unit("b", 2), needs_table("c")]
    # --max-units bounds the units started, the unavailable ones included
    assert run_campaign(units, tmp_path / "records", max_units=1) == {
        "skipped": 0,
        "done": 0,
        "failed": 0,
        "left": 2,
        "unavailable": 1,
        "busy": 0,
    }
    counts = run_campaign(units, tmp_path / "records", progress=lines.append)
    assert counts == {"skipped": 0, "done": 1, "failed": 0, "left": 0, "unavailable": 2, "busy": 0}
    assert [unit_status(u, tmp_path / "records")[0] for u in units] == [
        "missing",
        "done",
        "missing",
    ]
    assert f"a: not run, no record written: no file at {table}; put it there" in lines
    assert "c: not run (the table is missing, see above)" in lines
    table.write_text("x")  # provided: the next run does exactly the two units
    assert run_campaign(units, tmp_path / "records") == {
        "skipped": 1,
        "done": 2,
        "failed": 0,
        "left": 0,
        "unavailable": 0,
        "busy": 0,
    }


def test_corrupt_records_are_reported_and_redone(tmp_path: Path) -> None:
    record_file(tmp_path, "u").write_text("{not json")
    assert unit_status(_unit("u", 1), tmp_path)[0] == "corrupt"
    assert "unreadable" in load_done_records(tmp_path)[1][0]
    assert run_campaign([_unit("u", 1)], tmp_path)["done"] == 1


def test_limits_leave_units_for_later(tmp_path: Path) -> None:
    units = [_unit(f"u{i}", i) for i in range(4)]
    assert run_campaign(units, tmp_path, max_units=1) == {
        "skipped": 0,
        "done": 1,
        "failed": 0,
        "left": 3,
        "unavailable": 0,
        "busy": 0,
    }
    assert run_campaign(units, tmp_path, max_seconds=0.0)["left"] == 3  # no new unit starts


def test_finish_within_starts_only_the_units_projected_to_finish_in_time(tmp_path: Path) -> None:
    """A 60 s budget: a unit projected at 600 s is left for the next run (a killed unit loses
    its work), the 1 s units after it and one without a projection still run; the first
    three left are named, the rest counted."""
    log: list[str] = []
    units = [_unit(f"u{i}", i, log=log) for i in range(8)]
    need = {"u1": 600.0, "u3": None, "u4": 61.0, "u5": 70.0, "u6": 80.0, "u7": 90.0}
    lines: list[str] = []
    counts = run_campaign(
        units,
        tmp_path,
        finish_within=60.0,
        projected=lambda u: need.get(u.unit_id, 1.0),
        progress=lines.append,
    )
    assert counts == {"skipped": 0, "done": 3, "failed": 0, "left": 5, "unavailable": 0, "busy": 0}
    assert log == ["u0", "u2", "u3"]
    said = [line for line in lines if "left for the next run" in line]
    assert len(said) == 4 and said[0].startswith("u1: left for the next run (projected 10.0 min")
    assert said[-1] == "… 5 unit(s) in all left for the next run: they would not finish in time"
    # the default projection is the unit's own estimate; no time left: nothing starts
    late = Unit("late", "toy", {}, {"toy": 1}, dict, 3600.0)
    assert run_campaign([late], tmp_path, finish_within=60.0)["left"] == 1
    assert run_campaign([_unit("v", 1)], tmp_path, finish_within=1e-9)["left"] == 1
    # counted from the caller's start (before it built the units), not from this call's
    import time as clock

    early = clock.perf_counter() - 50.0  # 50 s spent before the call: 10 s left of 60
    counts = run_campaign(
        [_unit("w", 1)], tmp_path, finish_within=60.0, projected=lambda u: 20.0, started=early
    )
    assert counts["left"] == 1 and counts["done"] == 0


def test_bad_unit_ids_and_duplicates_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UdbenchError, match="unit_id"):
        _unit("../escape", 1)
    with pytest.raises(UdbenchError, match="unit_id"):
        _unit("with space", 1)
    with pytest.raises(UdbenchError, match="unique"):
        run_campaign([_unit("a", 1), _unit("a", 2)], tmp_path)


def test_a_unit_another_run_works_on_is_skipped_and_left_missing(tmp_path: Path) -> None:
    """One writer per unit, not per folder: a held claim skips that unit only (``busy``), and
    the next run does it; releasing a claim leaves no claim file behind."""
    from udbench.campaigns._claims import CLAIMS_DIR, claim_path, unit_claim
    from udbench.campaigns.engine import claimed_units

    units = [_unit("a/one", 1), _unit("a/two", 2), _unit("a/three", 3)]
    lines: list[str] = []
    with unit_claim(tmp_path, "a/two", "udbench campaign run"):  # another live run
        counts = run_campaign(units, tmp_path, progress=lines.append)
        held = claimed_units(tmp_path)  # what campaign status reports as being run now
    assert list(held) == ["a/two"] and held["a/two"]["pid"] == os.getpid()
    assert claimed_units(tmp_path) == {}
    assert counts["done"] == 2 and counts["busy"] == 1
    assert not record_file(tmp_path, "a/two").exists()
    assert any(line.startswith("a/two: being run by another process (pid ") for line in lines)
    assert run_campaign(units, tmp_path) == {
        "skipped": 2,
        "done": 1,
        "failed": 0,
        "left": 0,
        "unavailable": 0,
        "busy": 0,
    }
    assert list((tmp_path / CLAIMS_DIR).iterdir()) == []
    # flat claim files: "a/b" and "a__b" are different units with different claims
    assert claim_path(tmp_path, "a/b") != claim_path(tmp_path, "a__b")
    assert claim_path(tmp_path, "a/b").parent == tmp_path / CLAIMS_DIR


def test_a_unit_starts_only_once_the_units_it_requires_are_done(tmp_path: Path) -> None:
    """A transfer unit scores its tuned cell's predictions: it waits for the cell's record
    (tried again after the other units), and one whose cell another run is doing, or whose
    cell failed, is left for the next run with no record (it never redoes the cell then)."""
    from udbench.campaigns._claims import unit_claim

    log: list[str] = []
    cell = _unit("tuned/x", 1, log=log)
    score = Unit("transfer/x", "toy", {"value": 2}, {"toy": 1}, lambda: log.append("t") or {})
    score = Unit(**{**score.__dict__, "requires": (cell,)})
    lines: list[str] = []
    counts = run_campaign([score, cell], tmp_path, progress=lines.append)
    assert counts["done"] == 2 and counts["left"] == 0
    assert log == ["tuned/x", "t"]  # the requirement first, then, on the second pass, it
    # a requirement in flight in another run: left, not started, no record
    other = tmp_path / "other"
    cell2 = _unit("tuned/y", 3)
    score2 = Unit("transfer/y", "toy", {}, {}, lambda: {}, requires=(cell2,))
    with unit_claim(other, "tuned/y", "udbench campaign run"):
        counts = run_campaign([cell2, score2], other, progress=lines.append)
    assert counts["busy"] == 1 and counts["left"] == 1 and counts["done"] == 0
    assert not record_file(other, "transfer/y").exists()
    assert "transfer/y: waits for tuned/y (not done); not run here" in lines
    assert run_campaign([cell2, score2], other)["done"] == 2  # the next run does both

    # a failed requirement: left (the failed unit is retried by each run; it is not redone)
    def boom() -> dict:
        raise RuntimeError("cell failed")

    cell3 = Unit("tuned/z", "toy", {}, {}, boom)
    score3 = Unit("transfer/z", "toy", {}, {}, lambda: {}, requires=(cell3,))
    counts = run_campaign([cell3, score3], tmp_path / "third")
    assert counts["failed"] == 1 and counts["left"] == 1
    assert not record_file(tmp_path / "third", "transfer/z").exists()


def test_a_unit_recorded_while_its_claim_was_being_taken_is_not_redone(
    tmp_path: Path, monkeypatch
) -> None:
    """The status is read again once the claim is held: a record another run wrote in the
    meantime (done, or failed: that run's to retry) is left as it is."""
    import contextlib

    from udbench.campaigns import engine

    real = engine.unit_claim
    log: list[str] = []
    units = [_unit("x/done", 1, log=log), _unit("x/failed", 2, log=log)]

    @contextlib.contextmanager
    def racing_claim(records, unit_id, command):
        with real(records, unit_id, command) as path:  # the other run finished first
            other = {"schema": 1, "unit_id": unit_id, "kind": "toy", "settings": {}}
            if unit_id == "x/done":
                unit = units[0]
                other.update(status="done", settings=unit.settings, numerics=unit.numerics)
                other["result"] = {"value": 1}
            else:
                other.update(status="failed", settings=units[1].settings, numerics={"toy": 1})
                other["error"] = "RuntimeError: elsewhere"
            engine._write_atomic(record_file(records, unit_id), other)
            yield path

    monkeypatch.setattr(engine, "unit_claim", racing_claim)
    lines: list[str] = []
    counts = run_campaign(units, tmp_path, progress=lines.append)
    assert log == []  # neither unit's work ran here
    assert counts["skipped"] == 1 and counts["busy"] == 1 and counts["done"] == 0
    assert "x/failed: just recorded by another run (failed); skipped" in lines


def test_a_claim_that_cannot_be_made_is_an_error_not_a_busy_unit(
    tmp_path: Path, monkeypatch
) -> None:
    """A full disk or a permission error while claiming stops the run with the OS error; it is
    never reported as a unit another run is working on (which would exit 0 having done
    nothing)."""
    import errno

    from udbench.campaigns import _claims

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_claims.os, "open", full)
    with pytest.raises(OSError, match="No space left"):
        run_campaign([_unit("a", 1)], tmp_path)


def test_a_killed_runs_claim_is_free_at_once(tmp_path: Path) -> None:
    """The kernel drops a claim when its process dies: no stale claim to take over (two
    runs restarted together after a kill could otherwise both take it over)."""
    from udbench.campaigns._claims import claim_path, claimed_units

    records = tmp_path / "records"
    code = (
        "import sys, time\n"
        "from udbench.campaigns._claims import unit_claim\n"
        "with unit_claim(sys.argv[1], 'u/0', 'test'):\n"
        "    print('held', flush=True)\n"
        "    time.sleep(60)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(records)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    lines: list[str] = []
    assert run_campaign([_unit("u/0", 0)], records, progress=lines.append)["busy"] == 1
    assert f"(pid {proc.pid} on " in lines[0]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert claim_path(records, "u/0").exists()  # left by the killed run, but not held
    assert claimed_units(records) == {}  # its holder is gone: status lists nothing
    assert run_campaign([_unit("u/0", 0)], records)["done"] == 1
    assert not claim_path(records, "u/0").exists()


def test_a_folder_held_whole_by_an_earlier_udbench_is_refused(tmp_path: Path) -> None:
    """A run of an earlier udbench locked the records folder, not the units: it would not see
    the claims, so the two would do the same unit."""
    from udbench._lock import LOCK_NAME, folder_lock

    with folder_lock(tmp_path, "udbench campaign run"):
        with pytest.raises(UdbenchError, match="a run of an earlier udbench"):
            run_campaign([_unit("a", 1)], tmp_path)
    assert not (tmp_path / LOCK_NAME).exists()
    assert run_campaign([_unit("a", 1)], tmp_path)["done"] == 1


_SHARED = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from udbench.campaigns import Unit, run_campaign

    records, marks = Path(sys.argv[1]), Path(sys.argv[2])
    (marks / f"ready{os.getpid()}").write_text("")
    while len(list(marks.glob("ready*"))) < 2:  # start together
        time.sleep(0.01)

    def work(i):
        def run():
            (marks / f"start{i}-{os.getpid()}").write_text("")
            time.sleep(0.4)
            return {"i": i}
        return run

    units = [Unit(f"u/{i}", "toy", {"i": i}, {"toy": 1}, work(i)) for i in range(6)]
    print(run_campaign(units, records))
    """
)


def test_two_runs_of_one_campaign_share_its_units(tmp_path: Path) -> None:
    """Two processes on one records folder: both finish, and no unit is done twice."""
    script = tmp_path / "campaign.py"
    script.write_text(_SHARED)
    records, marks = tmp_path / "records", tmp_path / "marks"
    marks.mkdir()
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(records), str(marks)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    starts = sorted(m.name.split("-")[0] for m in marks.glob("start*"))
    assert starts == [f"start{i}" for i in range(6)]  # each unit once
    for i in range(6):
        rec = read_record(record_file(records, f"u/{i}"))
        assert rec is not None and rec["status"] == "done"


_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from udbench.campaigns import Unit, run_campaign

    records, marks = Path(sys.argv[1]), Path(sys.argv[2])

    def work(i):
        def run():
            (marks / f"start{i}").write_text("")
            if i == 1:
                time.sleep(float(sys.argv[3]))
            return {"i": i}
        return run

    units = [Unit(f"u{i}", "toy", {"i": i}, {"toy": 1}, work(i)) for i in range(3)]
    print(run_campaign(units, records))
    """
)


def test_a_campaign_killed_mid_unit_redoes_only_that_unit(tmp_path: Path) -> None:
    script = tmp_path / "campaign.py"
    script.write_text(_SCRIPT)
    records, marks = tmp_path / "records", tmp_path / "marks"
    marks.mkdir()
    proc = subprocess.Popen([sys.executable, str(script), str(records), str(marks), "60"])
    deadline = time.monotonic() + 60
    while not (marks / "start1").exists():  # unit 1 is running
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert record_file(records, "u0").is_file() and not record_file(records, "u1").exists()
    for mark in marks.iterdir():
        mark.unlink()
    out = subprocess.run(
        [sys.executable, str(script), str(records), str(marks), "0"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "'skipped': 1, 'done': 2" in out  # the lock of the killed run was taken over
    assert sorted(p.name for p in marks.iterdir()) == ["start1", "start2"]


def test_compiled_programs_are_kept_between_units_until_the_process_is_crowded(
    tmp_path: Path, monkeypatch
) -> None:
    """A unit reuses the programs of the one before (an NN cell: 0.17 s instead of 2.0 s);
    once the memory maps pass half the kernel's limit, or the resident memory its share, the
    programs are dropped (issue 36: memory maps ran out mid-campaign)."""
    import jax
    import jax.numpy as jnp

    from udbench import _threads

    step = jax.jit(lambda x: x + 1.0)
    step(jnp.ones(7))
    seen: list[int] = []

    def work(n: int):
        def run() -> dict:
            seen.append(step._cache_size())  # programs left by the units before
            step(jnp.ones(n))
            return {"n": n}

        return run

    units = [Unit(f"jit/{n}", "toy", {"n": n}, {"toy": 1}, work(n)) for n in (2, 3, 4)]
    run_campaign(units, tmp_path / "a")
    assert seen == [1, 2, 3]  # each unit found the programs of those before it
    crowded = {"counts": (900, 1000), "rss": 0.01}  # 90 % of the map limit
    monkeypatch.setattr(_threads, "memory_map_counts", lambda: crowded["counts"])
    monkeypatch.setattr(_threads, "resident_share", lambda: crowded["rss"])
    monkeypatch.setattr(_threads, "_rss_since", [])
    seen.clear()
    more = [Unit(f"jit/{n}", "toy", {"n": n}, {"toy": 1}, work(n)) for n in (5, 6)]
    run_campaign(more, tmp_path / "b")
    assert seen == [4, 0] and step._cache_size() == 0  # dropped after each unit
    # resident memory: its growth since the last drop counts, not its level (glibc keeps
    # freed heap, so a level once passed would drop the programs after every unit)
    crowded.update(counts=(10, 1000), rss=0.40)
    assert _threads.release_compiled_programs_if_crowded() is True  # after the drop: 0.40
    crowded.update(rss=0.44)  # +0.04 since
    assert _threads.release_compiled_programs_if_crowded() is False
    crowded.update(rss=0.46)  # +0.06 > 0.05
    assert _threads.release_compiled_programs_if_crowded() is True
    assert _threads.release_compiled_programs_if_crowded() is False  # from 0.46 again
    crowded.update(counts=None)  # cannot be read (not Linux): always dropped
    assert _threads.release_compiled_programs_if_crowded() is True


def test_current_records_leave_out_stale_other_and_rowless_failed_records(tmp_path: Path) -> None:
    from udbench.campaigns.engine import UnitFailed, current_records

    def failing(result: dict | None):
        def work() -> dict:
            if result is None:
                raise RuntimeError("no result")
            raise UnitFailed("cell failed", result)

        return work

    units = [
        _unit("b", 2),
        _unit("a", 1),
        Unit("c-failed", "toy", {}, {"toy": 1}, failing({"row": {"status": "failed"}})),
        Unit("d-failed", "toy", {}, {"toy": 1}, failing(None)),
        _unit("e", 5),
    ]
    run_campaign(units, tmp_path)
    # all done records first, each group by unit id; the failed one with a result kept
    recs, notes = current_records(tmp_path, "toy", units, include_failed=True)
    assert [r["unit_id"] for r in recs] == ["a", "b", "e", "c-failed"]
    assert notes == [
        "d-failed: failed without a result (RuntimeError: no result); redone by a later run"
    ]
    # now: unit "a" has other settings, "b" another numerics version, "e" is not selected
    now = [_unit("a", 7), _unit("b", 2, numerics=3), units[2]]
    recs, notes = current_records(tmp_path, "toy", now)
    assert [r["unit_id"] for r in recs] == []  # the failed one only with include_failed
    assert "a: made with other settings or numerics (stale); left out" in notes
    assert "b: made with other settings or numerics (stale); left out" in notes
    assert any(n.startswith("1 toy record(s) of units not selected now") for n in notes)
    assert sum("failed" in n for n in notes) == 2  # c and d, named by load_done_records
    # without units every done record counts
    assert [r["unit_id"] for r in current_records(tmp_path, "toy")[0]] == ["a", "b", "e"]


def test_jsonable_turns_numpy_values_into_json_ready_python() -> None:
    import numpy as np

    from udbench.campaigns.engine import jsonable

    value = {1: (np.float32(0.5), np.arange(2)), "k": [np.int64(3), np.bool_(True), "s", None]}
    out = jsonable(value)
    assert out == {"1": [0.5, [0, 1]], "k": [3, True, "s", None]}
    assert json.loads(json.dumps(out)) == out
    assert type(out["k"][0]) is int and type(out["k"][1]) is bool


def test_input_unavailable_and_stale_record_errors_survive_pickling() -> None:
    """Errors raised in a worker process come back pickled (execution.isolation): both keep
    their extra fields instead of failing to unpickle with a TypeError."""
    import pickle

    from udbench.tuning.records import StaleRecordError

    err = pickle.loads(pickle.dumps(InputUnavailableError("no table at x", "the raw table of k")))
    assert type(err) is InputUnavailableError and str(err) == "no table at x"
    assert err.what == "the raw table of k"
    stale = pickle.loads(pickle.dumps(StaleRecordError("msg", "blr/c", "space changed")))
    assert (str(stale), stale.record, stale.why) == ("msg", "blr/c", "space changed")


def test_an_interrupt_hidden_in_a_librarys_clean_up_stops_the_run_without_a_record(
    tmp_path: Path,
) -> None:
    """Ctrl-C inside a library's clean-up can surface as its own error (optuna's journal
    lock: FileNotFoundError while unlinking); it is an interrupt, not the unit's failure."""

    def interrupted() -> dict:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise FileNotFoundError(2, "No such file or directory", "journal.lock") from None

    log: list[str] = []
    units = [Unit("a", "toy", {}, {"toy": 1}, interrupted), _unit("b", 1, log=log)]
    with pytest.raises(KeyboardInterrupt):
        run_campaign(units, tmp_path)
    assert not record_file(tmp_path, "a").exists() and log == []  # stopped, nothing recorded

    def plain_error() -> dict:
        raise FileNotFoundError(2, "No such file or directory", "data.csv")

    counts = run_campaign([Unit("c", "toy", {}, {"toy": 1}, plain_error)], tmp_path)
    assert counts["failed"] == 1  # the same error without an interrupt is the unit's failure


def test_the_record_is_written_before_the_done_line(tmp_path: Path) -> None:
    """A progress line that cannot be written (the reader of the pipe is gone) loses no
    finished unit: the record is on disk first."""

    def progress(line: str) -> None:
        if line.endswith("min"):  # "<unit>: done in X min"
            raise BrokenPipeError(32, "Broken pipe")

    with pytest.raises(BrokenPipeError):
        run_campaign([_unit("u", 1)], tmp_path, progress=progress)
    rec = read_record(record_file(tmp_path, "u"))
    assert rec is not None and rec["status"] == "done" and rec["result"] == {"value": 1}


def test_a_summary_parses_a_record_of_another_kind_once_per_version_of_its_file(
    tmp_path: Path, monkeypatch
) -> None:
    """load_done_records(kind=...) remembers each file's kind: a second call for another kind
    parses only that kind's files, and a record rewritten (replaced whole, as runs write
    them) is read again, so a record that changed kind is found under its new one."""
    import udbench.campaigns.engine as engine

    run_campaign([Unit(f"a/{i}", "ka", {}, {}, lambda: {"x": 1}) for i in range(3)], tmp_path)
    run_campaign([Unit(f"b/{i}", "kb", {}, {}, lambda: {"x": 2}) for i in range(2)], tmp_path)
    assert len(load_done_records(tmp_path, "ka")[0]) == 3  # every file parsed once here
    parsed: list[str] = []
    real = engine.read_record

    def counting(path):
        parsed.append(Path(path).parent.name)
        return real(path)

    monkeypatch.setattr(engine, "read_record", counting)
    done, _ = load_done_records(tmp_path, "kb")
    assert [r["unit_id"] for r in done] == ["b/0", "b/1"] and parsed == ["b", "b"]
    # the records handed out are each call's own: changing one changes no later result
    done[0]["result"]["x"] = 99
    assert load_done_records(tmp_path, "kb")[0][0]["result"] == {"x": 2}
    # a/2 rewritten as a kb record (a new file version): found under kb, gone from ka
    path = record_file(tmp_path, "a/2")
    rec = json.loads(path.read_text())
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({**rec, "kind": "kb"}))
    os.replace(tmp, path)
    assert [r["unit_id"] for r in load_done_records(tmp_path, "kb")[0]] == ["a/2", "b/0", "b/1"]
    assert [r["unit_id"] for r in load_done_records(tmp_path, "ka")[0]] == ["a/0", "a/1"]
    assert len(load_done_records(tmp_path)[0]) == 5  # no kind: every record
