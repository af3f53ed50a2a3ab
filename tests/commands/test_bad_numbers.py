"""Numbers and types are checked where they enter, before anything heavy is imported (issue 31,
item 5): one table of bad values per command, each refused in one line (exit 2) that names the
option, without JAX (or Dask, Optuna) having been imported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

#: Modules that take seconds to import; a bad number must be refused before any of them.
HEAVY = ("jax", "dask", "distributed", "optuna", "torch", "catboost", "ngboost", "sklearn")

HUGE = "1000000"  # far above 4 × the cores of any machine

#: (command words, arguments, the option the message must name); ``{E}`` is an existing
#: empty folder, ``{O}`` a folder that does not exist yet.
CASES: list[tuple[str, list[str], str]] = [
    ("generate", ["--draws", "-3", "--out", "{O}"], "--draws"),
    ("generate", ["--draws", "39", "--out", "{O}"], "--draws"),
    ("generate", ["--draws", "1000000000", "--out", "{O}"], "--draws"),
    (
        "generate",
        ["--families", "hbart", "--draws", "50", "--fidelity", "smoke", "--out", "{O}"],
        "--draws",
    ),
    ("generate", ["--workers", HUGE, "--out", "{O}"], "--workers"),
    ("generate", ["--workers", "-1", "--out", "{O}"], "--workers"),
    ("generate", ["--max-replacements", "-1", "--out", "{O}"], "--max-replacements"),
    ("generate", ["--max-replacements", "100000", "--out", "{O}"], "--max-replacements"),
    ("generate", ["--seeds", "0-99999999999", "--out", "{O}"], "seeds"),
    ("run", ["{E}", "-m", "blr", "--workers", HUGE, "--out", "{O}"], "--workers"),
    ("run", ["{E}", "-m", "blr", "--workers", "-2", "--out", "{O}"], "--workers"),
    ("run", ["{E}", "-m", "blr", "--timeout", "1e308", "--out", "{O}"], "--timeout"),
    ("run", ["{E}", "-m", "blr", "--timeout", "nan", "--out", "{O}"], "--timeout"),
    ("run", ["{E}", "-m", "blr", "--timeout", "inf", "--out", "{O}"], "--timeout"),
    ("run", ["{E}", "-m", "blr", "--timeout", "0", "--out", "{O}"], "--timeout"),
    ("run", ["{E}", "-m", "blr", "--timeout", "-5", "--out", "{O}"], "--timeout"),
    ("tune", ["{E}", "-m", "blr", "--trials", "0", "--out", "{O}"], "--trials"),
    ("tune", ["{E}", "-m", "blr", "--in-flight", "0", "--out", "{O}"], "--in-flight"),
    ("tune", ["{E}", "-m", "blr", "--seed", "-1", "--out", "{O}"], "--seed"),
    ("tune", ["{E}", "-m", "blr", "--seed", "99999999999", "--out", "{O}"], "--seed"),
    ("tune", ["{E}", "-m", "blr", "--timeout", "1e308", "--out", "{O}"], "--timeout"),
    ("tune", ["{E}", "-m", "blr", "--workers", HUGE, "--out", "{O}"], "--workers"),
    ("plan", ["--trials", "-1"], "--trials"),  # 0 is a plan without tuning
    ("suite", ["quickstart", "--out", "{O}", "--workers", HUGE], "--workers"),
    ("suite", ["quickstart", "--out", "{O}", "--timeout", "1e308"], "--timeout"),
    ("quickstart", ["--out", "{O}", "--workers", HUGE], "--workers"),
    ("leaderboard", ["{E}", "--n-resamples", "0"], "--n-resamples"),
    ("leaderboard", ["{E}", "--n-resamples", "1000000000"], "--n-resamples"),
    ("compare", ["{E}", "{E}", "--n-resamples", "0"], "--n-resamples"),
    ("analyze", ["{E}", "--n-resamples", "0", "--out", "{O}"], "--n-resamples"),
    ("analyze", ["{E}", "--confidence", "1.5", "--out", "{O}"], "--confidence"),
    ("analyze", ["{E}", "--confidence", "nan", "--out", "{O}"], "--confidence"),
    ("analyze", ["{E}", "--seed", "-1", "--out", "{O}"], "--seed"),
    ("transfer", ["{E}", "--oracle", "gp:rbf", "--n-resamples", "0"], "--n-resamples"),
    ("transfer", ["{E}", "--oracle", "gp:rbf", "--seed", "-1"], "--seed"),
    ("transfer", ["{E}", "--oracle", "gp:rbf", "--fit-rows", "0"], "--fit-rows"),
    ("transfer", ["{E}", "--oracle", "gp:rbf", "--fit-restarts", "0"], "--fit-restarts"),
    ("transfer", ["{E}", "--oracle", "gp:rbf", "--fit-iters", "-1"], "--fit-iters"),
    ("check-method", ["blr", "--timeout", "1e308"], "--timeout"),
    ("check-method", ["blr", "--timeout", "0"], "--timeout"),
    ("check-method", ["blr", "--random-state", "-1"], "--random-state"),
    ("study wine-ood", ["--out", "{O}", "--draws", "-3"], "--draws"),
    ("study wine-ood", ["--out", "{O}", "--n-query", "0"], "--n-query"),
    ("study wine-ood", ["--out", "{O}", "--workers", HUGE], "--workers"),
    ("study wine-ood", ["--out", "{O}", "--timeout", "1e308"], "--timeout"),
    ("study wine-ood", ["--out", "{O}", "--n-resamples", "0"], "--n-resamples"),
    ("study spectral-norm", ["--out", "{O}", "--trials", "0"], "--trials"),
    ("study spectral-norm", ["--out", "{O}", "--draws", "-3"], "--draws"),
    ("study spectral-norm", ["--out", "{O}", "--workers", HUGE], "--workers"),
    ("study spectral-norm", ["--out", "{O}", "--timeout", "1e308"], "--timeout"),
    ("study spectral-norm", ["--out", "{O}", "--n-resamples", "0"], "--n-resamples"),
    ("validate-prior", ["--warmup-factor", "1"], "--warmup-factor"),
    ("validate-prior", ["--draws", "-3"], "--draws"),
    ("validate-prior", ["--max-train", "0"], "--max-train"),
    ("validate-prior", ["--max-eval", "0"], "--max-eval"),
    ("risk decompose", ["{E}", "--random-state", "-1"], "--random-state"),
    ("datasets add", ["{E}", "--name", "mine", "--n", "0"], "--n"),
    ("datasets add", ["{E}", "--name", "mine", "--rho", "-1"], "--rho"),
    ("datasets add", ["{E}", "--name", "mine", "--rho", "nan"], "--rho"),
]

_SCRIPT = r"""
import contextlib, io, json, sys
from udbench.cli import main
heavy, cases, out = json.loads(sys.argv[1]), json.loads(sys.argv[2]), []
for argv in cases:
    before = {m for m in heavy if m in sys.modules}
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = main(argv)
        except BaseException as ex:
            rc = repr(ex)
    new = sorted(m for m in heavy if m in sys.modules and m not in before)
    out.append({"argv": argv, "rc": rc, "err": err.getvalue(), "imported": new})
print(json.dumps(out))
"""


def _run_cases(tmp_path: Path, cases) -> list[dict]:
    empty = tmp_path / "empty"
    empty.mkdir()
    argvs = []
    for i, (words, args, _) in enumerate(cases):
        fill = {"{E}": str(empty), "{O}": str(tmp_path / f"new{i}")}
        argvs.append([*words.split(), *(fill.get(a, a) for a in args)])
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT, json.dumps(HEAVY), json.dumps(argvs)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_bad_numbers_are_refused_in_one_line_before_heavy_imports(tmp_path) -> None:
    results = _run_cases(tmp_path, CASES)
    bad = []
    for (words, args, option), r in zip(CASES, results, strict=True):
        lines = [line for line in r["err"].splitlines() if line.strip()]
        problems = []
        if r["rc"] != 2:
            problems.append(f"exit {r['rc']}")
        if len(lines) != 1 or f"'{option}'" not in lines[0] or not lines[0].startswith("error:"):
            problems.append(f"message {r['err'][-300:]!r}")
        if r["imported"]:
            problems.append(f"imported {r['imported']}")
        if problems:
            bad.append(f"udbench {words} {' '.join(args)}: {'; '.join(problems)}")
    assert not bad, "\n".join(bad)
    for i in range(len(CASES)):  # nothing was created for a refused command
        assert not (tmp_path / f"new{i}").exists(), CASES[i]
