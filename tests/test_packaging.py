"""Package metadata agrees with itself: the version in pyproject.toml, the installed
distribution, ``udbench --version`` and CITATION.cff; the extras users are told about exist."""

from __future__ import annotations

import re
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


def _bibtex_entries(text: str) -> dict[str, dict[str, str]]:
    """The entries of the README's ``bibtex`` block: key → field → value (braces of LaTeX
    accents resolved, whitespace collapsed)."""
    block = re.search(r"```bibtex\n(.*?)```", text, re.S)
    assert block is not None, "README has no bibtex block"
    entries: dict[str, dict[str, str]] = {}
    for kind_key, body in re.findall(r"@(\w+\{[\w:-]+),\n(.*?)\n\}", block.group(1), re.S):
        fields = re.findall(r"(\w+)\s*=\s*\{((?:[^{}]|\{[^{}]*\})*)\}", body)
        entries[kind_key] = {
            name: " ".join(value.replace("{\\'a}", "á").replace("{", "").replace("}", "").split())
            for name, value in fields
        }
    return entries


def test_citation_names_the_paper_and_readme_bibtex_agrees() -> None:
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    paper = citation["preferred-citation"]
    assert paper["title"] == (
        "A Ground-Truth Framework for Uncertainty Disentanglement with Posterior Risk"
    )
    assert paper["year"] == 2026 and paper["url"] == "https://arxiv.org/abs/2608.05995"
    names = [f"{a['family-names']}, {a['given-names']}" for a in paper["authors"]]
    assert names[0] == "Wizgall, Frieder" and names[-1] == "Mucsányi, Bálint"
    entries = _bibtex_entries((ROOT / "README.md").read_text(encoding="utf-8"))
    assert set(entries) == {"misc{wizgall2026groundtruth", "software{udbench"}
    bib_paper = entries["misc{wizgall2026groundtruth"]
    assert bib_paper["title"] == paper["title"] and bib_paper["year"] == str(paper["year"])
    assert bib_paper["author"].split(" and ") == names
    assert bib_paper["eprint"] == "2608.05995" and bib_paper["url"] == paper["url"]
    software = entries["software{udbench"]
    assert software["title"] == citation["title"] and software["license"] == citation["license"]
    assert software["version"] == str(citation["version"]) == udbench.__version__
    assert software["author"] == citation["authors"][0]["name"]
