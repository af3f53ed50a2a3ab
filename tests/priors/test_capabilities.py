"""The prior families' capability records (:class:`udbench.priors.base.PriorCapabilities`)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from udbench._validation import UdbenchError
from udbench.priors import (
    FAMILY_CAPABILITIES,
    PRIOR_FAMILIES,
    PriorCapabilities,
    families_of_task_type,
    prior_capabilities,
    prior_class,
)


def test_every_registered_family_has_one_record_carried_by_its_class() -> None:
    assert list(FAMILY_CAPABILITIES) == list(PRIOR_FAMILIES)
    for family, caps in FAMILY_CAPABILITIES.items():
        cls = prior_class(family)
        assert cls.family == family
        assert cls.capabilities is caps
        assert prior_capabilities(cls) is caps and prior_capabilities(family) is caps
        if caps.work_depends_on_fidelity:
            assert callable(getattr(cls, "instance_work", None))
        assert callable(getattr(cls, "synthetic", None))


def test_the_records_say_what_the_pipeline_did_by_family_name() -> None:
    gp, hbart, bnn = (FAMILY_CAPABILITIES[f] for f in ("gp", "hbart", "bnn"))
    # the GP: exact moments and a nugget, no training draws by default, a kernel fit per
    # dataset, quick instances, fidelity-free work, cost set by n + n_eval
    assert (gp.exact_moments, gp.nugget, gp.draws_train_by_default) == (True, True, False)
    assert (gp.fitted_per_dataset, gp.quick_instances, gp.work_depends_on_fidelity) == (
        True,
        True,
        False,
    )
    assert (gp.cost_grows_with_eval_points, gp.calibration_fidelity) == (True, "standard")
    # HBART: draws only, queries clipped to the unit cube
    assert hbart == PriorCapabilities(
        clips_queries_to_unit_cube=True, matched_method_family="trees"
    )
    assert bnn == PriorCapabilities(matched_method_family="nn")
    assert [FAMILY_CAPABILITIES[f].matched_method_family for f in PRIOR_FAMILIES] == [
        "gp",
        "trees",
        "nn",
        None,
    ]
    # the latent-GP classification prior: its tasks are classification tasks
    gpc = FAMILY_CAPABILITIES["gpc"]
    assert gpc.task_type == "classification" and gpc.fitted_per_dataset
    assert {FAMILY_CAPABILITIES[f].task_type for f in ("gp", "hbart", "bnn")} == {"regression"}
    assert families_of_task_type() == ["gp", "hbart", "bnn"]
    assert families_of_task_type("classification") == ["gpc"]
    with pytest.raises(UdbenchError, match="parameter 'task_type'"):
        families_of_task_type("ranking")


def test_a_prior_without_a_record_gets_its_familys_or_the_defaults() -> None:
    class Bare:  # implements only the protocol
        family = "bnn"

    assert prior_capabilities(Bare()) is FAMILY_CAPABILITIES["bnn"]
    Bare.family = "linear"
    assert prior_capabilities(Bare()) == PriorCapabilities()
    assert prior_capabilities("linear", strict=False) == PriorCapabilities()
    with pytest.raises(UdbenchError, match="prior_capabilities: parameter 'family'"):
        prior_capabilities("linear")
    with pytest.raises(UdbenchError, match="prior_class: parameter 'family'"):
        prior_class("linear")


def test_instance_work_is_the_presets_iteration_count() -> None:
    from udbench.priors.bnn import FIDELITY_SETTINGS as BN
    from udbench.priors.hbart import FIDELITY_SETTINGS as HB

    hb = prior_class("hbart")
    for fid, s in HB.items():  # n_chains × (n_warmup + (1000 / n_chains) × thin)
        expect = s["n_chains"] * s["n_warmup"] + 1000 * s["thin"]
        assert hb.instance_work(fid) == pytest.approx(expect, rel=1e-15)
    bn = prior_class("bnn")
    # n_chains × (n_warmup + 1000 / n_chains) × 2^depth × the step's cost in the dtype
    for fid, s in BN.items():
        cost = {"float64": 1.0, "float32": 0.51}[s["dtype"]]
        expect = (s["n_chains"] * s["n_warmup"] + 1000) * 2 ** s["max_tree_depth"] * cost
        assert bn.instance_work(fid) == pytest.approx(expect, rel=1e-15)
    assert BN["paper"]["dtype"] == "float64" and BN["standard"]["dtype"] == "float32"


def test_synthetic_priors_have_scale_one() -> None:
    X = np.random.default_rng(0).uniform(size=(40, 3))
    for family in PRIOR_FAMILIES:
        prior = prior_class(family).synthetic("smoke", X)
        assert prior.family == family and prior.scale == 1.0
    gp = prior_class("gp").synthetic("smoke", X)
    assert gp.hyper["parts"][0]["lengthscale"] == [0.4, 0.8, 1.2]


def test_a_lookup_by_name_imports_no_family_module() -> None:
    code = (
        "import sys\n"
        "from udbench.priors import prior_capabilities\n"
        "assert prior_capabilities('gp').nugget\n"
        "names = ('udbench.priors.', 'jax', 'gpjax')\n"
        "print(sorted(m for m in sys.modules if m.startswith(names)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = eval(out.stdout)
    assert not [m for m in loaded if m.startswith(("jax", "gpjax", "udbench.priors.gp"))], loaded
