"""Projected CPU seconds of the MCMC campaign's units (:mod:`udbench.campaigns.mcmc`) until a
record of the same shape exists (``udbench campaign status``; docs/campaigns.md).

A campaign unit runs on one XLA thread at low priority, so these are single-thread CPU
seconds, measured from the campaign's own records (2026-12-03), not the idle multi-threaded
wall times of docs/priors-mcmc.md's throughput table (2.4x shorter for HBART):

- HBART ``lean`` (20 chains x 1000 warm-up, thin 120): base / long / floor runs took 706 /
  973 / 703 CPU s on average (9, 9 and 8 records at kin8nm and protein, D = 1000);
- HBART ``standard`` (``lean`` since 2026-12-04): ``lean``'s base run at kin8nm, and
  concrete's at the former ``standard``'s ratio of the two datasets (146 / 1360);
- BNN: the ``standard`` preset's kin8nm instance (``f32-accept0.8-d8`` of the sweep) took
  374 CPU s; concrete (n = 824 against 6554) scaled by the table's 15 / 115;
- a BNN sweep setting: ``d8``'s 885 CPU s times 2 per extra tree depth (the trajectories that
  hit the maximum depth double; ``d9`` took 1676 s); the warm-up length and a dense mass
  matrix changed little at depth 8 (929 and 840 s);
- GP (exact conditioning, not MCMC): the table's seconds times 2 (one thread; unmeasured).
"""

from __future__ import annotations

from typing import Any

#: HBART validation runs per layout: CPU seconds.
VALIDATION_SECONDS = {
    "lean": {"base": 706.0, "long": 973.0, "floor": 703.0},
}
#: Multi-family instances at ``standard`` per family and dataset: CPU seconds.
MULTI_SECONDS = {
    "gp": {"concrete": 40.0, "kin8nm": 120.0},
    "hbart": {"concrete": 76.0, "kin8nm": 706.0},  # lean = standard since 2026-12-04
    "bnn": {"concrete": 49.0, "kin8nm": 374.0},
}
#: The BNN sweep's ``d8`` setting on its kin8nm task: CPU seconds.
SWEEP_D8_SECONDS = 885.0


def bnn_sweep_seconds(sampler: dict[str, Any]) -> float:
    """Projected CPU seconds of a BNN sweep setting: ``d8``'s, doubled per extra depth."""
    return SWEEP_D8_SECONDS * 2.0 ** (int(sampler.get("max_tree_depth", 8)) - 8)
