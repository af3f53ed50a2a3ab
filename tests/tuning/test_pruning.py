"""Pruned tuning (issue 35, item 3): a pruned trial counts and is never the best, a pruned
sweep resumes from its journal, and the pruner is off for methods with no intermediate values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from _fakes import QuadMethod, StepQuadMethod, make_fake_task, save_fake_task, strip_clock
from udbench._validation import UdbenchError
from udbench.tuning.objective import trial_seed
from udbench.tuning.pruning import PrunerSpec, pruner_spec
from udbench.tuning.records import load_records
from udbench.tuning.sweep import tune


def _record(folder: Path) -> dict:
    (rec,) = load_records(folder)
    return rec


@pytest.fixture
def tasks(tmp_path):
    folder = tmp_path / "tasks"
    save_fake_task(make_fake_task(0, n_train=50), folder)
    return folder


def test_pruner_resources_come_from_the_methods_own_steps():
    from udbench.methods import make_method

    spec = pruner_spec("sha", StepQuadMethod())  # n_steps tuned in [9, 27]
    assert spec == PrunerSpec("sha", "n_steps", 3, 27)
    assert spec.checkpoints(27) == (3, 9) and spec.checkpoints(10) == (3, 9)
    assert spec.checkpoints(3) == ()  # a rung at the last step is the end, not a report
    bag = pruner_spec("hyperband", make_method("ngboost-bag"))  # members, tuned in [5, 25]
    assert (bag.param, bag.min_resource, bag.max_resource) == ("n_regressors", 1, 25)
    nn = pruner_spec("sha", make_method("nn-ens"))  # epochs, tuned in [50, 350]
    assert (nn.param, nn.min_resource, nn.max_resource) == ("n_epochs", 16, 350)
    assert nn.checkpoints(200) == (16, 48, 144)
    deep = pruner_spec("sha", make_method("dkl"))  # optimiser steps, tuned in [150, 500]
    assert (deep.param, deep.min_resource, deep.max_resource) == ("num_iters", 50, 500)
    assert deep.checkpoints(325) == (50, 150) and deep.checkpoints(500) == (50, 150, 450)
    assert pruner_spec("sha", make_method("gp")) is None  # no intermediate values
    assert pruner_spec("none", StepQuadMethod()) is None
    with pytest.raises(UdbenchError, match="pruner"):
        pruner_spec("asha", StepQuadMethod())


#: (method, trials, the rungs a pruned trial may stop at): the fake (whose early models score
#: better than every finished one) and a real iterative method with a costly trial (DKL)
NEVER_BEST = {
    "fake-step-quad": (30, (3, 9)),
    "dkl": (10, (50, 150, 450)),  # num_iters tuned in [150, 500]
}


@pytest.mark.parametrize("name", ["fake-step-quad", pytest.param("dkl", marks=pytest.mark.slow)])
def test_a_pruned_trial_counts_as_a_trial_and_is_never_the_best(tasks, tmp_path, name):
    from udbench.methods import make_method

    log = tmp_path / "steps.log"
    trials, rungs = NEVER_BEST[name]
    # final_shift: a finished model is 2 SDs off, so a trial stopped early scores lower than
    # the complete trials' final models
    fake = name == "fake-step-quad"
    method = StepQuadMethod(drift=0.0, final_shift=2.0, log=str(log)) if fake else None
    method = method or make_method(name)
    summary = tune([tasks], [method], tmp_path / "out", trials=trials, pruner="sha", workers=0)
    rec = _record(tmp_path / "out")
    assert rec["n_trials"] == trials == rec["n_complete"] + rec["n_pruned"] + rec["n_failed"]
    assert rec["n_pruned"] >= (5 if fake else 1) and summary.n_trials_pruned == rec["n_pruned"]
    assert rec["pruner"]["kind"] == "sha" and rec["pruner"]["min_resource"] == rungs[0]
    complete = [h for h in rec["history"] if h["state"] == "complete"]
    pruned = [h for h in rec["history"] if h["state"] == "pruned"]
    best = min(complete, key=lambda h: h["value"])
    assert rec["best_trial"] == best["number"] and rec["score"] == best["value"]
    assert rec["tuned_params"] == best["params"]
    # best-so-far runs over complete trials only
    assert rec["history"][-1]["best_so_far"] == rec["score"]
    for h in pruned:
        # stopped at a rung, its value the NLL reported there
        assert h["pruned_at"] in rungs and h["value"] == h["intermediate"][str(h["pruned_at"])]
    if not fake:
        return
    assert min(h["value"] for h in pruned) < rec["score"]  # lower, and still not chosen
    steps: dict[int, int] = {}
    for line in log.read_text().split("\n")[:-1]:
        seed, k = (int(v) for v in line.split())
        steps[seed] = max(steps.get(seed, 0), k)
    for h in pruned:  # trained no further than the rung
        assert steps[trial_seed("fake-step-quad", rec["condition"], h["number"])] == h["pruned_at"]
    for h in complete:
        n_steps = h["params"]["n_steps"]  # tuned in every trial
        assert steps[trial_seed("fake-step-quad", rec["condition"], h["number"])] == n_steps


@pytest.mark.parametrize("pruner", ["sha", "hyperband", "median"])
def test_a_pruned_sweep_resumes_from_its_journal_to_the_same_record(tasks, tmp_path, pruner):
    once, twice = tmp_path / "once", tmp_path / "twice"
    tune([tasks], [StepQuadMethod()], once, trials=24, pruner=pruner, workers=0)
    tune([tasks], [StepQuadMethod()], twice, trials=10, pruner=pruner, workers=0)
    first = _record(twice)
    assert first["n_trials"] == 10
    resumed = tune([tasks], [StepQuadMethod()], twice, trials=24, pruner=pruner, workers=0)
    assert resumed.n_resumed_trials == 10 and resumed.n_trials_run == 14
    a, b = _record(once), _record(twice)
    assert a["n_pruned"] > 0
    # the journal kept every intermediate value and rung: the same trials are pruned
    assert strip_clock(a) == strip_clock(b)


def test_the_median_rule_prunes_only_below_the_median_of_earlier_complete_trials(tasks, tmp_path):
    from udbench.tuning.pruning import MEDIAN_STARTUP_TRIALS

    method = StepQuadMethod(drift=0.0, final_shift=2.0)
    tune([tasks], [method], tmp_path / "med", trials=24, pruner="median", workers=0)
    tune([tasks], [method], tmp_path / "sha", trials=24, pruner="sha", workers=0)
    med, sha = _record(tmp_path / "med"), _record(tmp_path / "sha")
    assert med["pruner"]["kind"] == "median" and 0 < med["n_pruned"] < sha["n_pruned"]
    history = sorted(med["history"], key=lambda h: h["number"])
    for i, h in enumerate(history):
        earlier = [e for e in history[:i] if e["state"] == "complete"]
        if len(earlier) < MEDIAN_STARTUP_TRIALS:
            assert h["state"] != "pruned"  # no pruning before the startup trials
            continue
        for step, value in h["intermediate"].items():
            # Optuna's rule: stop when the value is worse than the median at that step of
            # the complete trials that reached it (none reached it: no pruning)
            at_step = [e["intermediate"][step] for e in earlier if step in e["intermediate"]]
            stopped = h["state"] == "pruned" and h["pruned_at"] == int(step)
            assert stopped == (bool(at_step) and value > float(np.median(at_step)))
            if stopped:
                break


def test_the_pruner_is_off_for_a_method_without_intermediate_values(tasks, tmp_path):
    tune([tasks], [QuadMethod()], tmp_path / "sha", trials=8, pruner="sha", workers=0)
    tune([tasks], [QuadMethod()], tmp_path / "none", trials=8, pruner="none", workers=0)
    sha, none = _record(tmp_path / "sha"), _record(tmp_path / "none")
    assert sha["pruner"] is None and sha["n_pruned"] == 0 and sha["n_complete"] == 8
    assert all(h["intermediate"] == {} for h in sha["history"])
    assert strip_clock(sha) == strip_clock(none)


def test_a_journal_made_with_another_pruner_is_refused(tasks, tmp_path):
    tune([tasks], [StepQuadMethod()], tmp_path / "out", trials=4, pruner="sha", workers=0)
    with pytest.raises(UdbenchError, match="pruner"):
        tune([tasks], [StepQuadMethod()], tmp_path / "out", trials=6, pruner="none", workers=0)
    with pytest.raises(UdbenchError, match="pruner"):
        tune([tasks], [StepQuadMethod()], tmp_path / "x", trials=4, pruner="asha", workers=0)
