"""The CPU cost of one BNN NUTS step per floating-point type (issue 34): the gradient of the
potential energy of ``udbench.priors.bnn._model``, timed in one process, so that the
ratio of two dtypes is robust to the machine's load."""

from __future__ import annotations

import functools
import time
from typing import Any

import numpy as np

from udbench._validation import check_choice
from udbench.priors.bnn import DTYPES, N_HIDDEN

__all__ = ["gradient_seconds"]


def gradient_seconds(
    X_train: np.ndarray,
    noise_var_train: np.ndarray,
    X_ref: np.ndarray,
    scale: float,
    dtypes: tuple[str, ...] = DTYPES,
    *,
    n_chains: int = 4,
    n_hidden: int = N_HIDDEN,
    calls: int = 50,
    repeats: int = 5,
) -> dict[str, float]:
    """CPU seconds of one gradient of the BNN's potential energy, per dtype, in one process.

    The cost of one NUTS leapfrog step with a diagonal mass matrix: NumPyro's potential
    energy of ``udbench.priors.bnn._model`` (:func:`numpyro.infer.util.initialize_model`)
    differentiated and vectorised over ``n_chains`` chains as the ``vectorized`` chain
    method runs them, compiled once per dtype, then timed as the fastest of ``repeats``
    blocks of ``calls`` calls (process CPU seconds per call, divided by ``n_chains``: per
    chain-step). The dtypes are timed in turn within each repeat, so a load change affects
    them alike: their ratio is the load-robust cost ratio of one step (issue 34).

    Parameters
    ----------
    X_train : ndarray, shape (n, d); noise_var_train : ndarray, shape (n,)
    X_ref : ndarray, shape (R, d)
    scale : float
        The scale constant a.
    dtypes : tuple of str, default :data:`DTYPES`

    Returns
    -------
    dict
        dtype -> seconds per chain-step.

    Raises
    ------
    UdbenchError
        An unknown dtype.
    """
    import jax
    import jax.numpy as jnp
    from numpyro.infer.util import initialize_model

    from udbench.priors.bnn import _model

    for dt in dtypes:
        check_choice("gradient_seconds", "dtypes", dt, DTYPES)
    y = np.zeros(X_train.shape[0])
    sd = np.sqrt(np.asarray(noise_var_train, dtype=np.float64))
    grads: dict[str, tuple[Any, Any]] = {}
    for dt in dtypes:
        with jax.enable_x64(dt == "float64"):
            args = [jnp.asarray(np.asarray(v, dtype=dt)[None]) for v in (X_train, sd, y)]
            ref, a = jnp.asarray(np.asarray(X_ref, dtype=dt)), jnp.asarray(np.asarray(scale, dt))
            info = initialize_model(
                jax.random.split(jax.random.PRNGKey(0), n_chains),
                functools.partial(_model, n_hidden=n_hidden),
                model_args=(args[0], ref, args[1], args[2], a),
            )
            fn = jax.jit(jax.vmap(jax.grad(info.potential_fn)))
            z = info.param_info.z
            jax.block_until_ready(fn(z))
            grads[dt] = (fn, z)
    best = {dt: np.inf for dt in dtypes}
    for _ in range(int(repeats)):
        for dt in dtypes:
            fn, z = grads[dt]
            with jax.enable_x64(dt == "float64"):
                c0 = time.process_time()
                for _ in range(int(calls)):
                    out = fn(z)
                jax.block_until_ready(out)
                best[dt] = min(best[dt], (time.process_time() - c0) / calls / n_chains)
    return {dt: float(v) for dt, v in best.items()}
