"""Tuning classifiers (issue 38, item 3): the held-out categorical NLL on a gpc task's
training sample, records, resume, ``run --tuned``'s configuration, the task-type refusal.

One tiny smoke ``gpc`` task (module-scoped, as in tests/tasks/test_classification_tasks.py)
and a fast classifier (``logreg-lap`` with few weight samples), three trials in process.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from _fakes import make_fake_task, save_fake_task, save_toy_gpc_task
from udbench._seeding import derive_seed
from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.methods.classification import BaseClassifier, ClassPrediction
from udbench.methods.classifiers import (
    CLASSIFIERS,
    classifier_spec_name,
    get_classifier_class,
    resolve_classifier,
)
from udbench.methods.logreg_lap import LogRegLaplace
from udbench.tasks import Task, TaskSpec
from udbench.tasks.generate import get_prior
from udbench.tuning.objective import categorical_nll, trial_seed
from udbench.tuning.records import Condition, load_records, tuned_configurer
from udbench.tuning.space import check_search_space
from udbench.tuning.sweep import tune

N_EVAL, N_TRAIN, K = 8, 25, 3
SPEC = "logreg-lap:n_samples=20"


@pytest.fixture(scope="module", autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("UDBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        get_prior.cache_clear()
        yield
        get_prior.cache_clear()


@pytest.fixture(scope="module")
def gpc_task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_toy_gpc_task(tmp_path_factory.mktemp("gpc"), K, N_EVAL, N_TRAIN)


@pytest.fixture(scope="module")
def tuned(gpc_task: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tuning")
    summary = tune([gpc_task], [SPEC], out, trials=3, workers=0, pruner="sha")
    assert summary.n_trials_run == 3 and len(summary.records) == 1
    return out


def test_every_classifier_declares_a_search_space_that_can_be_sampled() -> None:
    for name in CLASSIFIERS:
        check_search_space(name, get_classifier_class(name).search_space)


def test_classifier_specs_resolve_apart_from_regression_methods() -> None:
    assert classifier_spec_name("logreg-lap:prior_precision=2") == "logreg-lap"
    assert classifier_spec_name("blr") is None and classifier_spec_name(3) is None
    mc = resolve_classifier("logreg-lap:prior_precision=2")
    assert mc.params["prior_precision"] == 2.0 and mc.estimator.random_state == 0
    assert mc.config_hash == resolve_classifier(LogRegLaplace(prior_precision=2.0)).config_hash
    with pytest.raises(UdbenchError, match="hyperparameter of 'logreg-lap'"):
        resolve_classifier("logreg-lap:alpha=1")


def test_the_record_scores_the_held_out_categorical_nll_of_its_configuration(
    gpc_task: Path, tuned: Path
) -> None:
    (rec,) = load_records(tuned)
    task = Task.load(gpc_task)
    cond = Condition.of(task.spec)
    assert cond.key == "toy__gpc-k3-medium__u-shaped__balanced" == rec["condition"]
    assert rec["status"] == "ok" and rec["n_trials"] == rec["n_complete"] == 3
    assert rec["score_name"] == "heldout_categorical_nll" and rec["task_type"] == "classification"
    assert rec["prob_floor"] == 1e-12 and rec["pruner"] is None  # classifiers are not pruned
    assert rec["score"] == min(h["value"] for h in rec["history"])
    # by hand: the condition's split (SPEC §9's rule), the best trial's configuration and seed
    n = N_TRAIN
    perm = np.random.default_rng(derive_seed("tune-split", cond.key, bits=32)).permutation(n)
    hold, fit = np.sort(perm[: round(0.2 * n)]), np.sort(perm[round(0.2 * n) :])
    X, y = np.asarray(task.X_train), np.asarray(task.y_train)
    seed = trial_seed("logreg-lap", cond.key, rec["best_trial"])
    est = LogRegLaplace(**rec["params"], random_state=seed).fit(X[fit], y[fit], n_classes=K)
    probs = est.predict(X[hold]).probs
    by_hand = float(np.mean(-np.log(np.maximum(probs[np.arange(len(hold)), y[hold]], 1e-12))))
    assert rec["score"] == pytest.approx(by_hand, rel=1e-12, abs=0)


def test_a_cli_rerun_resumes_without_a_trial(gpc_task: Path, tuned: Path, capsys) -> None:
    before = load_records(tuned)[0]["history"]
    code = main(["tune", str(gpc_task), "--methods", SPEC, "--trials", "3", "--out", str(tuned),
                 "--workers", "0", "--no-progress"])  # fmt: skip
    assert code == 0
    assert "0 trials run" in capsys.readouterr().out
    assert load_records(tuned)[0]["history"] == before


def test_tuned_configurer_gives_the_classifier_its_record(gpc_task: Path, tuned: Path) -> None:
    (rec,) = load_records(tuned)
    spec = Task.load(gpc_task).spec
    other_seed = TaskSpec.from_dict({**spec.to_dict(), "seed": 4})  # every seed of the condition
    mc = resolve_classifier(SPEC)
    configure = tuned_configurer(tuned, [mc], [spec, other_seed])
    for s in (spec, other_seed):
        got, extra = configure(s, mc)
        assert got.label == f"{SPEC}[tuned]" and isinstance(got.estimator, BaseClassifier)
        assert got.params == rec["params"] and got.estimator.get_params()["n_samples"] == 20
        want = {"tuned_record": f"logreg-lap/{rec['condition']}", "tuned_score": rec["score"]}
        assert extra == want


def test_a_method_on_the_other_task_type_is_refused_up_front(gpc_task: Path, tmp_path) -> None:
    reg = save_fake_task(make_fake_task(0), tmp_path / "reg")
    with pytest.raises(UdbenchError, match=r"'blr' is a regression method and task 'toy__gpc-k3"):
        tune([gpc_task], ["blr"], tmp_path / "a", trials=1, workers=0)
    with pytest.raises(UdbenchError, match=r"'logreg-lap' is a classifier and task 'toy__"):
        tune([reg], ["logreg-lap"], tmp_path / "b", trials=1, workers=0)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    code = main(["tune", str(reg), "-m", "logreg-lap", "--out", str(tmp_path / "c"),
                 "--workers", "0", "--no-progress"])  # fmt: skip
    assert code == 2 and not (tmp_path / "c").exists()


class _OffSimplex(LogRegLaplace):
    """Returns probabilities that do not sum to 1 (bypassing predict's own check)."""

    def predict(self, X, loss="multiclass_log"):  # type: ignore[no-untyped-def]
        p = self._predict_unchecked(X, loss)
        return ClassPrediction(p.probs * 2.0, p.aleatoric, p.epistemic, p.loss)


def test_invalid_probabilities_are_a_failed_trial_with_its_error(gpc_task, tmp_path) -> None:
    tune([gpc_task], [_OffSimplex(n_samples=10)], tmp_path / "t", trials=2, workers=0)
    (rec,) = load_records(tmp_path / "t")
    assert rec["status"] == "no-complete-trial" and rec["n_failed"] == 2
    assert all("invalid class probabilities" in h["error"] for h in rec["history"])
    assert "rows summing to 1" in rec["history"][0]["error"]


def test_categorical_nll_clips_at_its_floor() -> None:
    probs = np.array([[1.0, 0.0], [0.5, 0.5]])
    assert categorical_nll(np.array([1, 0]), probs) == pytest.approx(
        0.5 * (-np.log(1e-12) + np.log(2.0))
    )
    with pytest.raises(UdbenchError, match="labels must lie"):
        categorical_nll(np.array([2, 0]), probs)


def test_a_spec_override_may_name_a_declared_extra_value() -> None:
    """nn-lap-softmax's ``prior_precision`` is a float or ``"marglik"`` (its ``also``)."""
    by_name = resolve_classifier("nn-lap-softmax:prior_precision=MargLik")
    assert by_name.params["prior_precision"] == "marglik"
    # the default is τ = 100, so "marglik" is another configuration, and 100 the default's
    assert by_name.config_hash != resolve_classifier("nn-lap-softmax").config_hash
    default = resolve_classifier("nn-lap-softmax:prior_precision=100")
    assert default.config_hash == resolve_classifier("nn-lap-softmax").config_hash
    assert resolve_classifier("nn-lap-softmax:prior_precision=30").params["prior_precision"] == 30.0
    with pytest.raises(UdbenchError, match="'prior_precision' must be a real number"):
        resolve_classifier("nn-lap-softmax:prior_precision=ml")
