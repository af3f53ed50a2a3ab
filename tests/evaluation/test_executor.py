"""The executor shared by ``udbench run`` and ``udbench generate``: inline and on Dask."""

from __future__ import annotations

import pytest

from udbench._validation import UdbenchError
from udbench.evaluation.executor import Executor, Failed, call_with_timeout


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
