"""The student-t noise mode (issue 21 item 3): variance, tails, grid, task-file record, check."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from udbench.cli import main
from udbench.data import load_covariates
from udbench.design import (
    ALL_NOISE_MODES,
    NOISE_MODES,
    STUDENT_T_DF,
    NoiseModel,
    get_noise_mode,
    unit_noise,
)
from udbench.priors.gp import GPPrior
from udbench.tasks import Task, TaskSpec, make_task
from udbench.tasks.generate import draw_instance

N = 400_000


@pytest.fixture(scope="module")
def cov():
    return load_covariates("diabetes")


def test_student_t_has_the_stated_variance_within_5_se():
    eps = unit_noise("student-t", np.random.default_rng(1), N)
    sq = eps**2
    # ν = 4: E ε⁴ is infinite, so the SE of the mean of ε² is the sample's own (finite here)
    se = sq.std(ddof=1) / np.sqrt(N)
    assert abs(sq.mean() - 1.0) <= 5 * se
    assert abs(eps.mean()) <= 5 * eps.std(ddof=1) / np.sqrt(N)
    # a wrongly scaled draw (raw t_4, variance ν/(ν − 2) = 2) would be far outside
    assert abs(2.0 - sq.mean()) > 50 * se


def test_student_t_has_heavier_tails_than_gaussian():
    eps = unit_noise("student-t", np.random.default_rng(2), N)
    gauss = unit_noise("smooth-monotone", np.random.default_rng(2), N)
    k_t, k_g = stats.kurtosis(eps, fisher=False), stats.kurtosis(gauss, fisher=False)
    assert abs(k_g - 3.0) < 0.05  # Gaussian: 3
    assert k_t > 6.0  # t_4: infinite kurtosis; the sample's is large
    # the tail share beyond 4 SD matches the scaled t_4 law within 5 binomial SE
    nu = STUDENT_T_DF
    p = 2 * stats.t.sf(4.0 / np.sqrt((nu - 2) / nu), nu)  # P(|ε| > 4)
    share = np.mean(np.abs(eps) > 4.0)
    assert abs(share - p) <= 5 * np.sqrt(p * (1 - p) / N)
    assert share > 50 * 2 * stats.norm.sf(4.0)  # vs 6.3e-5 for a Gaussian


def test_student_t_variance_equals_smooth_monotone(cov):
    t = NoiseModel(cov, "student-t")
    sm = NoiseModel(cov, "smooth-monotone")
    np.testing.assert_array_equal(t.variance(cov.X), sm.variance(cov.X))
    assert (t.law, sm.law) == ("student-t", "gaussian")
    assert not get_noise_mode("student-t").gaussian and get_noise_mode("step").gaussian


def test_grid_is_spec_modes_and_student_t_only_when_named():
    from udbench.tasks.grid import expand_grid

    assert "student-t" in ALL_NOISE_MODES and "student-t" not in NOISE_MODES
    every = expand_grid("diabetes", "gp", "all", "balanced", "0", "smoke", 40)
    assert [s.noise for s in every] == list(NOISE_MODES)
    named = expand_grid("diabetes", "gp", "student-t,step", "balanced", "0", "smoke", 40)
    assert [s.noise for s in named] == ["student-t", "step"]


class _ZeroPrior:
    def sample(self, X, key, n_draws):
        return np.zeros((n_draws, X.shape[0]))


@pytest.mark.parametrize("noise", ["student-t", "step", "own-label"])
def test_draw_instance_noise_stream(noise):
    """Gaussian modes (and labels outside the table) keep the standard-normal stream they
    always used; student-t draws its scaled t from the same stream."""
    spec = TaskSpec("synthetic", "gp", noise, "balanced", 3, n_draws=40)
    nv = np.linspace(0.1, 2.0, 50)
    _, _, y = draw_instance(spec, _ZeroPrior(), np.zeros((5, 1)), np.zeros((50, 1)), nv)
    rng = np.random.default_rng(spec.seed_for("noise"))
    if noise == "student-t":
        want = np.sqrt(nv) * (rng.standard_t(4.0, 50) * np.sqrt(0.5))
    else:
        want = np.sqrt(nv) * rng.standard_normal(50)
    np.testing.assert_array_equal(y, want)


HYPER = {"kernel_family": "rbf", "parts": [{"kernel": "rbf", "weight": 1.0, "lengthscale": [0.4]}]}


def _task(noise: str, seed: int = 0) -> Task:
    X = np.random.default_rng(0).random((30, 1))
    spec = TaskSpec("synthetic", "gp", noise, "balanced", seed, n_draws=40)
    return make_task(
        spec,
        GPPrior(HYPER, 1.3),
        X,
        np.arange(10),
        np.arange(10, 30),
        np.full(10, 0.2),
        np.full(20, 0.2),
        shell_eval=np.arange(10) % 5,
    )


def test_task_file_marks_reference_approximate_and_check_says_so(tmp_path, capsys):
    folder = tmp_path / "tasks"
    t = _task("student-t").save(folder / "t.npz")
    g = _task("step").save(folder / "g.npz")
    loaded_t, loaded_g = Task.load(t), Task.load(g)
    assert loaded_t.reference_exact is False
    rec = loaded_t.diagnostics["reference"]
    assert rec["exact"] is False and rec["noise_law"] == "student-t" and rec["df"] == 4.0
    assert "misspecified" in rec["note"] and "Gaussian likelihood" in rec["note"]
    assert loaded_g.reference_exact is True and "reference" not in loaded_g.diagnostics
    assert main(["check", str(folder), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["families"]["gp"]["n_instances"] == 1
    assert report["families"]["gp (approximate reference)"]["n_instances"] == 1
    (approx,) = report["approximate"]
    assert approx["path"] == str(t) and "misspecified" in approx["note"]
    assert main(["check", str(folder)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "1 task file(s) have an APPROXIMATE reference posterior" in text


def test_rows_and_leaderboard_flag_approximate_reference(tmp_path, capsys):
    from _fakes import KnnMethod, MeanMethod, make_fake_task, save_fake_task
    from udbench.evaluation.runner import run_benchmark
    from udbench.evaluation.store import read_results
    from udbench.tasks.generate import reference_record

    folder = tmp_path / "tasks"
    approx = make_fake_task(0, noise="student-t")
    approx.diagnostics["reference"] = reference_record("student-t")
    save_fake_task(approx, folder)
    save_fake_task(make_fake_task(1, noise="step"), folder)
    out = tmp_path / "res"
    run_benchmark([folder], [MeanMethod(), KnnMethod(k=4)], out, workers=0)
    df = read_results(out).set_index("noise")
    assert (df.loc["student-t", "reference_exact"] == False).all()  # noqa: E712
    assert df.loc["step", "reference_exact"].isna().all()  # other rows: no value
    assert main(["leaderboard", str(out)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "1 instance(s) have an approximate reference posterior" in text
