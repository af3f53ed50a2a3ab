"""``Executor.pool``: jobs submitted one at a time (the tuning driver's way to use workers)."""

from __future__ import annotations

import pytest

from udbench.execution.executor import Executor


def square(x: int, *, plus: int = 0) -> int:
    return x * x + plus


def test_inline_pool_runs_jobs_in_submission_order_when_asked():
    with Executor(workers=0) as ex:
        assert ex.capacity() == 1
        with ex.pool(square, plus=1) as pool:
            pool.submit(3)
            pool.submit(4)
            assert len(pool) == 2
            assert pool.next_done() == (3, 10)
            pool.submit(5)  # a job can be added after a result was taken
            assert [pool.next_done(), pool.next_done()] == [(4, 17), (5, 26)]
            assert len(pool) == 0
            with pytest.raises(LookupError):
                pool.next_done()
