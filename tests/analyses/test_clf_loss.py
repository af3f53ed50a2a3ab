"""``udbench analyze`` under the Brier score for classification rows (issues 37, 38).

The fake frame is tests/_classification_results.py's (three classifiers on four tasks; K = 2
on t0, t1 and K = 3 on t2, t3) with Brier-target columns added by hand, so that the Brier
ranking differs from the log-loss one; every expected number below is computed by hand.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from _classification_results import METHODS, RHO, classification_rows
from _results import fabricate_results
from udbench._validation import UdbenchError
from udbench.analyses import analyze, headline_table
from udbench.analyses._clf_loss import analysis_losses, clf_loss_agreement_table
from udbench.cli import main

#: ρ(EU, EU*_risk) against the Brier targets per task, methods A, B, C: means A .7, B .6,
#: C .2 (log loss: A .5, B .55, C .25).
RHO_BRIER = {
    "t0": (0.9, 0.6, 0.1),
    "t1": (0.7, 0.4, 0.3),
    "t2": (0.7, 0.8, 0.2),
    "t3": (0.5, 0.6, 0.2),
}
#: Δ_ent (risk) against the Brier targets per method (the same on every task).
DELTA_BRIER = (0.2, -0.4, 0.1)


def _rows() -> pd.DataFrame:
    df = classification_rows()
    i = df["method"].map({m: j for j, m in enumerate(METHODS)}).to_numpy()
    brier = np.array([RHO_BRIER[t][j] for t, j in zip(df["task_id"], i, strict=True)])
    for t in ("risk", "var", "point"):
        df[f"rho_eu_{t}_brier"] = brier
        df[f"delta_ent_{t}_brier"] = np.array(DELTA_BRIER)[i]
    df["rho_au_brier"] = 0.7 - 0.1 * i  # log loss: 0.5 + 0.1 i, the reverse order
    df["rho_eu_au_brier"] = 0.2
    for s in range(5):
        df[f"rho_eu_risk_shell{s}"] = df["rho_eu_risk"] - 0.1 * s
        df[f"rho_eu_risk_shell{s}_brier"] = brier - 0.05 * s
    return df


def test_the_headline_under_brier_is_the_mean_of_the_brier_columns(tmp_path):
    res = analyze(_rows(), tmp_path / "b", n_resamples=20, loss="brier", write_html=False)
    head = res.tables["clf_headline"].set_index("method")
    assert res.tables["clf_headline"]["method"].tolist() == ["A", "B", "C"]  # .7, .6, .2
    assert head["rho_eu_risk"].to_dict() == pytest.approx({"A": 0.7, "B": 0.6, "C": 0.2})
    assert head["rho_eu_var"].to_dict() == pytest.approx({"A": 0.7, "B": 0.6, "C": 0.2})
    assert head["rho_au"].to_dict() == pytest.approx({"A": 0.7, "B": 0.6, "C": 0.5})
    assert head["nll"].to_dict() == pytest.approx({"A": 1.0, "B": 2.0, "C": 3.0})  # labels
    ent = res.tables["clf_entanglement"].set_index("method")
    assert ent["delta_ent_risk"].to_dict() == pytest.approx(
        dict(zip(METHODS, DELTA_BRIER, strict=True))
    )
    shells = res.tables["clf_shells"].set_index("method")
    assert shells.loc["A", "shell4"] == pytest.approx(0.7 - 0.2)
    assert shells.loc["C", "outer_minus_inner"] == pytest.approx(-0.2)
    # the default stays the log loss: the stored columns
    plain = analyze(_rows(), tmp_path / "l", n_resamples=20, write_html=False)
    log_head = plain.tables["clf_headline"].set_index("method")
    assert log_head["rho_eu_risk"].to_dict() == pytest.approx({"A": 0.5, "B": 0.55, "C": 0.25})
    assert plain.tables["clf_shells"].set_index("method").loc["A", "shell4"] == pytest.approx(0.1)
    clf_loss = analyze(_rows(), tmp_path / "c", n_resamples=20, clf_loss="brier")
    pd.testing.assert_frame_equal(clf_loss.tables["clf_headline"], res.tables["clf_headline"])
    page = clf_loss.html.read_text(encoding="utf-8")
    assert "Loss: brier (ρ and Δ_ent against the Brier-score oracle targets)." in page


def test_kendall_w_across_k_under_brier_by_hand(tmp_path):
    res = analyze(_rows(), tmp_path / "w", n_resamples=20, loss="brier", write_html=False)
    stab = res.tables["clf_stability"]
    eu = stab[(stab["criterion"] == "eu") & (stab["factor"] == "n_classes")].iloc[0]
    # K = 2 means A .8, B .5, C .2 (ranks 3, 2, 1); K = 3: A .6, B .7, C .2 (2, 3, 1).
    # Rank sums 5, 5, 2 around m(k + 1)/2 = 4: S = 6, W = 12 S / (m² (k³ − k)) = 72/96
    assert eu["W"] == pytest.approx(0.75)
    # under log loss the same factor gives 1/4 (tests/analyses/test_classification.py)
    plain = analyze(_rows(), tmp_path / "l", n_resamples=20, write_html=False)
    log = plain.tables["clf_stability"]
    assert log[(log["criterion"] == "eu") & (log["factor"] == "n_classes")]["W"].iloc[0] == (
        pytest.approx(0.25)
    )


def test_tau_of_the_log_and_brier_rankings_by_hand(tmp_path):
    table = clf_loss_agreement_table(_rows(), n_resamples=50)
    pooled = table[table["factor"] == "all"].set_index("criterion")
    # log: B .55 > A .5 > C .25; Brier: A .7 > B .6 > C .2. (A, B) discordant, (A, C) and
    # (B, C) concordant: τ = (2 − 1)/3
    assert pooled.loc["eu", "tau"] == pytest.approx(1 / 3)
    assert pooled.loc["eu", "n_methods"] == 3 and pooled.loc["eu", "n_instances"] == 4
    assert -1.0 <= pooled.loc["eu", "tau_low"] <= pooled.loc["eu", "tau_high"] <= 1.0
    # AU: .5, .6, .7 under log loss, .7, .6, .5 under Brier: every pair discordant
    assert pooled.loc["au", "tau"] == pytest.approx(-1.0)
    levels = table[(table["factor"] == "n_classes") & (table["criterion"] == "eu")]
    by_k = levels.set_index("level")["tau"]
    # K = 2: log A .8 > B .4 > C .1, Brier A .8 > B .5 > C .2: τ = 1. K = 3: log B .7 >
    # C .4 > A .2, Brier B .7 > A .6 > C .2: (A, C) discordant only, τ = 1/3
    assert by_k["2"] == pytest.approx(1.0) and by_k["3"] == pytest.approx(1 / 3)
    res = analyze(_rows(), tmp_path / "a", n_resamples=50, loss="brier", write_html=False)
    pd.testing.assert_frame_equal(res.tables["clf_loss_agreement_levels"], table)
    assert res.tables["clf_loss_agreement"]["tau"].tolist() == pytest.approx([1 / 3, -1.0])
    assert (tmp_path / "a" / "tables" / "clf_loss_agreement_levels.csv").is_file()
    # without the Brier columns: no table, the reason kept; the analysis under brier raises
    old = classification_rows()
    plain = analyze(old, tmp_path / "p", n_resamples=20, write_html=False)
    assert "clf_loss_agreement" not in plain.tables
    assert plain.skipped["classification_loss_agreement"].startswith("needs the Brier-score")
    with pytest.raises(UdbenchError, match="hold no brier metrics"):
        analyze(old, tmp_path / "q", n_resamples=20, loss="brier")
    with pytest.raises(UdbenchError, match="no rho_eu_risk_brier value"):
        clf_loss_agreement_table(old, n_resamples=10)


def test_which_loss_each_task_type_reads():
    both = {"has_regression": True, "has_classification": True}
    clf = {"has_regression": False, "has_classification": True}
    reg = {"has_regression": True, "has_classification": False}
    assert analysis_losses(None, None, **both) == ("squared", "log")
    assert analysis_losses("brier", None, **both) == ("squared", "brier")
    assert analysis_losses("log", None, **both) == ("log", "log")
    assert analysis_losses("crps", None, **both) == ("crps", "log")
    assert analysis_losses("crps", "brier", **both) == ("crps", "brier")
    assert analysis_losses("log", "brier", **both) == ("log", "brier")  # log score, Brier
    assert analysis_losses("brier", "brier", **both) == ("squared", "brier")
    assert analysis_losses("brier", None, **clf) == ("squared", "brier")
    assert analysis_losses(None, "brier", **clf) == ("squared", "brier")
    assert analysis_losses("crps", None, **reg) == ("crps", "log")
    errors = [
        (("crps", None, clf), "parameter '--loss' must be one of ['log', 'brier'] for "
         "classification results; got 'crps'"),
        (("brier", None, reg), "parameter '--loss' must be one of ['squared', 'crps', 'log']; "
         "got 'brier'"),
        (("hinge", None, both), "parameter '--loss' must be one of ['squared', 'crps', 'log', "
         "'brier'] (regression: ['squared', 'crps', 'log']; classification: ['log', "
         "'brier']); got 'hinge'"),
        ((None, "crps", both), "parameter '--clf-loss' must be one of ['log', 'brier']; got "
         "'crps'"),
        ((None, "brier", reg), "parameter '--clf-loss' must be left out: the results hold no "
         "classification row; got 'brier'"),
        (("brier", "log", both), "parameter '--clf-loss' must agree with --loss 'brier' or be "
         "left out; got 'log'"),
        (("log", "brier", clf), "parameter '--clf-loss' must agree with --loss 'log' or be "
         "left out; got 'brier'"),
    ]  # fmt: skip
    for (loss, clf_loss, kinds), msg in errors:
        with pytest.raises(UdbenchError) as info:
            analysis_losses(loss, clf_loss, component="analyze", **kinds)
        assert str(info.value) == f"analyze: {msg}"


def test_a_mixed_frame_keeps_its_regression_tables_under_brier(tmp_path):
    reg = fabricate_results(
        n_datasets=2,
        n_seeds=1,
        priors=("gp",),
        noises=("homoscedastic", "step"),
        coverages=("ood",),
        methods={"blr": ("linear", True), "gp": ("gp", True), "nn-ens": ("nn", False)},
        random_state=3,
    )
    mixed = pd.concat([reg, _rows()], ignore_index=True)
    res = analyze(mixed, tmp_path / "m", n_resamples=20, loss="brier", write_html=False)
    pd.testing.assert_frame_equal(res.tables["headline"], headline_table(reg, n_resamples=20))
    head = res.tables["clf_headline"].set_index("method")
    assert head["rho_eu_risk"].to_dict() == pytest.approx({"A": 0.7, "B": 0.6, "C": 0.2})
    with pytest.raises(UdbenchError, match="'--clf-loss' must agree with --loss 'brier'"):
        analyze(mixed, tmp_path / "e", n_resamples=20, loss="brier", clf_loss="log")


def test_cli_analyze_loss_brier(tmp_path, capsys):
    path = tmp_path / "results.parquet"
    rows = _rows()
    rows["cell_key"] = rows["task_id"] + "|" + rows["method"]
    rows.to_parquet(path)
    out = tmp_path / "an"
    args = ["analyze", str(path), "--out", str(out), "--n-resamples", "20"]
    assert main([*args, "--loss", "brier"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert text.startswith("3 methods;")
    assert "Kendall's W (classification, eu, n_classes): 0.750" in text
    assert "Kendall's τ, log-loss vs Brier-score ranking of the classifiers (ρ(EU, " in text
    assert "EU*_risk)): 0.333 [" in text
    csv = pd.read_csv(out / "tables" / "clf_headline.csv").set_index("method")
    assert csv["rho_eu_risk"].to_dict() == pytest.approx({"A": 0.7, "B": 0.6, "C": 0.2})
    assert main([*args, "--clf-loss", "log"]) == 0  # the default, spelled out
    assert "Kendall's W (classification, eu, n_classes): 0.250" in capsys.readouterr().out
    log = pd.read_csv(out / "tables" / "clf_headline.csv").set_index("method")
    assert log.loc["B", "rho_eu_risk"] == pytest.approx(np.mean([r[1] for r in RHO.values()]))
    assert main([*args, "--loss", "crps"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "parameter '--loss' must be one of ['log', 'brier'] for classification results" in err
    assert "got 'crps'" in err
    assert main([*args, "--clf-loss", "hinge"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "parameter '--clf-loss' must be one of ['log', 'brier']; got 'hinge'" in err
    assert main(["analyze", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--clf-loss" in help_text and "brier" in help_text
