"""Shared test fixtures. Seeds are printed on failure so a run can be reproduced."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from udbench._threads import release_compiled_programs

# Hermetic: the tests (and the CLI processes they start, which inherit the environment) do
# not read or write the user's persistent JAX compilation cache (udbench._cache), which other
# processes on the machine share. tests/test_compile_cache.py sets it per test.
os.environ.setdefault("UDBENCH_COMPILE_CACHE", "off")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The real-data folder named by ``UDBENCH_DATA_DIR``; skip the test when absent."""
    value = os.environ.get("UDBENCH_DATA_DIR")
    if not value or not Path(value).is_dir():
        pytest.skip("UDBENCH_DATA_DIR is not set to a data folder (see README)")
    return Path(value)


#: Environment variable choosing the seeds of ``global_random_seed``: an integer, a range
#: ``"0-9"``, a comma list, or ``"all"`` (0-99). Default 0, so the default suite is fast and
#: deterministic; ``UDBENCH_TESTS_GLOBAL_RANDOM_SEED=all uv run pytest -k seed`` sweeps.
GLOBAL_SEED_ENV = "UDBENCH_TESTS_GLOBAL_RANDOM_SEED"


def _global_seeds() -> list[int]:
    value = os.environ.get(GLOBAL_SEED_ENV, "0").strip()
    if value == "all":
        return list(range(100))
    seeds: list[int] = []
    for part in value.split(","):
        lo, _, hi = part.partition("-")
        try:
            seeds.extend(range(int(lo), int(hi or lo) + 1))
        except ValueError:
            raise pytest.UsageError(
                f"{GLOBAL_SEED_ENV} must be an integer, a range 'a-b', a comma list or 'all'; "
                f"got {value!r}"
            ) from None
    return seeds


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise ``global_random_seed`` over the seeds named by the environment."""
    if "global_random_seed" in metafunc.fixturenames:
        seeds = _global_seeds()
        metafunc.parametrize("global_random_seed", seeds, ids=[f"seed={s}" for s in seeds])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """On a failure, name the global seed so the run can be reproduced."""
    outcome = yield
    report = outcome.get_result()
    callspec = getattr(item, "callspec", None)
    if report.failed and callspec is not None and "global_random_seed" in callspec.params:
        seed = callspec.params["global_random_seed"]
        report.sections.append(
            ("global random seed", f"reproduce with {GLOBAL_SEED_ENV}={seed} (seed {seed})")
        )


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop JAX's compiled programs after each test module.

    Every compiled XLA program keeps memory mappings for its code; one process running the
    whole suite compiled enough of them to pass Linux's default ``vm.max_map_count`` (65530)
    and crash inside XLA's compiler ("Cannot allocate memory", a segfault). Clearing the
    caches per module bounds the count by the largest module (about 9300 for
    tests/methods/test_nn_family.py, against 1600 when cleared per test)."""
    yield
    release_compiled_programs()
