"""``udbench methods`` and ``udbench check-method``: list methods, run the conformance battery."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from udbench.commands._console import make_console, styled


def methods_command(
    name: str | None = typer.Argument(
        None,
        help="Show one method in full: hyperparameters with defaults, accepted values, "
        "search space, smoke configuration and flags.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the table as JSON."),
    markdown: bool = typer.Option(
        False, "--markdown", help="Print the Markdown table of README.md and docs/methods.md."
    ),
) -> None:
    """List the registered UQ methods (udbench's and the user's) and the classifiers.

    Regression methods and classifiers (for classification tasks) are shown in two tables;
    ``--json`` gives each row a ``task_type``. With NAME (a registered name, a classifier's
    or 'package.module:ClassName'), describe that method.
    """
    if name is not None:
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        _describe(name, as_json)
        return
    from udbench.methods.classifiers import list_classifiers
    from udbench.methods.registry import list_methods, methods_markdown

    infos = list_methods(static=True)
    if markdown:
        typer.echo(methods_markdown(infos), nl=False)
        return
    classifiers = list_classifiers(static=True)
    if as_json:
        rows = [{**i.to_dict(), "task_type": "regression"} for i in infos]
        rows += [{**asdict(c), "source": "udbench"} for c in classifiers]
        typer.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    console = make_console()
    listed: list[tuple[Any, str]] = [(i, i.source) for i in infos]
    clf_rows: list[tuple[Any, str]] = [(c, "udbench") for c in classifiers]
    for title, entries in (
        ("udbench methods · regression tasks", listed),
        (
            "udbench classifiers · classification tasks (family gpc)",
            [(c, "udbench") for c in classifiers],
        ),
    ):
        table = Table(title=title)
        for col in ("name", "family", "aleatoric", "epistemic", "available"):
            table.add_column(col)
        for i, source in entries:
            if not i.available:
                table.add_row(i.name, "?", "?", "?", styled("no", "red"))
                continue
            table.add_row(
                i.name,
                i.family,
                "constant" if i.constant_aleatoric else "heteroscedastic",
                (i.epistemic_from or "").replace("_", " "),
                "yes" if source == "udbench" else f"yes ({source})",
            )
        console.print(table)
    for i, _ in [*listed, *clf_rows]:
        if not i.available:
            console.print(f"{i.name}: unavailable: {i.error}", highlight=False, markup=False)


def _range_text(spec: dict[str, Any]) -> str:
    """A search-space or constraint entry as text: ``float [0.1, 5] log``, ``{a, b}``."""
    if "choices" in spec:
        return "{" + ", ".join(map(str, spec["choices"])) + "}"
    low, high = spec.get("low"), spec.get("high")
    left = "(" if spec.get("low_open") else "["
    right = ")" if spec.get("high_open") or high is None else "]"
    kind = spec.get("type", "")
    if low is None and high is None:
        text = kind
    else:
        text = (
            f"{kind} {left}{'-∞' if low is None else low}, {'∞' if high is None else high}{right}"
        )
    extra = [k for k in ("log", "step") if spec.get(k)]
    if "step" in extra:
        extra[extra.index("step")] = f"step {spec['step']}"
    if spec.get("condition"):
        extra.append(f"if {spec['condition']}")
    return " ".join([text, *extra]).strip()


def _describe(name: str, as_json: bool) -> None:
    """``udbench methods NAME``: one method's hyperparameters, search space and flags."""
    import inspect

    from udbench.methods.classifiers import classifier_spec_name, get_classifier_class
    from udbench.methods.registry import get_method_class

    cls: Any = get_classifier_class(name) if classifier_spec_name(name) else get_method_class(name)
    signature = inspect.signature(cls.__init__)
    rows: list[dict[str, Any]] = []
    for pname, p in signature.parameters.items():
        if pname == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        rows.append(
            {
                "name": pname,
                "default": None if p.default is inspect.Parameter.empty else p.default,
                "accepted": cls.param_constraints.get(pname),
                "search_space": cls.search_space.get(pname),
                "smoke": cls.smoke_params.get(pname),
            }
        )
    info = {
        "name": cls.name,
        "class": f"{cls.__module__}:{cls.__qualname__}",
        "description": cls.description,
        "family": cls.family,
        "constant_aleatoric": cls.constant_aleatoric,
        "epistemic_from": cls.epistemic_from,
        "task_type": getattr(cls, "task_type", "regression"),
        "hyperparameters": rows,
    }
    if as_json:
        typer.echo(json.dumps(info, indent=2, ensure_ascii=False, default=str))
        return
    console = make_console()
    console.print(
        f"[bold]{escape(cls.name)}[/] — {escape(str(cls.description or ''))}", markup=True
    )
    console.print(
        f"family {cls.family} · AU "
        f"{'constant in x' if cls.constant_aleatoric else 'heteroscedastic (varies in x)'} · "
        f"EU from {str(cls.epistemic_from).replace('_', ' ')} · class {info['class']}",
        highlight=False,
        markup=False,
    )
    table = Table(title="hyperparameters (tuned: in the search space; smoke: quick configuration)")
    for col in ("name", "default", "accepted", "search space", "smoke"):
        table.add_column(col, overflow="fold", no_wrap=col == "name")
    for r in rows:
        table.add_row(
            r["name"],
            repr(r["default"]),  # table cells print as they are (make_console)
            _range_text(r["accepted"]) if r["accepted"] else "",
            _range_text(r["search_space"]) if r["search_space"] else "",
            "" if r["name"] not in cls.smoke_params else repr(r["smoke"]),
        )
    console.print(table)


def check_method_command(
    method: str = typer.Argument(
        ..., help="Registry name (e.g. 'gp') or import path 'package.module:ClassName'."
    ),
    params: str = typer.Option(
        "", "--params", help="Overrides of the smoke configuration, 'key=value,key=value'."
    ),
    random_state: int = typer.Option(0, "--random-state", help="random_state of every fit."),
    timeout: float = typer.Option(
        300.0,
        "--timeout",
        help="Wall-clock limit of each check in seconds; a check over it fails and the "
        "remaining checks are skipped.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    behaviour: bool = typer.Option(
        False,
        "--behaviour",
        help="Run the behaviour battery (semantic checks of AU/EU: value, threshold, verdict) "
        "instead of the contract battery; --timeout does not apply.",
    ),
) -> None:
    """Run the conformance battery on a method; exit status 1 if any check failed.

    Bad options (unknown method, a --params value or --random-state the method rejects,
    --timeout <= 0) are an error before any check runs (exit 2). A user's class is imported
    from the current directory too (as ``python -m`` would).
    """
    from udbench._validation import check_seed, check_timeout

    check_seed("udbench check-method", "--random-state", random_state)  # before any import
    check_timeout("udbench check-method", "--timeout", timeout)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    from udbench.methods.conformance import check_method
    from udbench.methods.registry import get_method_class, make_method

    overrides: dict[str, Any] = {}
    if params:
        cls = get_method_class(method)
        built = make_method(f"{cls.__module__}:{cls.__qualname__}:{params}")
        keys = {p.split("=", 1)[0].strip() for p in params.split(",") if p.strip()}
        overrides = {k: v for k, v in built.get_params(deep=False).items() if k in keys}
    if behaviour:
        _behaviour(method, overrides, random_state, as_json)
        return
    report = check_method(method, params=overrides, random_state=random_state, timeout=timeout)
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2))
    else:
        console = make_console()
        style = {"passed": "green", "failed": "bold red", "skipped": "yellow"}
        for r in report.results:
            note = f" — {r.message}" if r.message else ""
            console.print(
                f"[{style[r.status]}]{r.status:>7}[/] "
                + escape(f"{r.name} ({r.seconds:.2f}s){note}"),
                highlight=False,
                markup=True,
            )
        console.print(report.summary(), highlight=False)
    if not report.ok:
        raise typer.Exit(code=1)


def _behaviour(method: str, overrides: dict[str, Any], random_state: int, as_json: bool) -> None:
    from udbench.methods.conformance import check_behaviour

    report = check_behaviour(method, params=overrides, random_state=random_state)
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2))
    else:
        console = make_console()
        style = {"passed": "green", "failed": "bold red", "skipped": "yellow"}
        for r in report.results:
            value = "—" if r.value is None else f"{r.value:.3g}"
            console.print(
                f"[{style[r.status]}]{r.status:>7}[/] "
                + escape(
                    f"{r.name}: {value} (needs {r.rule} {r.threshold:g}) ({r.seconds:.2f}s) "
                    f"— {r.message}"
                ),
                highlight=False,
                markup=True,
            )
        console.print(report.summary(), highlight=False)
    if not report.ok:
        raise typer.Exit(code=1)


def register(app: typer.Typer) -> None:
    """Add ``methods`` and ``check-method`` to ``app``."""
    app.command("methods")(methods_command)
    app.command("check-method")(check_method_command)
