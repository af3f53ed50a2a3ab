"""The prior protocol: what every reference prior family Π₀ implements (SPEC §5).

A *prior* is one family (``"gp"``, ``"hbart"``, ``"bnn"``) bound to one dataset: its fitted
hyperparameters and its scale constant a are fixed before any task is generated. It can
draw f jointly at any inputs and condition on a training sample with known per-point noise
variances, returning draws of f from the reference posterior.

Families are listed in :data:`PRIOR_FAMILIES`, a table from family name to the module that
implements it; each such module exposes ``build_prior(cov, fidelity) -> Prior``. Adding a
family is one module plus one entry in each of the two tables; :func:`make_prior` imports the
module lazily.

What the pipeline asks of a family (exact moments or draws only, draws at the training inputs
by default, how query points are prepared, its nugget, the method family it is matched with,
how its cost is planned) is its :class:`PriorCapabilities` record, as scikit-learn's estimator
tags: one entry of :data:`FAMILY_CAPABILITIES` per family, carried by the family's class as
``capabilities``. Code outside :mod:`udbench.priors` asks :func:`prior_capabilities` (of a
prior, or of a family name without importing the family's module, which may import JAX) and
never compares a family name with a literal (``tests/test_family_literals.py``).

The fidelity of a prior is a :class:`Fidelity` (``"paper"``, ``"standard"``, ``"smoke"``);
:data:`DEFAULT_FIDELITY` is the one default used by the task spec, the CLI and the builders.

Seed streams and the key
------------------------
A prior holds no random state. Its random numbers come from two kinds of stream, named
once here and followed by every family:

*Build streams* (fixed per dataset, drawn once when the prior is built, so a prior is the
same in every process): seeds derived with :func:`udbench._seeding.derive_seed` from a name
and the dataset key, never from a task. The scale constant a comes from :data:`SCALE_N_DRAWS`
unit-scale ``sample`` draws whose key is ``derive_seed("scale", dataset, family)`` (MCMC
families, :meth:`udbench.priors.mcmc.MCMCPrior._scale_from_pool`) or
``derive_seed("gp-scale", dataset)`` (the GP: named before the shared rule and kept so that
every recorded GP task stays bit for bit the same). Every other build stream is named
``"<family>-<purpose>"`` with the dataset: ``("gp-fit-rows", dataset)`` (rows of the kernel
fit), ``("gp-fit", dataset)`` (its restarts, sub-stream ``"gp-fit-restarts"``),
``("bnn-reference", dataset)`` (the BNN's reference inputs).

*Call streams*: ``sample(X, key, …)`` and ``condition(…, key, …)`` take one integer ``key``
(the task passes ``TaskSpec.seed_for("f_star")`` and ``seed_for("posterior")``), and the
call's draws are a function of ``key`` alone: the same key gives the same numbers bit for
bit, in any process and whatever was drawn before. Each use of randomness inside one call
has its own stream named ``"<family>-<use>"`` and derived from the key with
:func:`call_seed`: ``"<family>-prior"`` for draws from the prior (weights, trees, function
values) and ``"<family>-mcmc"`` for a sampler's seed. A family whose calls use exactly one
stream of standard normals and no sampler (the GP) may seed that stream with ``key``
itself, the *direct* rule (:func:`call_seed` with ``use=None``); no family mixes the two.
A key is never reused for two uses within a call, and a new use gets a new name, so adding
one never shifts the numbers of the others.
"""

from __future__ import annotations

import enum
import importlib
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from udbench._seeding import derive_seed
from udbench._validation import check_array, check_choice, param_error

__all__ = [
    "CLASSIFICATION_DIFFICULTIES",
    "DEFAULT_DIFFICULTY",
    "DEFAULT_FIDELITY",
    "DEFAULT_N_CLASSES",
    "FAMILY_CAPABILITIES",
    "MAX_N_CLASSES",
    "PRIOR_FAMILIES",
    "SCALE_N_DRAWS",
    "TASK_TYPES",
    "Fidelity",
    "Posterior",
    "Prior",
    "PriorCapabilities",
    "call_seed",
    "families_of_task_type",
    "family_numerics_version",
    "list_prior_families",
    "make_prior",
    "prior_capabilities",
    "prior_class",
    "scale_from_unit_draws",
]


class Fidelity(enum.StrEnum):
    """Fidelity preset of a reference prior (SPEC §5).

    A string enum: each member equals (and hashes as) its value, so ``Fidelity.SMOKE ==
    "smoke"``, it indexes tables keyed by the plain names and it is written to JSON (task
    files, prior settings) as the plain name, exactly as before the type existed. Its
    ``repr`` is the value's (``'smoke'``), so messages and dataclass reprs read as the
    plain name. Convert user input with :meth:`parse`. Its members:

    Attributes
    ----------
    PAPER : "paper"
        SPEC §5 exactly.
    STANDARD : "standard"
        The default (:data:`DEFAULT_FIDELITY`): a family-chosen preset that still meets
        the acceptance checks of SPEC §7.
    SMOKE : "smoke"
        Tiny, for tests and quick runs; not a reference posterior for the MCMC families,
        so task generation does not gate it on the R̂ rule (SPEC §7).
    """

    PAPER = "paper"
    STANDARD = "standard"
    SMOKE = "smoke"

    def __repr__(self) -> str:
        return repr(self.value)

    @property
    def is_reference(self) -> bool:
        """Whether the preset gives a reference posterior (every preset but ``smoke``).

        Only reference instances of a family gated by R̂ (the BNN; HBART records R̂ without
        gating on it) are held to the R̂ acceptance rule and have rejected seeds replaced
        (SPEC §7).
        """
        return self is not Fidelity.SMOKE

    @classmethod
    def parse(cls, component: str, value: Any, parameter: str = "fidelity") -> Fidelity:
        """``value`` (a member or its name) as a :class:`Fidelity`.

        Raises
        ------
        UdbenchError
            If ``value`` is not one of ``"paper"``, ``"standard"``, ``"smoke"``, naming
            ``component`` and ``parameter``.
        """
        if isinstance(value, cls):
            return value
        try:
            return cls(value)
        except (ValueError, TypeError):
            raise param_error(
                component, parameter, f"be one of {[f.value for f in cls]}", value
            ) from None


#: The fidelity used when none is named (task specs, ``udbench generate``, ``make_prior``).
DEFAULT_FIDELITY: Fidelity = Fidelity.STANDARD

#: Number of unit-scale prior draws used to set the scale constant a (SPEC §5).
SCALE_N_DRAWS: int = 100

#: family name -> module exposing ``build_prior(cov, fidelity) -> Prior``.
PRIOR_FAMILIES: dict[str, str] = {
    "gp": "udbench.priors.gp",
    "hbart": "udbench.priors.hbart",
    "bnn": "udbench.priors.bnn",
    "gpc": "udbench.priors.gp_classification",
}

#: Task types a family's tasks may have (:attr:`PriorCapabilities.task_type`).
TASK_TYPES: tuple[str, ...] = ("regression", "classification")

# Settings of a classification task (docs/classification.md), defined here, not in
# :mod:`udbench.priors.gp_classification` (which re-exports them), so that the task spec
# checks them without importing JAX.

#: K, the number of classes of a classification task, when none is named.
DEFAULT_N_CLASSES: int = 3
#: The largest K a classification task accepts (``TaskSpec``, ``generate --classes``). A task
#: holds (n_eval, K) arrays and its draws of π take D × n_eval × K × 4 bytes (D = 1000, 1500
#: points, K = 100: 600 MB per file, as much as the largest D allows a regression task), and
#: the sampler's latents grow alike; a typo such as ``--classes 1000000`` asked for 122 GiB
#: before it failed.
MAX_N_CLASSES: int = 100
#: The temperature level rule's target (normalised mean Bayes error) per difficulty name.
CLASSIFICATION_DIFFICULTIES: dict[str, float] = {"easy": 0.1, "medium": 0.3, "hard": 0.6}
#: The difficulty of a classification task when none is named.
DEFAULT_DIFFICULTY: str = "medium"


@dataclass(frozen=True)
class PriorCapabilities:
    """What the pipeline may ask of a prior family, declared once per family (its *tags*).

    Read with :func:`prior_capabilities`; the defaults are those of an MCMC family (draws
    only). Every field is a plain value, so a family's record is read by name without
    importing the family's module (importing the GP's imports GPJax, which creates JAX's
    backends before :func:`udbench._threads.fix_xla_threads` could fix XLA's pool).

    Attributes
    ----------
    exact_moments : bool, default False
        ``condition`` returns the exact posterior mean and variance (``Posterior.mean``,
        ``.var``), and the prior has ``moments(X_train, y, noise_var_train, X_eval, *,
        nugget=None) -> (mean (n_eval,), var (n_eval,))`` (the GP, R&W 2006 eqs. 2.25-2.26).
    draws_train_by_default : bool, default True
        Task generation keeps the posterior draws at the training inputs unless told
        otherwise (off for the GP, whose checks use the exact posterior).
    nugget : bool, default False
        The prior's draws carry a white-noise nugget ν that is part of the model: the prior
        has ``nugget(X_eval, X_train) -> float`` (target units²) and ``condition`` takes
        ``nugget=`` (the GP, docs/tasks.md); task files record it (``sampler.nugget``).
    clips_queries_to_unit_cube : bool, default False
        The family's functions are constant beyond the unit cube and its sampler takes inputs
        in [0, 1] only, so query inputs are clipped to it before conditioning (HBART: every
        split threshold lies in [0, 1]).
    fitted_per_dataset : bool, default False
        Building the prior fits hyperparameters to the dataset's real target, a step of its
        own in the cost plan (``prior-fit``; the GP's marginal-likelihood kernel fit).
    quick_instances : bool, default False
        An instance takes seconds (docs/tasks.md), so an unmeasured generation cost does not
        hold a study's ``--yes`` gate back.
    matched_method_family : str or None, default None
        The method family (:attr:`udbench.methods.base.BaseMethod.family`) whose model class
        the prior matches (paper §5: GP-GP, trees-HBART, NN-BNN).
    work_depends_on_fidelity : bool, default True
        An instance's work changes with the fidelity; then the family's class has the class
        method ``instance_work(fidelity) -> float`` (sampler iterations; see
        :func:`udbench.tuning.calibration.work_ratio`). False for the GP.
    cost_grows_with_eval_points : bool, default False
        An instance's cost is set by n + n_eval (the joint factorisation at the training and
        evaluation inputs, the GP), not by n alone: calibration times it at n_eval = n.
    calibration_fidelity : str, default "smoke"
        The fidelity at which ``udbench tuning calibrate`` times an instance (scaled to the
        others by ``instance_work``).
    task_type : {"regression", "classification"}, default "regression"
        What the family's tasks are (:data:`TASK_TYPES`): y = f* + noise with known σ²(x),
        or labels y ~ Categorical(softmax(f*(x)/τ(x))) with K latents and a known
        temperature τ(x) (the latent-GP classification prior, docs/classification.md). The
        task spec, generation, the task file and ``udbench check`` branch on it.
    """

    exact_moments: bool = False
    draws_train_by_default: bool = True
    nugget: bool = False
    clips_queries_to_unit_cube: bool = False
    fitted_per_dataset: bool = False
    quick_instances: bool = False
    matched_method_family: str | None = None
    work_depends_on_fidelity: bool = True
    cost_grows_with_eval_points: bool = False
    calibration_fidelity: str = "smoke"
    task_type: str = "regression"


#: family name -> its capabilities (the class of the family carries the same record as
#: ``capabilities``; ``tests/priors/test_capabilities.py`` checks that they agree).
FAMILY_CAPABILITIES: dict[str, PriorCapabilities] = {
    "gp": PriorCapabilities(
        exact_moments=True,
        draws_train_by_default=False,
        nugget=True,
        fitted_per_dataset=True,
        quick_instances=True,
        matched_method_family="gp",
        work_depends_on_fidelity=False,
        cost_grows_with_eval_points=True,
        calibration_fidelity="standard",
    ),
    "hbart": PriorCapabilities(clips_queries_to_unit_cube=True, matched_method_family="trees"),
    "bnn": PriorCapabilities(matched_method_family="nn"),
    "gpc": PriorCapabilities(fitted_per_dataset=True, task_type="classification"),
}


def families_of_task_type(task_type: str = "regression") -> list[str]:
    """The registered families whose tasks are of ``task_type``, in table order.

    ``udbench generate --families all`` means the regression families (a classification
    family is generated when named, as ``student-t`` among the noise modes).

    Raises
    ------
    UdbenchError
        ``task_type`` not in :data:`TASK_TYPES`.
    """
    check_choice("families_of_task_type", "task_type", task_type, TASK_TYPES)
    return [f for f in PRIOR_FAMILIES if prior_capabilities(f).task_type == task_type]


def prior_capabilities(prior: Any, *, strict: bool = True) -> PriorCapabilities:
    """The :class:`PriorCapabilities` of a prior, a prior class or a family name.

    Parameters
    ----------
    prior : Prior, prior class or str
        A prior (or its class) reports its ``capabilities`` attribute; one without it (a
        user's or a test's prior implementing only the protocol) gets the record of its
        ``family`` in :data:`FAMILY_CAPABILITIES`, else the defaults. A name (a key of
        :data:`FAMILY_CAPABILITIES`) is looked up without importing the family's module.
    strict : bool, default True
        Whether a name that is not registered is an error; if False it gets the defaults
        (code that only reads recorded family names, e.g. of task files made by tests).

    Returns
    -------
    PriorCapabilities

    Raises
    ------
    UdbenchError
        A family name that is not registered (``strict``).
    """
    if isinstance(prior, str):
        if strict:
            check_choice("prior_capabilities", "family", prior, list(FAMILY_CAPABILITIES))
        return FAMILY_CAPABILITIES.get(prior, PriorCapabilities())
    caps = getattr(prior, "capabilities", None)
    if isinstance(caps, PriorCapabilities):
        return caps
    return FAMILY_CAPABILITIES.get(str(getattr(prior, "family", "")), PriorCapabilities())


def prior_class(family: str) -> type[Any]:
    """The prior class of ``family`` (``PRIOR_CLASS`` of its module, imported here: the GP's
    imports GPJax, which creates JAX's backends).

    Raises
    ------
    UdbenchError
        An unknown family.
    """
    check_choice("prior_class", "family", family, list(PRIOR_FAMILIES))
    return importlib.import_module(PRIOR_FAMILIES[family]).PRIOR_CLASS  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Posterior:
    """Draws (and, where exact, moments) of f under the reference posterior Π_ref(· | S).

    Attributes
    ----------
    draws_eval : ndarray, shape (D, n_eval), float64
        Posterior draws of f at the evaluation inputs, target units.
    draws_train : ndarray, shape (D, n), float64, or None
        Posterior draws of f at the training inputs (for checks), if the family gives them.
    mean : ndarray, shape (n_eval,), or None
        Exact posterior mean m_S(x) where available (GP), else None.
    var : ndarray, shape (n_eval,), or None
        Exact posterior variance σ_f²(x) (target units squared) where available, else None.
    diagnostics : dict
        Sampler diagnostics (JSON-serialisable values: numbers, strings, lists, dicts).
    """

    draws_eval: np.ndarray
    draws_train: np.ndarray | None = None
    mean: np.ndarray | None = None
    var: np.ndarray | None = None
    diagnostics: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Prior(Protocol):
    """A reference prior family bound to one dataset (SPEC §5).

    Attributes
    ----------
    family : str
        Family name, a key of :data:`PRIOR_FAMILIES`.
    scale : float
        The scale constant a (SPEC §5): with it, the median over :data:`SCALE_N_DRAWS` prior
        draws of each draw's SD over the evaluation pool is 1.
    settings : dict
        Everything needed to reproduce the prior (hyperparameters, fidelity, sampler
        settings); JSON-serialisable; recorded in every task.
    numerics_version : int
        Version of the family's numerics, bumped only by a change that alters the draws for
        the same settings and key (not by other commits); keys campaign records
        (:mod:`udbench.campaigns`).
    capabilities : PriorCapabilities
        What the pipeline may ask of the family (:data:`FAMILY_CAPABILITIES`); optional: read
        through :func:`prior_capabilities`, which falls back on the family's record.
    """

    family: str
    numerics_version: int

    @property
    def scale(self) -> float: ...

    @property
    def settings(self) -> dict[str, Any]: ...

    def sample(self, X: np.ndarray, key: int, n_draws: int = 1) -> np.ndarray:
        """Joint prior draws of f at ``X`` (m, d); returns (n_draws, m), float64."""
        ...

    def condition(
        self,
        X_train: np.ndarray,
        y: np.ndarray,
        noise_var_train: np.ndarray,
        X_eval: np.ndarray,
        key: int,
        n_draws: int,
    ) -> Posterior:
        """Condition on S = (X_train (n, d), y (n,)) with known noise variances (n,)."""
        ...


def call_seed(family: str, use: str | None, key: int, *, bits: int = 63) -> int:
    """Seed of the stream ``use`` of one ``sample``/``condition`` call with ``key``.

    The call-stream rule of the module docstring: ``derive_seed("<family>-<use>", key)``
    (``bits`` wide, for samplers that need e.g. a 32-bit seed); ``use=None`` is the direct
    rule, the key itself (the GP's one stream of standard normals).

    Parameters
    ----------
    family : str
        Prior family name.
    use : str or None
        ``"prior"`` (prior draws), ``"mcmc"`` (a sampler's seed), or None (direct).
    key : int
        The call's key, >= 0.
    bits : int, default 63
        Width of a derived seed (ignored by the direct rule).

    Returns
    -------
    int
    """
    if use is None:
        return int(key)
    return derive_seed(f"{family}-{use}", int(key), bits=bits)


def family_numerics_version(family: str) -> int:
    """The numerics version of ``family``'s prior class (``PRIOR_CLASS`` of its module).

    Raises
    ------
    UdbenchError
        An unknown family.
    """
    import importlib

    check_choice("family_numerics_version", "family", family, list(PRIOR_FAMILIES))
    module = importlib.import_module(PRIOR_FAMILIES[family])
    return int(module.PRIOR_CLASS.numerics_version)


def list_prior_families() -> list[str]:
    """Names of the registered prior families."""
    return list(PRIOR_FAMILIES)


def make_prior(
    family: str, cov: Any, fidelity: Fidelity | str = DEFAULT_FIDELITY, **settings: Any
) -> Prior:
    """Build the prior ``family`` for the dataset ``cov`` (fit hyperparameters, set a).

    Parameters
    ----------
    family : str
        A key of :data:`PRIOR_FAMILIES` (``"gp"``, ``"hbart"``, ``"bnn"``).
    cov : udbench.data.Covariates
        The dataset's covariates, splits and real target.
    fidelity : Fidelity or str, default DEFAULT_FIDELITY
        Preset; a name is converted with :meth:`Fidelity.parse`.
    **settings
        Task settings the family's builder takes (a classification family's
        ``n_classes``); none for the regression families.

    Returns
    -------
    Prior

    Raises
    ------
    UdbenchError
        Unknown family or fidelity, or a family whose module is not installed yet.

    Notes
    -----
    Runs with one compute thread (:func:`udbench._threads.cell_threads`), so a fitted prior
    does not depend on the cores of the machine or process that fitted it (the fit is made
    once per dataset and cached; on a many-core machine it is slower than a threaded fit).
    """
    check_choice("make_prior", "family", family, PRIOR_FAMILIES)
    fidelity = Fidelity.parse("make_prior", fidelity)
    from udbench._threads import cell_threads

    # one compute thread, as every instance: the fit (GP kernel, scale constant) then has the
    # same bits whichever process makes it (``udbench generate`` fits in the submitting
    # process or on a worker, a notebook through generate_task) and however many cores it
    # has. Entered before the family's module is imported: importing it creates JAX's
    # backends, after which XLA's pool can no longer be fixed at one thread.
    with cell_threads():
        try:
            module = importlib.import_module(PRIOR_FAMILIES[family])
        except ModuleNotFoundError as err:
            if err.name != PRIOR_FAMILIES[family]:
                raise
            raise param_error(
                "make_prior", "family", "name an implemented prior family", family
            ) from None
        return module.build_prior(cov, fidelity, **settings)


def scale_from_unit_draws(draws: np.ndarray, component: str = "scale_constant") -> float:
    """Scale constant a from prior draws made with scale 1 (SPEC §5, paper B.2).

    Every family's draws scale linearly with a in their spread over the pool (GP: a·f;
    HBART: leaves N(0, a²/m); BNN: b + a·(u − ū), where the constant b has no spread),
    so a = 1 / median over draws of the draw's SD over the evaluation pool.

    Parameters
    ----------
    draws : ndarray, shape (n_draws, n_eval)
        Unit-scale prior draws at the evaluation pool (SPEC: n_draws = 100).
    component : str
        Name used in error messages.

    Returns
    -------
    float
        a > 0.

    Raises
    ------
    UdbenchError
        If the draws are not finite or have zero spread.
    """
    draws = check_array(component, "draws", draws, ndim=2)
    median_sd = float(np.median(np.std(draws, axis=1)))
    if not median_sd > 0:
        raise param_error(component, "draws", "have a positive median SD", median_sd)
    return 1.0 / median_sd
