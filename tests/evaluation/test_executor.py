"""The executor shared by ``udbench run`` and ``udbench generate``: inline and on Dask."""

from __future__ import annotations

import pytest

from udbench._validation import UdbenchError
from udbench.execution.executor import Executor, Failed, call_with_timeout


def _square(x: int, *, offset: int = 0) -> int:
    if x == 3:
        raise ValueError("three")
    return x * x + offset


def test_inline_runs_in_order_and_passes_kwargs() -> None:
    with Executor(workers=0) as ex:
        assert ex.inline
        assert list(ex.map_unordered(_square, [0, 1, 2], offset=10)) == [(0, 10), (1, 11), (2, 14)]


def test_inline_lets_an_exception_through() -> None:
    with Executor(workers=0) as ex, pytest.raises(ValueError, match="three"):
        list(ex.map_unordered(_square, [3]))


def test_negative_workers_is_a_parameter_error() -> None:
    with pytest.raises(UdbenchError, match="workers"):
        Executor(workers=-1)


def test_dask_gives_every_item_once_and_a_raising_job_as_failed() -> None:
    with Executor(workers=1, pin=False) as ex:
        assert not ex.inline
        got = dict(ex.map_unordered(_square, [0, 1, 2, 3, 4], offset=1))
    assert sorted(got) == [0, 1, 2, 3, 4]
    assert {k: v for k, v in got.items() if k != 3} == {0: 1, 1: 2, 2: 5, 4: 17}
    assert isinstance(got[3], Failed) and "three" in str(got[3].error)


def test_call_with_timeout_returns_the_result_or_the_exception() -> None:
    assert call_with_timeout(lambda: 7, None) == (True, 7)
    assert call_with_timeout(lambda: 7, 5.0) == (True, 7)
    finished, err = call_with_timeout(lambda: _square(3), 5.0)
    assert finished and isinstance(err, ValueError)


def _log_an_error(x: int) -> int:
    """A job that logs as Dask's worker does when a heartbeat times out under load."""
    import logging

    try:
        raise TimeoutError("no reply from the scheduler")
    except TimeoutError:
        logging.getLogger("distributed.worker").exception(
            "udbench-test: Failed to communicate with scheduler during heartbeat %d", x
        )
    return x


def test_dask_log_records_go_to_the_log_file_not_the_terminal(tmp_path, capfd) -> None:
    import logging

    before = list(logging.getLogger("distributed").handlers)
    log = tmp_path / "out" / "dask.log"
    with Executor(workers=1, pin=False, log_file=log) as ex:
        assert ex.log_file == str(log)
        got = sorted(r for _, r in ex.map_unordered(_log_an_error, [1, 2]))
    assert got == [1, 2]
    said = capfd.readouterr()
    assert "udbench-test" not in said.err + said.out and "Traceback" not in said.err
    text = log.read_text(encoding="utf-8")
    for x in (1, 2):
        assert "distributed.worker - ERROR - udbench-test: Failed to communicate" in text
        assert f"during heartbeat {x}" in text
    assert "TimeoutError: no reply from the scheduler" in text  # the traceback is kept there
    # this process's Dask logger is as it was after the run
    assert logging.getLogger("distributed").handlers == before
    assert Executor(workers=0, log_file=log).log_file is None  # inline: no Dask, no log


def test_a_cell_whose_worker_was_lost_names_the_dask_log(tmp_path) -> None:
    from _fakes import MeanMethod, make_fake_task, save_fake_task
    from udbench.evaluation.runner import _outcome, plan_cells
    from udbench.methods.configs import resolve_methods

    path = save_fake_task(make_fake_task(0), tmp_path)
    (cell,), _ = plan_cells([path], resolve_methods([MeanMethod()]))
    lost = Failed(RuntimeError("worker tcp://127.0.0.1:4000 lost"))
    row = _outcome(cell, lost, None, str(tmp_path / "dask.log")).row
    assert row["status"] == "failed"
    assert row["error"] == (
        "worker failed: RuntimeError: worker tcp://127.0.0.1:4000 lost "
        f"(Dask's log: {tmp_path / 'dask.log'})"
    )
