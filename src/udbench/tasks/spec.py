"""A task instance's coordinates and its derived random streams (SPEC §6)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from udbench._seeding import derive_seed
from udbench._validation import param_error
from udbench.priors import (
    CLASSIFICATION_DIFFICULTIES,
    DEFAULT_DIFFICULTY,
    DEFAULT_FIDELITY,
    DEFAULT_N_CLASSES,
    MAX_N_CLASSES,
    Fidelity,
    prior_capabilities,
)

__all__ = ["DEFAULT_DRAWS", "MAX_DRAWS", "MIN_DRAWS", "TaskSpec", "family_of_coordinate"]

#: D, the posterior draws stored per task when none is named (task specs, ``udbench generate``).
DEFAULT_DRAWS: int = 1000

#: The smallest D a task accepts (the SBC ranks and the MCSE batches of SPEC §7 need it).
MIN_DRAWS: int = 40

#: The largest D a task accepts: its draws take D × n_eval × 4 bytes (100 000 × 1500 points:
#: 600 MB per file, 1.2 GB in memory while the checks run in float64).
MAX_DRAWS: int = 100_000


@dataclass(frozen=True)
class TaskSpec:
    """One benchmark instance: (dataset, prior family, noise mode, coverage, seed).

    Parameters
    ----------
    dataset : str
        Dataset key (``udbench.data``).
    family : str
        Prior family (``"gp"``, ``"hbart"``, ``"bnn"``; ``"gpc"`` for a classification task).
    noise : str
        Noise mode (SPEC §4); for a classification task the temperature mode (the same
        shapes applied to log τ², docs/classification.md).
    coverage : str
        Coverage scenario (SPEC §3): ``"balanced"`` or ``"ood"``.
    seed : int
        Replicate number, >= 0.
    fidelity : Fidelity or str, default DEFAULT_FIDELITY
        Prior fidelity preset; recorded, not part of the random streams. A name is
        converted to :class:`~udbench.priors.base.Fidelity` (which compares equal to it
        and is written to task files as the plain name).
    n_draws : int, default DEFAULT_DRAWS
        D, the number of posterior draws stored (:data:`MIN_DRAWS` to :data:`MAX_DRAWS`);
        not part of the random streams.
    n_classes : int or None, default None
        K, the number of classes of a classification task (a family whose
        ``PriorCapabilities.task_type`` is ``"classification"``, e.g. ``"gpc"``): None
        there means :data:`~udbench.priors.base.DEFAULT_N_CLASSES` (3); must be from 2 to
        :data:`~udbench.priors.base.MAX_N_CLASSES` (100).
        Must be None for a regression family.
    difficulty : str or None, default None
        The temperature level rule's difficulty of a classification task (a key of
        :data:`~udbench.priors.base.CLASSIFICATION_DIFFICULTIES`; None there means
        ``"medium"``). Must be None for a regression family.

    Raises
    ------
    UdbenchError
        A coordinate that is not a non-empty name without ``"__"``, a seed that is not an
        integer >= 0, an unknown fidelity, or D not an integer in [:data:`MIN_DRAWS`,
        :data:`MAX_DRAWS`]; K not an integer from 2 to ``MAX_N_CLASSES`` or an unknown
        difficulty (classification),
        or either given for a regression family. These
        are checked here, once; the code below (task generation, the priors) trusts them.

    Notes
    -----
    :meth:`seed_for` derives every stream from all five coordinates (SPEC §6, paper B.5), so
    two instances never share a ground truth or a training sample. Fidelity and D are left
    out on purpose: the same instance at two fidelities has the same f* and sample S.

    A classification task's settings K and difficulty enter its family coordinate
    (:attr:`family_coordinate`, ``"gpc-k3-medium"``), which stands for the family in the
    task id and in every seed; its noise coordinate is the temperature mode (the SPEC §4
    shapes applied to log τ², docs/classification.md). A regression task's family
    coordinate is its family name, so its id, seeds and file bytes are those of before.
    """

    dataset: str
    family: str
    noise: str
    coverage: str
    seed: int
    fidelity: Fidelity = DEFAULT_FIDELITY
    n_draws: int = DEFAULT_DRAWS
    n_classes: int | None = None
    difficulty: str | None = None

    def __post_init__(self) -> None:
        for name in ("dataset", "family", "noise", "coverage"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value or "__" in value:
                raise param_error("TaskSpec", name, "be a non-empty name without '__'", value)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise param_error("TaskSpec", "seed", "be an integer >= 0", self.seed)
        object.__setattr__(self, "fidelity", Fidelity.parse("TaskSpec", self.fidelity))
        rule = f"be an integer from {MIN_DRAWS} to {MAX_DRAWS}"
        if isinstance(self.n_draws, bool) or not isinstance(self.n_draws, int):
            raise param_error("TaskSpec", "n_draws", rule, self.n_draws)
        if not MIN_DRAWS <= self.n_draws <= MAX_DRAWS:
            raise param_error("TaskSpec", "n_draws", rule, self.n_draws)
        if self.task_type == "classification":
            k = DEFAULT_N_CLASSES if self.n_classes is None else self.n_classes
            if isinstance(k, bool) or not isinstance(k, int) or not 2 <= k <= MAX_N_CLASSES:
                raise param_error(
                    "TaskSpec", "n_classes", f"be an integer from 2 to {MAX_N_CLASSES}", k
                )
            level = DEFAULT_DIFFICULTY if self.difficulty is None else self.difficulty
            if level not in CLASSIFICATION_DIFFICULTIES:
                raise param_error(
                    "TaskSpec",
                    "difficulty",
                    f"be one of {list(CLASSIFICATION_DIFFICULTIES)}",
                    level,
                )
            object.__setattr__(self, "n_classes", k)
            object.__setattr__(self, "difficulty", level)
        else:
            for name in ("n_classes", "difficulty"):
                if getattr(self, name) is not None:
                    raise param_error(
                        "TaskSpec",
                        name,
                        f"be None for the regression family {self.family!r} (a classification "
                        "task setting)",
                        getattr(self, name),
                    )

    @property
    def task_type(self) -> str:
        """``"regression"`` or ``"classification"``: the family's
        ``PriorCapabilities.task_type`` (an unregistered family name, e.g. a test's, is a
        regression family)."""
        return prior_capabilities(self.family, strict=False).task_type

    @property
    def family_coordinate(self) -> str:
        """The family coordinate of the task id and the seeds: the family name for a
        regression task, ``"<family>-k<K>-<difficulty>"`` (e.g. ``"gpc-k3-medium"``) for a
        classification task."""
        if self.n_classes is None:
            return self.family
        return f"{self.family}-k{self.n_classes}-{self.difficulty}"

    @property
    def task_id(self) -> str:
        """``"<dataset>__<family>__<noise>__<coverage>__s<seed>"``, the family as its
        :attr:`family_coordinate` (``"diabetes__gpc-k3-medium__u-shaped__balanced__s0"``)."""
        fam = self.family_coordinate
        return f"{self.dataset}__{fam}__{self.noise}__{self.coverage}__s{self.seed}"

    def seed_for(self, component: str) -> int:
        """Seed of the stream ``component`` (e.g. ``"train"``, ``"f_star"``, ``"noise"``).

        Derived from the five coordinates, the family as its :attr:`family_coordinate`.
        """
        fam = self.family_coordinate
        return derive_seed(
            "task", component, self.dataset, fam, self.noise, self.coverage, self.seed
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of the fields (the fidelity as its plain name); the classification
        settings only when set, so a regression spec writes the dict it wrote before."""
        out = asdict(self)
        out["fidelity"] = self.fidelity.value
        for name in ("n_classes", "difficulty"):
            if out[name] is None:
                del out[name]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskSpec:
        """Inverse of :meth:`to_dict`."""
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


def family_of_coordinate(coordinate: str) -> str:
    """The prior family of a family coordinate, the inverse of
    :attr:`TaskSpec.family_coordinate`: ``"gpc"`` for ``"gpc-k3-medium"`` (the form
    ``"<family>-k<K>-<difficulty>"`` of a classification task), the coordinate itself for a
    regression family's name (``"gp"``)."""
    head, _, rest = coordinate.rpartition("-k")
    if head and rest.partition("-")[0].isdigit() and rest.partition("-")[2]:
        return head
    return coordinate
