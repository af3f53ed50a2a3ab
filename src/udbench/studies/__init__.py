"""udbench.studies: the paper's follow-up studies, built on the runner and the tuner.

- :mod:`udbench.studies.spectral_norm`: ``udbench study spectral-norm``, the spectral-
  normalisation ablation of the paper's Appendix D.4 (docs/studies.md).
"""
