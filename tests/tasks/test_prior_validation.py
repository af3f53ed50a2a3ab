"""Warm-up sensitivity validation of an MCMC preset (SPEC §7, issue 18), with fake priors
built on the exact GP posterior so that no MCMC runs: one equal to the exact posterior
passes, one whose draws ignore the data fails, one whose short warm-up is too wide fails;
the verdict is tested at its thresholds; ``udbench validate-prior`` and ``udbench check``
show the record."""

from __future__ import annotations

import json

import numpy as np
import pytest

from _fake_priors import WARMUP_HYPER, FakeWarmupPrior
from udbench._validation import UdbenchError
from udbench.cli import main
from udbench.priors import load_validation, save_validation, validation_summary
from udbench.priors import validation as pv
from udbench.priors.gp import GPPrior
from udbench.tasks import validate_prior
from udbench.tasks import validation as tv


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("UDBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("UDBENCH_DATA_DIR", raising=False)  # diabetes is embedded


def _run(mode: str, **kw):
    args = {
        "datasets": ["diabetes"],
        "noise_modes": ["homoscedastic", "smooth-monotone"],
        "coverages": ["balanced", "ood"],
        "n_draws": 1000,
        "prior_factory": lambda fam, ds, fid: FakeWarmupPrior(mode),
    }
    return validate_prior("hbart", "standard", **{**args, **kw})


def test_exact_posterior_passes_and_the_record_is_complete() -> None:
    rec = _run("exact")
    r = rec["per_dataset"]["diabetes"]
    assert rec["passed"] and r["passed"] and rec["failures"] == []
    assert r["n_instances"] == 4 and rec["warmup"] == 100 and rec["warmup_long"] == 400
    # two sets of D = 1000 independent draws: the SD differs by MC noise only,
    # median |ΔSD|/SD ≈ 0.674·sqrt(1/D) ≈ 0.021 for both the long run and the floor
    assert r["sd_change_median"] == pytest.approx(0.021, abs=0.005)
    assert r["sd_floor_median"] == pytest.approx(0.021, abs=0.005)
    assert abs(r["coverage_change"]) < 0.005
    lo, hi = r["coverage_base_ci"]
    assert lo <= r["coverage_base"] <= hi and r["coverage_base"] == pytest.approx(0.9, abs=0.05)
    assert r["corr_mean_fstar_median"] > 0.5
    # diabetes, D = 1000 but 4 instances and only one dataset: not the SPEC §7 protocol
    assert "dataset protein missing" in rec["protocol_issues"]
    assert "diabetes: 4 instances (< 8)" in rec["protocol_issues"]
    assert not any("reduced size" in p for p in rec["protocol_issues"])
    assert rec["instances"][0]["task_id"].startswith("diabetes__hbart__")
    json.dumps(rec)  # JSON-ready


def test_draws_that_ignore_the_data_fail() -> None:
    rec = _run("ignore")
    assert not rec["passed"]
    # calibrated against f* (a prior draw) and insensitive to the warm-up: only the data
    # guard catches them
    r = rec["per_dataset"]["diabetes"]
    assert abs(r["coverage_change"]) < 0.02 and r["sd_change_median"] < 0.05
    assert any("corr(mean, f*)" in f for f in rec["failures"])


def test_a_preset_whose_short_warmup_is_too_wide_fails() -> None:
    rec = _run("wide")
    assert not rec["passed"]
    r = rec["per_dataset"]["diabetes"]
    # SD 1.3x too large at the preset: |1 - 1.3|/1.3 ≈ 0.23
    assert r["sd_change_median"] == pytest.approx(0.23, abs=0.02)
    assert r["coverage_change"] < -0.005  # the long run covers less (correctly)
    assert any("median SD change" in f for f in rec["failures"])


def test_reduced_size_is_recorded() -> None:
    rec = _run("exact", noise_modes=["homoscedastic"], coverages=["balanced"], max_train=50,
               max_eval=40, n_draws=200)  # fmt: skip
    r = rec["per_dataset"]["diabetes"]
    assert r["n_train"] == 50 and r["n_eval"] == 40 and r["n_points"] == 40
    assert "reduced size (training or evaluation inputs subsampled)" in rec["protocol_issues"]
    assert "D = 200 (not 1000)" in rec["protocol_issues"]


def test_bad_arguments() -> None:
    with pytest.raises(UdbenchError, match="family"):
        validate_prior("gp", "standard", ["diabetes"])
    with pytest.raises(UdbenchError, match="warmup_factor"):
        _run("exact", warmup_factor=1)
    with pytest.raises(UdbenchError, match="warm-up"):
        validate_prior(
            "hbart",
            "standard",
            ["diabetes"],
            prior_factory=lambda *a: GPPrior(WARMUP_HYPER, scale=1.0),
        )


def _figures(**kw) -> dict:
    base = {
        "coverage_change": 0.0,
        "sd_change_median": 0.03,
        "sd_floor_median": 0.03,
        "corr_mean_fstar_median": 0.9,
    }
    return {**base, **kw}


@pytest.mark.parametrize(
    ("change", "passed"),
    [
        ({}, True),
        ({"coverage_change": 0.0049}, True),
        ({"coverage_change": -0.0049}, True),
        ({"coverage_change": 0.005}, False),  # SPEC: "less than 0.005"
        ({"coverage_change": -0.0051}, False),
        ({"sd_change_median": 0.05, "sd_floor_median": 0.04}, True),  # "at most 5 %"
        ({"sd_change_median": 0.0501, "sd_floor_median": 0.04}, False),
        ({"sd_change_median": 0.045, "sd_floor_median": 0.03}, True),  # exactly 1.5x floor
        ({"sd_change_median": 0.0451, "sd_floor_median": 0.03}, False),
        ({"corr_mean_fstar_median": 0.3}, True),
        ({"corr_mean_fstar_median": 0.29}, False),
        ({"sd_change_median": float("nan")}, False),  # never passes on a NaN
    ],
)
def test_verdict_at_the_thresholds(change: dict, passed: bool) -> None:
    ok, failures = pv.warmup_verdict(_figures(**change))
    assert ok is passed and (len(failures) == 0) is passed


def test_figures_by_hand() -> None:
    f = np.zeros(4)
    # base covers points 0-1, long covers 0-2, floor covers 0-1; SDs 1, 1.1, 0.9
    inst = {
        "covered_base": np.array([1, 1, 0, 0], bool),
        "covered_long": np.array([1, 1, 1, 0], bool),
        "covered_floor": np.array([1, 1, 0, 0], bool),
        "sd_base": np.ones(4),
        "sd_long": np.full(4, 1.1),
        "sd_floor": np.array([0.9, 1.0, 1.0, 1.0]),
        "corr_base": 0.8,
    }
    fig = pv.warmup_figures([inst, inst])
    assert fig["coverage_base"] == 0.5 and fig["coverage_long"] == 0.75
    assert fig["coverage_change"] == pytest.approx(0.25) and fig["coverage_change_floor"] == 0
    assert fig["sd_change_median"] == pytest.approx(0.1)
    assert fig["sd_floor_median"] == pytest.approx(0.0) and fig["sd_floor_p95"] > 0.09
    assert fig["coverage_change_ci"] == pytest.approx([0.25, 0.25])
    s = pv.summarise_instance(f, {r: np.tile([[-1.0], [1.0]], (50, 4)) for r in pv.RUNS})
    assert s["covered_base"].all() and s["sd_base"] == pytest.approx(np.full(4, 1.005, float),
                                                                    abs=0.01)  # fmt: skip
    with pytest.raises(UdbenchError, match="runs"):
        pv.summarise_instance(f, {"base": np.zeros((5, 4))})


def test_record_round_trip_and_summary(tmp_path) -> None:
    rec = _run("exact", noise_modes=["homoscedastic"], coverages=["balanced"], n_draws=200)
    path = save_validation(rec, pv.record_path("hbart", "standard", tmp_path))
    assert path.name == "hbart-standard.json"
    loaded = load_validation("hbart", "standard", tmp_path)
    assert loaded == json.loads(json.dumps(rec))
    assert load_validation("hbart", "paper", tmp_path) is None
    summary = validation_summary(loaded, {"engine": "bartz", "n_chains": 1, "n_warmup": 100})
    assert summary["passed"] is rec["passed"] and summary["settings_match"]
    assert not summary["full_protocol"] and summary["n_instances"] == 1
    other = validation_summary(loaded, {"n_chains": 1, "n_warmup": 200})
    assert not other["settings_match"]
    (tmp_path / "hbart-paper.json").write_text("{not json")
    with pytest.raises(UdbenchError, match="valid JSON"):
        load_validation("hbart", "paper", tmp_path)


def test_cli_validate_prior_writes_the_record(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(tv, "get_prior", lambda *a, **k: FakeWarmupPrior("exact"))
    out = tmp_path / "rec.json"
    args = ["validate-prior", "--datasets", "diabetes", "--noise", "homoscedastic"]
    args += ["--coverage", "balanced", "--draws", "200", "--out", str(out)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "Warm-up sensitivity: hbart standard" in text and "verdict" in text
    assert "not the full SPEC §7 protocol" in text
    rec = json.loads(out.read_text())
    assert rec["family"] == "hbart"
    # it names the numerics version it judged: without one it could never validate tasks
    from udbench.priors import family_numerics_version

    assert rec["numerics_version"] == family_numerics_version("hbart")
    assert validation_summary(rec, rec["sampler_settings"], rec["numerics_version"])[
        "numerics_match"
    ]
    assert main(["validate-prior", "--family", "gp", "--datasets", "diabetes"]) == 2


def test_shipped_records_load_and_match_their_presets() -> None:
    # a preset changed without re-validation makes its record stale: this test says so
    from udbench.priors.bnn import FIDELITY_SETTINGS as BNN
    from udbench.priors.hbart import FIDELITY_SETTINGS as HBART

    paths = sorted(pv.RECORD_DIR.glob("*.json"))
    assert paths, "no shipped validation record"
    for path in paths:
        family, fidelity = path.stem.split("-")
        rec = load_validation(family, fidelity)
        assert rec is not None and (rec["family"], rec["fidelity"]) == (family, fidelity)
        assert rec["sampler_settings"] == {"hbart": HBART, "bnn": BNN}[family][fidelity]
        summary = validation_summary(rec, {"engine": "x", **rec["sampler_settings"]})
        assert summary["settings_match"]
        assert summary["full_protocol"] is (not rec["protocol_issues"])


def test_preset_validation_status_says_why_a_record_does_not_validate(tmp_path) -> None:
    from udbench.priors import preset_validation_status
    from udbench.priors.hbart import FIDELITY_SETTINGS

    good = {
        "passed": True,
        "failures": [],
        "protocol_issues": [],
        "sampler_settings": dict(FIDELITY_SETTINGS["standard"]),
        "numerics_version": 1,
        "pooled": {"n_instances": 16},
        "datasets": ["protein", "kin8nm"],
        "date": "2026-12-01",
    }
    summary, warning = preset_validation_status("hbart", "standard", directory=tmp_path)
    assert summary is None and "no validation record" in warning
    cases = [
        ({}, None),
        ({"passed": False, "failures": ["kin8nm: |coverage change| 0.0061 >= 0.005"]}, "fails"),
        ({"protocol_issues": ["kin8nm: 3 instances (< 8)"]}, "incomplete: kin8nm: 3"),
        ({"sampler_settings": {**good["sampler_settings"], "thin": 1}}, "other sampler"),
        ({"numerics_version": 0}, "numerics version 0"),
        ({"numerics_version": None}, "names no numerics version"),  # it applied before
    ]
    for change, expected in cases:
        save_validation({**good, **change}, tmp_path / "hbart-standard.json")
        summary, warning = preset_validation_status("hbart", "standard", directory=tmp_path)
        assert summary is not None and summary["date"] == "2026-12-01"
        if expected is None:
            assert warning is None and summary["applies"] and summary["numerics_match"]
        else:
            assert not summary["applies"] and expected in warning, (change, warning)
    save_validation({**good}, tmp_path / "hbart-smoke.json")
    assert "never a reference" in preset_validation_status("hbart", "smoke", directory=tmp_path)[1]
    # BNN is gated per instance by split-R̂ (SPEC §7): no record, no warning; a record shows
    assert preset_validation_status("bnn", "standard", directory=tmp_path) == (None, None)
    save_validation({**good, "passed": False}, tmp_path / "bnn-standard.json")
    summary, warning = preset_validation_status("bnn", "standard", directory=tmp_path)
    assert summary is not None and not summary["passed"] and warning is None  # information
    from udbench.priors import no_record_verdict

    assert no_record_verdict("hbart") == "not validated"
    assert no_record_verdict("bnn").startswith("not required (split-R̂ gate per instance")


def test_the_report_shows_the_preset_validation_of_mcmc_results(tmp_path, monkeypatch) -> None:
    import pandas as pd

    from udbench.report._validation import preset_validation_html

    results = pd.DataFrame(
        {"family": ["gp", "hbart", "bnn"], "fidelity": ["standard", "smoke", "standard"]}
    )
    page = "\n".join(preset_validation_html(results))
    assert "Reference posteriors: preset validation" in page
    # hbart smoke has a shipped (reduced, failing) record; bnn standard has none (none needed)
    assert "hbart smoke: no passing validation record" in page
    assert "bnn standard: no validation record" not in page  # gated per instance by R̂
    assert "not required (split-R̂ gate per instance, SPEC §7)" in page
    assert "<td>FAIL (record names no numerics version)</td>" in page  # as udbench check
    assert preset_validation_html(results[results["family"] == "gp"]) == []
    # a BNN record is information, as in udbench check: its verdict, no warning
    shipped = json.loads((pv.RECORD_DIR / "hbart-smoke.json").read_text())
    bnn_rec = {**shipped, "family": "bnn", "fidelity": "standard", "passed": False}
    save_validation(bnn_rec, tmp_path / "bnn-standard.json")
    monkeypatch.setattr(pv, "RECORD_DIR", tmp_path)
    page = "\n".join(preset_validation_html(results[results["family"] == "bnn"]))
    assert "<td>not a gate (FAIL" in page and "Warning" not in page
