"""The paper's analyses of a results frame (SPEC §10): tables, figures, a report section.

Each analysis takes the long-format results frame of ``udbench run``
(:func:`udbench.evaluation.store.read_results`) and returns a DataFrame with bootstrap
intervals (resampling instances within datasets, or whole datasets):

- :func:`headline_table`: mean ρ of EU with EU*_risk, EU*_var, EU*_point and of AU with AU*,
  mean ranks and ranks;
- :func:`stability_table`: Kendall's W (tie-corrected) of the ranking across the levels of
  prior family, noise mode, coverage and dataset; :func:`rank_heatmap_table`;
- :func:`matched_prior_advantage`: a method family's rank under its matched oracle prior vs
  the others;
- :func:`entanglement_table`: ρ(EU, AU), ρ(EU*, AU*) and Δ_ent per EU target;
- :func:`shell_table` (EU quality per coverage shell) and :func:`accuracy_table` (RMSE, NMSE);
- :func:`proxy_agreement_table`: Kendall's τ between the method ranking of every proxy
  metric (NLL, CRPS, coverage, …) and the oracle ranking, pooled and per factor level;
- :mod:`udbench.analyses.classification`: the same for classification rows (Kendall's W
  across dataset, temperature mode, coverage, K and difficulty; Δ_ent; Kendall's τ of the
  label-based proxies — accuracy, NLL, Brier, ECE, selective-prediction AUC — with the oracle);
- :func:`analyze`: all of them, written as CSV + LaTeX tables and PNG + SVG figures with an
  HTML page (``udbench analyze``), looping over the analysis table
  :data:`udbench.analyses.registry.ANALYSES` (a new analysis is one entry there).
  docs/analyses.md describes the choices.
"""

from udbench.analyses._common import (
    BOOTSTRAP_UNITS,
    FAMILY_NAMES,
    MATCHED_PRIOR,
    weighted_kendall_w,
)
from udbench.analyses.analyze import Analysis, analyze, display_table, latex_table
from udbench.analyses.proxies import proxy_agreement_table
from udbench.analyses.tables import (
    FACTORS,
    accuracy_table,
    entanglement_table,
    headline_table,
    matched_prior_advantage,
    rank_heatmap_table,
    shell_table,
    stability_table,
)

__all__ = [
    "BOOTSTRAP_UNITS",
    "FACTORS",
    "FAMILY_NAMES",
    "MATCHED_PRIOR",
    "Analysis",
    "accuracy_table",
    "analyze",
    "display_table",
    "entanglement_table",
    "headline_table",
    "latex_table",
    "matched_prior_advantage",
    "proxy_agreement_table",
    "rank_heatmap_table",
    "shell_table",
    "stability_table",
    "weighted_kendall_w",
]
