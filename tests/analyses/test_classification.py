"""The classification analyses on hand-made results frames, against values computed by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from _classification_results import DELTA, METHODS, classification_rows
from _results import fabricate_results
from udbench._validation import UdbenchError
from udbench.analyses import analyze, headline_table
from udbench.analyses._common import row_task_types, rows_of_task_type
from udbench.analyses.classification import (
    classification_context,
    classification_entanglement_table,
    classification_headline_table,
    classification_proxy_table,
    classification_shell_table,
    classification_stability_table,
    prepare_classification,
)
from udbench.evaluation.selective import selective_auc, selective_columns
from udbench.report.html import write_report


def test_task_types_come_from_the_column_else_the_prior_family():
    df = pd.DataFrame({"family": ["gp", "gpc", "gp"], "task_type": [None, None, "classification"]})
    assert row_task_types(df).tolist() == ["regression", "classification", "classification"]
    assert rows_of_task_type(df, "regression").index.tolist() == [0]
    reg = pd.DataFrame({"family": ["gp", "hbart"]})
    assert rows_of_task_type(reg, "regression") is reg


def test_instances_carry_k_and_difficulty():
    frame = prepare_classification(classification_rows())
    assert frame.instances["n_classes"].tolist() == ["2", "2", "3", "3"]
    assert frame.instances["difficulty"].tolist() == ["medium", "hard", "medium", "hard"]
    with pytest.raises(UdbenchError, match="no classification row"):
        prepare_classification(fabricate_results(n_datasets=1, n_seeds=1, priors=("gp",)))


def test_kendall_w_across_k_by_hand():
    # K = 2 means: A .8, B .4, C .1; K = 3: A .2, B .7, C .4. Ranks (ascending) 3,2,1 and
    # 1,3,2: rank sums 4, 5, 3 around m(k+1)/2 = 4, S = 2, W = 12 S / (m² (k³ − k)) = 1/4.
    table = classification_stability_table(
        classification_rows(), factors=("n_classes",), n_resamples=50
    )
    eu = table[table["criterion"] == "eu"].iloc[0]
    assert eu["W"] == pytest.approx(0.25)
    assert (eu["n_levels"], eu["n_methods"], eu["levels"]) == (2, 3, "2, 3")
    assert eu["W_low"] <= eu["W"] + 1e-12 and eu["W_high"] >= eu["W"] - 1e-12
    # ρ(AU, AU*) is 0.5, 0.6, 0.7 everywhere: both levels rank alike, W = 1 (the homoscedastic
    # temperature mode keeps its AU values: AU* varies with x there too)
    au = table[table["criterion"] == "au"].iloc[0]
    assert au["W"] == pytest.approx(1.0)
    with pytest.raises(UdbenchError, match="factors"):
        classification_stability_table(classification_rows(), factors=("family",))


def test_entanglement_means_and_a_zero_width_interval_with_one_dataset():
    rows = classification_rows(datasets=("ds0",) * 4)
    table = classification_entanglement_table(rows, bootstrap_unit="dataset", n_resamples=40)
    got = table.set_index("method")
    for i, m in enumerate(METHODS):
        mean = np.mean([DELTA[t][i] for t in DELTA])  # every temperature mode counts
        assert got.loc[m, "delta_ent_risk"] == pytest.approx(mean)
        # one dataset resampled whole: every replicate is the data, the interval is its centre
        assert got.loc[m, "delta_ent_risk_low"] == pytest.approx(mean)
        assert got.loc[m, "delta_ent_risk_high"] == pytest.approx(mean)
        assert got.loc[m, "delta_ent_risk_n"] == 4
    # sorted by |Δ_ent|: A .1, B .125, C .15
    assert table["method"].tolist() == ["A", "B", "C"]
    const = classification_entanglement_table(classification_rows(constant=("C",)), n_resamples=20)
    assert const["method"].tolist() == ["A", "B"]


def test_headline_adds_the_label_metrics():
    table = classification_headline_table(classification_rows(), n_resamples=30)
    got = table.set_index("method")
    # pooled mean ρ(EU, EU*_risk): A .5, B .55, C .25 → rank B, A, C
    assert table["method"].tolist() == ["B", "A", "C"]
    assert got.loc["A", "rho_eu_risk"] == pytest.approx(0.5)
    assert got.loc["B", "accuracy"] == pytest.approx(0.8)
    assert got.loc["C", "nll"] == pytest.approx(3.0)
    assert got.loc["C", "rho_au_n"] == 4  # not restricted to heteroscedastic temperature


def test_proxy_agreement_by_hand():
    table = classification_proxy_table(classification_rows(), n_resamples=50)
    pooled = table[(table["factor"] == "all") & (table["criterion"] == "eu")].set_index("proxy")
    # oracle means A .5, B .55, C .25; −NLL ranks A > B > C: pairs (A,B) discordant,
    # (A,C), (B,C) concordant, τ = (2 − 1)/3
    assert pooled.loc["nll", "tau"] == pytest.approx(1 / 3)
    assert pooled.loc["accuracy", "tau"] == pytest.approx(1.0)  # .6, .8, .5: the oracle order
    assert pooled.loc["ece", "tau"] == pytest.approx(1.0)  # −ECE: B > A > C
    assert pooled.loc["brier", "tau"] == pytest.approx(-1 / 3)  # −Brier: C > B > A
    assert np.isnan(pooled.loc["selective_auc_eu", "tau"])
    assert "did not store" in pooled.loc["selective_auc_eu", "note"]
    k2 = table[(table["factor"] == "n_classes") & (table["level"] == "2")]
    k2 = k2[k2["criterion"] == "eu"].set_index("proxy")
    assert k2.loc["nll", "tau"] == pytest.approx(1.0)  # K = 2: A .8 > B .4 > C .1
    lo, hi = pooled.loc["nll", ["tau_low", "tau_high"]]
    assert -1.0 <= lo <= hi <= 1.0


def test_proxy_figure_labels_proxies_as_the_table_does():
    from udbench.analyses.proxies import proxy_agreement_figure

    rows = classification_rows()
    rows["selective_auc_eu"] = rows["accuracy"] + 0.01 * rows["rho_eu_risk"]
    table = classification_proxy_table(rows, n_resamples=10)
    fig = proxy_agreement_figure(table)
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert "selective AUC (EU)" in ticks and "Brier" in ticks
    assert not [t for t in ticks if "_" in t]


def test_shell_table_needs_shell_columns():
    with pytest.raises(UdbenchError, match="shell0"):
        classification_shell_table(classification_rows(), n_resamples=10)
    rows = classification_rows()
    for s in range(5):
        rows[f"rho_eu_risk_shell{s}"] = rows["rho_eu_risk"] - 0.1 * s
    table = classification_shell_table(rows, n_resamples=10).set_index("method")
    assert table.loc["A", "shell0"] == pytest.approx(0.5)
    assert table.loc["A", "outer_minus_inner"] == pytest.approx(-0.4)


def test_selective_auc_by_hand():
    # correct = [1, 0, 1, 0]; rejecting by u = [.1, .9, .5, .7]: points 1, 3, 2, 0.
    probs = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.7, 0.3]])
    labels = np.array([0, 1, 1, 1])
    u = np.array([0.1, 0.9, 0.5, 0.7])
    # kept accuracy: 2/4, 2/3, 2/2, 1/1
    assert selective_auc(probs, labels, u) == pytest.approx((0.5 + 2 / 3 + 1 + 1) / 4)
    # constant uncertainty: every kept set has the expected accuracy 1/2
    assert selective_auc(probs, labels, np.zeros(4)) == pytest.approx(0.5)
    # ties: correct = [1, 0, 1, 1], u = [1, 1, 0, 0]: 3/4, (3 − ½)/3, 2/2, (3 − 1 − 1)/1
    lab2 = np.array([0, 1, 1, 0])
    assert selective_auc(probs, lab2, np.array([1.0, 1.0, 0.0, 0.0])) == pytest.approx(43 / 48)
    # Brier: per point (0.02, 0.72, 0.08, 0.98), reject 3 then 1 then 2 by u = [0, 2, 1, 3]
    b = selective_auc(probs, labels, np.array([0.0, 2.0, 1.0, 3.0]), score="brier")
    assert b == pytest.approx((1.8 / 4 + 0.82 / 3 + 0.10 / 2 + 0.02) / 4)


def test_selective_columns_and_errors():
    probs = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8], [0.7, 0.3]])
    labels = np.array([0, 1, 1, 1])
    au, eu = np.array([0.0, 0.0, 0.5, 0.0]), np.array([0.1, 0.9, 0.0, 0.7])
    cols = selective_columns(probs, labels, au, eu)
    assert cols["selective_auc_eu"] == pytest.approx(selective_auc(probs, labels, eu))
    assert cols["selective_auc_total"] == pytest.approx((0.5 + 2 / 3 + 1 + 1) / 4)
    with pytest.raises(UdbenchError, match="score"):
        selective_auc(probs, labels, eu, score="nll")
    with pytest.raises(UdbenchError, match="labels"):
        selective_auc(probs, np.array([0, 1, 2, 0]), eu)
    with pytest.raises(UdbenchError, match="uncertainty"):
        selective_auc(probs, labels, np.array([0.0, np.nan, 0.0, 0.0]))


def test_analyze_runs_each_analysis_on_its_task_type(tmp_path):
    reg = fabricate_results(
        n_datasets=2,
        n_seeds=1,
        priors=("gp",),
        noises=("homoscedastic", "step"),
        coverages=("ood",),
        methods={"blr": ("linear", True), "gp": ("gp", True), "nn-ens": ("nn", False)},
        random_state=3,
    )
    mixed = pd.concat([reg, classification_rows()], ignore_index=True)
    res = analyze(mixed, tmp_path / "mixed", n_resamples=20, write_html=True)
    # the regression tables see the regression rows only: as on those rows alone
    alone = headline_table(reg, n_resamples=20)
    pd.testing.assert_frame_equal(res.tables["headline"], alone)
    assert res.tables["clf_headline"]["method"].tolist() == ["B", "A", "C"]
    assert res.skipped["classification_shells"].startswith("needs per-shell ρ")
    titles = [s.title for s in res.sections]
    assert "Classification: EU and AU quality per classifier" in titles
    assert titles.index("Classification: entanglement") > titles.index("Entanglement")
    page = res.html.read_text(encoding="utf-8")
    assert "4 classification instances, 3 methods" in page
    # the report's "Classification" sections: there with classification rows, not without
    clf_titles = [s.title for s in res.sections if s.task_type == "classification"]
    assert clf_titles and all(t.startswith("Classification") for t in clf_titles)
    assert all(s.task_type == "regression" for s in res.sections if s.title not in clf_titles)
    report = write_report(mixed, tmp_path / "rep", sections=res.sections)
    text = report.read_text(encoding="utf-8")
    # regression sections before the Classification part, classification ones inside it
    part = text.index("<h2>Classification</h2>")
    assert text.index("<h2>Classification: entanglement</h2>") > part
    assert text.index("<h2>Entanglement</h2>") < part
    plain = analyze(reg, tmp_path / "reg", n_resamples=20, write_html=False)
    assert not [s for s in plain.sections if s.title.startswith("Classification")]
    assert plain.skipped["classification"] == "needs classification rows"
    only = analyze(classification_rows(), tmp_path / "clf", n_resamples=20, write_html=False)
    assert only.skipped["headline"] == "needs regression rows"
    assert set(only.tables) >= {"clf_stability", "clf_proxy_agreement_levels"}
    ctx = classification_context(classification_rows(), n_resamples=20)
    assert ctx[1].n_resamples == 20
