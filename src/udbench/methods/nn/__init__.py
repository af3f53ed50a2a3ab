"""The shared neural-network base of udbench's NN methods (paper App. C.4).

- :mod:`~udbench.methods.nn.backbone`: functional residual MLP with a Gaussian head
  (``init_backbone``, ``init_members``, ``features``, ``apply_gaussian``, ``gaussian_nll``).
- :mod:`~udbench.methods.nn.training`: NAdamW + per-member global-norm clipping, shuffled
  minibatches, M members in one ``vmap``-ed computation (``train_members``,
  ``train_single``, ``predict_members``).
- :mod:`~udbench.methods.nn.reporting`: the same training stopping at checkpoints, for pruned
  tuning (``train_members_reporting``).
- :mod:`~udbench.methods.nn.ensemble`: the base class that turns these into a udbench method.
- :mod:`~udbench.methods.nn.spectral`: spectral normalisation, the backbone option
  ``BackboneConfig(spectral_norm=True, sn_coeff=c)`` applied by the trainer.
- :mod:`~udbench.methods.nn.laplace`: closed-form last-layer Gaussian posteriors and the base
  class of NN-Lap and NN-FSP.
- :mod:`~udbench.methods.nn.swag`: SWAG's moments of collected iterates and its draws
  (diagonal plus low rank), shared by NN-SWAG and NN-SWAG-Softmax.
- :mod:`~udbench.methods.nn.distance`: last-hidden-layer features of fitted networks and the
  local distance-preservation measure of the paper's D.4 (``distance_preservation``).
"""

from udbench.methods.nn.backbone import (
    BackboneConfig,
    apply_gaussian,
    features,
    gaussian_head,
    gaussian_nll,
    head_outputs,
    init_backbone,
    init_members,
)
from udbench.methods.nn.distance import (
    distance_preservation,
    local_distance_preservation,
    member_features,
)
from udbench.methods.nn.training import (
    TrainConfig,
    gaussian_loss,
    make_optimizer,
    predict_members,
    train_members,
    train_single,
)

__all__ = [
    "BackboneConfig",
    "TrainConfig",
    "apply_gaussian",
    "distance_preservation",
    "features",
    "gaussian_head",
    "gaussian_loss",
    "gaussian_nll",
    "head_outputs",
    "init_backbone",
    "init_members",
    "local_distance_preservation",
    "make_optimizer",
    "member_features",
    "predict_members",
    "train_members",
    "train_single",
]
