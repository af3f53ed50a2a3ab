"""Classification tasks (issue 37, the task side): spec and id, generation, the task file,
``udbench check``.

The library tests make tasks with :func:`udbench.tasks.generate.make_classification_task`
on a tiny synthetic problem (20 inputs, 2 features, short chains: one compilation per K);
the end-to-end ``udbench generate`` / ``check`` on the embedded ``diabetes`` table is
marked slow.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.priors import MAX_N_CLASSES
from udbench.priors.gp import GPPrior
from udbench.priors.gp.fit import default_kernel_hyper
from udbench.priors.gp_classification import GPClassificationPrior
from udbench.tasks import Task, TaskSpec, generate_task, task_file_is_valid
from udbench.tasks.generate import get_prior, make_classification_task
from udbench.tasks.grid import expand_grid, generate_grid, plan_grid
from udbench.tasks.spec import family_of_coordinate
from udbench.tasks.taskfile import CLASSIFICATION_REQUIRED, read_task_meta

SAMPLER = {"n_chains": 2, "n_warmup": 20, "thin": 1}
D = 40
N_EVAL, N_TRAIN = 8, 12


@pytest.fixture(scope="module", autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("UDBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        mp.delenv("UDBENCH_DATA_DIR", raising=False)  # diabetes is embedded
        get_prior.cache_clear()
        yield
        get_prior.cache_clear()


def _spec(k: int = 3, seed: int = 0, noise: str = "u-shaped", **kw: object) -> TaskSpec:
    return TaskSpec(
        "toy", "gpc", noise, "balanced", seed, fidelity="smoke", n_draws=D, n_classes=k, **kw
    )


def _task(k: int = 3, seed: int = 0) -> Task:
    X = np.random.default_rng(5).uniform(size=(N_EVAL + N_TRAIN, 2))
    gp = GPPrior(default_kernel_hyper("rbf", 2), 1.0)
    prior = GPClassificationPrior(gp, k, "smoke", sampler_kwargs=SAMPLER)
    tau = 0.3 + 0.4 * X[:, 0]
    ev, tr = np.arange(N_EVAL), np.arange(N_EVAL, N_EVAL + N_TRAIN)
    return make_classification_task(
        _spec(k, seed), prior, X, ev, tr, tau[ev], tau[tr], temperature={"mode": "u-shaped"}
    )


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    folder = tmp_path_factory.mktemp("gpc")
    return {k: _task(k).save(folder / f"{_spec(k).task_id}.npz") for k in (2, 3)}


# -- spec and id ----------------------------------------------------------------------
def test_classification_settings_enter_the_id_and_the_seeds() -> None:
    s = TaskSpec("diabetes", "gpc", "u-shaped", "balanced", 0)
    assert (s.task_type, s.n_classes, s.difficulty) == ("classification", 3, "medium")
    assert s.family_coordinate == "gpc-k3-medium"
    assert s.task_id == "diabetes__gpc-k3-medium__u-shaped__balanced__s0"
    k2 = TaskSpec("diabetes", "gpc", "u-shaped", "balanced", 0, n_classes=2, difficulty="hard")
    assert k2.task_id == "diabetes__gpc-k2-hard__u-shaped__balanced__s0"
    assert k2.seed_for("f_star") != s.seed_for("f_star")
    assert TaskSpec.from_dict(s.to_dict()) == s
    assert s.to_dict()["n_classes"] == 3 and s.to_dict()["difficulty"] == "medium"
    # the coordinate's inverse gives the family back, and a family name stays itself
    assert family_of_coordinate(s.family_coordinate) == "gpc"
    assert family_of_coordinate(k2.family_coordinate) == "gpc"
    assert [family_of_coordinate(f) for f in ("gp", "hbart", "bnn")] == ["gp", "hbart", "bnn"]


def test_a_regression_spec_keeps_its_id_seeds_and_record() -> None:
    r = TaskSpec("diabetes", "gp", "smooth-monotone", "balanced", 1, fidelity="smoke", n_draws=40)
    assert r.task_type == "regression" and r.family_coordinate == "gp"
    assert r.task_id == "diabetes__gp__smooth-monotone__balanced__s1"
    assert list(r.to_dict()) == [
        "dataset",
        "family",
        "noise",
        "coverage",
        "seed",
        "fidelity",
        "n_draws",
    ]
    # the seed of before the classification settings existed (udbench d8e1534)
    assert r.seed_for("f_star") == 8799864355950235510


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_classes": 1}, "parameter 'n_classes' must be an integer from 2 to 100; got 1"),
        ({"n_classes": True}, "parameter 'n_classes' must be an integer from 2 to 100"),
        ({"n_classes": 2.0}, "parameter 'n_classes' must be an integer from 2 to 100"),
        ({"difficulty": "brutal"}, "parameter 'difficulty' must be one of"),
    ],
)
def test_bad_classification_settings_are_one_line_errors(kwargs, message) -> None:
    with pytest.raises(UdbenchError, match=message) as info:
        TaskSpec("diabetes", "gpc", "u-shaped", "balanced", 0, **kwargs)
    assert "\n" not in str(info.value)


def test_a_regression_family_takes_no_classification_setting() -> None:
    with pytest.raises(UdbenchError, match="'n_classes' must be None for the regression family"):
        TaskSpec("diabetes", "gp", "u-shaped", "balanced", 0, n_classes=3)
    with pytest.raises(UdbenchError, match="'difficulty' must be None"):
        TaskSpec("diabetes", "hbart", "u-shaped", "balanced", 0, difficulty="easy")


def test_an_unknown_temperature_mode_is_a_one_line_error() -> None:
    for mode in ("zigzag", "student-t"):
        spec = TaskSpec("diabetes", "gpc", mode, "balanced", 0, fidelity="smoke", n_draws=D)
        with pytest.raises(UdbenchError, match="noise \\(temperature mode\\)") as info:
            generate_task(spec)
        assert "\n" not in str(info.value)


def test_the_grid_names_classification_settings_per_family() -> None:
    specs = expand_grid("diabetes", "all", "homoscedastic", "balanced", "0", "smoke", 40)
    assert [s.family for s in specs] == ["gp", "hbart", "bnn"]  # 'all': regression families
    specs = expand_grid(
        "diabetes",
        "gp,gpc",
        "homoscedastic",
        "balanced",
        "0",
        "smoke",
        40,
        classes="2,3",
        difficulty="all",
    )
    assert specs[0].task_id == "diabetes__gp__homoscedastic__balanced__s0"
    assert [s.family_coordinate for s in specs[1:]] == [
        f"gpc-k{k}-{d}" for k in (2, 3) for d in ("easy", "medium", "hard")
    ]
    for bad in ("1", "two", ""):
        with pytest.raises(UdbenchError, match="generate: parameter 'classes'"):
            expand_grid("diabetes", "gpc", "all", "all", "0", "smoke", 40, classes=bad)
    with pytest.raises(UdbenchError, match="generate: parameter 'difficulty'"):
        expand_grid("diabetes", "gpc", "all", "all", "0", "smoke", 40, difficulty="x")
    with pytest.raises(UdbenchError, match="generate: parameter 'noise' must be temperature"):
        expand_grid("diabetes", "gpc", "student-t", "all", "0", "smoke", 40)
    assert len(expand_grid("diabetes", "gp", "all", "all", "0", "smoke", 40)) == 8


def test_classification_settings_without_a_classification_family_are_refused() -> None:
    # issue 68: `--families gp --classes 3 --difficulty hard` made the gp grid without a word
    for kw, name in (({"classes": "3"}, "classes"), ({"difficulty": "hard"}, "difficulty")):
        for families in ("gp", "all", "gp,bnn"):
            with pytest.raises(UdbenchError) as info:
                expand_grid("diabetes", families, "all", "all", "0", "smoke", 40, **kw)
            text = str(info.value)
            assert text.startswith(
                f"generate: parameter {name!r} must be left out unless --families names a "
                "classification family (gpc)"
            )
            assert text.endswith(f"got {kw[name]!r}") and "\n" not in text
    # with gpc among them they apply to gpc (the regression family as ever)
    mixed = expand_grid("diabetes", "gp,gpc", "u-shaped", "balanced", "0", "smoke", 40, classes="2")
    assert [s.family_coordinate for s in mixed] == ["gp", "gpc-k2-medium"]


def test_the_number_of_classes_is_bounded_before_anything_is_made() -> None:
    # issue 68: --classes 1000000 allocated 122 GiB before it failed
    assert MAX_N_CLASSES == 100
    rule = "generate: parameter 'classes' must be a comma list of integers from 2 to 100"
    for bad in ("1000000", "101", "3,101"):
        with pytest.raises(UdbenchError, match=f"^{rule}; got {bad!r}$"):
            expand_grid("diabetes", "gpc", "u-shaped", "balanced", "0", "smoke", 40, classes=bad)
    [spec] = expand_grid("diabetes", "gpc", "u-shaped", "balanced", "0", "smoke", 40, classes="100")
    assert spec.n_classes == 100
    with pytest.raises(UdbenchError, match="'n_classes' must be an integer from 2 to 100; got 101"):
        TaskSpec("diabetes", "gpc", "u-shaped", "balanced", 0, n_classes=101)


def test_generate_refuses_them_in_one_line(tmp_path, capsys) -> None:
    for args in (["--classes", "3", "--difficulty", "hard"], ["--classes", "1000000"]):
        families = "gp" if "--difficulty" in args else "gpc"
        code = main(
            [
                "generate",
                "--datasets",
                "diabetes",
                "--families",
                families,
                *args,
                "--out",
                str(tmp_path / "t"),
            ]
        )
        err = capsys.readouterr().err
        assert code == 2 and "Traceback" not in err
        [line] = [x for x in err.splitlines() if x.strip()]
        assert line.startswith("error: generate: parameter 'classes' must ")
    assert not (tmp_path / "t").exists() or not list((tmp_path / "t").glob("*.npz"))


# -- the task file --------------------------------------------------------------------
@pytest.mark.parametrize("k", [2, 3])
def test_a_classification_task_round_trips_with_checksums(saved, k) -> None:
    path = saved[k]
    assert task_file_is_valid(path, _spec(k))
    task = Task.load(path).verify()
    assert task.spec == _spec(k) and task.spec.task_type == "classification"
    arrays = task.arrays()
    assert set(arrays) == set(CLASSIFICATION_REQUIRED)
    assert task.noise_var_eval is None and task.draws is None
    shapes = {
        "y_train": (N_TRAIN,),
        "f_train": (N_TRAIN, k),
        "pi_star_train": (N_TRAIN, k),
        "tau_eval": (N_EVAL,),
        "f_eval": (N_EVAL, k),
        "pi_star_eval": (N_EVAL, k),
        "y_eval": (N_EVAL,),
        "post_mean": (N_EVAL, k),
        "sbc_rank": (N_EVAL, k),
        "draws_prob": (D, N_EVAL, k),
    }
    assert {n: arrays[n].shape for n in shapes} == shapes
    assert arrays["draws_prob"].dtype == np.float32 and arrays["y_train"].dtype == np.int64
    for labels in (arrays["y_train"], arrays["y_eval"]):
        assert labels.min() >= 0 and labels.max() < k
    np.testing.assert_allclose(arrays["draws_prob"].sum(axis=2), 1.0, atol=1e-5)
    np.testing.assert_allclose(arrays["pi_star_eval"].sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(arrays["post_mean"], arrays["draws_prob"].mean(0), atol=1e-6)
    diag = task.diagnostics
    assert diag["task_type"] == "classification" and diag["sampler"]["rhat_gate"] is True
    assert diag["checks"]["n_points"] == N_EVAL * k and diag["checks"]["n_draws"] == D
    assert set(diag["seeds"]) == {"train", "f_star", "labels", "labels_eval", "posterior"}
    assert task.prior["n_classes"] == k


@pytest.mark.parametrize("k", [2, 3])
def test_the_checks_rank_pi_star_among_the_draws_of_pi(saved, k) -> None:
    # SPEC §7's checks of a gpc task are on π, not the latents f*_k (each carries the shift
    # latent whose posterior is its prior): sbc_rank = #{d : π_d,k(x) < π*_k(x)}
    task = Task.load(saved[k])
    probs, pi_star = task.draws_prob, task.pi_star_eval
    by_hand = np.sum(probs < pi_star[None].astype(probs.dtype), axis=0)
    # the stored ranks come from the float64 draws, the file holds them rounded to float32:
    # a draw within float32 rounding of π* may fall on the other side of it
    near = np.any(np.abs(probs - pi_star[None]) <= 1e-7 * pi_star[None], axis=0)
    assert task.sbc_rank.shape == (N_EVAL, k) and task.sbc_rank.dtype == np.int64
    np.testing.assert_array_equal(task.sbc_rank[~near], by_hand[~near])
    assert np.all(np.abs(task.sbc_rank - by_hand)[near] <= D)
    checks = task.diagnostics["checks"]
    assert checks["truth"] == "pi_star"
    assert (
        checks["sbc_hist"]
        == np.bincount(task.sbc_rank.ravel() * 20 // (D + 1), minlength=20).tolist()
    )
    np.testing.assert_allclose(task.post_mean, probs.mean(axis=0), atol=1e-6)
    np.testing.assert_allclose(task.post_var, probs.var(axis=0, ddof=1), atol=1e-6)
    assert np.all(np.isfinite(task.mcse_var_rel)) and task.mcse_var_rel.shape == (N_EVAL, k)


def test_saturated_pi_is_ranked_by_log_pi_without_ties() -> None:
    # a logit leading by more than ~37 gives π = 1.0 exactly in float64 (and a plain
    # log-softmax 0.0): π* ties with the draws there and its rank (#draws below) drops to
    # the bottom; log_class_probabilities keeps the order
    from scipy.special import log_softmax, softmax

    from udbench.priors.gp_classification import log_class_probabilities
    from udbench.tasks.checks import acceptance_checks

    rng = np.random.default_rng(3)
    logits = np.stack([40.0 + rng.normal(size=(D + 1, 5)), np.zeros((D + 1, 5))], axis=-1)
    pi, log_pi = softmax(logits, axis=-1), log_class_probabilities(logits, np.ones(5))
    assert np.all(pi[..., 0] == 1.0) and np.all(log_softmax(logits, axis=-1)[..., 0] == 0.0)
    np.testing.assert_allclose(np.exp(log_pi), pi, rtol=1e-14, atol=0)
    np.testing.assert_allclose(log_pi[..., 0], -np.exp(-logits[..., 0]), rtol=1e-12)
    flat = [a.reshape(D + 1, 10) for a in (pi, log_pi)]
    _, by_pi = acceptance_checks(flat[0][0], flat[0][1:])
    _, by_log = acceptance_checks(flat[0][0], flat[0][1:], rank_values=(flat[1][0], flat[1][1:]))
    exact = np.sum(logits[1:, :, 0] < logits[0, :, 0], axis=0)  # the order of the logits
    np.testing.assert_array_equal(by_log["sbc_rank"].reshape(5, 2)[:, 0], exact)
    assert np.all(by_pi["sbc_rank"].reshape(5, 2)[:, 0] == 0)  # the ties π alone gives
    np.testing.assert_array_equal(by_log["mcse_var_rel"], by_pi["mcse_var_rel"])  # of π


def test_a_classification_task_lacking_an_array_is_refused() -> None:
    task = _task(2)
    arrays = task.arrays()
    del arrays["draws_prob"]
    with pytest.raises(UdbenchError, match=r"Task: arrays missing: \['draws_prob'\]"):
        Task(task.spec, arrays, task.diagnostics, task.prior)


def test_a_damaged_array_fails_its_checksum(saved, tmp_path) -> None:
    import zipfile

    src = saved[2]
    bad = tmp_path / src.name
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(bad, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == "tau_eval.npy":
                data = data[:-8] + np.float64(9.0).tobytes()
            zout.writestr(info, data)
    assert not task_file_is_valid(bad)
    with pytest.raises(UdbenchError, match="checksum mismatch for array 'tau_eval'"):
        Task.load(bad).tau_eval  # noqa: B018


def test_the_same_spec_gives_the_same_arrays(saved, tmp_path) -> None:
    again = _task(2).save(tmp_path / "again.npz")
    a, b = read_task_meta(saved[2]), read_task_meta(again)
    assert a["array_sha256"] == b["array_sha256"]

    def untimed(diag: dict) -> dict:
        # wall times and rates (``*_seconds``, ``*_per_second``) differ between two runs
        sampler = {k: v for k, v in diag["sampler"].items() if "second" not in k}
        return {**diag, "sampler": sampler}

    assert json.dumps(untimed(a["diagnostics"])) == json.dumps(untimed(b["diagnostics"]))
    # the timings are left out of the content checksum (task schema 3), so the two files,
    # which differ in their timings, are one version of the task for the runner
    assert a["schema_version"] == b["schema_version"] == 3
    assert "wall_seconds" in a["diagnostics"]["sampler"]
    assert a["content_sha256"] == b["content_sha256"]
    other = _task(2, seed=1)
    assert not np.array_equal(other.f_eval, Task.load(saved[2]).f_eval)


def test_check_reports_classification_tasks_with_the_rhat_gate(saved, capsys) -> None:
    from udbench.commands.tasks import check_tasks

    report = check_tasks([str(saved[2].parent)])
    assert report["invalid"] == []
    stats = report["families"]["gpc"]
    assert stats["n_instances"] == 2 and stats["rhat_gate"] is True
    checks = {v["check"]: v["verdict"] for v in stats["verdicts"]}
    assert "split-R̂ (function space)" in checks and "coverage 90 %" in checks
    assert stats["truth"] == "π*" and "corr(mean, π*) median" in checks  # ranks π*, not f*
    assert main(["check", str(saved[2].parent), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["families"]["gpc"]["n_instances"] == 2


# -- regression files unchanged, and the end-to-end path on diabetes ------------------
@pytest.mark.slow
def test_a_regression_task_file_is_byte_identical_to_before(tmp_path) -> None:
    # in a fresh process: JAX's thread pool is fixed at one thread there (in this one the
    # tests above have created JAX's backends already), as in ``udbench generate``
    code = (
        "import sys\n"
        "from udbench.tasks import TaskSpec, generate_task\n"
        "spec = TaskSpec('diabetes', 'gp', 'smooth-monotone', 'balanced', 1, fidelity='smoke',"
        " n_draws=40)\n"
        "generate_task(spec).save(sys.argv[1])\n"
    )
    path = tmp_path / "t.npz"
    subprocess.run([sys.executable, "-c", code, str(path)], check=True)
    # the same file written by udbench d8e1534 (before classification tasks) on this machine
    before = "8818e93ef9af13ad4abb190b59f7cce3741b0c585c1ee095e0f5a5872cbc0ec6"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


@pytest.mark.slow
def test_udbench_generate_and_check_classification_tasks_on_diabetes(tmp_path, capsys) -> None:
    args = ["generate", "--families", "gpc", "--noise", "homoscedastic", "--coverage"]
    args += ["balanced", "--seeds", "0", "--fidelity", "smoke", "--draws", "40"]
    args += ["--classes", "2,3", "--out", str(tmp_path)]
    assert main(args) == 0
    specs = expand_grid(
        "diabetes", "gpc", "homoscedastic", "balanced", "0", "smoke", 40, classes="2,3"
    )
    plan = plan_grid(specs, tmp_path)
    assert plan.n_done == 2 and plan.todo == () and plan.clashes == ()
    assert generate_grid(specs, tmp_path).generated == ()  # resumed: nothing to make
    task = Task.load(tmp_path / f"{specs[1].task_id}.npz").verify()
    assert task.draws_prob.shape == (40, task.X_eval.shape[0], 3)
    assert task.diagnostics["temperature"]["mode"] == "homoscedastic"
    capsys.readouterr()
    assert main(["check", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["families"]["gpc"]["n_instances"] == 2


def test_a_regression_method_on_a_classification_task_is_a_one_line_failure(saved) -> None:
    from _fakes import MeanMethod
    from udbench.evaluation.cell import evaluate_cell
    from udbench.evaluation.runner import plan_cells, resolve_method

    (cell,), _ = plan_cells([saved[3]], [resolve_method(MeanMethod())])
    row = evaluate_cell(cell).row
    assert row["status"] == "failed" and "\n" not in row["error"]
    assert "is a regression method and task" in row["error"]
    assert "is a classification task" in row["error"]
    assert row["family"] == "gpc"
