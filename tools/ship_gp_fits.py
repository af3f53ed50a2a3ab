"""Ship this machine's GP kernel fits with udbench (package data).

Usage (from the repository root, with ``UDBENCH_DATA_DIR`` pointing at the raw tables)::

    uv run python tools/ship_gp_fits.py airfoil concrete qsar_fish [--fidelity standard]

For each dataset, the kernel is fitted (or read from this machine's cache) exactly as
:func:`udbench.priors.gp.prior.build_prior` does without a shipped fit, and the fit record is
written to ``src/udbench/priors/gp/shipped/`` under the cache's file name, with where and
when it was made (``shipped_from``). An existing shipped file is left alone unless
``--replace``: replacing one changes every task of its dataset (docs/campaigns.md, "Task
versions across machines").
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import subprocess

from udbench._cache import CACHE_CHECKSUM_FIELD
from udbench.data.covariates import load_covariates
from udbench.priors.gp.fit import FIT_SETTINGS
from udbench.priors.gp.fit_store import SHIPPED_FITS_DIR, data_fingerprint, fit_cache_path
from udbench.priors.gp.prior import build_prior


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+")
    parser.add_argument("--fidelity", default="standard", choices=sorted(FIT_SETTINGS))
    parser.add_argument("--replace", action="store_true")
    args = parser.parse_args()
    import numpy as np

    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    for key in args.datasets:
        cov = load_covariates(key)
        build_prior(cov, args.fidelity, shipped=False)  # fits into this machine's cache
        fp = data_fingerprint(
            np.asarray(cov.X, dtype=np.float64),
            np.asarray(cov.y_real, dtype=np.float64),
            np.asarray(cov.eval_idx),
        )
        family = str(cov.spec.kernel_family)
        cached = fit_cache_path(key, family, FIT_SETTINGS[args.fidelity], fp)
        target = SHIPPED_FITS_DIR / cached.name
        if target.exists() and not args.replace:
            print(f"{key}: {target.name} is shipped already (--replace to remake it)")
            continue
        record = json.loads(cached.read_text())
        record.pop(CACHE_CHECKSUM_FIELD, None)  # the cache's own seal; shipped fits are data
        record["shipped_from"] = {
            "machine": platform.node(),
            "processor": platform.processor() or platform.machine(),
            "commit": commit,
            "date": datetime.date.today().isoformat(),
        }
        SHIPPED_FITS_DIR.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
        print(f"{key}: shipped {target.name}")


if __name__ == "__main__":
    main()
