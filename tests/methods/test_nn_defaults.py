"""The shared network's defaults have one home (issue 33, item 4): every neural class reads them.

``SNAPSHOT`` is each class's ``get_params()`` recorded before the defaults moved to
:data:`udbench.methods.nn.backbone.NN_DEFAULTS`; the move must leave every default bit for bit
as it was. scikit-learn's ``get_params`` / ``set_params`` / ``clone`` read the constructors'
signatures, so they are exercised on every class too.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from typing import Any

import pytest
from sklearn.base import clone

from udbench.methods.nn.backbone import NN_DEFAULTS, BackboneConfig, NNDefaults

SNAPSHOT: dict[str, dict[str, Any]] = {
    "nn_bag.NNBag": {
        "activation": "relu",
        "batch_size": 128,
        "dropout": 0.0,
        "dtype": "float32",
        "eps": 1e-06,
        "hidden_dim": 64,
        "lr": 0.001,
        "momentum": 0.9,
        "n_blocks": 2,
        "n_epochs": 200,
        "n_members": 10,
        "random_state": 0,
        "replace": True,
        "sample_fraction": 0.775,
        "sn_coeff": 1.0,
        "spectral_norm": False,
        "weight_decay": 0.0001,
    },
    "nn_deup.NNDeup": {
        "activation": "relu",
        "batch_size": 128,
        "dropout": 0.0,
        "dtype": "float32",
        "eps": 1e-06,
        "hidden_dim": 64,
        "lr": 0.001,
        "momentum": 0.9,
        "n_blocks": 2,
        "n_epochs": 200,
        "n_folds": 5,
        "random_state": 0,
        "sn_coeff": 1.0,
        "spectral_norm": False,
        "weight_decay": 0.0001,
    },
    "nn_drop.NNDropout": {
        "activation": "relu",
        "batch_size": 128,
        "dropout": 0.2,
        "dtype": "float32",
        "eps": 1e-06,
        "hidden_dim": 64,
        "lr": 0.001,
        "momentum": 0.9,
        "n_blocks": 2,
        "n_epochs": 200,
        "n_members": 128,
        "random_state": 0,
        "sn_coeff": 1.0,
        "spectral_norm": False,
        "weight_decay": 0.0001,
    },
    "nn_edl.NNEvidential": {
        "activation": "relu",
        "batch_size": 128,
        "dropout": 0.0,
        "dtype": "float32",
        "eps": 1e-06,
        "hidden_dim": 64,
        "lr": 0.001,
        "momentum": 0.9,
        "n_blocks": 2,
        "n_epochs": 200,
        "random_state": 0,
        "reg_weight": 0.00316,
        "sn_coeff": 1.0,
        "spectral_norm": False,
        "weight_decay": 0.0001,
    },
    "nn_ens.NNEnsemble": {
        "activation": "relu",
        "batch_size": 128,
        "dropout": 0.0,
        "dtype": "float32",
        "eps": 1e-06,
        "hidden_dim": 64,
        "lr": 0.001,
        "momentum": 0.9,
        "n_blocks": 2,
        "n_epochs": 200,
        "n_members": 10,
        "random_state": 0,
        "sn_coeff": 1.0,
        "spectral_norm": False,
        "weight_decay": 0.0001,
    },
    "nn_fsp.NNFSP": {
        "activation": "relu",
        "batch_size": 128,
        "dropout": 0.0,
        "dtype": "float32",
        "eps": 1e-06,
        "hidden_dim": 64,
        "lr": 0.001,
        "momentum": 0.9,
        "n_blocks": 2,
        "n_context": 128,
        "n_epochs": 200,
        "n_members": 256,
        "predictive": "closed_form",
        "prior_lengthscale": 1.0,
        "prior_variance": 1.0,
        "random_state": 0,
        "sn_coeff": 1.0,
        "spectral_norm": False,
        "weight_decay": 0.0001,
    },
    "nn_fsp.NNFSPSN": {
        "activation": "relu",
        "batch_size": 128,
        "dropout": 0.0,
        "dtype": "float32",
        "eps": 1e-06,
        "hidden_dim": 64,
        "lr": 0.001,
        "momentum": 0.9,
        "n_blocks": 2,
        "n_context": 128,
        "n_epochs": 200,
        "n_members": 256,
        "predictive": "closed_form",
        "prior_lengthscale": 1.0,
        "prior_variance": 1.0,
        "random_state": 0,
        "sn_coeff": 1.0,
        "spectral_norm": True,
        "weight_decay": 0.0001,
    },
    "nn_lap.NNLaplace": {
        "activation": "relu",
        "batch_size": 128,
        "dropout": 0.0,
        "dtype": "float32",
        "eps": 1e-06,
        "hidden_dim": 64,
        "lr": 0.001,
        "momentum": 0.9,
        "n_blocks": 2,
        "n_epochs": 200,
        "n_members": 256,
        "predictive": "closed_form",
        "prior_precision": 0.1,
        "random_state": 0,
        "sn_coeff": 1.0,
        "spectral_norm": False,
        "weight_decay": 0.0001,
    },
    "nn_lap.NNLaplaceSN": {
        "activation": "relu",
        "batch_size": 128,
        "dropout": 0.0,
        "dtype": "float32",
        "eps": 1e-06,
        "hidden_dim": 64,
        "lr": 0.001,
        "momentum": 0.9,
        "n_blocks": 2,
        "n_epochs": 200,
        "n_members": 256,
        "predictive": "closed_form",
        "prior_precision": 0.1,
        "random_state": 0,
        "sn_coeff": 1.0,
        "spectral_norm": True,
        "weight_decay": 0.0001,
    },
    "nn_swag.NNSwag": {
        "activation": "relu",
        "batch_size": 128,
        "dropout": 0.0,
        "dtype": "float32",
        "eps": 1e-06,
        "hidden_dim": 64,
        "lr": 0.001,
        "momentum": 0.9,
        "n_blocks": 2,
        "n_epochs": 200,
        "n_members": 30,
        "random_state": 0,
        "sn_coeff": 1.0,
        "spectral_norm": False,
        "swa_epochs": 30,
        "swa_lr": 0.001,
        "weight_decay": 0.0001,
    },
    "sngp_het.SNGPHet": {
        "activation": "relu",
        "batch_size": 128,
        "dropout": 0.0,
        "dtype": "float32",
        "eps": 1e-06,
        "hidden_dim": 64,
        "lr": 0.001,
        "momentum": 0.9,
        "n_blocks": 2,
        "n_epochs": 200,
        "random_state": 0,
        "rff_dim": 512,
        "rff_lengthscale": 1.0,
        "ridge": 0.1,
        "sn_coeff": 1.0,
        "spectral_norm": True,
        "weight_decay": 0.0001,
    },
    "nn_ens_softmax.NNEnsembleSoftmax": {
        "activation": "relu",
        "batch_size": 128,
        "dropout": 0.0,
        "dtype": "float32",
        "hidden_dim": 64,
        "lr": 0.001,
        "momentum": 0.9,
        "n_blocks": 2,
        "n_epochs": 200,
        "n_members": 10,
        "random_state": 0,
        "weight_decay": 0.0001,
    },
}


def _cls(key: str) -> type:
    module, name = key.split(".")
    return getattr(importlib.import_module(f"udbench.methods.{module}"), name)


@pytest.mark.parametrize("key", sorted(SNAPSHOT))
def test_defaults_are_the_recorded_snapshot(key: str) -> None:
    params = _cls(key)().get_params()
    assert params == SNAPSHOT[key]
    # equal *and* of the same type (1e-3 stays a float, 64 an int, 0.0 not 0)
    assert {k: type(v) for k, v in params.items()} == {k: type(v) for k, v in SNAPSHOT[key].items()}


@pytest.mark.parametrize("key", sorted(SNAPSHOT))
def test_backbone_defaults_are_read_from_nn_defaults(key: str) -> None:
    sig = inspect.signature(_cls(key).__init__)
    shared = {f.name for f in dataclasses.fields(NNDefaults)} & set(sig.parameters)
    # the SN variants and SNGP-Het fix spectral_norm=True, NN-Drop's dropout is its own
    own = {"spectral_norm", "dropout"}
    for name in sorted(shared - own):
        assert sig.parameters[name].default == getattr(NN_DEFAULTS, name), (key, name)
    assert {"hidden_dim", "n_blocks", "lr", "n_epochs", "batch_size"} <= shared


@pytest.mark.parametrize("key", sorted(SNAPSHOT))
def test_get_set_params_and_clone_still_work(key: str) -> None:
    cls = _cls(key)
    est = cls(hidden_dim=16, lr=3e-3)
    assert est.get_params()["hidden_dim"] == 16
    assert est.get_params()["lr"] == 3e-3
    est.set_params(n_blocks=1, batch_size=32)
    twin = clone(est)
    assert type(twin) is cls
    assert twin.get_params() == {
        **SNAPSHOT[key],
        "hidden_dim": 16,
        "lr": 3e-3,
        "n_blocks": 1,
        "batch_size": 32,
    }


def test_backbone_config_defaults_are_nn_defaults() -> None:
    cfg = BackboneConfig(in_dim=3)
    for name in (
        "hidden_dim",
        "n_blocks",
        "activation",
        "dropout",
        "eps",
        "spectral_norm",
        "sn_coeff",
    ):
        assert getattr(cfg, name) == getattr(NN_DEFAULTS, name), name


def test_nn_ens_docstring_states_the_defaults() -> None:
    """NN-Ens documents the shared network's defaults; the other classes point to it."""
    doc = _cls("nn_ens.NNEnsemble").__doc__
    for field in dataclasses.fields(NNDefaults):
        value = getattr(NN_DEFAULTS, field.name)
        shown = f'"{value}"' if isinstance(value, str) else str(value)
        m = re.search(rf"^\s*{field.name} : [^\n]*, default (\S+)$", doc, re.MULTILINE)
        assert m is not None, field.name
        assert m.group(1) == shown or float(m.group(1)) == value, (field.name, m.group(1))
