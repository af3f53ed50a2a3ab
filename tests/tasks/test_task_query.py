"""Query points in task files (the wine OOD study's red wines): an optional, checked extension."""

from __future__ import annotations

import hashlib
import zipfile

import numpy as np
import pytest

from udbench._validation import UdbenchError
from udbench.priors.gp import GPPrior
from udbench.tasks import Task, TaskSpec, make_task
from udbench.tasks.generate import QueryPoints
from udbench.tasks.taskfile import ARRAY_NAMES, QUERY_ARRAY_NAMES, check_query_arrays

HYPER = {"kernel_family": "rbf", "parts": [{"kernel": "rbf", "weight": 1.0, "lengthscale": [0.4]}]}
#: The 16 arrays of a task file before query points existed, in file order.
OLD_MEMBERS = [
    "train_idx",
    "X_train",
    "y_train",
    "noise_var_train",
    "f_train",
    "eval_idx",
    "X_eval",
    "noise_var_eval",
    "f_eval",
    "shell_eval",
    "post_mean",
    "post_var",
    "sbc_rank",
    "mcse_var_rel",
    "draws",
    "draws_train",
]


def _fixed_task() -> Task:
    """A task of exact arrays (no prior): its bytes depend only on the writer."""
    n, m, d, D = 4, 3, 2, 40

    def a(*s: int) -> np.ndarray:
        return np.arange(int(np.prod(s)), dtype=np.float64).reshape(s) / 8.0

    arrays = {
        "train_idx": np.arange(n, dtype=np.int64),
        "X_train": a(n, d),
        "y_train": a(n),
        "noise_var_train": np.full(n, 0.25),
        "f_train": a(n),
        "eval_idx": np.arange(n, n + m, dtype=np.int64),
        "X_eval": a(m, d),
        "noise_var_eval": np.full(m, 0.25),
        "f_eval": a(m),
        "shell_eval": np.arange(m, dtype=np.int64),
        "post_mean": a(m),
        "post_var": np.full(m, 0.5),
        "sbc_rank": np.arange(m, dtype=np.int64),
        "mcse_var_rel": np.full(m, 0.125),
        "draws": a(D, m),
        "draws_train": a(D, n),
    }
    spec = TaskSpec("toy", "gp", "smooth-monotone", "balanced", 0, fidelity="smoke", n_draws=D)
    return Task(
        spec,
        arrays,
        {"checks": {"x": 1.0}},
        {"family": "gp", "scale": 1.0},
        version="0.1.0",
        source={"dataset": "toy"},
    )


def test_a_task_without_query_points_is_byte_identical_to_before(tmp_path) -> None:
    path = _fixed_task().save(tmp_path / "t.npz")
    # SHA-256 of the same task written by udbench (schema 2) before the extension: computed
    # with the compact-storage branch (i22 at 10b2209) alone, which never had query points.
    # (Schema 1, commit 4061e17, wrote 0ae357c1…; schema 2 stores draws as float32.)
    before = "2b52116b5b856f1b0973baac8c28080d813d69b9a8b236ca290128195b27f26d"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    with zipfile.ZipFile(path) as zf:
        assert zf.namelist() == [f"{k}.npy" for k in OLD_MEMBERS] + ["meta.json"]
    t = Task.load(path)
    assert not t.has_query and t.query() is None and t.X_query is None
    assert ARRAY_NAMES[: len(OLD_MEMBERS)] == tuple(OLD_MEMBERS)


def _gp_task(query: QueryPoints | None, hyper: dict | None = None) -> Task:
    rng = np.random.default_rng(0)
    X = rng.random((30, 1))
    spec = TaskSpec("synthetic", "gp", "step", "balanced", 0, n_draws=40)
    return make_task(
        spec,
        GPPrior(hyper or HYPER, 1.3),
        X,
        np.arange(10),
        np.arange(10, 30),
        np.full(10, 0.2),
        np.full(20, 0.2),
        shell_eval=np.arange(10) % 5,
        query=query,
    )


def test_query_points_carry_the_oracle_posterior(tmp_path) -> None:
    X_q = np.array([[-0.5], [0.25], [1.5], [3.0]])  # outside [0, 1] too
    q = QueryPoints(X=X_q, idx=np.array([7, 1, 3, 0]), name="red", info={"scaling": "x"})
    with_q, without = _gp_task(q), _gp_task(None)
    # the instance is the same: f*, training sample, targets, exact moments at the pool
    for k in ("f_eval", "f_train", "y_train", "X_train", "X_eval"):
        np.testing.assert_array_equal(getattr(with_q, k), getattr(without, k))
    np.testing.assert_allclose(with_q.post_mean, without.post_mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(with_q.post_var, without.post_var, rtol=1e-10, atol=1e-12)
    # ... under the nugget f* was drawn with, though the conditioning inputs differ
    nu = without.diagnostics["sampler"]["nugget"]
    assert with_q.diagnostics["sampler"]["nugget"] == nu > 0
    # the moments at the query points are the exact GP posterior there
    ref = GPPrior(HYPER, 1.3).condition(
        with_q.X_train, with_q.y_train, with_q.noise_var_train, X_q, 5, 40, nugget=nu
    )
    np.testing.assert_allclose(with_q.post_mean_query, ref.mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(with_q.post_var_query, ref.var, rtol=1e-10, atol=1e-12)
    assert with_q.post_var_query[3] > with_q.post_var_query[1]  # far from data: more variance
    assert with_q.draws_query.shape == (40, 4)
    assert with_q.diagnostics["query"] == {"name": "red", "n_query": 4, "scaling": "x"}
    # saved and loaded: checked on access, same values
    loaded = Task.load(with_q.save(tmp_path / "q.npz"))
    assert loaded.has_query
    got = loaded.query()
    assert got is not None
    np.testing.assert_array_equal(got["query_idx"], [7, 1, 3, 0])
    np.testing.assert_array_equal(got["post_var_query"], with_q.post_var_query)
    with zipfile.ZipFile(tmp_path / "q.npz") as zf:
        names = zf.namelist()
    # the GP keeps no training-input draws by default (schema 2); draws_query is float32
    members = [k for k in OLD_MEMBERS if k != "draws_train"]
    assert names == [f"{k}.npy" for k in (*members, *QUERY_ARRAY_NAMES)] + ["meta.json"]
    assert got["draws_query"].dtype == np.float32


def test_query_points_keep_the_nugget_of_f_star_under_a_nonstationary_kernel() -> None:
    """With a linear part the prior variance grows with |x|, so the default nugget
    (1e-10·mean diag) at (eval, query, train) is ≈ 4× the one f* was drawn with at
    (eval, train) for these far query points: the conditioning must keep f*'s."""
    hyper = {
        "kernel_family": "rbf+linear",
        "parts": [
            {"kernel": "rbf", "weight": 0.5, "lengthscale": [0.4]},
            {"kernel": "linear", "weight": 0.5},
        ],
    }
    q = QueryPoints(X=np.array([[4.0], [5.0], [6.0]]), idx=np.arange(3), name="far", info={})
    with_q, without = _gp_task(q, hyper), _gp_task(None, hyper)
    nu = without.diagnostics["sampler"]["nugget"]
    assert with_q.diagnostics["sampler"]["nugget"] == nu
    X_all = np.vstack([with_q.X_eval, q.X, with_q.X_train])
    assert GPPrior(hyper, 1.3).nugget(X_all[:13], X_all[13:]) > 2 * nu  # what it would be
    np.testing.assert_allclose(with_q.post_var, without.post_var, rtol=1e-9, atol=0)


def test_query_arrays_are_checked_like_the_pool() -> None:
    base = _gp_task(
        QueryPoints(X=np.array([[0.1], [0.9]]), idx=np.array([0, 1]), name="red")
    ).arrays()
    check_query_arrays(base)  # fine
    cases = {
        "all present or all absent": {"draws_query": None},
        "X_query must have shape": {"X_query": np.zeros((2, 3))},
        "post_var_query must have shape": {"post_var_query": np.zeros(3)},
        "draws_query must have shape": {"draws_query": np.zeros((39, 2))},
        "post_mean_query must be finite": {"post_mean_query": np.array([0.0, np.nan])},
        "post_var_query must be >= 0": {"post_var_query": np.array([0.1, -1e-3])},
    }
    for message, change in cases.items():
        bad = {**base, **change}
        with pytest.raises(UdbenchError, match=message):
            check_query_arrays(bad)
        spec = TaskSpec("synthetic", "gp", "step", "balanced", 0, n_draws=40)
        with pytest.raises(UdbenchError, match=message):
            Task(spec, bad, {}, {})


class _RecordingPrior:
    """A stand-in prior that records the inputs it is conditioned at (GP maths inside)."""

    def __init__(self, family: str) -> None:
        self.family = family
        self._gp = GPPrior(HYPER, 1.3)
        self.seen: np.ndarray | None = None

    @property
    def scale(self) -> float:
        return 1.3

    @property
    def settings(self) -> dict:
        return {"family": self.family}

    def sample(self, X, key, n_draws=1):  # type: ignore[no-untyped-def]
        return self._gp.sample(X, key, n_draws)

    def condition(self, X_train, y, noise_var, X_eval, key, n_draws):  # type: ignore[no-untyped-def]
        self.seen = np.array(X_eval)
        return self._gp.condition(X_train, y, noise_var, X_eval, key, n_draws)


@pytest.mark.parametrize("family", ["hbart", "bnn"])
def test_hbart_is_conditioned_at_query_inputs_clipped_to_the_unit_cube(family) -> None:
    X = np.random.default_rng(0).random((30, 1))
    X_q = np.array([[-0.5], [0.25], [1.5]])
    prior = _RecordingPrior(family)
    spec = TaskSpec("synthetic", "gp", "step", "balanced", 0, n_draws=40)
    task = make_task(
        spec,
        prior,  # type: ignore[arg-type]
        X,
        np.arange(10),
        np.arange(10, 30),
        np.full(10, 0.2),
        np.full(20, 0.2),
        query=QueryPoints(X=X_q, idx=np.arange(3), name="red"),
    )
    assert prior.seen is not None
    expected = np.clip(X_q, 0, 1) if family == "hbart" else X_q
    np.testing.assert_array_equal(prior.seen[10:], expected)
    np.testing.assert_array_equal(task.X_query, X_q)  # stored unclipped: what methods see
