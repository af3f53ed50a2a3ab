"""A task instance's coordinates and its derived random streams (SPEC §6)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from udbench._seeding import derive_seed
from udbench._validation import param_error
from udbench.priors import DEFAULT_FIDELITY, Fidelity

__all__ = ["DEFAULT_DRAWS", "MAX_DRAWS", "MIN_DRAWS", "TaskSpec"]

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
        Prior family (``"gp"``, ``"hbart"``, ``"bnn"``).
    noise : str
        Noise mode (SPEC §4).
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

    Raises
    ------
    UdbenchError
        A coordinate that is not a non-empty name without ``"__"``, a seed that is not an
        integer >= 0, an unknown fidelity, or D not an integer in [:data:`MIN_DRAWS`,
        :data:`MAX_DRAWS`]. These
        are checked here, once; the code below (task generation, the priors) trusts them.

    Notes
    -----
    :meth:`seed_for` derives every stream from all five coordinates (SPEC §6, paper B.5), so
    two instances never share a ground truth or a training sample. Fidelity and D are left
    out on purpose: the same instance at two fidelities has the same f* and sample S.
    """

    dataset: str
    family: str
    noise: str
    coverage: str
    seed: int
    fidelity: Fidelity = DEFAULT_FIDELITY
    n_draws: int = DEFAULT_DRAWS

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

    @property
    def task_id(self) -> str:
        """``"<dataset>__<family>__<noise>__<coverage>__s<seed>"``."""
        return f"{self.dataset}__{self.family}__{self.noise}__{self.coverage}__s{self.seed}"

    def seed_for(self, component: str) -> int:
        """Seed of the stream ``component`` (e.g. ``"train"``, ``"f_star"``, ``"noise"``)."""
        return derive_seed(
            "task", component, self.dataset, self.family, self.noise, self.coverage, self.seed
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of the fields (the fidelity as its plain name)."""
        out = asdict(self)
        out["fidelity"] = self.fidelity.value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskSpec:
        """Inverse of :meth:`to_dict`."""
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})
