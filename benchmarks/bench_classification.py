"""Cost of a latent-GP classification instance and of the four first classifiers.

One instance at kin8nm size (d = 8, n = 3136 balanced training inputs, 1500 evaluation
points, K = 3, ``u-shaped`` temperature at the ``medium`` difficulty): f* drawn from the prior
at (eval, train), labels drawn, the reference posterior by elliptical slice sampling at the
chosen fidelity (default ``standard``, D = 1000). Prints the sampler's wall seconds (chains,
compilation included; then the evaluation latents), the function-space R̂ and the bulk ESS of π
per sampler second (median and smallest over the 4500 (point, class) variables), and the
fit + predict seconds of each classifier on the same task with its default configuration
(``--smoke-methods``: the smoke configurations).

``--scale s`` < 1 shrinks n and n_eval (a loaded machine); minutes per instance are then
also extrapolated to full size with the chains' cost ∝ n² (one (n × n) product per
iteration) and the evaluation latents ∝ n·n_eval·D, and the line says so. Since the
momenta are drawn in blocks (gpc numerics version 2) this is an **upper bound**, not an
estimate: at small n the per-iteration work that grows more slowly than n² dominates
(measured: 10.2 min extrapolated from ``--scale 0.25`` against 1.8 min measured at full size,
docs/classification.md); measure at full size for the headline.
``--reference``, ``--thin`` and ``--n-warmup`` override the preset's sampler settings.
``--skip-sampler`` times only the classifiers (no reference posterior: no targets, and the
last line is not printed). ``--default-kernel`` uses the Matérn-3/2 kernel at its fixed
starting values instead of the dataset's fitted one (skips a GP fit that is not cached yet;
mixing then differs).

Usage::

    UDBENCH_DATA_DIR=... nice -n 5 uv run python benchmarks/bench_classification.py
        [--fidelity standard] [--scale 1.0] [--smoke-methods] [--skip-methods] [--skip-sampler]
        [--reference laplace-full|laplace|prior] [--thin T] [--n-warmup W]

Before it: ``clf_methods_cpu_seconds_per_instance: <x>`` (CPU seconds of every classifier's
fit + predict on the instance, at the size measured; issue 38). Last line:
``clf_standard_minutes_per_instance: <x>`` (full size; extrapolated when ``--scale`` < 1); with
``--skip-sampler`` the methods' line is the last.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

N_TRAIN, N_EVAL, K = 3136, 1500, 3


def _methods(args, X_train, labels, X_eval, prob_draws, pi_star) -> float:  # type: ignore[no-untyped-def]
    """Fit + predict seconds of every classifier; mean AU/EU beside the targets when
    ``prob_draws`` is given. Returns the CPU seconds (this process, all its threads) of all
    classifiers' fit + predict on the instance."""
    from udbench.methods.classifiers import CLASSIFIERS, make_classifier
    from udbench.risk import classification_oracle_targets

    cpu_total = 0.0
    for name in CLASSIFIERS:
        method = make_classifier(name, smoke=args.smoke_methods)
        c2 = time.process_time()
        t2 = time.perf_counter()
        method.fit(X_train, labels, n_classes=K)
        t3 = time.perf_counter()
        pred = method.predict(X_eval)
        t4 = time.perf_counter()
        cpu = time.process_time() - c2
        cpu_total += cpu
        line = (
            f"method {name}: fit {t3 - t2:.1f} s, predict {t4 - t3:.1f} s (CPU {cpu:.1f} s); "
            f"mean AU {pred.aleatoric.mean():.3f}, EU {pred.epistemic.mean():.4f}"
        )
        if prob_draws is not None:
            tg = classification_oracle_targets(prob_draws, pred.probs, pi_star)
            line += f" (AU* {tg.au.mean():.3f}, EU*_risk {tg.eu_risk.mean():.4f})"
        print(line, flush=True)
    return cpu_total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", default="kin8nm")
    parser.add_argument("--fidelity", default="standard")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--mode", default="u-shaped")
    parser.add_argument("--difficulty", default="medium")
    parser.add_argument("--default-kernel", action="store_true")
    parser.add_argument("--smoke-methods", action="store_true")
    parser.add_argument("--skip-methods", action="store_true")
    parser.add_argument("--skip-sampler", action="store_true")
    parser.add_argument(
        "--reference", default=None, help="the sampler's reference (default: the preset's)"
    )
    parser.add_argument("--thin", type=int, default=None, help="default: the preset's")
    parser.add_argument("--n-warmup", type=int, default=None, help="default: the preset's")
    args = parser.parse_args()

    from udbench._seeding import make_rng
    from udbench.data import load_covariates
    from udbench.design import select_training_inputs
    from udbench.design.temperature import TemperatureModel
    from udbench.priors.gp import GPPrior, build_prior
    from udbench.priors.gp.fit import default_kernel_hyper
    from udbench.priors.gp_classification import (
        GPClassificationPrior,
        class_probabilities,
        draw_labels,
    )

    t0 = time.perf_counter()
    cov = load_covariates(args.dataset)
    if args.default_kernel:
        gp = GPPrior(default_kernel_hyper(cov.spec.kernel_family, cov.X.shape[1]), 1.0)
    else:
        gp = build_prior(cov, args.fidelity)
    kw = {
        k: v
        for k, v in (
            ("reference", args.reference),
            ("thin", args.thin),
            ("n_warmup", args.n_warmup),
        )
        if v is not None
    }
    prior = GPClassificationPrior(gp, K, args.fidelity, dataset=cov.key, sampler_kwargs=kw)
    print(f"prior built in {time.perf_counter() - t0:.1f} s (scale a = {gp.scale:.4g})")
    n_train = max(round(cov.spec.n_train * args.scale), 10)
    n_eval = max(round(len(cov.eval_idx) * args.scale), 10)
    rng = make_rng("bench-classification", cov.key)
    train_idx = select_training_inputs(cov, "balanced", rng, n=n_train)
    eval_rows = np.sort(rng.choice(len(cov.eval_idx), size=n_eval, replace=False))
    X_train, X_eval = cov.X[train_idx], cov.X[cov.eval_idx][eval_rows]
    temp = TemperatureModel(
        cov, args.mode, prior.marginal_sd(cov.X[cov.eval_idx]), K, args.difficulty
    )
    print(
        f"temperature: level c = {temp.level:.4f}, pool mean Bayes error "
        f"{temp.pool_bayes_error:.4f}, mean expected entropy {temp.pool_entropy:.4f} nats"
    )
    tau_train, tau_eval = temp.temperature(X_train), temp.temperature(X_eval)
    f_star = prior.sample(np.vstack([X_eval, X_train]), key=1)[0]
    pi_star = class_probabilities(f_star, np.concatenate([tau_eval, tau_train]))
    labels = draw_labels(pi_star[n_eval:], make_rng("bench-classification", "labels"))
    D = 1000
    print(f"instance: n = {n_train}, n_eval = {n_eval}, K = {K}, D = {D}, {args.fidelity}")
    if args.skip_sampler:
        cpu = _methods(args, X_train, labels, X_eval, None, pi_star[:n_eval])
        print(f"clf_methods_cpu_seconds_per_instance: {cpu:.1f}")
        return
    t1 = time.perf_counter()
    post = prior.condition(X_train, labels, tau_train, X_eval, 7, D, tau_eval=tau_eval)
    wall = time.perf_counter() - t1
    d = post.diagnostics
    print(
        f"sampler: {d['sampler_seconds']:.1f} s chains ({d['n_chains']} × "
        f"({d['n_warmup']} + {d['draws_per_chain']}·{d['thin']}) iterations, "
        f"{d['chain_iterations_per_second']:.1f} chain-iterations/s), "
        f"{d['conditional_seconds']:.1f} s evaluation latents, {wall:.1f} s with diagnostics"
    )
    print(
        f"convergence: R̂ max {d['rhat_max']:.4f} (median {d['rhat_median']:.4f}; independent "
        f"draws give max {d['rhat_iid_max']:.4f}), {d['rhat_n_above']} of {n_eval * K} above "
        f"1.05; R̂ max at training latents {d['rhat_max_train']:.4f}"
    )
    ess_s = d["ess_bulk_median"] / d["sampler_seconds"]
    print(
        f"ESS of π: median {d['ess_bulk_median']:.0f}, min {d['ess_bulk_min']:.0f}; "
        f"ESS/s median {ess_s:.3f}, min {d['ess_bulk_min'] / d['sampler_seconds']:.3f}"
    )
    print(
        f"reference {d['reference']}: {d['mode_iterations']} mode iterations, mode "
        f"log-lik {d['mode_loglik']:.2f}, max |grad| {d['mode_grad_max']:.2e}, "
        f"mean curvature {d['reference_curvature_mean']:.4f}, fit {d['reference_seconds']:.1f} s"
    )
    print(
        f"slice: {d['subiter_mean_kept']:.2f} likelihood evaluations per iteration, "
        f"|θ| mean {d['theta_abs_mean']:.3f}; log-lik halves {d['loglik_mean_first_half']:.1f} "
        f"/ {d['loglik_mean_second_half']:.1f}"
    )
    coverage = np.mean(
        (np.quantile(post.latent_eval, 0.05, axis=0) <= f_star[:n_eval])
        & (f_star[:n_eval] <= np.quantile(post.latent_eval, 0.95, axis=0))
    )
    print(f"coverage of f* by central 90 % intervals at the evaluation points: {coverage:.3f}")

    if not args.skip_methods:
        cpu = _methods(args, X_train, labels, X_eval, post.prob_draws, pi_star[:n_eval])
        # every classifier's fit + predict on this instance (at the instance's size)
        print(f"clf_methods_cpu_seconds_per_instance: {cpu:.1f}")

    chains = d["sampler_seconds"]
    cond = d["conditional_seconds"]
    if args.scale < 1.0:
        f_n = (N_TRAIN / n_train) ** 2
        f_c = (N_TRAIN / n_train) * (N_EVAL / n_eval)
        minutes = (chains * f_n + cond * f_c + (wall - chains - cond)) / 60.0
        print(
            f"extrapolated to n = {N_TRAIN}, n_eval = {N_EVAL} from scale {args.scale} "
            "(an upper bound: every chain cost scaled as n²; measure at full size)"
        )
    else:
        minutes = wall / 60.0
    print(f"clf_{args.fidelity}_minutes_per_instance: {minutes:.2f}")


if __name__ == "__main__":
    main()
