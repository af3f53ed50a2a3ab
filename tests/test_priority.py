"""``udbench._priority.lower_priority``: nice value, and the session's autogroup nice where the
kernel groups by session (sched(7), "The autogroup feature"), only for a session with no
controlling terminal."""

from __future__ import annotations

import os

import pytest

from udbench._priority import lower_priority
from udbench._validation import UdbenchError


@pytest.fixture
def proc(tmp_path, monkeypatch):
    calls: list[int] = []
    monkeypatch.setattr(os, "nice", lambda n: calls.append(n) or n)
    group, switch = tmp_path / "autogroup", tmp_path / "sched_autogroup_enabled"
    group.write_text("/autogroup-7 nice 0\n")
    switch.write_text("1\n")
    return calls, group, switch


def test_a_background_session_lowers_its_autogroup_too(proc, monkeypatch):
    calls, group, switch = proc
    monkeypatch.setattr("udbench._priority._has_controlling_terminal", lambda: False)
    assert lower_priority(19, autogroup_file=group, autogroup_switch=switch) is None
    assert calls == [19] and group.read_text() == "19\n"


def test_a_process_in_a_terminal_session_leaves_the_session_alone_and_says_so(proc, monkeypatch):
    calls, group, switch = proc
    monkeypatch.setattr("udbench._priority._has_controlling_terminal", lambda: True)
    note = lower_priority(10, autogroup_file=group, autogroup_switch=switch)
    assert calls == [10] and group.read_text() == "/autogroup-7 nice 0\n"
    assert note is not None and "setsid" in note and "--nice 10" in note


def test_without_autogroups_only_the_process_nice_changes(proc, monkeypatch):
    calls, group, switch = proc
    switch.write_text("0\n")
    monkeypatch.setattr("udbench._priority._has_controlling_terminal", lambda: False)
    assert lower_priority(5, autogroup_file=group, autogroup_switch=switch) is None
    assert calls == [5] and group.read_text() == "/autogroup-7 nice 0\n"
    missing = group.parent / "absent"
    assert lower_priority(5, autogroup_file=missing, autogroup_switch=switch) is None


def test_zero_changes_nothing_and_bad_values_are_one_line_errors(proc):
    calls, group, switch = proc
    assert lower_priority(0, autogroup_file=group, autogroup_switch=switch) is None
    assert calls == []
    for bad in (-1, 20, 2.5, True):
        with pytest.raises(UdbenchError, match=r"'nice'.*0\.\.19"):
            lower_priority(bad)  # type: ignore[arg-type]


def test_the_sessions_autogroup_nice_is_put_back_when_the_run_ends(proc, monkeypatch):
    """The autogroup is the whole session's (the script that started the run too): lowered
    only while the run lasts, and another process's later change is kept."""
    from udbench._priority import restore_priority

    _, group, switch = proc
    monkeypatch.setattr("udbench._priority._has_controlling_terminal", lambda: False)
    assert lower_priority(19, autogroup_file=group, autogroup_switch=switch) is None
    assert group.read_text() == "19\n"
    group.write_text("/autogroup-7 nice 19\n")  # as the kernel shows it
    restore_priority()
    assert group.read_text() == "0\n"
    restore_priority()  # nothing pending: nothing written
    assert group.read_text() == "0\n"
    # changed by someone else meanwhile: left as they set it
    lower_priority(19, autogroup_file=group, autogroup_switch=switch)
    group.write_text("/autogroup-7 nice 5\n")
    restore_priority()
    assert group.read_text() == "/autogroup-7 nice 5\n"
