"""A tuning sweep's Optuna study: its plan, its journal file, resume and record.

:class:`SweepPlan` is one sweep to run; ``_Sweep`` opens (or resumes) its study in
``OUT/<method>/<condition>.journal`` (stale lock and cut-short line repaired, trials left
running by a dead driver marked failed and ``interrupted``, settings checked against the
journal's) and :func:`sweep_record` writes what the study found as a tuned record. The
driver that asks and tells the trials is :func:`udbench.tuning.sweep.tune`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from udbench._seeding import derive_seed
from udbench._validation import UdbenchError
from udbench.methods.configs import MethodConfig
from udbench.tuning.objective import HOLDOUT_FRACTION, PROB_FLOOR
from udbench.tuning.pruning import PRUNERS, PrunerSpec, pruner_spec
from udbench.tuning.records import RECORD_FORMAT, SCHEMA_VERSION, Condition, record_path
from udbench.tuning.space import search_space_hash

__all__ = ["SweepPlan", "sweep_record"]


@dataclass(frozen=True)
class SweepPlan:
    """One sweep to run: a method configuration on a condition's training sample."""

    method: MethodConfig
    condition: Condition
    task_path: str
    task_id: str
    train_sha256: str
    n_trials: int
    sampler: str = "tpe"
    seed: int = 0
    pruner: str = "none"
    #: the pruner was asked for as ``"auto"``: a journal made with another pruner than the
    #: resolved one is resumed with the journal's (``udbench.tuning.pruning.resolve_pruner``)
    pruner_auto: bool = False

    @property
    def pruner_spec(self) -> PrunerSpec | None:
        """The sweep's pruner (None: off, or a method with no intermediate values)."""
        return pruner_spec(self.pruner, self.method.estimator)

    @property
    def task_type(self) -> str:
        """``"regression"`` or ``"classification"``: the method's (and so the condition's)."""
        return str(getattr(type(self.method.estimator), "task_type", "regression"))

    @property
    def key(self) -> str:
        """``"<method>/<condition>"``."""
        return f"{self.method.name}/{self.condition.key}"

    @property
    def split_seed(self) -> int:
        """Seed of the condition's 80/20 split (the same for every method)."""
        return derive_seed("tune-split", self.condition.key, bits=32)

    @property
    def sampler_seed(self) -> int:
        """Seed of this sweep's sampler (``--seed`` , method and condition)."""
        return derive_seed("tune-sampler", self.seed, self.method.name, self.condition.key, bits=32)


def _finite(value: Any) -> float | None:
    """A finite float, or None (a trial that failed before timing its fit)."""
    import math

    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def sweep_record(study: Any, plan: SweepPlan) -> dict[str, Any]:
    """The record of a sweep (format: :mod:`udbench.tuning.records`) from its Optuna study."""
    import math
    from datetime import UTC, datetime

    import optuna
    from optuna.trial import TrialState

    from udbench import __version__
    from udbench.methods.configs import config_hash

    space = type(plan.method.estimator).search_space
    history: list[dict[str, Any]] = []
    best_value = math.inf
    best: Any = None
    counts = {"complete": 0, "failed": 0, "interrupted": 0, "pruned": 0}
    for t in sorted(study.get_trials(deepcopy=False), key=lambda t: t.number):
        if t.state == TrialState.COMPLETE:
            state = "complete"
        elif t.state == TrialState.PRUNED:
            state = "pruned"  # counts as a trial, never the best
        elif t.state == TrialState.FAIL:
            state = "interrupted" if t.user_attrs.get("interrupted") else "failed"
        else:
            continue  # running (another driver) or waiting: not part of the record
        counts[state] += 1
        if state == "complete" and t.value is not None and t.value < best_value:
            best_value, best = float(t.value), t
        duration = t.duration.total_seconds() if t.duration is not None else None
        told = t.user_attrs.get("outcome") or {}
        history.append(
            {
                "number": t.number,
                "state": state,
                "value": None if t.value is None else float(t.value),
                "best_so_far": None if best is None else best_value,
                "params": dict(t.params),
                "error": told.get("error", t.user_attrs.get("error")),
                "running_at_ask": told.get("running_at_ask"),
                "finish_index": told.get("finish_index"),
                "fit_time_s": _finite(told.get("fit_time_s")),
                "predict_time_s": _finite(told.get("predict_time_s")),
                "cpu_time_s": _finite(told.get("cpu_time_s")),
                "duration_s": duration,
                "intermediate": {str(k): float(v) for k, v in t.intermediate_values.items()},
                "pruned_at": t.last_step if state == "pruned" else None,
            }
        )
    cond = plan.condition
    params = None if best is None else {**plan.method.params, **best.params}
    # a classifier's record says so; a regression record keeps the keys it always had
    scoring: dict[str, Any] = {"score_name": "heldout_gaussian_nll"}
    if plan.task_type == "classification":
        scoring = {
            "score_name": "heldout_categorical_nll",
            "task_type": "classification",
            "prob_floor": PROB_FLOOR,
        }
    return {
        "format": RECORD_FORMAT,
        "schema_version": SCHEMA_VERSION,
        "udbench_version": __version__,
        "optuna_version": optuna.__version__,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "method": plan.method.name,
        "condition": cond.key,
        "dataset": cond.dataset,
        "family": cond.family,
        "noise": cond.noise,
        "coverage": cond.coverage,
        "task_id": plan.task_id,
        "train_sha256": plan.train_sha256,
        "base_config": plan.method.config,
        "search_space": space,
        "search_space_hash": search_space_hash(plan.method.name, space),
        "sampler": plan.sampler,
        "sampler_seed": plan.sampler_seed,
        "split_seed": plan.split_seed,
        "holdout_fraction": HOLDOUT_FRACTION,
        **scoring,
        "status": "ok" if best is not None else "no-complete-trial",
        "params": params,
        "tuned_params": None if best is None else dict(best.params),
        "config_hash": None if params is None else config_hash(plan.method.name, params),
        "score": None if best is None else best_value,
        "best_trial": None if best is None else best.number,
        "n_trials": counts["complete"] + counts["failed"] + counts["pruned"],
        "n_complete": counts["complete"],
        "n_failed": counts["failed"],
        "n_pruned": counts["pruned"],
        "n_interrupted": counts["interrupted"],
        "pruner": None if plan.pruner_spec is None else plan.pruner_spec.as_dict(),
        "history": history,
    }


def _spec_dict(plan: SweepPlan) -> Any:
    """The journal's ``pruner`` attribute for ``plan``: ``"none"`` or the spec's dict."""
    return "none" if plan.pruner_spec is None else plan.pruner_spec.as_dict()


def _repair_journal(path: Path) -> None:
    """Undo what a killed driver may leave in a journal: a lock file and a half-written line.

    Only one driver uses a tuning folder at a time, so a lock file found at start is stale (it
    would otherwise block for Optuna's 30 s grace period); a last line without its newline
    is an append cut short (Optuna would fail on the next read once more lines follow it).
    """
    from optuna.storages.journal._file import LOCK_FILE_SUFFIX

    Path(str(path) + LOCK_FILE_SUFFIX).unlink(missing_ok=True)
    if not path.is_file():
        return
    with open(path, "rb+") as fh:
        data = fh.read()
        if data and not data.endswith(b"\n"):
            fh.truncate(data.rfind(b"\n") + 1)


def _continue_sampler(sampler: Any, trials: list[Any], resume_seed: int) -> None:
    """Move a resumed sweep's freshly seeded sampler past the draws its journal's trials made.

    A sampler made again with the sweep's seed starts its random stream over: without this,
    the first trial asked after a resume (a killed driver, a journal whose last line was cut
    and its trial marked interrupted) draws trial 0's parameters again, one configuration tried
    twice (issue 68). The random draws (``RandomSampler``, and TPE's random start-up trials:
    one uniform double per sampled parameter) are replayed, so a sweep resumed in its random
    phase asks what an unbroken one would have asked; TPE's own stream, whose draws depend on
    the history, cannot be replayed and is seeded with ``resume_seed`` instead.
    """
    from optuna.trial import TrialState

    asked = sorted((t for t in trials if t.params), key=lambda t: t.number)
    if not asked:
        return
    random_part = getattr(sampler, "_random_sampler", sampler)
    n_startup = getattr(sampler, "_n_startup_trials", math.inf)
    done = (TrialState.COMPLETE, TrialState.PRUNED)
    ends = [t.datetime_complete for t in trials if t.state in done and t.datetime_complete]
    draws, modelled = 0, False
    for t in asked:
        # TPE draws at random while fewer trials than its start-up count had finished
        before = sum(1 for end in ends if t.datetime_start is not None and end <= t.datetime_start)
        if before < n_startup:
            draws += sum(1 for dist in t.distributions.values() if not dist.single())
        else:
            modelled = True
    random_part._rng.rng.uniform(size=draws)
    if modelled and random_part is not sampler:
        sampler._rng.rng.seed(resume_seed)


class _Sweep:
    """A sweep at run time: its study, what is asked and running."""

    def __init__(self, plan: SweepPlan, out: Path) -> None:
        import optuna
        from optuna.storages import JournalStorage
        from optuna.storages.journal import JournalFileBackend
        from optuna.trial import TrialState

        self.plan = plan
        self.space = type(plan.method.estimator).search_space
        self.space_hash = search_space_hash(plan.method.name, self.space)
        self.journal = record_path(out, plan.method.name, plan.condition).with_suffix(".journal")
        self.journal.parent.mkdir(parents=True, exist_ok=True)
        _repair_journal(self.journal)
        storage = JournalStorage(JournalFileBackend(str(self.journal)))
        if plan.sampler == "tpe":
            sampler: Any = optuna.samplers.TPESampler(seed=plan.sampler_seed, constant_liar=True)
        else:
            sampler = optuna.samplers.RandomSampler(seed=plan.sampler_seed)
        self.study = optuna.create_study(
            study_name="udbench-tune",
            storage=storage,
            sampler=sampler,
            direction="minimize",
            load_if_exists=True,
        )
        identity = {
            "method": plan.method.name,
            "condition": plan.condition.key,
            "base_config": plan.method.config,
            "search_space_hash": self.space_hash,
            "train_sha256": plan.train_sha256,
            "split_seed": plan.split_seed,
            "sampler": plan.sampler,
            "sampler_seed": plan.sampler_seed,
            "pruner": _spec_dict(plan),
        }
        self.pruner = plan.pruner_spec
        attrs = self.study.user_attrs
        if not attrs:
            for k, v in identity.items():
                self.study.set_user_attr(k, v)
        else:
            # journals from before pruning existed hold no "pruner": they were unpruned
            changed = [
                k
                for k, v in identity.items()
                if attrs.get(k, "none" if k == "pruner" else None) != v
            ]
            made = attrs.get("pruner", "none")
            kind = made.get("kind") if isinstance(made, dict) else made
            if changed == ["pruner"] and plan.pruner_auto and kind in PRUNERS:
                # "auto" chooses for the user: an existing sweep keeps the pruner it was made
                # with (a re-run resumes it, its trials kept), and its record says which
                plan = replace(plan, pruner=str(kind))
                self.plan, self.pruner = plan, plan.pruner_spec
                changed = [] if _spec_dict(plan) == made else changed
            if changed:
                hint = ""
                if "pruner" in changed and kind != plan.pruner:
                    hint = (
                        f" (the journal's pruner is {kind!r}, this run's {plan.pruner!r}: "
                        f"pass --pruner {kind} to resume it)"
                    )
                raise UdbenchError(
                    f"udbench tune: the sweep journal {str(self.journal)!r} was made with another "
                    f"{', '.join(changed)} than this run's{hint}; tune into another --out, or "
                    "delete the journal to start this sweep again"
                )
        journal = self.study.get_trials(deepcopy=False)
        resume_seed = derive_seed("tune-sampler-resume", plan.sampler_seed, len(journal), bits=32)
        _continue_sampler(sampler, journal, resume_seed)
        # trials left running by a driver that died: failed, not counted
        self.n_interrupted = 0
        for t in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            storage.set_trial_user_attr(t._trial_id, "interrupted", True)
            storage.set_trial_user_attr(
                t._trial_id, "error", "interrupted: the tuning run ended before it finished"
            )
            storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
            self.n_interrupted += 1
        self.n_done = sum(
            1
            for t in self.study.get_trials(deepcopy=False)
            if t.state.is_finished() and not t.user_attrs.get("interrupted")
        )
        self.n_resumed = self.n_done
        # what those trials cost, by their own CPU clock (None: a journal without it)
        cpu = [
            (t.user_attrs.get("outcome") or {}).get("cpu_time_s")
            for t in self.study.get_trials(deepcopy=False)
            if t.state.is_finished() and not t.user_attrs.get("interrupted")
        ]
        clocks = [float(c) for c in cpu if isinstance(c, int | float) and math.isfinite(c)]
        self.resumed_cpu_s: float | None = sum(clocks) if len(clocks) == len(cpu) else None
        # results back so far, in order (interrupted trials included): finish_index
        self.n_finished = sum(
            1 for t in self.study.get_trials(deepcopy=False) if t.state.is_finished()
        )
        self.to_ask = max(0, plan.n_trials - self.n_done)
        self.running: dict[int, Any] = {}  # trial number -> (optuna Trial, running at ask)
        self.n_finished_here = 0

    @property
    def complete(self) -> bool:
        return self.to_ask == 0 and not self.running
