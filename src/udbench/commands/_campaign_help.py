"""Help texts of the options that ``udbench campaign run`` and ``status`` share."""

_RECORDS_HELP = (
    "Records folder (committed; mcmc, classification: docs/validation/<campaign> of the "
    "checkout udbench runs from, else of the current folder; tuning: the package's shipped "
    "records of the suite, udbench/tuning/shipped/<suite>; runs: docs/validation/runs/<suite>)."
)
_SUITE_HELP = (
    "tuning: the preset suite whose conditions are tuned (default gp-small; clf-small for the "
    "classifiers); classification: "
    "the classification suite whose instances and cells are run (default clf-small); runs: the "
    "regression suite whose cells are run untuned and tuned (default gp-small)."
)
_TUNE_METHODS_HELP = (
    "tuning: comma list of the suite's methods to tune (default: all of them); classification: "
    "comma list of classifier specs for the clf-small cells (default: the suite's); runs: comma "
    "list of registered method specs (default: the suite's; a spec other than the suite's "
    "configuration of its method gets units of its own, <method>+<hash>)."
)
_PRUNER_HELP = (
    "tuning: auto (the default: each method's default pruner of udbench tune, except that a method "
    "with records keeps the pruner they were made with), none, sha, hyperband or median."
)
_TRIALS_HELP = "tuning: trials per sweep (default: SPEC §9's 30)."
_WORK_HELP = "Folder for big artefacts such as task files (not committed)."
_ONLY_HELP = (
    "Comma list of glob patterns of unit ids (e.g. 'multi-family/*__gp__*' or "
    "'bnn-sweep/d10'): only the units that match one (each pattern must match a unit), "
    "e.g. to split a campaign between machines or to run a part's cheap units first (the "
    "runs campaign's lines on cells waiting for a tuning record ignore it)."
)
_WORKERS_HELP = (
    "Start this many runs of this command at once, each its own process doing one unit at a "
    "time (one core each); they share the units, so none is done twice. Their output lines "
    "are prefixed [1]..[N]; --max-units counts the units of all of them; the exit status is "
    "0 only if every run's is."
)
_UNIT_TIMEOUT_HELP = (
    "Stop a unit that runs longer than this many hours (wall time) and record it as failed; "
    "the run goes on (a unit inside compiled code that has not returned 60 s later is "
    "hard-stopped: its record is written and the run ends with exit status 124; under "
    "--workers only that worker). A later run retries it only under a longer limit, or none "
    "(a tuning sweep, which keeps its finished trials, under any unless hard-stopped). "
    "Default: no limit."
)
