"""Run the search-space check (:mod:`udbench.tuning.space_check`) over methods on one task.

Usage::

    uv run python tools/check_search_spaces.py TASK.npz [--methods nn-ens,nn-bag] \
        [--seeds 0,1,2] [--smoke] [--csv OUT.csv]

For every method (default: every registered regression method, or every classifier on a
classification task), every hyperparameter of its search space is set to each end of its
range and the held-out NLL compared with the seed-to-seed spread at the method's default
configuration (``--smoke``: its ``smoke_params``, for a quick look; the verdicts are the
defaults'). Prints one Markdown table (knobs that do not matter first) and writes the rows
as CSV with ``--csv``. One row per (method, knob); a method whose default fails a trial is
named and skipped.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task", type=Path)
    parser.add_argument("--methods", default=None)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--csv", type=Path, default=None)
    args = parser.parse_args()

    from udbench._threads import cell_threads
    from udbench.methods import get_method_class
    from udbench.methods.classifiers import CLASSIFIERS, get_classifier_class
    from udbench.methods.registry import registered_methods
    from udbench.tasks import Task
    from udbench.tuning.space_check import search_space_check

    classification = Task.load(args.task).spec.n_classes is not None
    if args.methods:
        names = [m.strip() for m in args.methods.split(",") if m.strip()]
    else:
        names = list(CLASSIFIERS) if classification else list(registered_methods())
    seeds = [int(s) for s in args.seeds.split(",")]
    frames = []
    for name in names:
        cls = get_classifier_class(name) if name in CLASSIFIERS else get_method_class(name)
        est = cls(**(dict(cls.smoke_params) if args.smoke else {}))
        print(f"{name}: {len(cls.search_space)} knobs", file=sys.stderr, flush=True)
        try:
            with cell_threads():
                frames.append(search_space_check(est, str(args.task), seeds=seeds))
        except Exception as err:  # one method's failure is named, the others go on
            print(f"{name}: skipped ({err})", file=sys.stderr, flush=True)
    if not frames:
        raise SystemExit("no method checked")
    table = pd.concat(frames, ignore_index=True).sort_values(["matters", "method", "param"])
    if args.csv is not None:
        table.to_csv(args.csv, index=False)
    print("| method | knob | low → high | NLL at low / high | effect | seed spread | matters |")
    print("|---|---|---|---|---|---|---|")
    for r in table.to_dict("records"):
        verdict = (
            "yes" if r["matters"] else ("**no**" if not r["error"] else f"error: {r['error']}")
        )
        print(
            f"| {r['method']} | {r['param']} | {r['low']} → {r['high']} | "
            f"{r['nll_low']:.4f} / {r['nll_high']:.4f} | {r['effect']:.4f} | "
            f"{r['spread']:.4f} | {verdict} |"
        )


if __name__ == "__main__":
    main()
