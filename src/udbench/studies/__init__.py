"""Studies beyond the benchmark table (paper Appendix D): whole jobs built on the runner.

Each study is one package exposing a design, a ``run_*`` entry point that generates its
instances and runs its cells through the same machinery as ``udbench generate`` /
``udbench run`` (the :class:`~udbench.execution.executor.Executor`, the resumable
:func:`~udbench.evaluation.runner.run_benchmark`, tuned records), and an analysis that
writes tables (CSV, LaTeX), figures (PNG, SVG) and its report through the one writer of
:mod:`udbench.studies._writer`. The command layer is ``udbench study``
(:mod:`udbench.commands.study`); ``docs/studies.md`` describes every study.

- :mod:`udbench.studies.wine_ood`: red-vs-white wine OOD detection (paper D.3).
- :mod:`udbench.studies.spectral_norm`: the spectral-normalisation ablation (paper D.4).
"""
