"""A task instance's coordinates and its derived random streams (SPEC §6)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from udbench._seeding import derive_seed
from udbench._validation import check_choice, param_error
from udbench.priors.base import FIDELITIES

__all__ = ["TaskSpec"]


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
    fidelity : str, default "standard"
        Prior fidelity preset; recorded, not part of the random streams.
    n_draws : int, default 1000
        D, the number of posterior draws stored; not part of the random streams.

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
    fidelity: str = "standard"
    n_draws: int = 1000

    def __post_init__(self) -> None:
        for name in ("dataset", "family", "noise", "coverage"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value or "__" in value:
                raise param_error("TaskSpec", name, "be a non-empty name without '__'", value)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise param_error("TaskSpec", "seed", "be an integer >= 0", self.seed)
        check_choice("TaskSpec", "fidelity", self.fidelity, FIDELITIES)
        if isinstance(self.n_draws, bool) or not isinstance(self.n_draws, int):
            raise param_error("TaskSpec", "n_draws", "be an integer >= 40", self.n_draws)
        if self.n_draws < 40:
            raise param_error("TaskSpec", "n_draws", "be an integer >= 40", self.n_draws)

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
        """JSON-ready dict of the fields."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskSpec:
        """Inverse of :meth:`to_dict`."""
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})
