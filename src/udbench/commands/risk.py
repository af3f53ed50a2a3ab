"""``udbench risk``: posterior-risk decompositions of arrays saved in an ``.npz`` file.

For researchers with their own reference-posterior draws: save the arrays under the argument
names of the Python functions in :mod:`udbench.risk` and get one row per evaluation point.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import typer
from rich.table import Table

from udbench._losses import LOSS_TABLE, loss_help, loss_names
from udbench._validation import (
    UdbenchError,
    check_choice,
    check_seed,
    check_writable,
    param_error,
)
from udbench.commands._console import make_console
from udbench.commands._options import out_path

#: Every loss of :data:`udbench._losses.LOSS_TABLE`, regression and classification (its
#: functions are named there by import path and imported when a command runs: the risk core
#: loads scoringrules and SciPy, which ``udbench --help`` does not need).
LOSSES: tuple[str, ...] = loss_names(None)


def _not_npz(path: Path, why: str) -> UdbenchError:
    # not param_error: its value is shortened, and both the path and the reason matter
    return UdbenchError(
        "udbench risk decompose: parameter 'arrays' must be an .npz file of named arrays "
        f"(numpy.savez); got {str(path)!r} ({why})"
    )


def load_arrays(path: Path) -> dict[str, np.ndarray]:
    """Read the named arrays of an ``.npz`` file (as written by ``numpy.savez``).

    Raises
    ------
    UdbenchError
        If ``path`` is not an ``.npz`` archive (e.g. a text file, a single ``.npy`` array, a
        truncated archive) or an array in it cannot be read; the message names the file.
    """
    try:
        # allow_pickle=False: never unpickle a user's file. numpy then reports any file that is
        # not .npy/.npz as "pickled data", which misleads: say what the file is not instead.
        data = np.load(path, allow_pickle=False)
    except ValueError as err:
        raise _not_npz(path, "not a NumPy file" if "pickle" in str(err) else str(err)) from None
    except (OSError, EOFError, zipfile.BadZipFile) as err:
        raise _not_npz(path, f"{type(err).__name__}: {err}") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise _not_npz(path, "a single .npy array")
    try:
        with data:
            return {k: data[k] for k in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        raise _not_npz(path, f"{type(err).__name__}: {err}") from None


def decompose_arrays(arrays: dict[str, np.ndarray], loss: str, random_state: int = 0):
    """Run the decomposition of ``loss`` on named arrays; draw-based if draws are present.

    Raises
    ------
    UdbenchError
        Unknown loss or a missing array (named in the message).
    """
    check_choice("udbench risk decompose", "loss", loss, loss_names(None))
    entry = LOSS_TABLE[loss]
    use_draws = entry.draws_args[0] in arrays or entry.gaussian is None
    names = entry.draws_args if use_draws else entry.gaussian_args
    missing = [k for k in names if k not in arrays]
    if missing:
        raise param_error(
            "udbench risk decompose",
            "arrays",
            f"contain {list(names)} (missing {missing})",
            f"keys {sorted(arrays)}",
        )
    options = entry.draws_options if use_draws else ()
    kwargs = {"random_state": random_state} if "random_state" in options else {}
    fn = entry.draws_fn() if use_draws else entry.gaussian_fn()
    return fn(*(arrays[k] for k in names), **kwargs)


def register(app: typer.Typer) -> None:
    """Add ``udbench risk decompose`` to ``app``."""
    group = typer.Typer(help="Posterior-risk decompositions (AU, generalized variance, gap).")
    app.add_typer(group, name="risk")

    @group.command("decompose")
    def decompose(
        arrays: Path = typer.Argument(..., help="An .npz file with the named input arrays."),
        loss: str = typer.Option(
            "squared", help=f"One of the losses — {loss_help(None, described=True)}."
        ),
        out: Path | None = typer.Option(
            None, help="Write one row per point (.csv or .parquet).", parser=out_path
        ),
        random_state: int = typer.Option(0, help="Noise-sample stream (CRPS/log from draws)."),
    ) -> None:
        """Decompose posterior risk per point; draw-based when 'draws'/'prob_draws' are given,
        else the closed form from 'post_mean' and 'post_var'."""
        check_seed("udbench risk decompose", "--random-state", random_state)
        if not arrays.is_file():
            raise param_error("udbench risk decompose", "arrays", "be an existing file", arrays)
        if out is not None:  # before any work
            if out.suffix not in (".csv", ".parquet"):
                raise param_error("udbench risk decompose", "out", "end in .csv or .parquet", out)
            if not out.absolute().parent.is_dir():
                raise param_error(
                    "udbench risk decompose", "out", "be in an existing folder", str(out)
                )
            check_writable("udbench risk decompose", "out", out.absolute().parent)
        named = load_arrays(arrays)
        dec = decompose_arrays(named, loss, random_state)
        import pandas as pd

        frame = pd.DataFrame(
            {
                "point": np.arange(dec.au.shape[0]),
                "au": dec.au,
                "generalized_variance": dec.generalized_variance,
                "deployment_gap": dec.deployment_gap,
                "eu": dec.eu,
                "total": dec.total,
            }
        )
        if out is not None:
            if out.suffix == ".parquet":
                frame.to_parquet(out, index=False)
            else:
                frame.to_csv(out, index=False)
        table = Table(title=f"{loss} decomposition ({dec.method}), mean over {len(frame)} points")
        terms = [c for c in frame.columns if c != "point"]
        for col in terms:
            table.add_column(col)
        table.add_row(*(f"{frame[c].mean():.6g}" for c in terms))
        make_console().print(table)
