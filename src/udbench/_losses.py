"""The losses udbench decomposes and scores, declared once (paper Eq. 4, Table 2, App. A).

Each :class:`Loss` record says what the rest of the package asks of a loss: its name, its
decomposition functions (from reference-posterior draws and, where one exists, in closed form
for a Gaussian reference posterior), the arrays those functions take, the results columns it
adds, whether its log density needs positive noise, and the line the commands' ``--help``
shows. :data:`LOSS_TABLE` holds them; ``udbench.risk`` users, :mod:`udbench.evaluation.losses`
(scoring), :mod:`udbench.evaluation.transfer` (rescoring) and the commands (``udbench risk
decompose``, ``run/score/leaderboard/analyze/transfer --loss``) read it. A new loss is one
entry (:func:`register_loss`) plus its tests.

The functions are named by import path (``"udbench.risk:crps_decomposition"``, the form the
method registry uses for classes) and imported when first called, so reading the table (a
``--help`` text) loads no numerical library; a callable may be given instead.

Function conventions (those of :mod:`udbench.risk`):

- regression, from draws: ``fn(draws (D, n), noise_var (n,), pred_mean (n,), pred_var (n,),
  *, random_state)`` (keywords in :attr:`Loss.draws_options` are passed when the caller has
  them); in closed form: ``fn(post_mean, post_var, noise_var, pred_mean, pred_var)``, each (n,).
  Squared loss, whose deployed action is a point prediction, takes ``prediction`` instead of
  the predictive moments and is scored by :mod:`udbench.evaluation.scoring` directly.
- classification: ``fn(prob_draws (D, n, K), pred_probs (n, K))``.

All return a :class:`udbench.risk.Decomposition`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CLASSIFICATION_BOARD_LOSSES",
    "LOSS_TABLE",
    "Loss",
    "loss_entry",
    "loss_help",
    "loss_names",
    "register_loss",
    "resolve",
]

Fn = Callable[..., Any]

#: The ``--loss`` values of classification results (``udbench leaderboard``, ``analyze``),
#: each with the suffix of its stored columns (``""`` for the base loss, the multiclass log
#: loss; ``"_brier"`` for the Brier score, ``LOSS_TABLE["brier"]``). Here, not in
#: :mod:`udbench.evaluation.board_loss`, so the command line reads it without pandas.
CLASSIFICATION_BOARD_LOSSES: dict[str, str] = {"log": "", "brier": "_brier"}


def resolve(fn: Fn | str) -> Fn:
    """The callable named by ``"module:attribute"`` (imported now), or ``fn`` itself."""
    if callable(fn):
        return fn
    module, _, attr = str(fn).partition(":")
    return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Loss:
    """One loss: its decompositions and what the package shows and stores for it.

    Parameters
    ----------
    name : str
        The value of ``--loss`` and the suffix of its results columns (``rho_au_<name>``).
    help : str
        One line for ``--help`` texts and docs (what the loss is, its units, its source).
    draws : callable or str
        The decomposition from reference-posterior draws (module docstring's conventions).
    draws_args : tuple of str
        The positional arrays of ``draws``, by name (``udbench risk decompose`` reads them
        from an ``.npz`` file under these names).
    gaussian : callable or str or None, default None
        The closed form for a Gaussian reference posterior and a Gaussian predictive;
        None if there is none (the loss is then decomposed from draws only).
    gaussian_args : tuple of str, default ()
        The positional arrays of ``gaussian``, by name.
    kind : {"regression", "classification"}, default "regression"
        Regression losses are scored by ``udbench run/score --loss`` and rank the
        leaderboard; classification ones are decomposed by ``udbench risk decompose``.
    draws_options : tuple of str, default ()
        Keywords ``draws`` accepts besides the arrays, among ``"random_state"`` (the
        noise-sample stream), ``"n_samples"`` and ``"mixture_entropy"`` (the log score's
        outcome samples and its method-independent term, cached per task by the scorer).
    positive_noise : bool, default False
        The loss's terms need AU > 0 (a log density: the entropy of a point mass is −∞);
        a prediction with AU = 0 somewhere is recorded as unscorable (NaN and a note).
    scored : bool, default True
        Scored on request into ``<metric>_<name>`` columns (``udbench run/score --loss``).
        False for squared loss, the default, always scored and stored without a suffix.
    divergence : callable or str or None, default None
        Classification: the loss's divergence ``fn(pi_star (n, K), pred_probs (n, K)) -> (n,)``
        between the truth and the deployed action, the pointwise excess risk EU*_point
        (:func:`udbench.risk.classification_oracle_targets`).
    """

    name: str
    help: str
    draws: Fn | str
    draws_args: tuple[str, ...]
    gaussian: Fn | str | None = None
    gaussian_args: tuple[str, ...] = ()
    kind: str = "regression"
    draws_options: tuple[str, ...] = ()
    positive_noise: bool = False
    scored: bool = True
    divergence: Fn | str | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(
                f"Loss: parameter 'name' must be an identifier (a column suffix); got {self.name!r}"
            )
        if self.kind not in ("regression", "classification"):
            raise ValueError(
                "Loss: parameter 'kind' must be one of ['regression', 'classification']; "
                f"got {self.kind!r}"
            )

    @property
    def base(self) -> bool:
        """True for the base loss of its kind: always scored, its columns carry no suffix.

        Squared loss is the base regression loss (``scored=False``): the analyses name no
        loss when they use it, and ``udbench transfer`` writes its tables without a loss
        folder.
        """
        return not self.scored

    def draws_fn(self) -> Fn:
        """The draw-based decomposition (imported on first use)."""
        return resolve(self.draws)

    def gaussian_fn(self) -> Fn:
        """The closed-form decomposition.

        Raises
        ------
        ValueError
            The loss has no closed form.
        """
        if self.gaussian is None:
            raise ValueError(f"loss {self.name!r} has no closed-form (Gaussian) decomposition")
        return resolve(self.gaussian)


_RISK = "udbench.risk"
_REG_DRAWS = ("draws", "noise_var", "pred_mean", "pred_var")
_REG_GAUSS = ("post_mean", "post_var", "noise_var", "pred_mean", "pred_var")
_CLS = ("prob_draws", "pred_probs")

#: The losses, by name, in the order the commands list them.
LOSS_TABLE: dict[str, Loss] = {
    loss.name: loss
    for loss in (
        Loss(
            "squared",
            "squared loss: AU = σ², EU = σ_f² + (â − m)², target units² (SPEC §1, paper A.2)",
            f"{_RISK}:squared_loss_decomposition",
            ("draws", "noise_var", "prediction"),
            f"{_RISK}:squared_loss_decomposition_gaussian",
            ("post_mean", "post_var", "noise_var", "prediction"),
            scored=False,
        ),
        Loss(
            "crps",
            "CRPS of the predictive N(â, AU + EU), target units (paper A.3)",
            f"{_RISK}:crps_decomposition",
            _REG_DRAWS,
            f"{_RISK}:crps_decomposition_gaussian",
            _REG_GAUSS,
            draws_options=("random_state",),
        ),
        Loss(
            "log",
            "continuous log score of N(â, AU + EU), nats (paper A.4)",
            f"{_RISK}:log_score_decomposition",
            _REG_DRAWS,
            f"{_RISK}:log_score_decomposition_gaussian",
            _REG_GAUSS,
            draws_options=("random_state", "n_samples", "mixture_entropy"),
            positive_noise=True,
        ),
        Loss(
            "multiclass_log",
            "multiclass log loss of class probabilities, nats (paper A.5)",
            f"{_RISK}:multiclass_log_decomposition",
            _CLS,
            kind="classification",
            divergence=f"{_RISK}.classification:kl_divergence",
        ),
        Loss(
            "brier",
            "multiclass Brier score of class probabilities (paper A.6)",
            f"{_RISK}:brier_decomposition",
            _CLS,
            kind="classification",
            divergence=f"{_RISK}.classification:squared_distance",
        ),
    )
}


def register_loss(loss: Loss, *, replace: bool = False) -> Loss:
    """Add ``loss`` to :data:`LOSS_TABLE` (a loss defined outside udbench, or a test's).

    Raises
    ------
    ValueError
        A loss of that name exists and ``replace`` is False.
    """
    if loss.name in LOSS_TABLE and not replace:
        raise ValueError(f"register_loss: a loss named {loss.name!r} exists (replace=True)")
    LOSS_TABLE[loss.name] = loss
    return loss


def loss_names(
    kind: str | None = "regression",
    *,
    scored: bool | None = None,
    closed_form: bool | None = None,
) -> tuple[str, ...]:
    """Names of the losses of ``kind`` (None: every kind), in table order.

    ``scored`` / ``closed_form`` (when not None) keep only the losses whose
    :attr:`Loss.scored` / whether :attr:`Loss.gaussian` is given equals it.
    """
    return tuple(
        n
        for n, loss in LOSS_TABLE.items()
        if (kind is None or loss.kind == kind)
        and (scored is None or loss.scored == scored)
        and (closed_form is None or (loss.gaussian is not None) == closed_form)
    )


def loss_entry(
    component: str, name: str, kind: str | None = "regression", *, param: str = "loss"
) -> Loss:
    """The record of loss ``name``.

    Raises
    ------
    UdbenchError
        ``name`` is not a loss of ``kind`` (the message lists the allowed ones).
    """
    from udbench._validation import check_choice

    check_choice(component, param, name, loss_names(kind))
    return LOSS_TABLE[name]


def loss_help(
    kind: str | None = "regression",
    *,
    scored: bool | None = None,
    closed_form: bool | None = None,
    described: bool = False,
) -> str:
    """The losses as a ``--help`` fragment: ``"squared, crps or log"``.

    With ``described=True``, each name is followed by its help line, separated by
    semicolons: ``"crps: CRPS of …; log: continuous log score …"``.
    """
    names = loss_names(kind, scored=scored, closed_form=closed_form)
    if described:
        return "; ".join(f"{n}: {LOSS_TABLE[n].help}" for n in names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
