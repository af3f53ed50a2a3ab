"""Package metadata agrees with itself: the version in pyproject.toml, the installed
distribution, ``udbench --version`` and CITATION.cff; the extras users are told about exist."""

from __future__ import annotations

import tomllib
from importlib.metadata import metadata
from pathlib import Path

import yaml

import udbench
from udbench.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_version_agrees_in_pyproject_package_cli_and_citation(capsys) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert main(["--version"]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed == f"udbench {project['version']}"
    assert udbench.__version__ == project["version"] == str(citation["version"])
    assert citation["cff-version"] == "1.2.0" and citation["license"] == project["license"]


def test_extras_cluster_and_gpu_are_declared() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert any(req.startswith("dask-jobqueue") for req in extras["cluster"])
    assert any(req.startswith("jax[cuda13]") for req in extras["gpu"])
    # the installed distribution carries them (what pip reads from the wheel)
    provided = set(metadata("udbench").get_all("Provides-Extra") or [])
    assert {"cluster", "gpu"} <= provided
