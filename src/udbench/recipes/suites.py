"""Named benchmark suites: preset grids as data, for ``udbench suite NAME --out DIR``.

A suite is one row of :data:`SUITES` (or a TOML file with the same keys): the task grid in the
words of ``udbench generate`` (datasets, families, noise modes, coverages, seeds, fidelity,
draws) and the methods of ``udbench run``. ``udbench suite`` turns a row into the four
commands a user would type (generate → check → run → report) and runs them in order; every
stage is resumable because each of those commands skips finished work (see
:mod:`udbench.commands.suite`). Adding a preset is adding a row, never a code branch.

Keys of a suite (all strings, as on the command line, except ``draws``):

``description``
    One line, shown by ``udbench suite --list``.
``datasets``, ``families``, ``noise``, ``coverage``, ``seeds``
    ``udbench generate`` options (comma lists, ``all``, seed ranges ``0-9``).
``fidelity``, ``draws``
    Prior preset and posterior draws D per instance.
``methods``
    ``"registered"`` (every method udbench registers) or a comma list of method specs
    (``name[:key=value,...]``; ``;`` separates specs when overrides hold commas).
``keep_predictions``
    Store per-point predictions (``udbench run --keep-predictions``: the report's
    EU-against-oracle figure reads them; about 40 kB per cell). Optional in a file (false).
``method_params``
    ``"default"`` (each method's default hyperparameters; ``udbench suite --tuned DIR``
    replaces them by tuned ones where a record exists) or ``"smoke"`` (each class's
    ``smoke_params``: seconds per cell, for demos and tests).

A *classification suite* names only classification families (``gpc``) and has two more keys
(:data:`CLASSIFICATION_KEYS`), both optional in a file: ``classes`` and ``difficulty``, the
``udbench generate --classes/--difficulty`` options (defaults ``"3"`` and ``"medium"``). Its
``methods`` may be ``"classifiers"`` (every classifier of
:data:`udbench.methods.classifiers.CLASSIFIERS`). A suite mixing regression and
classification families is refused (their rows do not rank together). Regression suites
have neither key, so their recorded settings (``suite.json``) are what they were.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from udbench._validation import UdbenchError, param_error

__all__ = [
    "CLASSIFICATION_KEYS",
    "SUITES",
    "SUITE_KEYS",
    "classification_options",
    "load_suite",
    "method_specs",
    "suite_grid",
    "suite_task_type",
]

#: The datasets of ``gp-all``: every paper dataset whose full table is in the shared data
#: folder (``sarcos`` is not: only its test split is available, see docs/data.md).
_LOCAL = (
    "abalone,airfoil,concrete,cpu_activity,diamonds,health_insurance,kin8nm,protein,"
    "qsar_fish,seoul_bike,space_ga,white_wine"
)

#: The preset suites (name → settings). Instances = datasets × families × modes × coverages ×
#: seeds (× K × difficulties for classification): quickstart 4, gp-small 240, hbart-small and
#: bnn-small 120 each, gp-all 960, paper 3120, clf-small 120, clf-all 5760.
SUITES: dict[str, dict[str, Any]] = {
    "quickstart": {
        "description": "udbench quickstart's grid: diabetes, GP, 2 modes × 2 coverages, seed 0, "
        "smoke fidelity, every registered method with its smoke settings (minutes)",
        "datasets": "diabetes",
        "families": "gp",
        "noise": "homoscedastic,smooth-monotone",
        "coverage": "all",
        "seeds": "0",
        "fidelity": "smoke",
        "draws": 200,
        "methods": "registered",
        "method_params": "smoke",
        "keep_predictions": True,
    },
    "gp-small": {
        "description": "concrete, airfoil, qsar_fish; GP; all modes and coverages; seeds 0-9 "
        "(240 instances); every registered method",
        "datasets": "concrete,airfoil,qsar_fish",
        "families": "gp",
        "noise": "all",
        "coverage": "all",
        "seeds": "0-9",
        "fidelity": "standard",
        "draws": 1000,
        "methods": "registered",
        "method_params": "default",
        "keep_predictions": False,
    },
    "hbart-small": {
        "description": "gp-small's design with the HBART truth: concrete, airfoil, qsar_fish; "
        "all modes and coverages; seeds 0-4 (120 instances); every registered method",
        "datasets": "concrete,airfoil,qsar_fish",
        "families": "hbart",
        "noise": "all",
        "coverage": "all",
        "seeds": "0-4",
        "fidelity": "standard",
        "draws": 1000,
        "methods": "registered",
        "method_params": "default",
        "keep_predictions": False,
    },
    "bnn-small": {
        "description": "gp-small's design with the BNN truth: concrete, airfoil, qsar_fish; "
        "all modes and coverages; seeds 0-4 (120 instances); every registered method",
        "datasets": "concrete,airfoil,qsar_fish",
        "families": "bnn",
        "noise": "all",
        "coverage": "all",
        "seeds": "0-4",
        "fidelity": "standard",
        "draws": 1000,
        "methods": "registered",
        "method_params": "default",
        "keep_predictions": False,
    },
    "gp-all": {
        "description": "the 12 local datasets; GP; all modes and coverages; seeds 0-9 "
        "(960 instances); every registered method",
        "datasets": _LOCAL,
        "families": "gp",
        "noise": "all",
        "coverage": "all",
        "seeds": "0-9",
        "fidelity": "standard",
        "draws": 1000,
        "methods": "registered",
        "method_params": "default",
        "keep_predictions": False,
    },
    "paper": {
        "description": "the paper's grid: 13 datasets × GP, HBART, BNN × 4 modes × 2 coverages × "
        "seeds 0-9 (3120 instances); every registered method",
        "datasets": "all",
        "families": "all",
        "noise": "all",
        "coverage": "all",
        "seeds": "0-9",
        "fidelity": "paper",
        "draws": 1000,
        "methods": "registered",
        "method_params": "default",
        "keep_predictions": False,
    },
    "clf-small": {
        "description": "classification: concrete, airfoil, qsar_fish; gpc K=3 medium; all "
        "temperature modes and coverages; seeds 0-4 (120 instances); the 11 classifiers",
        "datasets": "concrete,airfoil,qsar_fish",
        "families": "gpc",
        "classes": "3",
        "difficulty": "medium",
        "noise": "all",
        "coverage": "all",
        "seeds": "0-4",
        "fidelity": "standard",
        "draws": 1000,
        "methods": "classifiers",
        "method_params": "default",
        "keep_predictions": False,
    },
    "clf-all": {
        "description": "classification: the 12 local datasets; gpc K=2,3 × easy, medium, hard; "
        "all temperature modes and coverages; seeds 0-9 (5760 instances); the 11 classifiers",
        "datasets": _LOCAL,
        "families": "gpc",
        "classes": "2,3",
        "difficulty": "all",
        "noise": "all",
        "coverage": "all",
        "seeds": "0-9",
        "fidelity": "standard",
        "draws": 1000,
        "methods": "classifiers",
        "method_params": "default",
        "keep_predictions": False,
    },
}

#: Every key a suite must have, with its type.
SUITE_KEYS: dict[str, type] = {
    "description": str,
    "datasets": str,
    "families": str,
    "noise": str,
    "coverage": str,
    "seeds": str,
    "fidelity": str,
    "draws": int,
    "methods": str,
    "method_params": str,
    "keep_predictions": bool,
}

#: The keys of a classification suite beyond :data:`SUITE_KEYS`, with their defaults.
CLASSIFICATION_KEYS: dict[str, str] = {"classes": "3", "difficulty": "medium"}


def suite_task_type(suite: dict[str, Any]) -> str:
    """``"classification"`` when every family a suite names is a classification one, else
    ``"regression"``.

    Parameters
    ----------
    suite : dict
        A suite's settings (:func:`load_suite`).

    Returns
    -------
    str
        ``"regression"`` or ``"classification"``.

    Raises
    ------
    UdbenchError
        The suite names families of both task types.
    """
    from udbench.priors.base import families_of_task_type

    text = suite["families"].strip()
    if text.lower() == "all":  # generate's 'all': the regression families
        return "regression"
    names = {f.strip() for f in text.split(",") if f.strip()}
    clf = names & set(families_of_task_type("classification"))
    if clf and clf != names:
        raise param_error(
            "udbench suite",
            "families",
            "name regression or classification families, not both (their rows do not rank "
            "together)",
            text,
        )
    return "classification" if clf else "regression"


def classification_options(suite: dict[str, Any]) -> dict[str, str]:
    """``{"classes", "difficulty"}`` of a classification suite (its own or the defaults), ``{}``
    for a regression suite: the keyword arguments of :func:`udbench.tasks.grid.expand_grid`.

    Raises
    ------
    UdbenchError
        As :func:`suite_task_type`.
    """
    if suite_task_type(suite) != "classification":
        return {}
    return {k: str(suite.get(k, default)) for k, default in CLASSIFICATION_KEYS.items()}


def suite_grid(suite: dict[str, Any], data_dir: str | None = None) -> list[Any]:
    """Every task spec of a suite's grid, in :func:`udbench.tasks.grid.expand_grid`'s order
    (a classification suite's ``classes`` and ``difficulty`` included).

    Parameters
    ----------
    suite : dict
        A suite's settings (:func:`load_suite`).
    data_dir : str, optional
        Raw-data folder (user datasets).

    Returns
    -------
    list of TaskSpec

    Raises
    ------
    UdbenchError
        A setting :func:`~udbench.tasks.grid.expand_grid` refuses, or families of both task
        types (:func:`suite_task_type`).
    KeyError
        ``suite`` lacks one of the grid's keys.
    """
    from udbench.tasks.grid import expand_grid

    return expand_grid(
        suite["datasets"],
        suite["families"],
        suite["noise"],
        suite["coverage"],
        suite["seeds"],
        suite["fidelity"],
        suite["draws"],
        data_dir,
        **classification_options(suite),
    )


def load_suite(name: str) -> dict[str, Any]:
    """The settings of suite ``name``: a preset of :data:`SUITES` or a ``.toml`` file.

    A TOML file holds the keys of :data:`SUITE_KEYS` at its top level (``description``
    optional; ``classes`` and ``difficulty`` of :data:`CLASSIFICATION_KEYS` optional, for
    classification families); its suite name is the file's stem.

    Parameters
    ----------
    name : str
        Preset name or path of a ``.toml`` file.

    Returns
    -------
    dict
        The suite's settings (a copy) plus ``"name"``.

    Raises
    ------
    UdbenchError
        Unknown preset, unreadable file, missing or unknown key, a value of the wrong type,
        ``method_params`` not ``default``/``smoke``.
    """
    comp = "udbench suite"
    if name in SUITES:
        suite = dict(SUITES[name])
        suite["name"] = name
        return suite
    path = Path(name)
    if path.suffix.lower() != ".toml":
        raise param_error(comp, "NAME", f"be one of {sorted(SUITES)} or a .toml file", name)
    try:
        raw = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise UdbenchError(f"{comp}: cannot read suite file {str(path)!r}: {err}") from None
    raw.setdefault("description", f"suite file {path.name}")
    raw.setdefault("keep_predictions", False)
    unknown = sorted(set(raw) - set(SUITE_KEYS) - set(CLASSIFICATION_KEYS))
    missing = sorted(set(SUITE_KEYS) - set(raw))
    if unknown or missing:
        raise param_error(
            comp,
            str(path),
            f"hold exactly the keys {sorted(SUITE_KEYS)}",
            f"missing {missing}, unknown {unknown}",
        )
    for key, kind in SUITE_KEYS.items():
        value = raw[key]
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise param_error(comp, f"{path.name}: {key}", f"be a {kind.__name__}", value)
    for key in CLASSIFICATION_KEYS:
        if key in raw and not isinstance(raw[key], str):
            raise param_error(comp, f"{path.name}: {key}", "be a str", raw[key])
    if raw["method_params"] not in ("default", "smoke"):
        raise param_error(
            comp, f"{path.name}: method_params", "be 'default' or 'smoke'", raw["method_params"]
        )
    suite = dict(raw)
    suite["name"] = path.stem
    return suite


def method_specs(suite: dict[str, Any]) -> list[str]:
    """The ``udbench run -m`` specs of a suite (smoke settings spelled out as overrides).

    Parameters
    ----------
    suite : dict
        From :func:`load_suite`.

    Returns
    -------
    list of str
        ``name`` or ``name:key=value,...`` per method, in the registry's order for
        ``"registered"`` and in :data:`~udbench.methods.classifiers.CLASSIFIERS`' order for
        ``"classifiers"``.

    Raises
    ------
    UdbenchError
        An unknown method (with ``method_params = "smoke"``, which looks each class up).
    """
    from udbench.methods import get_method_class
    from udbench.methods.classifiers import CLASSIFIERS, get_classifier_class
    from udbench.methods.registry import registered_methods

    text = suite["methods"].strip()
    if text.lower() == "registered":
        names = list(registered_methods())
    elif text.lower() == "classifiers":
        names = list(CLASSIFIERS)
    else:
        sep = ";" if ";" in text else ","
        names = [m.strip() for m in text.split(sep) if m.strip()]
    if suite["method_params"] != "smoke":
        return names
    specs = []
    for spec in names:
        if ":" in spec:  # overrides given: keep them as written
            specs.append(spec)
            continue
        cls: Any = get_classifier_class(spec) if spec in CLASSIFIERS else get_method_class(spec)
        body = ",".join(f"{k}={v}" for k, v in dict(cls.smoke_params).items())
        specs.append(f"{spec}:{body}" if body else spec)
    return specs
