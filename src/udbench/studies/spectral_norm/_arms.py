"""The arms of the spectral-normalisation study: its constants, the methods it applies to,
one class per arm (:func:`arm_class`) and the arm configurations of a run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from udbench._validation import param_error

COMPONENT = "udbench study spectral-norm"
#: The arms, plain first.
ARMS: tuple[str, ...] = ("plain", "sn", "wd")
#: The study's instances (paper D.4): one noise mode, one coverage, the three oracle families.
NOISE = "smooth-monotone"
COVERAGE = "balanced"
FAMILIES: tuple[str, ...] = ("gp", "hbart", "bnn")
#: Seeds of the full design (5 per condition: 13 datasets × 3 families × 5 = 195 instances).
FULL_SEEDS: tuple[int, ...] = (0, 1, 2, 3, 4)
#: Neighbours of the local distance-preservation measure (paper D.4).
PRESERVATION_K = 10
#: The WD arm's weight-decay range (paper D.4; the benchmark's is [1e-6, 1e-2]).
WD_SEARCH_SPACE: dict[str, dict[str, Any]] = {
    "weight_decay": {"type": "float", "low": 1e-2, "high": 1.0, "log": True},
}
#: Default ``weight_decay`` of the WD arm (geometric centre of its range).
WD_DEFAULT = 0.1
#: The four quantities whose paired differences are reported.
DELTAS: tuple[tuple[str, str], ...] = (
    ("rho_eu_risk", "Δρ(EU, EU*_risk)"),
    ("rho_eu_var", "Δρ(EU, EU*_var)"),
    ("dist_preservation", "Δ preservation"),
    ("log_nmse", "Δ log NMSE"),
)


# ------------------------------------------------------------------------------- arms
def _takes_sn(cls: type) -> bool:
    import inspect

    params = inspect.signature(cls).parameters
    needed = ("spectral_norm", "sn_coeff", "weight_decay", "n_blocks", "hidden_dim")
    return all(p in params for p in needed) and params["spectral_norm"].default is False


def study_methods() -> list[str]:
    """The registered neural methods the study applies to, in registry order.

    Those of family ``nn`` whose constructor takes ``spectral_norm`` (default False),
    ``sn_coeff``, ``weight_decay``, ``n_blocks`` and ``hidden_dim``: the backbone methods
    with the SN option, without the rows that are already spectrally normalised
    (``nn-lap-sn``, ``nn-fsp-sn``, ``sngp-het``: they *are* an SN arm).
    """
    from udbench.methods import get_method_class
    from udbench.methods.registry import registered_methods

    out = []
    for name in registered_methods():
        try:
            cls = get_method_class(name)
        except Exception:  # an unavailable method (missing optional dependency)
            continue
        if getattr(cls, "family", None) == "nn" and _takes_sn(cls):
            out.append(name)
    return out


_ARM_CLASSES: dict[tuple[type, str], type] = {}


def arm_class(base: type, arm: str) -> type:
    """The class of ``arm`` for the method class ``base`` (``plain`` is ``base`` itself).

    Parameters
    ----------
    base : type
        A neural method class with the SN option (see :func:`study_methods`).
    arm : {"plain", "sn", "wd"}

    Returns
    -------
    type
        ``plain``: ``base``. ``sn``: a subclass named ``<name>+sn`` with search space
        ``base.search_space`` + :data:`~udbench.methods.nn.ensemble.SN_SEARCH_SPACE` and
        ``spectral_norm=True`` by default. ``wd``: ``<name>+wd``, the search space with
        ``weight_decay`` replaced by :data:`WD_SEARCH_SPACE`, default
        ``weight_decay`` :data:`WD_DEFAULT`. Nothing else differs (made once per process).

    Raises
    ------
    UdbenchError
        Unknown arm, or a class without the SN option.
    """
    if arm not in ARMS:
        raise param_error(COMPONENT, "arm", f"be one of {list(ARMS)}", arm)
    if not _takes_sn(base):
        raise param_error(
            COMPONENT,
            "methods",
            "name neural methods with the spectral-normalisation option (constructor "
            "keywords spectral_norm=False, sn_coeff, weight_decay, n_blocks, hidden_dim); "
            f"these qualify: {', '.join(study_methods())}",
            getattr(base, "name", base.__name__),
        )
    if arm == "plain":
        return base
    hit = _ARM_CLASSES.get((base, arm))
    if hit is not None:
        return hit
    from udbench.methods._variants import init_with_defaults
    from udbench.methods.nn.ensemble import SN_SEARCH_SPACE

    space = dict(base.search_space)  # type: ignore[attr-defined]
    if arm == "sn":
        space.update(SN_SEARCH_SPACE)
        init = init_with_defaults(base.__init__, spectral_norm=True)  # type: ignore[misc]
        what = "spectral normalisation, sn_coeff in [0.5, 3] (log), the rest re-tuned"
    else:
        space.update(WD_SEARCH_SPACE)
        init = init_with_defaults(base.__init__, weight_decay=WD_DEFAULT)  # type: ignore[misc]
        what = "weight decay in [1e-2, 1] (log), the rest re-tuned"
    name = f"{base.name}+{arm}"  # type: ignore[attr-defined]
    cls = type(
        f"{base.__name__}_{arm.upper()}Arm",
        (base,),
        {
            "name": name,
            "description": f"{base.name}, D.4 {arm.upper()} arm: {what}",  # type: ignore[attr-defined]
            "search_space": space,
            "__init__": init,
            "__module__": base.__module__,
            "__doc__": f"{base.__name__} as the {arm.upper()} arm of the D.4 study ({what}).",
        },
    )
    _ARM_CLASSES[(base, arm)] = cls
    return cls


def arm_of(method: str) -> tuple[str, str]:
    """``(base method, arm)`` of a stored method name (``"nn-ens+sn"`` -> ``("nn-ens", "sn")``)."""
    for arm in ARMS[1:]:
        if method.endswith(f"+{arm}"):
            return method[: -len(arm) - 1], arm
    return method, "plain"


@dataclass(frozen=True)
class ArmConfig:
    """One arm of one method: its label, the unfitted estimator, the arm and the base name."""

    label: str
    estimator: Any
    arm: str
    base: str


def arm_configs(methods: Sequence[str]) -> list[ArmConfig]:
    """The three arms of every method spec (``"nn-ens"``, ``"nn-ens:n_epochs=100"``).

    Overrides fix the base configuration every arm starts from (as ``udbench tune -m``);
    the SN arm sets ``spectral_norm=True``; the WD arm moves a ``weight_decay`` outside
    [1e-2, 1] to :data:`WD_DEFAULT` (the tuner replaces both anyway).

    Raises
    ------
    UdbenchError
        No method, an unknown method or hyperparameter, a method without the SN option, a
        method named twice.
    """
    from udbench.methods import make_method
    from udbench.methods.registry import parse_method_spec

    if not methods:
        raise param_error(COMPONENT, "methods", "name at least one method", [])
    out: list[ArmConfig] = []
    seen: set[str] = set()
    for spec in methods:
        est = make_method(spec.strip(), random_state=0)
        base = type(est)
        name = str(base.name)  # type: ignore[attr-defined]
        if name in seen:
            raise param_error(COMPONENT, "methods", "name each method once", spec)
        seen.add(name)
        params = dict(est.get_params(deep=False))
        overrides = parse_method_spec(spec.strip())[1]
        label_tail = ":" + ",".join(f"{k}={v}" for k, v in overrides.items()) if overrides else ""
        for arm in ARMS:
            cls = arm_class(base, arm)
            p = dict(params)
            if arm == "sn":
                p["spectral_norm"] = True
            elif arm == "wd" and not 1e-2 <= float(p["weight_decay"]) <= 1.0:
                p["weight_decay"] = WD_DEFAULT
            arm_name = str(cls.name)  # type: ignore[attr-defined]
            out.append(ArmConfig(f"{arm_name}{label_tail}", cls(**p), arm, name))
    return out
