"""The sampler of :mod:`udbench.priors.gp_classification`: elliptical slice sampling of the
training contrasts around a Gaussian reference (BlackJAX), and the posterior it returns.

The contrast basis, the contrasts' log-likelihood and its derivatives, the Laplace-type
reference, the vmapped chains, and the :class:`ESSDiagnostics` and
:class:`ClassificationPosterior` records (the formulas: the public module's docstring).
Re-exported by :mod:`udbench.priors.gp_classification`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg
import scipy.special

from udbench.priors._gpc_likelihood import check_n_classes
from udbench.priors.gp.linalg import add_diag, chol_jitter, solve_lower
from udbench.priors.gp.linalg import xp as _xp
from udbench.priors.mcmc import MCMCDiagnostics

#: Relative stopping tolerance of the Newton mode of ``reference="laplace-full"``: largest
#: change of the contrasts below MODE_TOL·max(1, max|v|) (:func:`_reference_full`).
MODE_TOL: float = 1e-9


# --------------------------------------------------------------------------------------
# Elliptical slice sampling of the training latents (BlackJAX)
# --------------------------------------------------------------------------------------
def contrast_basis(n_classes: int) -> np.ndarray:
    """The orthonormal Helmert matrix Q (K, K) whose first row is (1, …, 1)/√K (SciPy).

    u = Q f maps the K class latents at a point to their *shift* u₀ = Σ_k f_k/√K and K − 1
    orthonormal *contrasts* u₁…u_{K−1}; f = Qᵀu. Independent GP latents with a common kernel
    stay independent with that kernel under the rotation, and softmax(f/τ) depends on the
    contrasts alone, so the shift's posterior is its prior (module docstring).
    """
    return np.asarray(scipy.linalg.helmert(check_n_classes("contrast_basis", n_classes), True))


def _contrast_loglik(
    v: jax.Array, labels: jax.Array, inv_tau: jax.Array, Q2: jax.Array
) -> jax.Array:
    """Σ_i log softmax(Q₂ᵀv_i / τ_i)[y_i] for contrasts v (n, K − 1)."""
    logp = jax.nn.log_softmax((v @ Q2) * inv_tau[:, None], axis=1)
    return jnp.sum(jnp.take_along_axis(logp, labels[:, None], axis=1))


#: Most ESS iterations whose momenta are drawn together (one product A Z, one read of the
#: reference's factor, per block; :func:`_run_chains`). Bounds the block's memory.
MOMENTUM_BLOCK: int = 50


def _momentum_block(
    ops: dict[str, jax.Array], key: jax.Array, n_steps: int, *, full: bool
) -> jax.Array:
    """``n_steps`` i.i.d. momenta of the reference N(m, S), shape (n_steps, n, K − 1).

    ``full=True``: Z = N(0, I) of shape (n_steps, nC) from ``key`` (nC = n(K − 1)) and
    ν_s = m + (A Z[s]).reshape(n, K − 1) for all s with one product Z Aᵀ (rows of A
    point-major, as in :func:`_run_chains`). Otherwise Matheron's rule of
    :func:`_run_chains` with key s of ``jax.random.split(key, n_steps)``, vmapped (the n × n
    products and solves then take n_steps right-hand sides at once). ``ops`` as there.
    The momenta do not depend on the chain's state, so drawing them ahead is exact.
    """
    m = ops["m"]
    if full:
        z = jax.random.normal(key, (n_steps, m.size), dtype=m.dtype)
        return m[None] + (z @ ops["A"].T).reshape(n_steps, *m.shape)
    L, Sigma, LB, sw = ops["L"], ops["Sigma"], ops["LB"], ops["sqrt_w"]

    def one(k: jax.Array) -> jax.Array:
        k1, k2 = jax.random.split(k)
        f0 = L @ jax.random.normal(k1, m.shape, dtype=m.dtype)
        r = sw[:, None] * f0 + jax.random.normal(k2, m.shape, dtype=m.dtype)
        s = jax.scipy.linalg.solve_triangular(LB, r, lower=True)
        s = jax.scipy.linalg.solve_triangular(LB, s, lower=True, trans=1)
        return m + f0 - Sigma @ (sw[:, None] * s)

    return jax.vmap(one)(jax.random.split(key, n_steps))


@partial(jax.jit, static_argnames=("n_warmup", "n_keep", "thin", "full"))
def _run_chains(
    ops: dict[str, jax.Array],
    keys: jax.Array,
    *,
    n_warmup: int,
    n_keep: int,
    thin: int,
    full: bool = False,
) -> dict[str, jax.Array]:
    """Generalised elliptical slice sampling of the contrasts, one chain per key (vmapped).

    Target p(v | y) ∝ N(v; 0, Σ) L(v) for every contrast column of v (n, K − 1), written as
    N(v; m, S)·R(v) with the reference S = (Σ⁻¹ + W)⁻¹ (W = diag ``sqrt_w``², shared by the
    columns) and R(v) = L(v) + ½Σ_c (v_c − m_c)ᵀW(v_c − m_c) − Σ_c v_cᵀα_c + const,
    α = Σ⁻¹m; BlackJAX's ellipse is taken around m with momenta from N(0, S), drawn by
    Matheron's rule ν = f₀ − ΣW^½B⁻¹(W^½f₀ + ε), f₀ = L_Σz, B = I + W^½ΣW^½ = L_B L_Bᵀ.
    W = 0, m = 0 is plain ESS with the prior as the reference.

    ``ops``: ``L`` (chol Σ), ``Sigma``, ``LB``, ``sqrt_w`` (n,), ``m``, ``alpha`` (n, K − 1),
    ``labels`` (n,), ``inv_tau`` (n,), ``Q2`` (K − 1, K).

    ``full=True`` (``reference="laplace-full"``, :func:`_reference_full`): the reference
    precision is P = Σ⁻¹ ⊗ I + W_blk with the (K − 1) × (K − 1) curvature block H_i of every
    point, R(v) = L(v) + ½Σ_i (v_i − m_i)ᵀH_i(v_i − m_i) − Σ_i v_iᵀα_i + const (the same
    identity blockwise, α = Σ⁻¹m; derivation in :func:`_reference_full`), and a momentum is
    m + A z with the precomputed factor A A ᵀ = P⁻¹. Its ``ops``: ``A`` (nC, nC), ``H``
    (n, K − 1, K − 1), ``m``, ``alpha``, ``labels``, ``inv_tau``, ``Q2``; rows of A are
    point-major (index i·(K − 1) + c).

    Blocks: a momentum does not depend on the chain's state, so the momenta of up to
    :data:`MOMENTUM_BLOCK` consecutive iterations are drawn at once
    (:func:`_momentum_block`: one product A Z of all chains' blocks, compute-bound, instead
    of one memory-bound A z per iteration), then the block's ESS steps consume one each in
    order (BlackJAX's ``elliptical_proposal`` with a generator that returns the step's ν).
    Exact (the momenta are i.i.d. N(m, S) independent of the states). The key stream: chain
    key → (init, warm-up, kept) keys; the initial state is the one momentum of the init
    key's block; the warm-up is one run of ``n_warmup`` steps, every kept draw one run of
    ``thin`` steps from its key of ``split(kept, n_keep)``; a run of s steps is
    ⌈s / MOMENTUM_BLOCK⌉ blocks (keys ``split(run key, blocks)``, full blocks first), and a
    block's key splits into its momentum key and the key of its steps
    (``split(·, steps)``). Extra memory: the block's Z and momenta,
    2 · chains · min(MOMENTUM_BLOCK, max(n_warmup, thin)) · nC · 8 bytes (16 MB for 4 chains,
    blocks of 40 and nC = 6272), beside A (nC² · 8 bytes, 315 MB at nC = 6272).

    Returns ``"v"`` (chains, n_keep, n, K − 1), ``"loglik"`` (chains, n_keep) (the labels'
    log-likelihood), ``"subiter"`` (chains, n_warmup + n_keep·thin), ``"theta"``
    (chains, n_keep·thin).
    """
    from blackjax.mcmc.elliptical_slice import EllipSliceState, elliptical_proposal

    m, alpha = ops["m"], ops["alpha"]
    labels, inv_tau, Q2 = ops["labels"], ops["inv_tau"], ops["Q2"]

    def loglik(v: jax.Array) -> jax.Array:
        return _contrast_loglik(v, labels, inv_tau, Q2)

    if full:
        H = ops["H"]

        def ratio(v: jax.Array) -> jax.Array:
            d = v - m
            quad = jnp.sum(d * jnp.einsum("icd,id->ic", H, d))
            return loglik(v) + 0.5 * quad - jnp.sum(v * alpha)

    else:
        w2 = ops["sqrt_w"] * ops["sqrt_w"]

        def ratio(v: jax.Array) -> jax.Array:
            d = v - m
            return loglik(v) + 0.5 * jnp.sum(w2[:, None] * d * d) - jnp.sum(v * alpha)

    def block(st: Any, key: jax.Array, n_steps: int) -> tuple[Any, tuple[jax.Array, ...]]:
        k_mom, k_step = jax.random.split(key)
        nus = _momentum_block(ops, k_mom, n_steps, full=full)

        def body(s: Any, xs: tuple[jax.Array, jax.Array]) -> tuple[Any, tuple[Any, ...]]:
            k, nu = xs
            step = elliptical_proposal(ratio, lambda _k, _p: nu, m.reshape(-1))
            s, info = step(k, s)
            return s, (info.subiter, jnp.abs(info.theta))

        return jax.lax.scan(body, st, (jax.random.split(k_step, n_steps), nus))

    def run(st: Any, key: jax.Array, n_steps: int) -> tuple[Any, tuple[jax.Array, ...]]:
        n_full, rest = divmod(n_steps, MOMENTUM_BLOCK)
        bkeys = jax.random.split(key, n_full + (rest > 0))
        outs = []
        if n_full:
            st, (sub, th) = jax.lax.scan(
                lambda s, k: block(s, k, MOMENTUM_BLOCK), st, bkeys[:n_full]
            )
            outs.append((sub.reshape(-1), th.reshape(-1)))
        if rest:
            st, (sub, th) = block(st, bkeys[n_full], rest)
            outs.append((sub, th))
        if not outs:
            return st, (jnp.zeros(0, jnp.int32), jnp.zeros(0, m.dtype))
        return st, tuple(jnp.concatenate(x) for x in zip(*outs, strict=True))

    def one_chain(key: jax.Array) -> dict[str, jax.Array]:
        k_init, k_warm, k_keep = jax.random.split(key, 3)
        v0 = _momentum_block(ops, k_init, 1, full=full)[0]  # a reference draw: chains apart
        state, (sub_w, _) = run(EllipSliceState(v0, ratio(v0)), k_warm, n_warmup)

        def keep(st: Any, k: jax.Array) -> tuple[Any, tuple[Any, ...]]:
            st, (sub, th) = run(st, k, thin)
            return st, (st.position, loglik(st.position), sub, th)

        state, (v, ll, sub_k, th) = jax.lax.scan(keep, state, jax.random.split(k_keep, n_keep))
        return {
            "v": v,
            "loglik": ll,
            "subiter": jnp.concatenate([sub_w.astype(sub_k.dtype), sub_k.reshape(-1)]),
            "theta": th.reshape(-1),
        }

    return jax.vmap(one_chain)(keys)


def _contrast_grad_curv(
    v: np.ndarray, labels: np.ndarray, inv_tau: np.ndarray, Q2: np.ndarray
) -> tuple[np.ndarray, np.ndarray, float]:
    """Gradient (n, K − 1), diagonal curvature (n, K − 1) and value of the log-likelihood in
    the contrasts: g_i = Q₂(e_y − π_i)/τ_i, w_ic = [Q₂(diag π_i − π_iπ_iᵀ)Q₂ᵀ]_cc / τ_i²."""
    logits = (v @ Q2) * inv_tau[:, None]
    logp = scipy.special.log_softmax(logits, axis=1)
    p = np.exp(logp)
    onehot = np.eye(Q2.shape[1])[labels]
    g = ((onehot - p) @ Q2.T) * inv_tau[:, None]
    # diag of Q₂ diag(π) Q₂ᵀ − (Q₂π)² per contrast
    qp = p @ Q2.T
    curv = ((p @ (Q2.T**2)) - qp**2) * (inv_tau**2)[:, None]
    return g, curv, float(np.sum(logp[np.arange(labels.size), labels]))


def _reference(
    L: Any, Sigma: Any, labels: np.ndarray, inv_tau: np.ndarray, Q2: np.ndarray, max_iter: int
) -> tuple[np.ndarray, np.ndarray, Any, np.ndarray, dict[str, Any]]:
    """The Gaussian reference N(m, (Σ⁻¹ + W)⁻¹) of the contrasts (a Laplace-type fit).

    Mode m: Böhning's bound (the softmax Hessian is ≼ ½(I − 11ᵀ/K), i.e. ≼ ½I in the
    orthonormal contrasts; Böhning 1992) makes v ← (Σ⁻¹ + W_b)⁻¹(W_b v + g(v)) with
    W_b = 1/(2τ²) a monotone MM ascent of the log posterior, one factorisation for all
    iterations (R&W 2006 eq. 3.18 with a fixed W). Then W = the diagonal curvature at m,
    averaged over contrasts, and B = I + W^½ΣW^½ = L_B L_Bᵀ. Returns (m, α = Σ⁻¹m, L_B,
    √W, record).
    """
    xp = _xp()
    n, C = labels.size, Q2.shape[0]

    def factor(w: np.ndarray) -> Any:
        sw = np.sqrt(w)
        B = add_diag(xp.asarray(sw[:, None] * np.asarray(Sigma) * sw[None, :]), 1.0)
        LB, _ = chol_jitter(B, start=None)
        return LB

    def solve_ref(LB: Any, sw: np.ndarray, r: np.ndarray) -> np.ndarray:
        # (Σ⁻¹ + W)⁻¹ r = Σr − ΣW^½B⁻¹W^½Σr
        Sr = np.asarray(Sigma @ xp.asarray(r))
        t = solve_lower(LB, xp.asarray(sw[:, None] * Sr))
        t = np.asarray(solve_lower(LB, t, trans=True))
        return Sr - np.asarray(Sigma @ xp.asarray(sw[:, None] * t))

    wb = 0.5 * inv_tau**2
    swb = np.sqrt(wb)
    LBb = factor(wb)
    v = np.zeros((n, C))
    value = -np.inf
    n_it = 0
    step = float("inf")
    for _ in range(max_iter):
        n_it += 1
        g, _, _ = _contrast_grad_curv(v, labels, inv_tau, Q2)
        v_new = solve_ref(LBb, swb, wb[:, None] * v + g)
        step = float(np.max(np.abs(v_new - v)))
        v = v_new
        if step < 1e-7 * max(1.0, float(np.max(np.abs(v)))):
            break
    g, curv, value = _contrast_grad_curv(v, labels, inv_tau, Q2)
    w = curv.mean(axis=1)
    LB = factor(w)
    alpha = np.asarray(solve_lower(L, solve_lower(L, xp.asarray(v)), trans=True))
    record = {
        "mode_iterations": n_it,
        "mode_last_step": step,
        "mode_loglik": value,
        "reference_curvature_mean": float(np.mean(w)),
    }
    return v, alpha, LB, np.sqrt(w), record


def _contrast_blocks(v: Any, labels: Any, inv_tau: Any, Q2: Any) -> tuple[Any, Any, Any]:
    """Gradient g (n, C), curvature blocks H (n, C, C) and value of the labels'
    log-likelihood in the contrasts (C = K − 1), for NumPy or JAX arrays:
    g_i = Q₂(e_{y_i} − π_i)/τ_i, H_i = Q₂(diag π_i − π_iπ_iᵀ)Q₂ᵀ/τ_i² (minus the Hessian)."""
    ns = _xp()
    logits = (v @ Q2) * inv_tau[:, None]
    top = ns.max(logits, axis=1, keepdims=True)
    logp = logits - top - ns.log(ns.sum(ns.exp(logits - top), axis=1, keepdims=True))
    p = ns.exp(logp)
    onehot = ns.eye(Q2.shape[1])[labels]
    g = ((onehot - p) @ Q2.T) * inv_tau[:, None]
    qp = p @ Q2.T
    H = ns.einsum("ck,ik,dk->icd", Q2, p, Q2) - qp[:, :, None] * qp[:, None, :]
    H = H * (inv_tau**2)[:, None, None]
    value = ns.sum(ns.take_along_axis(logp, labels[:, None], axis=1))
    return g, H, value


def _block_sqrt(H: Any) -> Any:
    """Symmetric square roots of the PSD blocks H (n, C, C) (eigendecomposition, negative
    rounding clipped to 0)."""
    ns = _xp()
    lam, U = ns.linalg.eigh(H)
    return ns.einsum("ice,ie,ide->icd", U, ns.sqrt(ns.clip(lam, 0.0, None)), U)


def _newton_matrix(Sh: Any, Sigma: Any) -> Any:
    """B = I + W^½(Σ⊗I)W^½ (nC, nC) of :func:`_reference_full` from the blocks' square roots
    Sh (n, C, C): block (i, j) is δ_ij I + Σ_ij (Sh_i Sh_j). With NumPy it is built in the
    buffer of the outer product (in place: two fewer (nC)² temporaries, the same values bit
    for bit; a few seconds per Newton iteration at nC = 6272 on this machine)."""
    ns = _xp()
    n, C = Sh.shape[0], Sh.shape[1]
    nC = n * C
    SS = Sh.reshape(nC, C) @ ns.transpose(Sh, (1, 0, 2)).reshape(C, nC)
    if ns is not np:
        return add_diag((SS.reshape(n, C, n, C) * Sigma[:, None, :, None]).reshape(nC, nC), 1.0)
    B4 = SS.reshape(n, C, n, C)
    np.multiply(B4, Sigma[:, None, :, None], out=B4)
    B = B4.reshape(nC, nC)
    B[np.diag_indices(nC)] += 1.0
    return B


def _reference_full(
    L: Any,
    Sigma: Any,
    labels: np.ndarray,
    inv_tau: np.ndarray,
    Q2: np.ndarray,
    max_iter: int,
    tol: float = MODE_TOL,
) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
    """The Laplace approximation N(m, S) of the contrasts with the full curvature blocks.

    Write v (n, C), C = K − 1, as the point-major vector x (x[i·C + c] = v[i, c]); the prior
    is N(0, Σ ⊗ I_C) and minus the log-likelihood's Hessian is block diagonal,
    W_blk = diag(H_1 … H_n) with H_i = Q₂(diag π_i − π_iπ_iᵀ)Q₂ᵀ/τ_i² (C × C, PSD).

    Mode m: Newton's method on Ψ(v) = L(v) − ½ Σ_c v_cᵀΣ⁻¹v_c (concave), in the stable form
    of R&W 2006 Alg. 3.1 with per-point blocks: b = W_blk x + g(x), B = I + W^½(Σ⊗I)W^½
    (W^½ the blocks' symmetric square roots; B ≽ I, so its Cholesky factor needs no jitter),
    a⁺ = b − W^½B⁻¹W^½(Σ⊗I)b, x⁺ = (Σ⊗I)a⁺ (= P⁻¹b, P = Σ⁻¹⊗I + W_blk). The iterate is
    carried as a = Σ⁻¹v (so Ψ = L(Σa) − ½aᵀΣa needs no solve) and the step a → a⁺ is halved
    until Ψ does not decrease (R&W 2006 §3.4.3), so the iteration is monotone. Start v = 0;
    stop when the largest change of v is below ``tol``·max(1, max|v|) or the halving finds
    no increase (the numerical optimum), at most ``max_iter`` iterations.

    Reference: P = Σ⁻¹⊗I + W_blk at m, S = P⁻¹. With Λ = L⊗I (ΛΛᵀ = Σ⊗I) and
    M = I + ΛᵀW_blkΛ = L_M L_Mᵀ (M ≽ I: no jitter), A = Λ L_M⁻ᵀ satisfies
    AAᵀ = ΛM⁻¹Λᵀ = (Σ⁻¹⊗I + W_blk)⁻¹ = S exactly (with the same Σ = LLᵀ the prior term
    uses), so a momentum is m + A z, z ~ N(0, I_{nC}): one product. A is a square root of S,
    not its Cholesky factor: the Cholesky factor of S = Σ⊗I − (…) would need a subtraction
    and possibly jitter, which would make the reference differ from the precision R assumes.
    Cost once: n³C² for ΛᵀW_blkΛ, (nC)³/3 for L_M, (nC)³ for A; memory a few (nC)² arrays.

    Ratio: log N(v; 0, Σ⊗I) − log N(v; m, S) = −½xᵀ(Σ⁻¹⊗I)x + ½(x − m)ᵀP(x − m) + const
    = ½(x − m)ᵀW_blk(x − m) − xᵀα + const with α = (Σ⁻¹⊗I)m, so
    log R(v) = L(v) + ½Σ_i (v_i − m_i)ᵀH_i(v_i − m_i) − Σ_i v_iᵀα_i, O(nC²) per evaluation.
    α is the iterate a (m = Σa), not a solve of m.

    Returns (m (n, C), α (n, C), A (nC, nC), H (n, C, C), record) as arrays of the
    backend (:func:`udbench.priors.gp.linalg.xp`); the record has ``mode_iterations``,
    ``mode_last_step``, ``mode_loglik``, ``mode_grad_max`` (max |g(m) − α|, the gradient of
    Ψ at m), ``mode_converged``, ``reference_curvature_mean`` (mean diagonal of the H_i) and
    ``reference_jitter`` (that of L_M; 0 expected) and ``reference_seconds`` (wall time).
    """
    t_start = time.perf_counter()
    ns = _xp()
    n, C = labels.size, Q2.shape[0]
    nC = n * C
    Sigma = ns.asarray(Sigma)
    L = ns.asarray(L)
    y = ns.asarray(labels)
    it_ = ns.asarray(inv_tau)
    q2 = ns.asarray(Q2)

    def psi(a: Any) -> tuple[Any, float]:
        v = Sigma @ a
        _, _, ll = _contrast_blocks(v, y, it_, q2)
        return v, float(ll) - 0.5 * float(ns.sum(a * v))

    def bmv(Hb: Any, x: Any) -> Any:
        return ns.einsum("icd,id->ic", Hb, x)

    a = ns.zeros((n, C))
    v, value = psi(a)
    n_it, step, converged = 0, float("inf"), False
    for _ in range(max_iter):
        n_it += 1
        g, H, _ = _contrast_blocks(v, y, it_, q2)
        Sh = _block_sqrt(H)
        LB, _ = chol_jitter(_newton_matrix(Sh, Sigma), start=None)
        b = bmv(H, v) + g
        c = solve_lower(LB, bmv(Sh, Sigma @ b).reshape(nC))
        c = solve_lower(LB, c, trans=True)
        da = b - bmv(Sh, c.reshape(n, C)) - a
        t, improved = 1.0, False
        while t > 1e-10:
            v_t, value_t = psi(a + t * da)
            if value_t >= value:
                improved = True
                break
            t *= 0.5
        if not improved:
            converged = True  # no ascent left along the Newton direction: numerical optimum
            break
        step = float(ns.max(ns.abs(v_t - v)))
        a, v, value = a + t * da, v_t, value_t
        if step <= tol * max(1.0, float(ns.max(ns.abs(v)))):
            converged = True
            break
    g, H, ll = _contrast_blocks(v, y, it_, q2)
    # M = I + ΛᵀW_blkΛ: entry ((i, c), (j, d)) = δ + Σ_k L_ki H_k[c, d] L_kj
    G = H[:, :, None, :] * L[:, None, :, None]  # (k, c, j, d)
    M = add_diag((L.T @ G.reshape(n, nC * C)).reshape(nC, nC), 1.0)
    del G
    LM, jit = chol_jitter(0.5 * (M + M.T), start=None)
    del M
    A = solve_lower(LM, ns.kron(L.T, ns.eye(C))).T
    record = {
        "mode_iterations": n_it,
        "mode_last_step": step,
        "mode_loglik": float(ll),
        "mode_grad_max": float(ns.max(ns.abs(g - a))),
        "mode_converged": bool(converged),
        "reference_curvature_mean": float(ns.mean(ns.einsum("icc->ic", H))),
        "reference_jitter": float(jit),
        "reference_seconds": time.perf_counter() - t_start,
    }
    return v, a, A, H, record


# --------------------------------------------------------------------------------------
# The posterior and its diagnostics
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ESSDiagnostics(MCMCDiagnostics):
    """:class:`~udbench.priors.mcmc.MCMCDiagnostics` of the elliptical slice sampler.

    ``convergence`` (flattened into :meth:`to_dict`) is
    :func:`~udbench.priors.diagnostics.summarise_function_draws` of π at the evaluation
    points, one variable per (point, class), point-major (``rhat[i·K + k]`` is point i,
    class k); ``rhat_max_train`` / ``rhat_train`` are the split-R̂ of the sampled training
    contrasts (point-major, K − 1 per point; the shift is drawn exactly). ``rhat_gate`` is
    True: the SPEC §7 R̂ rule applies (few long chains, as for the BNN).

    Attributes
    ----------
    n_classes : int
        K.
    thin : int
        Iterations per kept draw.
    rhat_max_per_class : list of float
        Largest split-R̂ of π_k over the evaluation points, per class k.
    ess_bulk_min, ess_bulk_median : float
        Bulk effective sample size of π (ArviZ, rank-normalised) over the (point, class)
        variables: smallest and median.
    subiter_mean_warmup, subiter_mean_kept : float
        Mean likelihood evaluations per iteration (1 + slice shrinks) in the burn-in and in
        the kept phase; ``subiter_max`` the largest of any iteration.
    subiter_max : int
    theta_abs_mean : float
        Mean |accepted angle| on the ellipse in the kept phase (π/2 ≈ 1.57 for a flat
        likelihood; small values mean short moves).
    loglik_mean_first_half, loglik_mean_second_half : float
        Mean log-likelihood of the kept draws in each half of the chains (a drift between
        them means the burn-in was too short).
    jitter_train : float
        Jitter added to Σ_t = a²K̃_tt + ν·I beyond the nugget (0 when it factorised).
    jitter_conditional : float
        Jitter of the evaluation-latent conditional covariance factor.
    nugget : float
        ν, the prior's nugget (target units²).
    sampler_seconds, conditional_seconds : float
        Wall time of the reference fit and the chains (compilation included), and of the
        evaluation latents.
    reference : {"laplace-full", "laplace", "prior"}
        The Gaussian the ellipses are drawn from (module docstring).
    mode_iterations : int
        Iterations of the reference's mode: Newton for ``"laplace-full"``, Böhning-bound
        MM for ``"laplace"`` (0 for ``"prior"``).
    mode_loglik : float
        The labels' log-likelihood at that mode (NaN for ``"prior"``).
    reference_curvature_mean : float
        Mean of the reference's curvature: diagonal W for ``"laplace"``, the mean diagonal
        of the blocks H_i for ``"laplace-full"`` (0 for ``"prior"``).
    mode_grad_max : float
        ``"laplace-full"``: largest |∂Ψ/∂v| at the mode (Ψ the log posterior of the
        contrasts; 0 at an exact mode); NaN otherwise.
    mode_converged : bool
        ``"laplace-full"``: the Newton iteration met its tolerance (:data:`MODE_TOL`)
        before ``mode_max_iter``; False otherwise.
    reference_jitter : float
        Jitter of the factor of S for ``"laplace-full"`` (0 expected: the factored matrix
        is ≽ I); 0 otherwise.
    reference_seconds : float
        ``"laplace-full"``: wall time of the mode and the factor of S (part of
        ``sampler_seconds``); NaN otherwise.
    """

    n_classes: int
    thin: int
    rhat_max_per_class: list[float]
    ess_bulk_min: float
    ess_bulk_median: float
    subiter_mean_warmup: float
    subiter_mean_kept: float
    subiter_max: int
    theta_abs_mean: float
    loglik_mean_first_half: float
    loglik_mean_second_half: float
    jitter_train: float
    jitter_conditional: float
    nugget: float
    sampler_seconds: float
    conditional_seconds: float
    reference: str
    mode_iterations: int
    mode_loglik: float
    reference_curvature_mean: float
    mode_grad_max: float = float("nan")
    mode_converged: bool = False
    reference_jitter: float = 0.0
    reference_seconds: float = float("nan")


@dataclass(frozen=True)
class ClassificationPosterior:
    """Draws of the reference posterior of a latent-GP classification task.

    Attributes
    ----------
    prob_draws : ndarray, shape (D, n_eval, K), float64
        π_F(x) = softmax(f_e(x)/τ(x)) per draw at the evaluation points (the input of
        :func:`udbench.risk.classification_oracle_targets`).
    latent_eval : ndarray, shape (D, n_eval, K), float64
        Evaluation latents f_k(x), draws chain-major (``n_chains`` blocks of D / n_chains).
    latent_train : ndarray, shape (D, n, K), float64
        Training latents (the ESS chains' kept states).
    n_chains : int
        Chains; draw d is chain d // (D / n_chains).
    diagnostics : dict
        :meth:`ESSDiagnostics.to_dict` (JSON-serialisable).
    """

    prob_draws: np.ndarray
    latent_eval: np.ndarray
    latent_train: np.ndarray
    n_chains: int
    diagnostics: dict[str, Any] = field(default_factory=dict)

    @property
    def mean_probs(self) -> np.ndarray:
        """The posterior predictive π̄(x) = mean over draws of π_F(x), shape (n_eval, K)."""
        return np.asarray(self.prob_draws.mean(axis=0))

    def chains(self, what: str = "prob_draws") -> np.ndarray:
        """``prob_draws``, ``latent_eval`` or ``latent_train`` as (chains, per chain, m, K)."""
        arr = getattr(self, what)
        return arr.reshape(self.n_chains, -1, *arr.shape[1:])


def _ess_bulk(chains: np.ndarray) -> np.ndarray:
    """Bulk ESS (ArviZ, rank-normalised) of every variable of (chains, draws, m) draws."""
    import warnings

    import arviz as az

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="More chains", category=UserWarning)
        ds = az.convert_to_dataset(chains)
    return np.asarray(az.ess(ds, method="bulk")["x"].values, dtype=np.float64).reshape(-1)
