"""``udbench suite --cluster-config`` on a real SLURM: Debian's ``slurm-wlm`` and ``munge`` on
localhost (``munged``, ``slurmctld``, ``slurmd``; one node, a two-CPU partition), the cluster
file of docs/running.md naming ``dask_jobqueue.SLURMCluster``.

A small suite runs through it; while a cell is being fitted, the SLURM job running it is
cancelled with ``scancel``. The suite must still end with exactly the expected cells, each once
and ok: the cell that was in flight fitted again elsewhere, no finished one fitted twice. The
jobs are read back from ``sacct`` (job-completion records, no accounting database), and the
same suite line run again finds nothing left to do.

Marked ``slurm`` (not in the default suite: it needs root and starts system daemons, on
private ports and sockets, all stopped at the end). ``.ci/run`` installs the packages and runs
it with ``UDBENCH_REQUIRE_SLURM=1``, under which missing programs fail instead of skipping.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from _dask_cluster import stop
from _fakes import fit_log

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
LAUNCH = "import sys; from udbench.cli import main; sys.exit(main())"
PROGRAMS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sacct")
#: Seconds the fake method sleeps in every fit: long enough to cancel a job mid-fit.
FIT_SECONDS = 6


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _require_slurm() -> None:
    missing = [p for p in PROGRAMS if shutil.which(p) is None]
    why = ""
    if missing:
        why = f"SLURM/munge programs not installed: {missing} (apt-get install slurm-wlm munge)"
    elif os.geteuid() != 0:
        why = "starting slurmd and munged needs root"
    if why:
        if os.environ.get("UDBENCH_REQUIRE_SLURM") == "1":
            pytest.fail(why + " — and UDBENCH_REQUIRE_SLURM=1 asks for a SLURM")
        pytest.skip(why)


def _slurm_conf(folder: Path, host: str) -> str:
    d = folder
    return f"""\
ClusterName=udbenchtest
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d}/munge.socket
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={d}/jobcomp.txt
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=5
MinJobAge=3600
NodeName={host} NodeAddr=127.0.0.1 CPUs=2 RealMemory=4096 State=UNKNOWN
PartitionName=cpu Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def _run(args: list[str], env: dict[str, str], timeout: float = 30) -> str:
    proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=timeout)
    assert proc.returncode == 0, f"{args}: {proc.stdout}{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def slurm(tmp_path_factory) -> Iterator[dict[str, str]]:
    """A running munged + slurmctld + slurmd on localhost; yields the environment
    (``SLURM_CONF``) for SLURM's commands. Every daemon is stopped at the end."""
    _require_slurm()
    folder = tmp_path_factory.mktemp("slurm")
    folder.chmod(0o755)  # munged wants its socket's folder searchable by all
    for sub in ("state", "spool"):
        (folder / sub).mkdir()
    host = socket.gethostname().split(".")[0]
    (folder / "slurm.conf").write_text(_slurm_conf(folder, host))
    env = {**os.environ, "SLURM_CONF": str(folder / "slurm.conf")}
    key = folder / "munge.key"
    _run(["mungekey", "--create", f"--keyfile={key}"], env)
    key.chmod(0o400)
    procs: list[subprocess.Popen] = []
    logs = []

    def start(name: str, *args: str) -> None:
        logs.append(open(folder / f"{name}.out", "w"))  # closed below
        procs.append(
            subprocess.Popen(
                [name, *args],
                stdout=logs[-1],
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        )

    try:
        start(
            "munged",
            "--foreground",
            "--force",
            f"--socket={folder}/munge.socket",
            f"--key-file={key}",
            f"--pid-file={folder}/munged.pid",
            f"--log-file={folder}/munged.log",
            f"--seed-file={folder}/munged.seed",
        )
        t0 = time.monotonic()
        while not (folder / "munge.socket").exists():
            assert procs[0].poll() is None, (folder / "munged.out").read_text()
            assert time.monotonic() - t0 < 30, "munged did not start within 30 s"
            time.sleep(0.2)
        start("slurmctld", "-D", "-f", str(folder / "slurm.conf"))
        start("slurmd", "-D", "-f", str(folder / "slurm.conf"), "-N", host)
        t0 = time.monotonic()
        while True:  # the node registers and becomes idle
            proc = subprocess.run(
                ["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=env, timeout=30
            )
            if proc.stdout.strip() == "idle":
                break
            for p, name in zip(procs, ("munged", "slurmctld", "slurmd"), strict=True):
                assert p.poll() is None, f"{name} ended: " + (folder / f"{name}.out").read_text()
            assert time.monotonic() - t0 < 90, f"the node is not idle after 90 s: {proc.stdout}"
            time.sleep(0.5)
        yield env
    finally:
        # jobs first (their workers), then the daemons
        subprocess.run(["scancel", "--user=root"], env=env, capture_output=True, timeout=30)
        stop(list(reversed(procs)))
        for f in logs:
            f.close()


def _cluster_file() -> str:
    """The tested cluster file, exactly as docs/running.md shows it."""
    text = (ROOT / "docs" / "running.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- slurm-cluster-file: .*?-->\s*```yaml\n(.*?)```", text, re.S)
    assert found, "docs/running.md has no slurm-cluster-file block"
    return found.group(1)


def _suite_file(folder: Path, log: Path) -> Path:
    path = folder / "slurm-suite.toml"
    path.write_text(
        'datasets = "diabetes"\nfamilies = "gp"\nnoise = "homoscedastic"\ncoverage = "all"\n'
        'seeds = "0"\nfidelity = "smoke"\ndraws = 100\n'
        f'methods = "_fakes:QuadMethod:sleep={FIT_SECONDS},log={log};_fakes:MeanMethod"\n'
        'method_params = "default"\n'
    )
    return path


def _suite(args: list[str], env: dict[str, str], cwd: Path, out: Path) -> subprocess.Popen:
    with open(out, "w") as f:  # the child keeps its own descriptor
        return subprocess.Popen(
            [sys.executable, "-c", LAUNCH, "suite", *args],
            stdout=f,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(cwd),
            start_new_session=True,
        )


def _job_of(pid: int) -> str:
    """The SLURM job a process runs in (its environment's SLURM_JOB_ID)."""
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    ids = [v.split(b"=", 1)[1].decode() for v in environ if v.startswith(b"SLURM_JOB_ID=")]
    assert ids, f"process {pid} does not run in a SLURM job"
    return ids[0]


def _job_of_or_none(pid: int) -> str | None:
    try:
        return _job_of(pid)
    except (OSError, AssertionError):  # the process has ended
        return None


def test_suite_on_slurm_survives_a_cancelled_job_and_resumes_to_exactly_its_cells(
    slurm, tmp_path
) -> None:
    env = {**slurm, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    (tmp_path / "slurm.yaml").write_text(_cluster_file())
    log, said = tmp_path / "fits.log", tmp_path / "suite.out"
    args = [
        str(_suite_file(tmp_path, log)),
        "--out",
        str(tmp_path / "out"),
        "--cluster-config",
        str(tmp_path / "slurm.yaml"),
        "--no-plan",
    ]
    suite = _suite(args, env, tmp_path, said)
    jobs: dict[int, str | None] = {}  # pid of each fit -> the SLURM job it ran in
    cancelled, first_seed, first_pid = "", -1, -1
    try:
        t0 = time.monotonic()
        while suite.poll() is None:
            assert time.monotonic() - t0 < 900, "the suite did not end within 900 s\n" + (
                said.read_text()
            )
            for seed, pids in fit_log(log).items():
                for pid in pids:
                    if pid not in jobs:  # a fit sleeps FIT_SECONDS: its process is alive now
                        jobs[pid] = _job_of_or_none(pid)
                        if not cancelled:
                            # the first fit of the run stage: cancel its job, mid-fit
                            cancelled, first_seed, first_pid = _job_of(pid), seed, pid
                            _run(["scancel", cancelled], slurm)
            time.sleep(0.2)
    finally:
        if suite.poll() is None:
            os.killpg(suite.pid, signal.SIGKILL)
    out = said.read_text()
    assert suite.returncode == 0, out
    assert cancelled, "no fit was seen"
    assert "2 instances selected, 0 already done, 2 to generate" in out, out
    assert "4 cells: 4 ok, 0 failed" in out, out

    # exactly the expected cells, each once and ok
    rows = pd.read_parquet(tmp_path / "out" / "results" / "results.parquet")
    assert len(rows) == 4 and rows["cell_key"].is_unique and (rows["status"] == "ok").all()
    assert rows.groupby("task_id").size().to_dict() == {
        "diabetes__gp__homoscedastic__balanced__s0": 2,
        "diabetes__gp__homoscedastic__ood__s0": 2,
    }
    # the cell in flight on the cancelled job fitted again, in another job; no cell else twice
    fits = fit_log(log)
    assert sorted(len(p) for p in fits.values()) == [1, 2], fits
    assert fits[first_seed][0] == first_pid and len(fits[first_seed]) == 2, fits
    assert jobs[fits[first_seed][1]] not in (None, cancelled), jobs

    # sacct knows the jobs: the cancelled one CANCELLED, every other one ended
    acct = _run(["sacct", "--completion", "--parsable2", "--noheader", "-o", "JobID,State"], slurm)
    states = dict(line.split("|", 1) for line in acct.split())
    assert states.get(cancelled, "").startswith("CANCELLED"), acct
    assert set(jobs.values()) <= set(states), (jobs, acct)
    assert len(states) >= 4, acct  # two worker jobs for generate, two (or more) for run
    assert all(s.split()[0] in ("COMPLETED", "CANCELLED") for s in states.values()), acct

    # the same line again: nothing left to do, and no fit runs
    rerun = _suite(args, env, tmp_path, said)
    assert rerun.wait(timeout=600) == 0, said.read_text()
    out = said.read_text()
    assert "2 already done, 0 to generate" in out and "4 already finished" in out, out
    assert fit_log(log) == fits
    rows_again = pd.read_parquet(tmp_path / "out" / "results" / "results.parquet")
    assert sorted(rows_again["cell_key"]) == sorted(rows["cell_key"])
