"""Acceptance checks of reference posteriors pooled over many instances, and their verdicts
(SPEC §7).

Pooled (:func:`pool_checks`, from the per-instance summaries of
:func:`udbench.tasks.checks.acceptance_checks`): coverage over all points of many instances
with a percentile bootstrap interval that resamples whole instances (SPEC §7), the coverage a
correct posterior gives at those D and the randomization test of it; the pooled SBC
histogram's largest bin deviation from the exact expected shares; median and 95th percentile
of the relative MCSE over all points; median of the per-instance correlations; the number of
instances whose MC moments disagree with the exact ones and its binomial p-value; for MCMC
families (:func:`udbench.tasks.checks.mcmc_summary` of the stored sampler diagnostics) the
largest function-space split-R̂, the share of points with R̂ > 1.05, divergences, mean
acceptance, NUTS tree depth and the number of replaced seeds. :func:`gate_verdicts` turns one
family's pooled figures into the PASS/FAIL lines of ``udbench check``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from udbench._resampling import (
    DEFAULT_N_RESAMPLES,
    cluster_picks,
)
from udbench._seeding import make_rng
from udbench._validation import param_error
from udbench.priors import (
    COVERAGE_CHANGE_MAX,
    NO_RECORD_NEEDED,
    RHAT_THRESHOLD,
    SD_CHANGE_MEDIAN_MAX,
)
from udbench.tasks.checks import (
    GATE_LEVEL,
    MC_AGREE_LEVEL,
    N_SBC_BINS,
    sbc_expected_shares,
)

__all__ = ["gate_verdicts", "pool_checks", "truth_label"]


def truth_label(summaries: Sequence[dict[str, Any]]) -> str:
    """What the instances' checks rank: ``"f*"``, ``"π*"`` or ``"f* / π*"`` (a mix).

    A classification task's checks rank π* among the draws of π (its summary says
    ``"truth": "pi_star"``, docs/classification.md, "SBC and coverage of π*"); every other
    summary, and a ``gpc`` file made before that change, ranks f*.
    """
    kinds = {"π*" if s.get("truth") == "pi_star" else "f*" for s in summaries}
    return " / ".join(sorted(kinds)) if kinds else "f*"


def _mean_of(summaries: Sequence[dict[str, Any]], key: str) -> float | None:
    values = [float(s[key]) for s in summaries if key in s]
    return float(np.mean(values)) if values else None


def pool_checks(
    summaries: Sequence[dict[str, Any]],
    mcse_rel: Sequence[np.ndarray] | None = None,
    *,
    n_boot: int = DEFAULT_N_RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """Pool the acceptance checks of many instances (SPEC §7).

    Parameters
    ----------
    summaries : sequence of dict
        Per-instance ``summary`` dicts from :func:`acceptance_checks`, for MCMC families
        merged with :func:`~udbench.tasks.checks.mcmc_summary`.
    mcse_rel : sequence of ndarray, optional
        Per-instance per-point relative MCSE; without it the per-instance medians and
        95th percentiles are pooled by their median / maximum instead.
    n_boot : int
        Bootstrap resamples of whole instances (percentile interval, 95 %), and draws of the
        coverage test's randomization distribution.
    seed : int
        Seeds the bootstrap and randomization streams.

    Returns
    -------
    dict
        ``n_instances, n_points, coverage_90, coverage_90_ci`` ([lo, hi]: the SPEC §7
        bootstrap interval over instances; None for one instance), ``coverage_90_expected``
        (what a correct posterior covers at these instances' D, exactly:
        :func:`expected_coverage`, weighted by points), and from the instances'
        ``covered_90_null`` (:func:`coverage_counts`; all three None when an instance lacks
        it) the coverage test: ``coverage_90_null_range`` ([lo, hi]: 0.5 % and 99.5 %
        quantiles of the pooled coverage a correct posterior gives at these instances),
        ``coverage_90_p`` (two-sided randomization p-value) and ``coverage_90_judgeable``
        (whether any outcome could give p ≤ :data:`GATE_LEVEL`; False: too few instances
        or draws to judge); ``sbc_hist, sbc_max_bin_deviation`` (from the exact expected
        shares, :func:`sbc_expected_shares`, where every instance has ``n_draws``),
        ``mcse_var_median, mcse_var_p95, corr_mean_fstar_median``, ``truth`` (what was
        ranked, :func:`truth_label`: ``"f*"``, or ``"π*"`` for classification) and, where
        the instances carry them, ``mc_agree_fraction``, ``mc_n_disagree`` and
        ``mc_disagree_p`` (GP: the binomial tail P(X ≥ n_disagree),
        X ~ Binomial(n_instances, :data:`MC_AGREE_LEVEL`)); ``rhat_max`` (largest over
        instances) and
        ``n_rhat_above_1_05`` (instances whose ``rhat_max`` > 1.05); ``rhat_iid_max``
        (largest over instances of the R̂ that independent draws in their chain layout
        give); ``rhat_gate`` (any instance gated by the R̂ rule; False for HBART);
        ``rhat_n_points``
        (points with a finite R̂) and ``rhat_share_above_1_05`` (share of them with
        R̂ > 1.05; None when there are none); ``n_divergent`` (sum);
        ``accept_rate_mean``, ``tree_depth_mean``, ``share_at_max_tree_depth`` (means over
        instances); ``n_seed_replacements`` (sum) and ``n_instances_replaced``.

    Raises
    ------
    UdbenchError
        If ``summaries`` is empty.
    """
    if not summaries:
        raise param_error("pool_checks", "summaries", "hold at least one instance", 0)
    covered = np.array([s["covered_90"] for s in summaries], dtype=np.float64)
    npts = np.array([s["n_points"] for s in summaries], dtype=np.float64)
    k = len(summaries)
    rng = make_rng("pool_checks", "bootstrap", seed)
    idx = cluster_picks(rng, k, n_boot)  # whole instances, with replacement
    boot = covered[idx].sum(axis=1) / npts[idx].sum(axis=1)
    # the 2.5 / 97.5 % quantiles as written (percentile_interval's (1 - c) / 2 is 0.025 + 2e-17)
    ci = [float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))] if k > 1 else None
    hist = np.sum([np.asarray(s["sbc_hist"]) for s in summaries], axis=0)
    if all("n_draws" in s for s in summaries) and len(hist) == N_SBC_BINS:
        expected = np.sum(
            [s["n_points"] * sbc_expected_shares(int(s["n_draws"])) for s in summaries], axis=0
        )
        sbc_dev = float(np.max(np.abs((hist - expected) / hist.sum())))
    else:  # summaries without D (hand-made): the uniform 1/bins
        sbc_dev = float(np.max(np.abs(hist / hist.sum() - 1.0 / len(hist))))
    if mcse_rel is not None:
        allm = np.concatenate([np.asarray(a) for a in mcse_rel])
        mcse_med, mcse_p95 = float(np.median(allm)), float(np.quantile(allm, 0.95))
    else:
        mcse_med = float(np.median([s["mcse_var_rel_median"] for s in summaries]))
        mcse_p95 = float(np.max([s["mcse_var_rel_p95"] for s in summaries]))
    out: dict[str, Any] = {
        "n_instances": k,
        "n_points": int(npts.sum()),
        "coverage_90": float(covered.sum() / npts.sum()),
        "coverage_90_ci": ci,
        **_coverage_test(summaries, n_boot, seed),
        "sbc_hist": hist.tolist(),
        "sbc_max_bin_deviation": sbc_dev,
        "mcse_var_median": mcse_med,
        "mcse_var_p95": mcse_p95,
        "corr_mean_fstar_median": float(np.median([s["corr_mean_fstar"] for s in summaries])),
        "truth": truth_label(summaries),
    }
    rhat = [s["rhat_max"] for s in summaries if "rhat_max" in s]
    if rhat:  # MCMC families: largest split-R̂ and instances above the 1.05 threshold
        finite = np.asarray(rhat, dtype=np.float64)
        finite = finite[np.isfinite(finite)]
        # NaN when no instance has a finite R̂ (e.g. fewer than 4 draws per chain)
        out["rhat_max"] = float(finite.max()) if finite.size else float("nan")
        out["n_rhat_above_1_05"] = int(np.sum(finite > RHAT_THRESHOLD))
    iid = [float(s["rhat_iid_max"]) for s in summaries if "rhat_iid_max" in s]
    if iid:
        out["rhat_iid_max"] = float(np.nanmax(iid)) if np.isfinite(iid).any() else float("nan")
    with_points = [s for s in summaries if "rhat_n_points" in s]
    if with_points:
        n_pts = sum(int(s["rhat_n_points"]) for s in with_points)
        n_above = sum(int(s["rhat_n_above"]) for s in with_points)
        out["rhat_n_points"] = n_pts
        out["rhat_share_above_1_05"] = n_above / n_pts if n_pts else None
    gates = [bool(s["rhat_gate"]) for s in summaries if "rhat_gate" in s]
    if gates:  # True when any instance was gated by R̂ (BNN), False for HBART
        out["rhat_gate"] = any(gates)
    if any("n_divergent" in s for s in summaries):
        out["n_divergent"] = int(sum(int(s.get("n_divergent", 0)) for s in summaries))
    for key, name in (
        ("accept_rate", "accept_rate_mean"),
        ("tree_depth_mean", "tree_depth_mean"),
        ("share_at_max_tree_depth", "share_at_max_tree_depth"),
    ):
        value = _mean_of(summaries, key)
        if value is not None:
            out[name] = value
    if any("n_seed_replacements" in s for s in summaries):
        out["n_seed_replacements"] = int(sum(s.get("n_seed_replacements", 0) for s in summaries))
        out["n_instances_replaced"] = int(sum(bool(s.get("seed_replaced")) for s in summaries))
    agree = [bool(s["mc_agree"]) for s in summaries if "mc_agree" in s]
    if agree:
        import scipy.stats  # lazy: ~1 s to import

        n_bad = len(agree) - sum(agree)
        out["mc_agree_fraction"] = float(np.mean(agree))
        out["mc_n_disagree"] = n_bad
        # each instance of a correct reference disagrees with probability at most
        # MC_AGREE_LEVEL (Bonferroni), independently: P(X >= n_bad), X ~ Bin(k, level)
        out["mc_disagree_p"] = float(scipy.stats.binom.sf(n_bad - 1, len(agree), MC_AGREE_LEVEL))
    return out


def _coverage_test(summaries: Sequence[dict[str, Any]], n_draw: int, seed: int) -> dict[str, Any]:
    """The pooled coverage against what a correct posterior gives: a randomization test.

    Under a correct posterior each instance's observed count ``covered_90`` is a uniform pick
    among its D + 1 exchangeable counts (``covered_90`` and ``covered_90_null``,
    :func:`coverage_counts`), independently across instances. The pooled count's null
    distribution is sampled by picking one of the D + 1 counts per instance, ``n_draw``
    times; the two-sided p-value is 2·min of the one-sided ones (1 + #{T_b ≤ T})/(n_draw + 1)
    and (1 + #{T_b ≥ T})/(n_draw + 1), valid at any number of instances (Phipson & Smyth
    2010). Whether a FAIL is attainable at all is exact: the smallest one-sided p-value any
    outcome can have is the probability that every instance shows its smallest (largest)
    count.
    """
    expected = sum(s["n_points"] * float(s.get("coverage_90_expected", np.nan)) for s in summaries)
    n_points = sum(int(s["n_points"]) for s in summaries)
    out: dict[str, Any] = {
        "coverage_90_expected": expected / n_points if np.isfinite(expected) else None,
        "coverage_90_null_range": None,
        "coverage_90_p": None,
        "coverage_90_judgeable": None,
    }
    if not all("covered_90_null" in s for s in summaries):
        return out
    rng = make_rng("pool_checks", "coverage-null", seed)
    observed = float(sum(int(s["covered_90"]) for s in summaries))
    null = np.zeros(int(n_draw), dtype=np.float64)
    log_p_min = log_p_max = 0.0
    for s in summaries:
        counts = np.concatenate([[int(s["covered_90"])], np.asarray(s["covered_90_null"])])
        null += counts[rng.integers(0, counts.size, size=int(n_draw))]
        log_p_min += float(np.log(np.mean(counts == counts.min())))
        log_p_max += float(np.log(np.mean(counts == counts.max())))
    p_lo = (1.0 + np.sum(null <= observed)) / (n_draw + 1.0)
    p_hi = (1.0 + np.sum(null >= observed)) / (n_draw + 1.0)
    lo, hi = np.quantile(null / n_points, [GATE_LEVEL / 2, 1 - GATE_LEVEL / 2])
    out["coverage_90_null_range"] = [float(lo), float(hi)]
    out["coverage_90_p"] = float(min(1.0, 2.0 * min(p_lo, p_hi)))
    out["coverage_90_judgeable"] = bool(
        2.0 * float(np.exp(min(log_p_min, log_p_max))) <= GATE_LEVEL
        and 2.0 / (n_draw + 1.0) <= GATE_LEVEL
    )
    return out


def _verdict(passed: bool) -> str:
    return "pass" if passed else "FAIL"


def _coverage_verdict(stats: dict[str, Any]) -> tuple[str, str, str, str]:
    """(check, figure, threshold, verdict) of the pooled coverage (see :func:`gate_verdicts`)."""
    figure = f"{stats['coverage_90']:.3f}"
    expected, null = stats.get("coverage_90_expected"), stats.get("coverage_90_null_range")
    if expected is not None and null is not None:
        figure += f" (correct posterior: {expected:.3f}, 99 % range [{null[0]:.3f}, {null[1]:.3f}])"
    elif expected is not None:
        figure += f" (correct posterior: {expected:.3f})"
    threshold = (
        "inside what a correct posterior gives at these D "
        f"(randomization test, p > {GATE_LEVEL:.0%})"
    )
    p = stats.get("coverage_90_p")
    if p is None:
        verdict = "not judged (no null counts)"
    elif not stats.get("coverage_90_judgeable"):
        verdict = "too few instances to judge"
    else:
        verdict = _verdict(float(p) > GATE_LEVEL)
    return "coverage 90 %", figure, threshold, verdict


def record_verdict(val: dict[str, Any]) -> str:
    """ "pass" or "FAIL" of a preset validation summary
    (:func:`udbench.priors.validation_summary`), with why the record may not validate the
    tasks: other sampler settings, another numerics version, or none named."""
    caveats = []
    if not val.get("settings_match", True):
        caveats.append("record made with other sampler settings")
    if val.get("numerics_match") is False:
        caveats.append(f"record made under numerics version {val.get('numerics_version')}")
    elif "numerics_match" in val and val["numerics_match"] is None:
        caveats.append("record names no numerics version")
    verdict = _verdict(bool(val["passed"]))
    return verdict + (f" ({'; '.join(caveats)})" if caveats else "")


def gate_verdicts(stats: dict[str, Any], *, approximate: bool = False) -> list[dict[str, str]]:
    """Verdict per SPEC §7 check of one family's pooled figures, with the threshold beside it.

    Like ArviZ's summaries flag ``r_hat``, every figure :func:`pool_checks` reports is shown
    with the rule it is held to, and the figures SPEC §7 records without a threshold are
    marked ``"not gated"`` rather than left for the reader to judge:

    - coverage of the central 90 % interval: judged against the coverage a correct
      posterior gives at the instances' D (exactly (D + 1 − 2k)/(D + 1),
      :func:`expected_coverage`) by the randomization test of :func:`pool_checks`: FAIL
      when its two-sided p-value is ≤ :data:`GATE_LEVEL` (1 %), "too few instances to
      judge" when no outcome could reach that (e.g. one instance at D = 40), pass
      otherwise; a correct posterior fails with probability at most 1 % at any number of
      instances. The bootstrap interval of SPEC §7 is reported, not gated;
    - MC = exact (GP): each instance's Monte Carlo mean and variance are tested against the
      exact moments (Bonferroni, family-wise level 1 % per instance,
      :func:`acceptance_checks`), so a correct reference has each instance disagree with
      probability at most 1 %; FAIL when the number that disagree is improbable for that,
      P(Binomial(n, 0.01) ≥ n_disagree) ≤ 1 % (1 of 1, 3 of 24, 8 of 240, 18 of 960);
    - function-space split-R̂ ≤ 1.05 at every evaluation point where the family is gated
      (BNN; rejected seeds were replaced at generation), recorded but not gated for HBART;
    - warm-up sensitivity (MCMC presets): the stored validation record of each fidelity
      (|Δ coverage| < 0.005 and median |ΔSD|/SD ≤ 5 %, SPEC §7);
    - SBC largest bin deviation, relative MCSE of σ_f² and corr(posterior mean, f*): not
      gated (SPEC §7 gives no threshold).

    Parameters
    ----------
    stats : dict
        One family's entry of ``udbench check --json`` (:func:`pool_checks` output, plus
        ``preset_validation`` for MCMC families).
    approximate : bool, default False
        The instances' reference posterior is approximate (``Task.reference_exact`` False:
        a non-Gaussian noise mode conditioned with a Gaussian likelihood); the calibration
        checks are not expected to hold, so every verdict is
        ``"not gated (approximate reference)"``.

    Returns
    -------
    list of dict
        One ``{"check", "figure", "threshold", "verdict"}`` per check (all strings);
        ``verdict`` is ``"pass"``, ``"FAIL"``, ``"too few instances to judge"``,
        ``"not judged (no null counts)"``, ``"not gated"``, ``"not validated"``,
        :data:`~udbench.priors.NO_RECORD_NEEDED` (a BNN preset without a record; with one,
        ``"not a gate (…)"``: SPEC §7 gates BNN instances by split-R̂) or, with
        ``approximate``, ``"not gated (approximate reference)"``.
    """
    out: list[dict[str, str]] = []

    def add(check: str, figure: str, threshold: str, verdict: str) -> None:
        if approximate:
            verdict = "not gated (approximate reference)"
        out.append({"check": check, "figure": figure, "threshold": threshold, "verdict": verdict})

    add(*_coverage_verdict(stats))
    n_bad = stats.get("mc_n_disagree")
    if n_bad is not None:
        n = int(stats["n_instances"])
        add(
            "MC = exact moments",
            f"{n - int(n_bad)} / {n} instances agree",
            f"disagreeing instances within Binomial(n, {MC_AGREE_LEVEL:.0%}): p > {GATE_LEVEL:.0%}",
            _verdict(float(stats["mc_disagree_p"]) > GATE_LEVEL),
        )
    if "rhat_max" in stats:
        rhat = float(stats["rhat_max"])
        figure = "–" if not np.isfinite(rhat) else f"max {rhat:.4f}"
        if stats.get("rhat_gate"):
            verdict = _verdict(bool(np.isfinite(rhat) and rhat <= RHAT_THRESHOLD))
            iid = float(stats.get("rhat_iid_max", float("nan")))
            if (
                verdict == "FAIL"
                and np.isfinite(iid)
                and RHAT_THRESHOLD < iid
                and rhat <= iid + 0.01
            ):
                # too few draws per chain: independent draws would fail as much (smoke
                # layouts); an R̂ above that is chains that disagree, and stays a plain FAIL
                verdict += (
                    f" (independent draws in this chain layout give max R̂ ≈ {iid:.3f}: too "
                    "few draws per chain to judge)"
                )
            add("split-R̂ (function space)", figure, f"≤ {RHAT_THRESHOLD} at every point", verdict)
        else:
            add("split-R̂ (function space)", figure, "recorded only (SPEC §7)", "not gated")
    for fidelity, val in (stats.get("preset_validation") or {}).items():
        threshold = f"|Δcov| < {COVERAGE_CHANGE_MAX}, median |ΔSD|/SD ≤ {SD_CHANGE_MEDIAN_MAX:.0%}"
        gated_per_instance = bool(stats.get("rhat_gate"))  # BNN: no preset record needed
        if val is None:
            none = NO_RECORD_NEEDED if gated_per_instance else "not validated"
            add(f"warm-up sensitivity ({fidelity})", "–", threshold, none)
            continue
        dc, sd = val.get("coverage_change"), val.get("sd_change_median")
        figure = (
            f"Δcov {'–' if dc is None else format(dc, '+.4f')}, "
            f"ΔSD {'–' if sd is None else format(sd, '.3f')}"
        )
        verdict = record_verdict(val)
        if gated_per_instance:
            verdict = f"not a gate ({verdict})"
        add(f"warm-up sensitivity ({fidelity})", figure, threshold, verdict)
    add(
        "SBC largest bin deviation",
        f"{stats['sbc_max_bin_deviation']:.4f}",
        "none (deviation from the exact shares at D)",
        "not gated",
    )
    add(
        "MCSE σ_f² relative (median / p95)",
        f"{stats['mcse_var_median']:.3f} / {stats['mcse_var_p95']:.3f}",
        "none",
        "not gated",
    )
    truth = stats.get("truth", "f*")
    add(
        f"corr(mean, {truth}) median", f"{stats['corr_mean_fstar_median']:.3f}", "none", "not gated"
    )
    return out
