"""``udbench suite NAME --out DIR``: a named suite end to end (generate → check → run → report).

The suite (:mod:`udbench.recipes.suites`: a preset row or a TOML file) is turned into the
commands a user would type, and each stage *is* that command, run as a child process
(``python -c 'udbench.cli.main()' …``) and printed before it runs:

1. ``udbench generate … --out DIR/tasks`` (skips instances already on disk);
2. ``udbench check DIR/tasks --json`` → ``DIR/check.json`` (skipped when the task files are
   the ones it last checked);
3. ``udbench run DIR/tasks -m … --out DIR/results`` (skips finished cells);
4. ``udbench report DIR/results --out DIR/report`` (skipped when the results are the ones it
   last reported), then the leaderboard is printed.

A classification suite (``gpc`` families, :func:`udbench.recipes.suites.suite_task_type`)
passes ``--classes``/``--difficulty`` to generate and runs its classifiers; its report stage is
a regression suite's (``udbench report`` writes the classification rows into its
"Classification" part). ``udbench plan`` has no classification projection yet, so its plan is
not printed (said on the console).

``udbench plan`` for the suite's grid is printed first (with the times measured in DIR, if
any): the run the suite makes, at the suite's fidelity, on ``--workers`` workers (where
given), with no tune stage (``--trials 0``: the suite never tunes; ``--tuned`` reads records
made before, and the plan says so). Its run rows cost each method's default configuration.

Resuming is re-running the same command: every stage relies on its command's own skip
logic, there is no second loop. One suite runs in a folder at a time (``DIR/.udbench.lock``,
:func:`udbench._lock.folder_lock`, the lock of every command that owns a folder);
temporary files left by a killed stage (``.*.tmp`` task files, ``.tmp-*.parquet`` result
parts) are removed before the stages run again. ``DIR/suite.json`` records the suite's
settings (a folder holds one suite: other settings are an error) and the inputs each skipped
stage last saw. Each child process is killed with the suite on Linux (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from udbench._lock import folder_lock
from udbench._validation import UdbenchError, check_timeout, param_error
from udbench.commands._console import make_console
from udbench.commands._interrupt import EXIT_INTERRUPTED, QUIET_ENV, on_interrupt
from udbench.commands._options import (
    DATA_DIR_HELP,
    ClusterConfigOpt,
    ExecutionOptions,
    SchedulerOpt,
    check_data_dir,
    check_out_dir,
    execution_options,
    out_path,
    workers_option,
)

__all__ = ["STAGES", "register", "stage_commands"]

#: The stages, in order.
STAGES: tuple[str, ...] = ("generate", "check", "run", "report")

# a Ctrl-C while the stage still imports: its status 130, without a traceback
_LAUNCH = (
    "import sys\n"
    "try:\n"
    "    from udbench.cli import main\n"
    "except KeyboardInterrupt:\n"
    "    sys.exit(130)\n"
    "sys.exit(main())\n"
)
_STATE = "suite.json"
#: ``udbench run`` exit status when cells failed (all stored): the suite goes on to report.
_RUN_CELLS_FAILED = 3
#: Exit status when the check stage finds invalid task files (that of ``udbench check``).
EXIT_INVALID_TASKS = 1


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Linux: the child gets SIGKILL when the suite process dies (killed or not)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def stage_commands(
    suite: dict[str, Any],
    out: Path,
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    cluster_config: Path | None = None,
    data_dir: Path | None = None,
    tuned: Path | None = None,
    timeout: float | None = None,
) -> dict[str, list[str]]:
    """The ``udbench`` argument lists of a suite's stages (and of its plan and leaderboard).

    Parameters
    ----------
    suite : dict
        From :func:`udbench.recipes.suites.load_suite`.
    out : Path
        The suite's folder.
    workers, scheduler, cluster_config, data_dir, timeout
        Passed to ``generate`` and ``run`` as their options of the same names (``timeout``:
        ``run`` only); ``workers`` also to ``plan`` (its wall time; 0, in one process: 1).
    tuned : Path, optional
        Tuning folder or a suite's name (its shipped records): ``run --tuned DIR --fallback
        default`` (tuned configuration where a record exists, the default one elsewhere).

    Returns
    -------
    dict
        ``{"plan", "generate", "check", "run", "report", "leaderboard"}`` → argument list
        (without the program name).
    """
    from udbench.methods.registry import parse_method_spec, registered_methods
    from udbench.recipes.suites import classification_options, method_specs

    tasks, results = str(out / "tasks"), str(out / "results")
    grid = [
        *("--datasets", suite["datasets"]),
        *("--families", suite["families"]),
        *("--noise", suite["noise"]),
        *("--coverage", suite["coverage"]),
        *("--seeds", suite["seeds"]),
    ]
    where: list[str] = []
    if workers is not None:
        where += ["--workers", str(workers)]
    if scheduler is not None:
        where += ["--scheduler", scheduler]
    if cluster_config is not None:
        where += ["--cluster-config", str(cluster_config)]
    specs = method_specs(suite)
    known = registered_methods()
    names = [n for n in dict.fromkeys(parse_method_spec(s)[0] for s in specs) if n in known]
    plan = ["plan", *grid, "--fidelity", suite["fidelity"], "--trials", "0"]  # never tunes
    plan += ["--methods", ",".join(names) if names else "registered"]
    if workers is not None:
        plan += ["--workers", str(max(1, workers))]
    for folder in (out / "tasks", out / "results"):
        if folder.is_dir():
            plan += ["--measured", str(folder)]
    generate = [
        "generate",
        *grid,
        *("--fidelity", suite["fidelity"]),
        *("--draws", str(suite["draws"])),
        *(x for k, v in classification_options(suite).items() for x in (f"--{k}", v)),
        *("--out", tasks),
        *where,
    ]
    if data_dir is not None:
        generate += ["--data-dir", str(data_dir)]
    run = ["run", tasks, *(x for s in specs for x in ("-m", s)), "--out", results, *where]
    if timeout is not None:
        run += ["--timeout", str(timeout)]
    if tuned is not None:
        run += ["--tuned", str(tuned), "--fallback", "default"]
    if suite.get("keep_predictions"):
        run.append("--keep-predictions")
    return {
        "plan": plan,
        "generate": generate,
        "check": ["check", tasks, "--json"],
        "run": run,
        "report": ["report", results, "--out", str(out / "report")],
        "leaderboard": ["leaderboard", results],
    }


def _fingerprint(paths: list[Path]) -> str:
    """SHA-256 of the names, sizes and modification times of ``paths`` (what a stage read)."""
    h = hashlib.sha256()
    for p in sorted(paths):
        st = p.stat()
        h.update(f"{p.name}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _task_files(out: Path) -> list[Path]:
    return sorted((out / "tasks").glob("*.npz"))


def _result_files(out: Path) -> list[Path]:
    root = out / "results"
    files = sorted((root / "cells").glob("*.parquet")) if (root / "cells").is_dir() else []
    files = [p for p in files if not p.name.startswith(".")]
    if (root / "results.parquet").is_file():
        files.append(root / "results.parquet")
    return files


def _write_json(path: Path, obj: Any) -> None:
    """Write ``obj`` as JSON atomically (temporary file + rename)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(obj, fh, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _remove_stale_temporaries(out: Path) -> int:
    """Delete temporary files a killed stage left (the suite holds the folder's lock)."""
    patterns = [
        (out, ".*.tmp"),
        (out / "tasks", ".*.tmp"),
        (out / "results", "**/.tmp-*.parquet"),
    ]
    n = 0
    for folder, pattern in patterns:
        if folder.is_dir():
            for p in folder.glob(pattern):
                if p.is_file():
                    p.unlink(missing_ok=True)
                    n += 1
    return n


def _settings(suite: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in suite.items() if k != "description"}


def _grid_error(settings: dict[str, Any], data_dir: Path | None) -> str | None:
    """Why ``udbench generate`` would refuse the suite's grid (None: it would accept it).

    The settings ``udbench generate`` checks (datasets, families, noise modes, coverages,
    seeds, fidelity, draws) are checked here, before the suite records them in
    ``suite.json``: a bad value is reported once, and after it is fixed the folder is the
    same suite's.
    """
    from udbench.recipes.suites import suite_grid

    try:
        suite_grid(settings, None if data_dir is None else str(data_dir))
    except UdbenchError as err:
        return str(err)
    except (KeyError, TypeError, AttributeError) as err:  # not a suite's settings
        return f"{type(err).__name__}: {err}"
    return None


def _summarise_check(report: dict[str, Any], console: Console) -> None:
    for fam, r in report["families"].items():
        ci = r.get("coverage_90_ci")
        agree = r.get("mc_agree_fraction")
        expected = r.get("coverage_90_expected")
        console.print(
            f"  {fam}: {r['n_instances']} instances; coverage 90 % {r['coverage_90']:.3f}"
            + ("" if ci is None else f" [{ci[0]:.3f}, {ci[1]:.3f}]")
            + ("" if expected is None else f" (correct posterior {expected:.3f})")
            + f"; max SBC bin dev. {r['sbc_max_bin_deviation']:.4f}; "
            f"MCSE σ² rel. median / p95 {r['mcse_var_median']:.3f} / {r['mcse_var_p95']:.3f}; "
            f"corr(mean, {r.get('truth', 'f*')}) median {r['corr_mean_fstar_median']:.3f}"
            + ("" if agree is None else f"; MC = exact {agree:.0%}"),
            highlight=False,
        )


def _wanted_stages(stages: str) -> list[str]:
    """The stages ``--stages`` names, in the order given ('all': every stage).

    Raises
    ------
    UdbenchError
        A name that is not a stage, or none at all.
    """
    wanted = list(STAGES) if stages.strip().lower() == "all" else []
    if not wanted:
        wanted = [s.strip() for s in stages.split(",") if s.strip()]
        bad = [s for s in wanted if s not in STAGES]
        if bad or not wanted:
            raise param_error(
                "udbench suite", "--stages", f"be 'all' or a comma list of {STAGES}", stages
            )
    return wanted


def _record_state(
    out: Path, suite: dict[str, Any], data_dir: Path | None, console: Console
) -> tuple[Path, dict[str, Any]]:
    """Read the suite folder's ``suite.json`` (resumed or new), record this suite's settings in
    it and remove the temporaries an interrupted stage left; return (its path, the state).

    Raises
    ------
    UdbenchError
        The folder holds another suite, or this one made with other settings.
    """
    state_path = out / _STATE
    state: dict[str, Any] = {}
    if state_path.is_file():
        try:
            state = json.loads(state_path.read_text())
            if not isinstance(state, dict):
                raise ValueError("not a JSON object")
        except (ValueError, OSError) as err:
            # damaged (e.g. a full disk): the stages' own skip logic resumes the work;
            # only the check and report stages run again
            console.print(
                f"warning: {state_path} is damaged ({err}); recording it again",
                highlight=False,
                markup=False,
            )
            state = {}
        old = state.get("settings")
        if old is not None and old != _settings(suite):
            stale = _grid_error(old, data_dir) is not None and not _task_files(out)
            if not stale:
                raise UdbenchError(
                    f"udbench suite: {str(out)!r} holds suite {state.get('suite')!r} "
                    f"made with other settings ({state_path}); use another --out"
                )
            # recorded by a udbench that did not check them: they could generate
            # nothing, so nothing in the folder was made with them
            console.print(
                f"replacing the settings recorded in {state_path}: they could not "
                "generate any task",
                highlight=False,
                markup=False,
            )
            state = {"suite": suite["name"]}
    state.setdefault("suite", suite["name"])
    state["settings"] = _settings(suite)
    state.setdefault("stages", {})
    _write_json(state_path, state)
    n_tmp = _remove_stale_temporaries(out)
    if n_tmp:
        console.print(
            f"removed {n_tmp} temporary file(s) left by an interrupted stage",
            highlight=False,
        )
    return state_path, state


def _check_stage(
    head: str,
    check_argv: list[str],
    out: Path,
    state: dict[str, Any],
    state_path: Path,
    console: Console,
    suite: dict[str, Any],
) -> None:
    """Stage check: ``udbench check --json`` of the task files, unless they are unchanged since
    the last check; its report to ``check.json``, a summary line per family on ``console``.

    Raises
    ------
    typer.Exit
        With ``EXIT_INVALID_TASKS`` when a task file is invalid.
    """
    seen = _fingerprint(_task_files(out))
    if state["stages"].get("check") == seen and (out / "check.json").is_file():
        console.print(f"{head}: task files unchanged since checked, skipped", markup=True)
        return
    console.print(
        f"{head}: " + escape(f"udbench {' '.join(check_argv)}"),
        highlight=False,
        markup=True,
    )
    rc, text = _child(check_argv, console, "check", capture=True)
    report = json.loads(text) if text.strip() else None
    if report is not None:
        _write_json(out / "check.json", report)
        _summarise_check(report, console)
    from udbench.recipes.task_versions import compare_with_reference

    versions = compare_with_reference(suite, _task_files(out))
    if versions is not None:
        console.print(escape(versions), highlight=False, markup=True, soft_wrap=True)
    if rc != 0:  # exit 1 (as udbench check), the one status for this case
        console.print(
            "[bold red]error:[/] "
            + escape(
                f"udbench suite: stage check found invalid task files (exit "
                f"{rc}, see {out / 'check.json'}); delete them and re-run to "
                "regenerate"
            ),
            highlight=False,
            soft_wrap=True,
            markup=True,
        )
        raise typer.Exit(EXIT_INVALID_TASKS)
    state["stages"]["check"] = seen
    _write_json(state_path, state)


def register(app: typer.Typer) -> None:
    """Add ``suite``."""

    @app.command("suite")
    def suite_cmd(
        name: str | None = typer.Argument(
            None,
            help="Preset (quickstart, gp-small, hbart-small, bnn-small, gp-all, paper, clf-small, "
            "clf-all) or a suite .toml file.",
        ),
        out: Path | None = typer.Option(
            None, "--out", "-o", help="Suite folder (tasks/, results/, report/).", parser=out_path
        ),
        list_suites: bool = typer.Option(False, "--list", help="List the preset suites."),
        stages: str = typer.Option(
            "all",
            "--stages",
            help="Stages to run: comma list of generate, check, run, report, or 'all'.",
        ),
        workers: Annotated[
            int | None, workers_option("Local Dask workers for generate and run.")
        ] = None,
        scheduler: SchedulerOpt = None,
        cluster_config: ClusterConfigOpt = None,
        data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
        tuned: Path | None = typer.Option(
            None,
            "--tuned",
            help="Tuning folder (udbench tune --out), or a suite's name for the records "
            "shipped with udbench (--tuned gp-small): tuned configurations where a record "
            "exists, defaults elsewhere.",
        ),
        timeout: float | None = typer.Option(
            None, "--timeout", help="Per-cell limit in seconds for fit + predict."
        ),
        plan: bool = typer.Option(
            True,
            "--plan/--no-plan",
            help="Print udbench plan first: the suite's grid with no tune stage (the suite "
            "never tunes), its wall time on --workers.",
        ),
    ) -> None:
        """Run a named suite end to end: plan, then generate → check → run → report in --out.

        Re-running the same command resumes: each stage skips finished work (task files,
        checked files, finished cells, an up-to-date report). Exit status: 0 done, 3 some
        cells failed (stored; the report is written), 1 invalid task files, 2 a user error,
        130 interrupted; another code is the failing stage's.
        """
        comp = "udbench suite"
        # numbers first, before any import (the address and the file: before any work)
        execution = execution_options(comp, workers, scheduler, cluster_config)
        check_timeout(comp, "--timeout", timeout)
        from udbench.recipes.suites import SUITES, load_suite

        console = make_console(stderr=True)
        if list_suites:
            for key, s in SUITES.items():
                typer.echo(f"{key}: {s['description']}")
            return
        if name is None:
            raise param_error("udbench suite", "NAME", "be given (or use --list)", None)
        if out is None:
            raise param_error("udbench suite", "--out", "be given", None)
        wanted = _wanted_stages(stages)
        suite = load_suite(name)
        check_out_dir("udbench suite", out)
        check_data_dir("udbench suite", data_dir)
        if tuned is not None:  # a folder, or a suite's shipped records (by name)
            from udbench.recipes.suites import SUITES
            from udbench.tuning.shipped import resolve_tuned

            resolve_tuned(tuned, "udbench suite", presets=list(SUITES))
        from udbench.recipes.suites import method_specs, suite_task_type

        method_specs(suite)  # unknown methods fail here, before any work
        classification = suite_task_type(suite) == "classification"
        why = _grid_error(suite, data_dir)  # and every setting of the grid, before recording
        if why is not None:
            raise UdbenchError(
                f"udbench suite: suite {suite['name']!r} has a bad setting ({why}); fix it and "
                "run the same command again (nothing was recorded)"
            )
        execution.check_deployment()
        out.mkdir(parents=True, exist_ok=True)
        argv = stage_commands(
            suite,
            out,
            workers=execution.workers,
            scheduler=execution.scheduler,
            cluster_config=execution.cluster_config,
            data_dir=data_dir,
            tuned=tuned,
            timeout=timeout,
        )
        current = ["plan"]  # the stage running, for the line after a Ctrl-C
        with (
            on_interrupt(
                lambda: (
                    f"the stages finished before it and what stage {current[0]} finished "
                    f"are kept in {out}"
                )
            ),
            folder_lock(out, "udbench suite"),
        ):
            state_path, state = _record_state(out, suite, data_dir, console)
            console.print(
                f"[bold]suite {escape(suite['name'])}[/]: "
                + escape(f"{suite['description']} → {out}"),
                highlight=False,
                markup=True,
            )
            if plan and classification:  # udbench plan: regression grids only
                console.print(
                    "plan: not printed (udbench plan has no classification projection yet)",
                    highlight=False,
                )
            elif plan:
                console.print(_plan_note(tuned, execution), highlight=False)
                _child(argv["plan"], console, "plan")
            status = 0
            for i, stage in enumerate(STAGES, 1):
                if stage not in wanted:
                    continue
                current[0] = stage
                head = f"[bold]stage {i}/{len(STAGES)} {stage}[/]"
                if stage == "check":
                    _check_stage(head, argv["check"], out, state, state_path, console, suite)
                    continue
                if stage == "report":
                    seen = _fingerprint(_result_files(out))
                    done = (out / "report" / "report.html").is_file()
                    if state["stages"].get("report") == seen and done:
                        console.print(
                            f"{head}: results unchanged since reported, skipped", markup=True
                        )
                        continue
                console.print(
                    f"{head}: " + escape(f"udbench {' '.join(argv[stage])}"),
                    highlight=False,
                    markup=True,
                )
                rc, _ = _child(argv[stage], console, stage)
                if stage == "run" and rc == _RUN_CELLS_FAILED:
                    status = rc  # cells failed, all stored: report them
                elif rc != 0:
                    raise typer.Exit(rc)
                if stage == "report":
                    state["stages"]["report"] = _fingerprint(_result_files(out))
                    _write_json(state_path, state)
            if "report" in wanted:
                current[0] = "leaderboard"
                _child(argv["leaderboard"], console, "leaderboard")
            console.print(f"suite {suite['name']} done in {out}", highlight=False)
        if status:
            raise typer.Exit(status)


def _plan_note(tuned: Path | None, execution: ExecutionOptions | None = None) -> str:
    """The line above the suite's plan: the suite runs no tune stage, and what it runs; with
    ``--scheduler`` or ``--cluster-config`` and no ``--workers``, that the plan's wall time
    is on this machine's cores (``udbench plan`` cannot count a cluster's workers)."""
    used = (
        f"the tuned configurations of --tuned {tuned} where a record exists, the defaults "
        "elsewhere (the run rows cost the defaults)"
        if tuned is not None
        else "the methods' default configurations"
    )
    note = f"plan: no tune stage (udbench suite does not tune); the run stage uses {used}"
    if execution is None or execution.workers is not None:
        return note
    if execution.scheduler is not None or execution.cluster_config is not None:
        option = "--scheduler" if execution.scheduler else "--cluster-config"
        note += (
            f"; its wall time is on this machine's usable cores, not on the workers of "
            f"{option} (give --workers N, their number, to project the wall time on them)"
        )
    return note


def _child(
    args: list[str], console: Console, stage: str, *, capture: bool = False
) -> tuple[int, str]:
    """Run ``udbench ARGS`` as a child process; return (exit status, captured stdout).

    Raises
    ------
    UdbenchError
        A user error in the stage (exit 2): its message is on stderr above.
    KeyboardInterrupt
        Interrupted (exit 130).
    """
    with subprocess.Popen(
        [sys.executable, "-c", _LAUNCH, *args],
        stdout=subprocess.PIPE if capture else None,
        text=True,
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        # the suite says the one line of an interrupt, not its stage as well
        env={**os.environ, QUIET_ENV: "1"},
    ) as proc:
        try:
            stdout, _ = proc.communicate()
        except KeyboardInterrupt:
            _stop_child(proc)
            raise
    if proc.returncode == EXIT_INTERRUPTED:
        raise KeyboardInterrupt
    if proc.returncode == 2:
        raise UdbenchError(
            f"udbench suite: stage {stage} stopped on a user error (message above); fix it and "
            "re-run the same command to resume"
        )
    if proc.returncode not in (0, 1, _RUN_CELLS_FAILED) and stage in ("plan", "leaderboard"):
        console.print(f"{stage}: exit status {proc.returncode}", highlight=False)
    return proc.returncode, stdout or ""


def _stop_child(proc: subprocess.Popen[str]) -> None:
    """After a Ctrl-C: let the stage finish its own interrupt (it keeps what it finished).

    A terminal's Ctrl-C reached the stage too; a SIGINT sent to the suite alone is passed on
    after a few seconds. A stage that has not ended a minute later is killed.
    """
    try:
        try:
            proc.wait(5.0)
            return
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60.0)
            return
        except subprocess.TimeoutExpired:
            pass
    except KeyboardInterrupt:  # another Ctrl-C: stop waiting
        pass
    proc.kill()
    proc.wait()
