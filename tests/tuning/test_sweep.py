"""Tuning sweeps: the sampler is wired, tuning is blind to evaluation and oracle arrays, a killed
run resumes, workers do not change a sequential sweep (issue 17, items 1-3)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import optuna
import pytest

from _fakes import QuadMethod, fit_log, make_fake_task, save_fake_task, strip_clock
from udbench.tuning.objective import trial_seed
from udbench.tuning.records import load_records
from udbench.tuning.sweep import tune

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent


def _one_record(folder: Path) -> dict:
    (rec,) = load_records(folder)
    return rec


@pytest.fixture
def tasks(tmp_path):
    folder = tmp_path / "tasks"
    save_fake_task(make_fake_task(0, n_train=50), folder)
    save_fake_task(make_fake_task(1, n_train=50), folder)  # seed 1: not the tuned instance
    return folder


def test_tpe_beats_random_search_on_a_known_optimum(tasks, tmp_path):
    # QuadMethod's held-out NLL is const + q/2 + e^-q/2, q = (x-1)^2 + (z+2)^2: optimum (1, -2)
    best = {"tpe": [], "random": []}
    for sampler in best:
        for seed in range(3):
            out = tmp_path / f"{sampler}{seed}"
            tune([tasks], [QuadMethod()], out, trials=30, sampler=sampler, seed=seed, workers=0)
            rec = _one_record(out)
            assert rec["n_trials"] == 30 and rec["sampler"] == sampler
            assert rec["task_id"].endswith("__s0")  # the condition's lowest seed
            best[sampler].append(rec["score"])
            # the best-so-far curve is the running minimum of the trial values
            values = [h["value"] for h in rec["history"]]
            assert [h["best_so_far"] for h in rec["history"]] == list(np.minimum.accumulate(values))
    assert np.median(best["tpe"]) < np.median(best["random"]), best


def test_nan_evaluation_and_oracle_arrays_tune_to_the_same_record(tmp_path):
    task = make_fake_task(0, n_train=50)
    save_fake_task(task, tmp_path / "clean")
    blind = make_fake_task(0, n_train=50)
    hidden = ("X_eval", "noise_var_eval", "f_eval", "post_mean", "post_var", "draws",
              "noise_var_train", "f_train", "mcse_var_rel")  # fmt: skip
    for name in hidden:
        blind._arrays[name] = np.full_like(np.asarray(blind._arrays[name], dtype=float), np.nan)
    save_fake_task(blind, tmp_path / "blind")
    for name in ("clean", "blind"):
        tune([tmp_path / name], [QuadMethod()], tmp_path / f"tune-{name}", trials=12, workers=0)
    clean, nan = (_one_record(tmp_path / f"tune-{n}") for n in ("clean", "blind"))
    assert strip_clock(clean) == strip_clock(nan)
    assert clean["n_complete"] == 12 and clean["status"] == "ok"


def test_a_method_named_twice_is_refused(tasks, tmp_path):
    from udbench._validation import UdbenchError

    with pytest.raises(UdbenchError, match="name each method once"):
        tune([tasks], ["blr", "blr:max_iter=50"], tmp_path / "t", trials=2, workers=0)


def test_a_crashing_trial_is_recorded_as_failed_and_the_sweep_goes_on(tasks, tmp_path):
    tune(
        [tasks],
        [QuadMethod(fail_above=0.0)],
        tmp_path / "t",
        trials=10,
        workers=0,
        sampler="random",
    )
    rec = _one_record(tmp_path / "t")
    failed = [h for h in rec["history"] if h["state"] == "failed"]
    assert rec["n_trials"] == 10 and rec["n_failed"] == len(failed) > 0
    assert all(h["params"]["x"] > 0 and "fake failure at x=" in h["error"] for h in failed)
    assert all(h["params"]["x"] <= 0 for h in rec["history"] if h["state"] == "complete")
    assert rec["tuned_params"]["x"] <= 0


def test_killed_tuning_run_resumes_with_its_finished_trials(tasks, tmp_path):
    log = tmp_path / "fits.log"
    spec = f"_fakes:QuadMethod:sleep=0.3,log={log}"
    out = tmp_path / "tune"
    args = [str(BIN / "udbench"), "tune", str(tasks), "-m", spec, "--trials", "10"]
    args += ["--workers", "0", "--out", str(out), "--no-progress"]
    proc = subprocess.Popen(args, cwd=HERE.parent, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 180
    while sum(len(v) for v in fit_log(log).values()) < 4:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the tuning run did not start trials in time"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not list(out.glob("*/*.json"))  # killed before the sweep finished: no record yet

    (journal,) = out.glob("*/*.journal")
    storage = optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(journal))
    )
    kept = {
        t.number: (t.params, t.value)
        for t in optuna.load_study(study_name="udbench-tune", storage=storage).trials
        if t.state == optuna.trial.TrialState.COMPLETE
    }
    assert len(kept) >= 3
    del storage

    summary = tune([tasks], [spec], out, trials=10, workers=0)
    assert summary.n_resumed_trials == len(kept)
    assert summary.n_interrupted <= 1 and summary.n_trials_run == 10 - len(kept)
    rec = _one_record(out)
    assert rec["n_trials"] == 10 and rec["n_complete"] == 10 and rec["n_failed"] == 0
    counted = [h for h in rec["history"] if h["state"] == "complete"]
    assert len({h["number"] for h in counted}) == 10
    for h in counted:  # the finished trials are kept as they were
        if h["number"] in kept:
            assert (h["params"], h["value"]) == kept[h["number"]]
    # no trial fitted twice: each counted trial's seed appears once in the fit log
    fits = fit_log(log)
    condition = rec["condition"]
    for h in counted:
        assert len(fits[trial_seed(rec["method"], condition, h["number"])]) == 1
    # each trial kept its own CPU clock (a sleeping fake: some CPU, less than its wall time),
    # and the resumed run knows what the killed one's finished trials cost
    assert all(h["cpu_time_s"] > 0.0 for h in counted)
    cpu = sum(h["cpu_time_s"] for h in counted)
    assert cpu < sum(h["fit_time_s"] + h["predict_time_s"] for h in counted)
    earlier = sum(h["cpu_time_s"] for h in counted if h["number"] in kept)
    assert summary.resumed_cpu_s == pytest.approx(earlier, rel=1e-9)


@pytest.mark.slow
def test_two_workers_give_the_records_of_one_and_record_the_constant_liar_ordering(tasks, tmp_path):
    # sequential sampling (one trial of a sweep at a time): the record cannot depend on workers
    methods = [QuadMethod(sleep=0.2, fail_above=2.0), "blr"]
    kwargs = {"trials": 8, "in_flight": 1, "pin": False}
    tune([tasks], methods, tmp_path / "w1", workers=1, **kwargs)
    tune([tasks], methods, tmp_path / "w2", workers=2, **kwargs)
    one, two = load_records(tmp_path / "w1"), load_records(tmp_path / "w2")
    assert len(one) == 2 and [strip_clock(r) for r in one] == [strip_clock(r) for r in two]
    assert all(h["running_at_ask"] == 0 for r in two for h in r["history"])

    # with every worker on one sweep, trials are asked while others run (the constant liar)
    tune([tasks], [QuadMethod(sleep=0.3)], tmp_path / "liar", trials=8, workers=2, pin=False)
    rec = _one_record(tmp_path / "liar")
    assert rec["n_complete"] == 8
    assert max(h["running_at_ask"] for h in rec["history"]) == 1
    assert sorted(h["finish_index"] for h in rec["history"]) == list(range(8))


@pytest.mark.parametrize("sampler", ["tpe", "random"])
def test_a_journal_with_its_last_line_cut_resumes_without_repeating_a_configuration(
    tasks, tmp_path, sampler
):
    # issue 68: the resumed sampler started its stream over and drew trial 0's parameters again
    unbroken = tmp_path / "unbroken"
    tune([tasks], [QuadMethod()], unbroken, trials=5, sampler=sampler, workers=0)
    out = tmp_path / "cut"
    tune([tasks], [QuadMethod()], out, trials=4, sampler=sampler, workers=0)
    (journal,) = out.glob("*/*.journal")
    data = journal.read_bytes()
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    assert b'"trial_id":3' in data[last:]  # the line that finished trial 3
    journal.write_bytes(data[: last + 20])  # cut short in the middle
    for record in out.glob("*/*.json"):
        record.unlink()
    summary = tune([tasks], [QuadMethod()], out, trials=4, sampler=sampler, workers=0)
    assert summary.n_interrupted == 1 and summary.n_trials_run == 1
    history = {h["number"]: h for h in _one_record(out)["history"]}
    assert history[3]["state"] == "interrupted" and history[4]["state"] == "complete"
    configs = [tuple(h["params"].values()) for h in history.values()]
    assert len(set(configs)) == len(configs) == 5
    # the random draws were replayed: trial 4 is what the unbroken sweep asked
    assert history[4]["params"] == _one_record(unbroken)["history"][4]["params"]
