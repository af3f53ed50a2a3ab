"""Search spaces as Optuna suggestions, the held-out NLL and the split (issue 17, item 1)."""

from __future__ import annotations

import math

import numpy as np
import optuna
import pytest

from _fakes import QuadMethod, make_fake_task, save_fake_task
from udbench._validation import UdbenchError
from udbench.tasks import Task
from udbench.tuning.objective import (
    TrialJob,
    evaluate_trial,
    gaussian_nll,
    holdout_split,
    read_training_sample,
    train_sha256,
)
from udbench.tuning.space import check_search_space, search_space_hash, suggest

SPACE = {
    "lr": {"type": "float", "low": 1e-4, "high": 1e-1, "log": True},
    "depth": {"type": "int", "low": 2, "high": 6},
    "kind": {"type": "categorical", "choices": ["a", "b"]},
    "only_b": {"type": "float", "low": 0.0, "high": 1.0, "when": {"kind": "b"}},
    "fixed": {"type": "categorical", "choices": [10]},
    "flag": {"type": "bool"},
}


def test_suggest_respects_types_ranges_conditions_and_fixed_entries():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    seen_kinds = set()
    for _ in range(40):
        trial = study.ask()
        p = suggest(trial, SPACE)
        assert 1e-4 <= p["lr"] <= 1e-1 and isinstance(p["lr"], float)
        assert p["depth"] in range(2, 7) and isinstance(p["depth"], int)
        assert p["fixed"] == 10 and isinstance(p["flag"], bool)
        seen_kinds.add(p["kind"])
        # the conditional entry exists exactly when its condition holds
        assert ("only_b" in p) == (p["kind"] == "b")
        study.tell(trial, 0.0)
    assert seen_kinds == {"a", "b"}
    # log scale: about half the draws below the geometric midpoint 10^-2.5
    lrs = [t.params["lr"] for t in study.trials]
    assert 0.25 < np.mean(np.array(lrs) < 10**-2.5) < 0.75


@pytest.mark.parametrize(
    ("entry", "rule"),
    [
        ({"type": "float", "low": 0.0}, "both 'low' and 'high'"),
        ({"type": "float", "low": 2.0, "high": 1.0}, "low <= high"),
        ({"type": "float", "low": 0.0, "high": 1.0, "log": True}, "low > 0"),
        ({"type": "categorical", "choices": []}, "at least one choice"),
        ({"type": "float", "low": 0.0, "high": 1.0, "when": {"later": 1}}, "declared before"),
    ],
)
def test_unsampleable_search_space_is_a_clear_error(entry, rule):
    with pytest.raises(UdbenchError, match=rule) as info:
        check_search_space("m", {"p": entry, "later": {"type": "bool"}})
    assert "m search_space" in str(info.value)


def test_search_space_hash_changes_with_any_range():
    base = search_space_hash("m", SPACE)
    assert base == search_space_hash("m", dict(SPACE))
    changed = {**SPACE, "depth": {"type": "int", "low": 2, "high": 7}}
    assert search_space_hash("m", changed) != base
    assert search_space_hash("other", SPACE) != base


def test_gaussian_nll_matches_the_closed_form():
    y, m, v = np.array([0.0, 1.0]), np.array([0.5, 0.5]), np.array([1.0, 4.0])
    want = np.mean(0.5 * np.log(2 * np.pi * v) + 0.5 * (y - m) ** 2 / v)
    assert gaussian_nll(y, m, v) == pytest.approx(want, rel=1e-14)
    # hand value of one point: N(0 | 0.5, 1) -> 0.5 log(2π) + 0.125
    assert gaussian_nll(y[:1], m[:1], v[:1]) == pytest.approx(0.5 * math.log(2 * math.pi) + 0.125)
    assert gaussian_nll(y, m, np.array([0.0, 1.0])) == math.inf


def test_holdout_split_is_a_seeded_uniform_80_20_partition():
    fit, hold = holdout_split(50, seed=7)
    assert len(hold) == 10 and len(fit) == 40
    assert sorted(np.concatenate([fit, hold]).tolist()) == list(range(50))
    again = holdout_split(50, seed=7)
    assert np.array_equal(again[1], hold)
    assert not np.array_equal(holdout_split(50, seed=8)[1], hold)
    # uniform: every row is held out about 20 % of the time over many seeds
    counts = np.zeros(50)
    for s in range(400):
        counts[holdout_split(50, seed=s)[1]] += 1
    assert np.all(np.abs(counts / 400 - 0.2) < 0.1)
    with pytest.raises(UdbenchError, match="at least 2 rows"):
        holdout_split(2, seed=0)


def test_a_trial_reads_only_the_training_arrays(tmp_path, monkeypatch):
    path = save_fake_task(make_fake_task(0, n_train=40), tmp_path)
    read: list[str] = []
    original = Task._read_member

    def spy(self, name):
        read.append(name)
        return original(self, name)

    monkeypatch.setattr(Task, "_read_member", spy)
    _, y, sha = read_training_sample(str(path))
    job = TrialJob(
        sweep="s",
        number=0,
        task_path=str(path),
        estimator=QuadMethod(),
        params={"x": 1.0, "z": -2.0},
        split_seed=3,
        train_sha256=sha,
    )
    out = evaluate_trial(job)
    assert out.error is None and out.n_fit == 32 and out.n_holdout == 8
    assert set(read) == {"X_train", "y_train"}
    # the score is the NLL of the held-out rows under the fake's known prediction
    fit, hold = holdout_split(40, 3)
    mean, var = y[fit].mean(), y[fit].var()
    assert out.value == pytest.approx(
        gaussian_nll(y[hold], np.full(8, mean), np.full(8, var)), rel=1e-10
    )
    assert sha == train_sha256(Task.load(path))


def test_a_crashing_or_invalid_trial_is_a_failed_outcome_not_an_exception(tmp_path):
    path = save_fake_task(make_fake_task(0, n_train=40), tmp_path)
    job = TrialJob("s", 0, str(path), QuadMethod(fail_above=0.5), {"x": 1.0, "z": 0.0})
    out = evaluate_trial(job)
    assert out.value is None and "fake failure at x=1.000" in str(out.error)
    bad = TrialJob("s", 0, str(path), QuadMethod(), {"x": "nope"})
    out = evaluate_trial(bad)
    assert out.value is None and "parameter 'x' must be a real number" in str(out.error)
    changed = TrialJob("s", 0, str(path), QuadMethod(), {}, train_sha256="0" * 64)
    assert "training sample changed" in str(evaluate_trial(changed).error)
