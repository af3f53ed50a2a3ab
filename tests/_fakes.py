"""Small fakes for the runner tests: tiny real tasks and trivial methods.

The tasks are real :class:`udbench.tasks.Task` objects (the runner takes no other format),
with tiny sizes and arrays built in closed form here, so no prior is fitted.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from udbench._seeding import make_rng
from udbench.methods.base import BaseMethod, Prediction
from udbench.tasks import Task, TaskSpec

N_DRAWS = 40  # posterior draws per fake task (TaskSpec's minimum)


def make_fake_task(
    seed: int = 0,
    *,
    n_train: int = 30,
    n_eval: int = 60,
    d: int = 3,
    noise: str = "smooth-monotone",
    dataset: str = "toy",
    coverage: str = "balanced",
) -> Task:
    """A task with a smooth f*, a Gaussian posterior and shells 0..4 (12 points each).

    ``coverage`` is only a label here (the spec's): the arrays are the same for both.
    """
    rng = make_rng("fake-task", dataset, noise, seed)
    X = rng.uniform(size=(n_train + n_eval, d))
    f = np.sin(3.0 * X[:, 0]) + X[:, 1] ** 2
    z = X[:, 0] - 0.5
    noise_var = 0.1 * np.exp(2.0 * z) if noise != "homoscedastic" else np.full(len(X), 0.1)
    y = f[:n_train] + rng.normal(size=n_train) * np.sqrt(noise_var[:n_train])
    dist = np.linalg.norm(X[n_train:] - 0.5, axis=1)
    post_var = 0.01 + 0.2 * dist**2
    post_mean = f[n_train:] + rng.normal(size=n_eval) * np.sqrt(post_var)
    shells = np.repeat(np.arange(5), int(np.ceil(n_eval / 5)))[:n_eval]
    draws = post_mean + np.sqrt(post_var) * rng.standard_normal((N_DRAWS, n_eval))
    arrays: dict[str, np.ndarray | None] = {
        "train_idx": np.arange(n_train, dtype=np.int64),
        "X_train": X[:n_train],
        "y_train": y,
        "noise_var_train": noise_var[:n_train],
        "f_train": f[:n_train],
        "eval_idx": np.arange(n_train, n_train + n_eval, dtype=np.int64),
        "X_eval": X[n_train:],
        "noise_var_eval": noise_var[n_train:],
        "f_eval": f[n_train:],
        "shell_eval": shells.astype(np.int64),
        "post_mean": post_mean,
        "post_var": post_var,
        "sbc_rank": np.zeros(n_eval, dtype=np.int64),
        "mcse_var_rel": np.zeros(n_eval),
        "draws": draws,
        "draws_train": None,
    }
    spec = TaskSpec(dataset, "gp", noise, coverage, seed, fidelity="smoke", n_draws=N_DRAWS)
    return Task(spec, arrays, diagnostics={}, prior={"family": "fake"})


def save_fake_task(task: Task, folder: Path) -> Path:
    """Save ``task`` as ``<folder>/<task id>.npz``; return the path."""
    folder.mkdir(parents=True, exist_ok=True)
    return task.save(folder / f"{task.spec.task_id}.npz")


class MeanMethod(BaseMethod):
    """Predicts the training mean; AU constant; EU grows with distance from the training mean."""

    name = "fake-mean"
    family = "linear"
    constant_aleatoric = True

    def __init__(self, scale: float = 1.0, random_state: int | None = None) -> None:
        self.scale = scale
        self.random_state = random_state

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        self.center_ = X.mean(axis=0)
        self.var_ = float(np.var(y))

    def _predict(self, X: np.ndarray) -> Prediction:
        n = X.shape[0]
        eu = self.scale * np.sum((X - self.center_) ** 2, axis=1)
        return Prediction(np.zeros(n), np.full(n, self.var_), eu)


class KnnMethod(BaseMethod):
    """k-nearest-neighbour mean; AU = neighbours' variance; EU = AU / k + jitter from the seed."""

    name = "fake-knn"
    family = "trees"

    def __init__(
        self,
        k: int = 5,
        sleep: float = 0.0,
        fail_n_train: int = -1,
        random_state: int | None = None,
    ) -> None:
        self.k = k
        self.sleep = sleep
        self.fail_n_train = fail_n_train
        self.random_state = random_state

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        if X.shape[0] == self.fail_n_train and os.environ.get("FAKE_KNN_HEAL") != "1":
            raise RuntimeError(f"fake failure on n_train={X.shape[0]}")
        if os.environ.get("FAKE_KNN_INTERRUPT") == str(X.shape[0]):
            raise KeyboardInterrupt
        if self.sleep:
            time.sleep(self.sleep)
        self.X_, self.y_ = X, y
        self.jitter_ = np.random.default_rng(self.random_state).uniform(0, 1e-3)

    def _predict(self, X: np.ndarray) -> Prediction:
        d2 = ((X[:, None, :] - self.X_[None, :, :]) ** 2).sum(-1)
        nn = np.argsort(d2, axis=1)[:, : self.k]
        ys = self.y_[nn]
        au = ys.var(axis=1) + 1e-6
        eu = au / self.k + self.jitter_ * d2.min(axis=1)
        return Prediction(ys.mean(axis=1), au, eu)


class BadMethod(BaseMethod):
    """Returns invalid output: ``kind`` is "nan", "negative" or "shape"."""

    name = "fake-bad"
    family = "linear"

    def __init__(self, kind: str = "nan", random_state: int | None = None) -> None:
        self.kind = kind
        self.random_state = random_state

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        self.fitted_ = True

    def _predict(self, X: np.ndarray) -> Prediction:
        n = X.shape[0]
        ones = np.ones(n)
        if self.kind == "nan":
            return Prediction(np.full(n, np.nan), ones, ones)
        if self.kind == "negative":
            return Prediction(np.zeros(n), ones, -ones)
        return Prediction(np.zeros(n - 1), ones[:-1], ones[:-1])


class FaultyMethod(BaseMethod):
    """Predicts the training mean after a fault in ``fit``; logs every fit it starts.

    ``fault``: ``"none"``; ``"busy"`` (a pure-Python busy loop of ``busy_s`` seconds that
    holds the GIL in slices, as a runaway optimiser does); ``"exit"`` (``os._exit(3)``);
    ``"segv"`` (dereferences a null pointer); ``"kill-worker"`` (SIGKILL to the Dask worker
    process running the cell, once: only when it creates ``marker``; later fits are normal).
    Each fit first appends ``"<random_state> <pid>"`` to the file ``log`` (when given), so a
    test can count how often each cell ran, and in which process.
    """

    name = "fake-faulty"
    family = "linear"
    constant_aleatoric = True

    def __init__(
        self,
        fault: str = "none",
        busy_s: float = 60.0,
        log: str = "",
        marker: str = "",
        random_state: int | None = None,
    ) -> None:
        self.fault = fault
        self.busy_s = busy_s
        self.log = log
        self.marker = marker
        self.random_state = random_state

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        if self.log:
            with open(self.log, "a") as f:
                f.write(f"{self.random_state} {os.getpid()}\n")
        if self.fault == "busy":
            t0 = time.monotonic()
            while time.monotonic() - t0 < self.busy_s:
                pass
        elif self.fault == "exit":
            os._exit(3)
        elif self.fault == "segv":
            import ctypes

            ctypes.string_at(0)
        elif self.fault == "kill-worker" and _create(self.marker):
            import signal

            from udbench.execution import isolation

            # the cell runs in a child of the worker (or, before isolation, in the worker)
            worker = os.getppid() if isolation.in_child() else os.getpid()
            os.kill(worker, signal.SIGKILL)
            time.sleep(60)
        self.mean_, self.var_ = float(np.mean(y)), float(np.var(y)) + 1e-6

    def _predict(self, X: np.ndarray) -> Prediction:
        n = X.shape[0]
        eu = np.sum((X - 0.5) ** 2, axis=1) + 1e-3
        return Prediction(np.full(n, self.mean_), np.full(n, self.var_), eu)


def _create(path: str) -> bool:
    """Create the file ``path``; False if it already exists (atomic across processes)."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def fit_log(path: Path) -> dict[int, list[int]]:
    """``{random_state: [pid of each fit]}`` from a :class:`FaultyMethod` log."""
    out: dict[int, list[int]] = {}
    if Path(path).exists():
        for line in Path(path).read_text().split("\n"):
            if line:
                seed, pid = line.split()
                out.setdefault(int(seed), []).append(int(pid))
    return out


class QuadMethod(BaseMethod):
    """A tunable fake whose held-out NLL is a known function of its hyperparameters.

    Predicts the training mean with AU = var(y) · exp(q), q = (x − 1)² + (z + 2)², EU = 0. On a
    held-out sample whose squared errors average about var(y), the NLL is
    ``const + q/2 + e^(−q)/2``, smallest at q = 0: the optimum is (x, z) ≈ (1, −2).
    ``fail_above``: fit raises when x > fail_above (a crashing trial). ``sleep`` seconds per fit
    and a fit ``log`` (``"<random_state> <pid>"`` per line) as :class:`FaultyMethod`.
    """

    name = "fake-quad"
    family = "linear"
    constant_aleatoric = True
    search_space = {  # noqa: RUF012 - a class declaration, as on real methods
        "x": {"type": "float", "low": -3.0, "high": 3.0},
        "z": {"type": "float", "low": -3.0, "high": 3.0},
    }

    def __init__(
        self,
        x: float = 0.0,
        z: float = 0.0,
        sleep: float = 0.0,
        fail_above: float = 10.0,
        log: str = "",
        random_state: int | None = None,
    ) -> None:
        self.x = x
        self.z = z
        self.sleep = sleep
        self.fail_above = fail_above
        self.log = log
        self.random_state = random_state

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        if self.log:
            with open(self.log, "a") as f:
                f.write(f"{self.random_state} {os.getpid()}\n")
        if self.sleep:
            time.sleep(self.sleep)
        if self.x > self.fail_above:
            raise RuntimeError(f"fake failure at x={self.x:.3f}")
        self.mean_, self.var_ = float(np.mean(y)), float(np.var(y))

    def _predict(self, X: np.ndarray) -> Prediction:
        n = X.shape[0]
        q = (self.x - 1.0) ** 2 + (self.z + 2.0) ** 2
        return Prediction(np.full(n, self.mean_), np.full(n, self.var_ * np.exp(q)), np.zeros(n))


class StepQuadMethod(QuadMethod):
    """:class:`QuadMethod` trained in ``n_steps`` steps that reports while it fits.

    Its model after k steps predicts the training mean shifted by ``drift · k`` training SDs,
    and by ``final_shift`` more once all steps are done (so a trial stopped early can score
    better than every trial that finished), with AU = var(y) · exp(q) as QuadMethod.
    ``log``: one line ``"<random_state> <k>"`` per step actually trained.
    """

    name = "fake-step-quad"
    progress_param = "n_steps"
    search_space = {  # noqa: RUF012 - a class declaration, as on real methods
        **QuadMethod.search_space,
        "n_steps": {"type": "int", "low": 9, "high": 27},
    }

    def __init__(
        self,
        x: float = 0.0,
        z: float = 0.0,
        n_steps: int = 18,
        drift: float = 0.05,
        final_shift: float = 0.0,
        log: str = "",
        random_state: int | None = None,
    ) -> None:
        self.x = x
        self.z = z
        self.n_steps = n_steps
        self.drift = drift
        self.final_shift = final_shift
        self.log = log
        self.random_state = random_state

    def _fit(self, X: np.ndarray, y: np.ndarray) -> None:
        self.mean_, self.var_ = float(np.mean(y)), float(np.var(y))
        checkpoints = self._progress_checkpoints()
        for k in range(1, int(self.n_steps) + 1):
            if self.log:
                with open(self.log, "a") as f:
                    f.write(f"{self.random_state} {k}\n")
            self.k_ = k
            if k in checkpoints:
                self._report_progress(k, self._predict)

    def _predict(self, X: np.ndarray) -> Prediction:
        n = X.shape[0]
        q = (self.x - 1.0) ** 2 + (self.z + 2.0) ** 2
        shift = self.drift * self.k_ + (self.final_shift if self.k_ == self.n_steps else 0.0)
        mean = self.mean_ + shift * np.sqrt(self.var_)
        return Prediction(np.full(n, mean), np.full(n, self.var_ * np.exp(q)), np.zeros(n))


#: Record keys that hold wall-clock or CPU times or paths (differ between otherwise equal sweeps).
RECORD_CLOCK_KEYS = (
    "created_at", "duration_s", "fit_time_s", "predict_time_s", "cpu_time_s", "_path"
)  # fmt: skip


def strip_clock(record: dict) -> dict:
    """A tuning record without its clock keys, at the top and in every history entry."""
    out = {k: v for k, v in record.items() if k not in RECORD_CLOCK_KEYS}
    out["history"] = [
        {k: v for k, v in h.items() if k not in RECORD_CLOCK_KEYS} for h in record["history"]
    ]
    return out


def save_toy_gpc_task(folder: Path, n_classes: int, n_eval: int, n_train: int) -> Path:
    """A tiny latent-GP classification task (``toy``, u-shaped temperature τ = 0.3 + 0.4·x₀,
    smoke sampler: 2 chains, 20 warm-up, D = 40) on 2-D uniform inputs, saved in ``folder``;
    its path. The caller points ``UDBENCH_CACHE_DIR`` somewhere temporary."""
    task = toy_gpc_task(n_classes, n_eval, n_train)
    return task.save(Path(folder) / f"{task.spec.task_id}.npz")


def toy_gpc_task(n_classes: int, n_eval: int, n_train: int, spec: TaskSpec | None = None):
    """The task of :func:`save_toy_gpc_task` (not saved), under ``spec`` when given (its
    seed seeds the draws; D must be 40)."""
    from udbench.priors.gp import GPPrior
    from udbench.priors.gp.fit import default_kernel_hyper
    from udbench.priors.gp_classification import GPClassificationPrior
    from udbench.tasks.generate import make_classification_task

    X = np.random.default_rng(5).uniform(size=(n_eval + n_train, 2))
    gp = GPPrior(default_kernel_hyper("rbf", 2), 1.0)
    sampler = {"n_chains": 2, "n_warmup": 20, "thin": 1}
    prior = GPClassificationPrior(gp, n_classes, "smoke", sampler_kwargs=sampler)
    tau = 0.3 + 0.4 * X[:, 0]
    ev, tr = np.arange(n_eval), np.arange(n_eval, n_eval + n_train)
    if spec is None:
        spec = TaskSpec(
            "toy", "gpc", "u-shaped", "balanced", 0, "smoke", n_draws=40, n_classes=n_classes
        )
    return make_classification_task(
        spec, prior, X, ev, tr, tau[ev], tau[tr], temperature={"mode": "u-shaped"}
    )


def tiny_runs_suite(name: str, seeds: str, methods: str) -> dict:
    """A regression suite dict of the suite-run campaign's tests: concrete, GP,
    homoscedastic, balanced, smoke, 40 draws (the fakes' D: a task file of another D is
    refused); its tasks come from :func:`fake_concrete_generate`."""
    return {
        "name": name,
        "datasets": "concrete",
        "families": "gp",
        "noise": "homoscedastic",
        "coverage": "balanced",
        "seeds": seeds,
        "fidelity": "smoke",
        "draws": N_DRAWS,
        "methods": methods,
        "method_params": "smoke",
        "keep_predictions": False,
    }


def fake_concrete_generate(spec, data_dir=None):
    """``generate`` of the suite-run campaign's tests: the fake homoscedastic concrete task of
    the spec's seed and coverage (40 training rows)."""
    return make_fake_task(
        spec.seed, n_train=40, dataset="concrete", noise="homoscedastic", coverage=spec.coverage
    )


def tuned_blr_folder(root: Path) -> Path:
    """A tuning folder under ``root`` with blr's record (3 trials) of the fake concrete
    homoscedastic balanced condition, made by ``udbench tune``."""
    import pytest

    from udbench.tuning.sweep import tune

    task = make_fake_task(0, n_train=40, dataset="concrete", noise="homoscedastic")
    path = task.save(root / f"{task.spec.task_id}.npz")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("UDBENCH_CACHE_DIR", str(root / "cache"))
        tune([path], ["blr"], root / "tuning", trials=3, workers=0)
    return root / "tuning"
