"""GPCDE's ``init="gp"`` warm start: fit with the latent switched off, then start from it.

The switched-off model is a sparse variational GP on the inputs alone (its bound equals the
full model's with the latent length scales at their upper bound and ``q(w)`` the prior). With
``q(u)`` at its optimum that bound is the collapsed bound (Titsias 2009, eq. 9), so the model is
fitted as a sparse GP regression on that bound
(:func:`~sklearn_lvgp.optim._collapsed_fit.fit_collapsed`, as
:class:`~sklearn_lvgp.SparseGPRegressor` fits it), and ``q(u)`` then set to its optimum by one
natural-gradient step of size one.
:func:`gp_init_possible` says whether a model's latent dimensions can be switched off so.
"""

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._core.linalg import settled_jitter
from .._core.parallel import threads
from .._core.params import softplus_inverse
from .._core.progress import fit_progress
from ..bounds._gpcde import MIN_NOISE, RHO_SHIFT, CDEModel
from ..kernels._stationary import _Stationary, default_rbf
from ..optim._collapsed_fit import fit_collapsed

__all__ = ["gp_init_possible", "gp_warm_start", "full_bound"]


def gp_init_possible(est, Dw):
    """Whether ``init="gp"`` can switch the ``Dw`` latent dimensions of ``est`` off: a latent,
    no projection or mixing, and a stationary ARD kernel with free length-scale bounds."""
    if Dw < 1 or est.input_projection_dim is not None or est.output_mixing_dim is not None:
        return False
    if est._kernel is None:
        return True
    k = est._kernel
    return (isinstance(k, _Stationary) and np.ndim(k.length_scale) == 1
            and not isinstance(k.length_scale_bounds, str))


def gp_warm_start(model, x0, data, rs, q_w, user_kernel, n_jobs=None, verbose=0):
    """``init="gp"``: the switched-off fit and the two starts derived from it.

    ``data`` holds the standardised rows (:class:`~._gpcde_data.MemoryRows`, or
    :class:`~._gpcde_data.DaskRowsData`: the collapsed bound and the model's evaluations then
    run where the partitions live).

    The switched-off fit is the sparse GP regression of the standardised data on the
    collapsed bound, fitted as ``SparseGPRegressor`` fits it with its defaults (inducing
    inputs started at the model's, on the input columns, and optimised; 1000 L-BFGS-B
    iterations), from two starts, keeping the higher bound:
    the model's own (its kernel restricted to the inputs, ``noise_variance_init``) and the
    sparse GP regressor's (its default in standardised units — unit length scales and
    variance — or the user's kernel; noise 0.1).
    With the latent switched off the model is that regression's: the same bound, whose
    ``q(u)`` is set to its optimum afterwards by one natural-gradient step of size one.

    Returns ``(x_start, x_off, bound_off)``: the full model started from the sparse GP
    solution (latent length scales at their initial value), the switched-off point (latent
    length scales at their upper bound, ``q(w)`` the prior; its bound then equals the
    sparse GP's) and that bound.
    """
    p = model.unpack(x0)
    kernel, Dh, Dw = p["kernel"], model.Dh, model.Dw
    ls = np.asarray(kernel.length_scale, dtype=np.float64)
    k0 = kernel.clone()
    k0.set_params(length_scale=ls[:Dh].copy())
    off = CDEModel(k0, model.Dx, None, 0, model.L, model.Dy, model.M, False, "quadrature",
                   model.expectation, model.S, 1, data.n_rows, (), model.whiten,
                   model.jitter)
    # the collapsed bound has several optima and neither start reaches the best one on all
    # data; the regressor's start is written out in standardised units (unit length scales
    # and variance, noise 0.1) so that it does not depend on the last bits of the scaled data
    starts = [(k0, p["s2"]), (k0 if user_kernel else default_rbf(np.ones(Dh), 1.0), 0.1)]
    with threads(n_jobs):
        gp = max((_sparse_gp(data, kern, noise, p["Z"][:, :Dh], model.jitter, verbose)
                  for kern, noise in starts), key=lambda g: g.bound)
    lo, hi = k0.bounds.T
    xo = off.pack({"kernel": k0.clone_with_theta(np.clip(gp.kernel.theta, lo, hi)),
                   "noise_variance": max(gp.noise_variance, MIN_NOISE), "q_mu": p["q_mu"],
                   "q_sqrt": (np.repeat(np.eye(model.M)[None], model.L, axis=0)
                              if model.whiten else p["q_sqrt_full"]),
                   "Z": np.array(gp.Z, copy=True)})
    xo = data.natgrad(off, xo, None, 1.0, 1.0, rs)
    po = off.unpack(xo)
    log_hi = kernel.bounds[-Dw:, 1]  # length scales are the last theta entries

    def full(latent_ls):
        k = po["kernel"].clone()
        k.set_params(length_scale=np.r_[po["kernel"].length_scale, latent_ls])
        values = model.unpack(x0)
        values.update(kernel=k, noise_variance=po["s2"], q_mu=po["q_mu"],
                      q_sqrt=po["q_sqrt_full"], Z=np.hstack([po["Z"], p["Z"][:, Dh:]]))
        return values

    v_start = full(ls[Dh:])
    v_off = full(np.exp(log_hi))
    if model.mode == "gaussian":
        rho0 = RHO_SHIFT + softplus_inverse(1.0)  # q(w_n) = N(0, I) = p(w_n)
        if q_w == "gaussian":
            v_off["w_mean"] = np.zeros_like(v_off["w_mean"])
            v_off["w_rho"] = np.full_like(v_off["w_rho"], rho0)
        else:
            last = len(model.enc_shapes) - 1
            v_off[f"enc_W{last}"] = np.zeros_like(v_off[f"enc_W{last}"])
            v_off[f"enc_b{last}"] = np.r_[np.zeros(Dw), np.full(Dw, rho0)]
    x_start = model.pack(v_start)
    for _ in range(3):
        x_start = data.natgrad(model, x_start, None, 1.0, 1.0, rs)
    x_off = data.natgrad(model, model.pack(v_off), None, 1.0, 1.0, rs)
    bound_off = float(data.elbo(model, x_off, None, 1.0, rs)[0])
    return x_start, x_off, bound_off


def _sparse_gp(data, kernel, noise_variance, Z, jitter, verbose):
    """The collapsed bound of the standardised rows ``data`` maximised from the given start, as
    ``SparseGPRegressor(kernel=kernel, inducing_inputs=Z, noise_variance_init=noise_variance,
    jitter=jitter, random_state=0)`` fits it, with that estimator's iteration budget: its fit
    is cheap, and a run cut short in the flat directions of switched-off length scales ends
    where rounding in the data sends it. Returns the
    :class:`~sklearn_lvgp.optim._collapsed_fit.CollapsedFit`."""
    X, Y, bound, var_y, z_scale = data.collapsed()
    kernel = kernel.initialize(Z.shape[1], np.random.RandomState(0))
    Z0 = np.array(Z, dtype=np.float64)
    # a stage of the fit: the full model's optimiser reports to the callback and on convergence
    with warnings.catch_warnings(), fit_progress(None, None):
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fit_collapsed(
            kernel, X, Y, Z0, float(noise_variance), bound=bound,
            var_y=var_y if var_y > 0 else 1.0, z_scale=z_scale,
            jitter=settled_jitter(kernel.K(Z0), jitter), verbose=verbose,
            name="GPCDE switched-off fit")


def full_bound(model, x, data, rs, n_eval=5):
    """Full-batch bound at ``x`` on the rows ``data`` (averaged over ``n_eval`` draws when
    sampled)."""
    n = 1 if model.deterministic else n_eval
    return float(np.mean([data.elbo(model, x, None, 1.0, rs)[0] for _ in range(n)]))
