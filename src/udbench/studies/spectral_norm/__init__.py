"""The spectral-normalisation ablation (paper, Appendix D.4): ``udbench study spectral-norm``.

Design. For each neural method on the shared backbone that has the spectral-normalisation
option (``spectral_norm``/``sn_coeff``, :mod:`udbench.methods.nn.spectral`), three *arms*:

- ``plain``: the method itself, tuned over its own search space (the benchmark's configuration);
- ``sn``: the same class with ``spectral_norm = True`` and ``sn_coeff`` searched log-uniformly
  in [0.5, 3] (:data:`udbench.methods.nn.ensemble.SN_SEARCH_SPACE`), every other
  hyperparameter re-tuned under the constraint;
- ``wd``: no SN, ``weight_decay`` searched log-uniformly in [1e-2, 1] instead of the
  benchmark's [1e-6, 1e-2] (:data:`WD_SEARCH_SPACE`), the rest re-tuned.

An arm is *only a search space*: :func:`arm_class` makes a minimal subclass of the method
that changes its ``name`` (``<method>+sn``, ``<method>+wd``), its ``search_space`` and, for
``sn``, the default of ``spectral_norm`` (as the registry's NN-Lap-SN row does,
:mod:`udbench.methods._variants`). Fitting and prediction are the method's own code. The
three arms of every method are tuned in one :func:`udbench.tuning.sweep.tune` call (one
Optuna sweep per arm and condition, all in ``OUT/tuning``) and evaluated in one
:func:`udbench.evaluation.runner.run_benchmark` call (``OUT/results``): both resumable and
parallel on the same Dask workers as ``udbench tune`` and ``udbench run``.

Instances: balanced coverage, smooth-monotone noise, the three oracle families, the datasets
and seeds asked for (default: the paper's 13 datasets, seeds 0-4: 195 instances).

Pairing. Every arm of a method is evaluated on the same task file and trained with the same
seed: the seed the benchmark gives the plain arm's tuned cell on that task
(:func:`udbench.evaluation.runner.method_seed` of the plain tuned configuration), set through
the runner's ``method_seed`` row field. :func:`paired_differences` checks this on the stored
rows (same ``task_sha256`` and ``method_seed`` in every arm) before forming a difference.

Per cell, besides the benchmark's metrics, the runner stores ``dist_preservation``: the
local distance preservation of the fitted network at the task's evaluation pool
(:func:`udbench.methods.nn.distance_preservation`, k = 10).

Analysis (:func:`analyse`): preservation per arm; the paired differences arm − plain of
ρ(EU, EU*_risk), ρ(EU, EU*_var), preservation and log NMSE, with 95 % percentile intervals
from a bootstrap that resamples *datasets* with replacement (2,000 replicates,
:func:`dataset_bootstrap`); the regression of Δρ on Δpreservation, Δlog NMSE, the SN
indicator and Δdepth with dataset fixed effects, and D.4's within-SN standardised regression
(:func:`regression_table`, weighted least squares with NumPy, formulas there); and the depth
association table (:func:`depth_table`).
"""

from __future__ import annotations

from udbench.studies.spectral_norm._arms import (
    ARMS,
    COMPONENT,
    COVERAGE,
    DELTAS,
    FAMILIES,
    FULL_SEEDS,
    NOISE,
    PRESERVATION_K,
    WD_DEFAULT,
    WD_SEARCH_SPACE,
    ArmConfig,
    arm_class,
    arm_configs,
    arm_of,
    study_methods,
)
from udbench.studies.spectral_norm._output import Analysis, analyse
from udbench.studies.spectral_norm._runs import (
    PairedConfigurer,
    StudyPlan,
    generate_tasks,
    measure_preservation,
    plan_study,
    project_cost,
    run_study,
    study_specs,
)
from udbench.studies.spectral_norm._stats import (
    dataset_bootstrap,
    depth_table,
    paired_differences,
    paired_table,
    preservation_table,
    regression_table,
    within_dataset_spearman,
)

__all__ = [
    "ARMS",
    "COMPONENT",
    "COVERAGE",
    "DELTAS",
    "FAMILIES",
    "FULL_SEEDS",
    "NOISE",
    "PRESERVATION_K",
    "WD_DEFAULT",
    "WD_SEARCH_SPACE",
    "Analysis",
    "ArmConfig",
    "PairedConfigurer",
    "StudyPlan",
    "analyse",
    "arm_class",
    "arm_configs",
    "arm_of",
    "dataset_bootstrap",
    "depth_table",
    "generate_tasks",
    "measure_preservation",
    "paired_differences",
    "paired_table",
    "plan_study",
    "preservation_table",
    "project_cost",
    "regression_table",
    "run_study",
    "study_methods",
    "study_specs",
    "within_dataset_spearman",
]
