"""udbench.tuning: hyperparameter sweeps per (method, condition) with Optuna (SPEC §9).

- :mod:`udbench.tuning.space`: a method's declared search space as Optuna suggestions, its hash;
- :mod:`udbench.tuning.objective`: the held-out Gaussian NLL of one trial (training sample only);
- :mod:`udbench.tuning.sweep`: the driver (``tune``): studies in journal files, trials on Dask;
- :mod:`udbench.tuning.records`: tuned configurations as JSON records, ``run --tuned``;
- :mod:`udbench.tuning.plan`: ``udbench plan``, the cost of a grid from measured times;
- :mod:`udbench.tuning.calibration`: the cost model's calibration table and its power laws;
- :mod:`udbench.tuning.calibrating`: measuring that table on this machine (``plan --calibrate``).

See ``docs/running.md``, "Tuning" and "Cost plan".
"""
