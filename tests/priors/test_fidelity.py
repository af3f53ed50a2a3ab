"""Settings named once (issue 12 item 4): the typed fidelity, checked where it enters."""

from __future__ import annotations

import json

import pytest

from udbench._validation import UdbenchError
from udbench.data import load_covariates
from udbench.priors import DEFAULT_FIDELITY, Fidelity
from udbench.priors import bnn as bnn_module
from udbench.priors import hbart as hbart_module
from udbench.priors.hbart import HBARTPrior


def test_fidelity_is_a_string_enum_with_is_reference() -> None:
    assert [f.value for f in Fidelity] == ["paper", "standard", "smoke"]
    assert DEFAULT_FIDELITY is Fidelity.STANDARD
    assert [f.is_reference for f in Fidelity] == [True, True, False]
    smoke = Fidelity("smoke")
    # equal to, hashed as, printed and written to JSON as the plain name (file format unchanged)
    assert smoke is Fidelity.SMOKE and smoke == "smoke" and {"smoke": 1}[smoke] == 1
    assert json.dumps({"f": smoke}) == '{"f": "smoke"}'
    assert f"{smoke}" == "smoke" and repr(smoke) == "'smoke'"


@pytest.mark.parametrize("bad", ["Smoke", "fast", "", None, 1, ["smoke"]])
def test_fidelity_parse_names_component_parameter_and_value(bad) -> None:
    with pytest.raises(
        UdbenchError, match=r"make_it: parameter 'fidelity' must be one of \['paper'"
    ):
        Fidelity.parse("make_it", bad)
    assert Fidelity.parse("make_it", "paper") is Fidelity.PAPER
    assert Fidelity.parse("make_it", Fidelity.SMOKE) is Fidelity.SMOKE


@pytest.mark.parametrize("cls", [HBARTPrior])
def test_mcmc_prior_checks_its_settings_when_built(cls) -> None:
    # checked once, at construction (before: only when the settings were first read)
    with pytest.raises(UdbenchError, match="fidelity"):
        cls(1.0, "fast")
    with pytest.raises(UdbenchError, match="sampler_kwargs"):
        cls(1.0, "smoke", sampler_kwargs={"no_such_setting": 1})
    prior = cls(1.0, "smoke", sampler_kwargs={"thin": 3})
    assert prior.fidelity is Fidelity.SMOKE and prior.settings["fidelity"] == "smoke"
    assert type(prior.settings["fidelity"]) is str
    # a copy: editing it does not change the prior
    prior.sampler_settings["thin"] = 99
    assert prior.sampler_settings["thin"] == 3


@pytest.mark.parametrize("module", [bnn_module, hbart_module])
def test_family_builders_reject_an_unknown_fidelity(module) -> None:
    cov = load_covariates("diabetes")
    with pytest.raises(UdbenchError, match="parameter 'fidelity' must be one of"):
        module.build_prior(cov, "fast")
