"""``udbench datasets``: list the covariate suite, show one dataset, download raw tables,
add a user's own table."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.markup import escape
from rich.table import Table

from udbench._validation import UdbenchError, param_error
from udbench.commands._console import make_console
from udbench.commands._options import DATA_DIR_HELP, check_data_dir


def _where(key: str, data_dir: Path | None) -> str | None:
    """The file ``key``'s raw table is read from, or None (embedded, or needs download)."""
    from udbench._validation import UdbenchError
    from udbench.data.sources import find_raw_table

    try:
        path = find_raw_table(key, data_dir)
    except UdbenchError:
        return None
    return None if path is None else str(path)


def _list_rows(data_dir: Path | None) -> list[dict[str, Any]]:
    from udbench.data import availability, list_datasets

    return [
        {
            "key": s.key,
            "source": s.source,
            "source_id": s.source_id,
            "n_rows": s.n_rows,
            "n_features": s.n_features,
            "n_eval": s.n_eval,
            "n_train": s.n_train,
            "rho": s.rho,
            "kernel_family": s.kernel_family,
            "ood_only": s.ood_only,
            "available": availability(s.key, data_dir),
            "path": _where(s.key, data_dir),
            "registry_file": s.registry_file,
        }
        for s in list_datasets(data_dir=data_dir)
    ]


def _show(key: str, data_dir: Path | None) -> dict[str, Any]:
    from udbench.data import load_covariates
    from udbench.data.geometry import N_SHELLS
    from udbench.design import COVERAGES, NOISE_MODES, NoiseModel, shell_quotas

    cov = load_covariates(key, data_dir)
    spec = cov.spec
    count = lambda idx: np.bincount(cov.shell[idx], minlength=N_SHELLS).tolist()  # noqa: E731
    out: dict[str, Any] = {
        "key": key,
        "n_rows": cov.n_rows,
        "n_features": int(cov.X.shape[1]),
        "n_eval": int(cov.eval_idx.size),
        "n_train": spec.n_train,
        "rho": spec.rho,
        "kernel_family": spec.kernel_family,
        "available": cov.origin,
        "feature_names": list(cov.feature_names),
        "shell_sizes": {
            "all": count(np.arange(cov.n_rows)),
            "eval": count(cov.eval_idx),
            "candidates": count(cov.cand_idx),
        },
    }
    if not spec.ood_only and spec.n_train is not None:
        out["training_quotas"] = {c: shell_quotas(c, spec.n_train).tolist() for c in COVERAGES}
        ranges = {}
        for mode in NOISE_MODES:
            var = NoiseModel(cov, mode).variance(cov.X_eval)
            ranges[mode] = {
                "min": float(var.min()),
                "median": float(np.median(var)),
                "max": float(var.max()),
            }
        out["noise_variance_eval"] = ranges
    return out


def _group_data_dir(ctx: typer.Context, data_dir: Path | None, command: str) -> Path | None:
    """The sub-command's --data-dir, else the group's (``udbench datasets --data-dir X ...``)."""
    given = (ctx.obj or {}).get("data_dir") if isinstance(ctx.obj, dict) else None
    if data_dir is not None and given is not None and Path(data_dir) != Path(given):
        raise param_error(
            command,
            "--data-dir",
            f"be given once (or agree with the --data-dir {given} before the sub-command)",
            data_dir,
        )
    return data_dir if data_dir is not None else given


def register(app: typer.Typer) -> None:
    """Add ``udbench datasets`` (list), ``datasets show`` and ``datasets download``."""
    group = typer.Typer(
        help="The covariate suite: list datasets, show one, download raw tables, add your own.",
        invoke_without_command=True,
        no_args_is_help=False,
    )

    @group.callback()
    def list_cmd(
        ctx: typer.Context,
        as_json: bool = typer.Option(False, "--json", help="Print a JSON list of objects."),
        data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
    ) -> None:
        """List every dataset with N, d, n_eval, n, ρ, GP kernel family and availability."""
        if ctx.invoked_subcommand is not None:
            ctx.obj = {"data_dir": data_dir}  # `datasets --data-dir X show NAME` uses it
            return
        check_data_dir("udbench datasets", data_dir)
        rows = _list_rows(data_dir)
        if as_json:
            typer.echo(json.dumps(rows, indent=1))
            return
        table = Table(title="udbench covariate suite (SPEC §2)")
        for col in ("key", "N", "d", "n_eval", "n", "ρ", "kernel family", "available"):
            table.add_column(col, justify="right" if col in "N d n_eval n ρ" else "left")
        fmt = lambda v: "–" if v is None else str(v)  # noqa: E731
        for r in rows:
            table.add_row(
                r["key"]
                + (" (OOD only)" if r["ood_only"] else "")
                + (" (user)" if r["source"] == "user" else ""),
                str(r["n_rows"]),
                str(r["n_features"]),
                fmt(r["n_eval"]),
                fmt(r["n_train"]),
                fmt(r["rho"]),
                fmt(r["kernel_family"]),
                r["available"],
            )
        console = make_console()
        if not console.is_terminal:  # piped: do not squeeze the table into 80 columns
            console = make_console(width=max(console.width, 120))
        console.print(table)
        for r in rows:
            if r["registry_file"] is not None:
                console.print(
                    f"{r['key']}: added by `udbench datasets add`, registered in "
                    f"{r['registry_file']}",
                    highlight=False,
                    markup=False,
                )
        from udbench.data.sources import DATA_DIR_ENV, cache_dir

        folder = data_dir if data_dir is not None else os.environ.get(DATA_DIR_ENV)
        console.print(
            f"local = read from the data folder {folder or '(none set)'} "
            f"(--data-dir or ${DATA_DIR_ENV}) · cached = read from {cache_dir()} · "
            "embedded = shipped with scikit-learn · --json gives each table's path",
            highlight=False,
            markup=False,
        )

    @group.command("show")
    def show_cmd(
        ctx: typer.Context,
        key: str = typer.Argument(..., help="Dataset key (see `udbench datasets`)."),
        as_json: bool = typer.Option(False, "--json", help="Print a JSON object."),
        data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
    ) -> None:
        """Shell sizes, training quotas and the noise variance of every noise mode over the
        evaluation pool (min, median, max)."""
        from udbench.data.sources import check_key

        data_dir = _group_data_dir(ctx, data_dir, "udbench datasets show")
        check_data_dir("udbench datasets show", data_dir)
        info = _show(check_key(key, data_dir), data_dir)
        if as_json:
            typer.echo(json.dumps(info, indent=1))
            return
        console = make_console()
        console.print(
            f"[bold]{escape(key)}[/]: N={info['n_rows']} d={info['n_features']} "
            f"n_eval={info['n_eval']} n={info['n_train']} ρ={info['rho']} "
            + escape(f"kernel={info['kernel_family']} ({info['available']})"),
            highlight=False,
            markup=True,
        )
        shells = Table(title="rows per shell (0 inner … 4 outermost)")
        shells.add_column("pool")
        for k in range(5):
            shells.add_column(str(k), justify="right")
        for name, sizes in info["shell_sizes"].items():
            shells.add_row(name, *map(str, sizes))
        for name, sizes in info.get("training_quotas", {}).items():
            shells.add_row(f"train: {name}", *map(str, sizes))
        console.print(shells)
        if "noise_variance_eval" in info:
            noise = Table(title="σ²(x) over the evaluation pool (strength 1)")
            for col in ("mode", "min", "median", "max"):
                noise.add_column(col, justify="left" if col == "mode" else "right")
            for mode, r in info["noise_variance_eval"].items():
                noise.add_row(mode, *(f"{r[k]:.4g}" for k in ("min", "median", "max")))
            console.print(noise)

    @group.command("download")
    def download_cmd(
        key: str = typer.Argument(..., help="Dataset key, or 'all'."),
        force: bool = typer.Option(False, "--force", help="Re-download even if cached."),
    ) -> None:
        """Fetch raw tables from OpenML (by data id) or UCI into the download cache."""
        from udbench._validation import check_writable
        from udbench.data import cache_dir, download_dataset
        from udbench.data.sources import (
            CACHE_DIR_ENV,
            DatasetFetchError,
            check_key,
            downloadable_keys,
        )

        # before any fetch: the tables are written to the cache
        check_writable("udbench datasets download", f"${CACHE_DIR_ENV}", cache_dir())

        if key != "all":
            typer.echo(f"{key}: {download_dataset(check_key(key), force=force)}")
            return
        failed, unfetched = [], 0
        keys = downloadable_keys()
        for k in keys:  # go on after a failure; report all at the end
            try:
                typer.echo(f"{k}: {download_dataset(k, force=force)}")
            except UdbenchError as err:
                typer.echo(f"{k}: failed: {err}", err=True)
                failed.append(k)
                unfetched += isinstance(err, DatasetFetchError)
        if failed:  # the summary blames what each line above blamed, not the key
            why = (
                "no network (or the sources are down): their fetches failed"
                if unfetched == len(failed)
                else f"{unfetched} fetch(es) failed (no network?), "
                f"{len(failed) - unfetched} table(s) did not check out"
            )
            raise UdbenchError(
                f"udbench datasets download: {len(failed)} of {len(keys)} datasets could not be "
                f"downloaded ({', '.join(failed)}): {why}; the reasons are above. Re-run "
                "`udbench datasets download all` to fetch the missing ones (the others are "
                "kept)"
            )

    @group.command("add")
    def add_cmd(
        path: Path = typer.Argument(..., help="The table: .csv, .csv.gz, .tsv or .parquet."),
        name: str = typer.Option(..., "--name", help="Key of the new dataset (lower case)."),
        target: str | None = typer.Option(
            None, "--target", help="Real target column (fits the GP kernel family only)."
        ),
        drop: str = typer.Option("", "--drop", help="Comma list of columns to leave out."),
        covariates: str | None = typer.Option(
            None, "--covariates", help="Comma list of the covariates to keep (default: all)."
        ),
        duplicates: str = typer.Option(
            "error", "--duplicates", help="Repeated covariate rows: error, drop or keep."
        ),
        n_train: int | None = typer.Option(
            None, "--n", help="Training size n (default: the rule in docs/data.md)."
        ),
        rho: float | None = typer.Option(
            None, "--rho", help="Noise-to-signal ratio ρ (default: the suite's median, 0.32)."
        ),
        kernel: str | None = typer.Option(
            None,
            "--kernel",
            help="GP kernel family, e.g. rq+linear (default: fitted with --target, else rbf).",
        ),
        fidelity: str = typer.Option(
            "standard", "--fidelity", help="Fit settings of the kernel-family selection."
        ),
        force: bool = typer.Option(False, "--force", help="Replace a dataset of that name."),
        as_json: bool = typer.Option(False, "--json", help="Print the entry as JSON."),
        data_dir: Path | None = typer.Option(
            None, "--data-dir", help="The user's data folder (default: $UDBENCH_DATA_DIR)."
        ),
    ) -> None:
        """Add your own table as a dataset: clean, check, design, register (docs/data.md)."""
        from udbench._validation import check_int, check_positive, check_writable

        # numbers first: before the table is read or any heavy import
        check_int("udbench datasets add", "--n", n_train, minimum=2, allow_none=True)
        if rho is not None:
            check_positive("udbench datasets add", "--rho", rho)
        import dataclasses

        from udbench.data.user import user_dataset_root
        from udbench.recipes.own_data import add_dataset

        root = user_dataset_root(data_dir)
        check_writable("udbench datasets add", "--data-dir", root)
        split = lambda text: [c.strip() for c in text.split(",") if c.strip()]  # noqa: E731
        added = add_dataset(
            path,
            name,
            target=target,
            drop=split(drop),
            covariates=None if covariates is None else split(covariates),
            duplicates=duplicates,
            n_train=n_train,
            rho=rho,
            kernel_family=kernel,
            fidelity=fidelity,
            data_dir=data_dir,
            force=force,
            on_fit=lambda line: typer.echo(line, err=True),
        )
        for note in added.warnings:
            typer.echo(f"warning: {note}", err=True)
        if as_json:
            out = dataclasses.asdict(added.spec)
            out["kernel_log_marginal_likelihood"] = added.kernel_lml
            typer.echo(json.dumps(out, indent=1))
            return
        for line in added.messages:
            typer.echo(line)

    app.add_typer(group, name="datasets")
