"""A hand-made results frame of classification rows (shared by the analyses and report tests)."""

from __future__ import annotations

import pandas as pd

METHODS = ("A", "B", "C")
#: Four tasks (K = 2 on t0, t1; K = 3 on t2, t3) × three methods: ρ(EU, EU*_risk).
RHO = {
    "t0": (0.9, 0.5, 0.1),
    "t1": (0.7, 0.3, 0.1),
    "t2": (0.2, 0.6, 0.4),
    "t3": (0.2, 0.8, 0.4),
}
#: Δ_ent (risk) per task and method.
DELTA = {
    "t0": (0.1, -0.2, 0.3),
    "t1": (0.3, 0.0, 0.1),
    "t2": (-0.1, 0.2, 0.2),
    "t3": (0.1, 0.5, 0.0),
}


def classification_rows(datasets=("ds0", "ds1", "ds0", "ds1"), constant=()) -> pd.DataFrame:
    """Four classification tasks (family ``gpc``) × the three classifiers of :data:`METHODS`."""
    rows = []
    for j, task in enumerate(RHO):
        k = 2 if j < 2 else 3
        for i, m in enumerate(METHODS):
            rows.append(
                {
                    "task_id": task,
                    "method": m,
                    "method_label": m,
                    "method_family": ("gp", "trees", "nn")[i],
                    "constant_aleatoric": m in constant,
                    "status": "ok",
                    "dataset": datasets[j],
                    "family": "gpc",
                    "noise": "homoscedastic" if j % 2 == 0 else "step",
                    "coverage": "balanced",
                    "seed": 0,
                    "n_classes": k,
                    "difficulty": "medium" if j % 2 == 0 else "hard",
                    "rho_eu_risk": RHO[task][i],
                    "rho_eu_var": RHO[task][i],
                    "rho_eu_point": RHO[task][i],
                    "rho_au": 0.5 + 0.1 * i,
                    "delta_ent_risk": DELTA[task][i],
                    "delta_ent_var": DELTA[task][i],
                    "delta_ent_point": DELTA[task][i],
                    "rho_eu_au": 0.2,
                    "nll": (1.0, 2.0, 3.0)[i],
                    "accuracy": (0.6, 0.8, 0.5)[i],
                    "ece": (0.1, 0.05, 0.3)[i],
                    "brier": (0.3, 0.2, 0.1)[i],
                }
            )
    return pd.DataFrame(rows)
