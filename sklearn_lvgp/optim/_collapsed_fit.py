"""L-BFGS-B fit of the collapsed sparse GP bound (Titsias 2009) over θ, σ² and Z.

The bound is evaluated on a chunked collapsed bound of :mod:`sklearn_lvgp.bounds._collapsed`
(deterministic inputs, or Gaussian inputs N(X_n, diag X_var_n) as in Titsias & Lawrence 2010);
:func:`fit_collapsed` packs the kernel hyperparameters, the noise variance and (optionally) the
inducing inputs, maximises the bound from a given start and evaluates it once more at the end.
It takes plain arrays and kernels, so any model whose fit is, or contains, a sparse GP
regression on given data calls it; :func:`fit_collapsed_rows` runs it on the rows of a row
source (in memory or on Dask) as one stage of another model's fit.
"""

import warnings
from typing import NamedTuple

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._core.linalg import settled_jitter
from .._core.params import ParamPacker, softplus_inverse
from .._core.progress import fit_progress
from .._core.scaling import column_scales
from ..bounds._collapsed import CollapsedKernelBound, CollapsedPsiBound
from ..engine._dask import _dask, is_dask_collection
from ._lbfgsb import minimize_lbfgsb

__all__ = ["CollapsedFit", "collapsed_bound_and_grads", "fit_collapsed", "fit_collapsed_rows",
           "make_collapsed_bound"]


def make_collapsed_bound(X, Y, X_var=None):
    """The chunked collapsed bound of ``(X, Y)``: deterministic inputs or N(X_n, X_var_n).

    Parameters
    ----------
    X : ndarray of shape (N, Q)
        Inputs.
    Y : ndarray of shape (N, D)
        Targets.
    X_var : ndarray of shape (N, Q) or None, default=None
        Input variances; ``None`` for deterministic inputs.

    Returns
    -------
    bound : CollapsedKernelBound or CollapsedPsiBound
    """
    return CollapsedKernelBound(X, Y) if X_var is None else CollapsedPsiBound(Y)


def collapsed_bound_and_grads(kernel, X, Y, Z, noise_variance, *, X_var=None, rule="analytic",
                              jitter=1e-6, max_tries=0, need_Z=True, bound=None):
    """Collapsed bound and its gradient wrt Z, the kernel's θ and the noise variance.

    Parameters
    ----------
    kernel : Kernel
        Initialised kernel (its current ``theta`` is used).
    X : ndarray of shape (N, Q)
        Inputs (means of the inputs when ``X_var`` is given).
    Y : ndarray of shape (N, D)
        Targets.
    Z : ndarray of shape (M, Q)
        Inducing inputs.
    noise_variance : float
        Gaussian noise variance σ².
    X_var : ndarray of shape (N, Q) or None
        Input variances; ``None`` is the deterministic (S = 0) bound of Titsias (2009).
    rule : "analytic" or PointRule
        Expectation rule for uncertain inputs (ignored when ``X_var`` is ``None``).
    jitter : float
        Relative jitter on ``Kuu``.
    max_tries : int
        Jitter escalations allowed (0 inside an optimiser).
    need_Z : bool
        Whether the Z adjoint is wanted.
    bound : CollapsedKernelBound or CollapsedPsiBound, default=None
        The fit's chunked bound of ``(X, Y)`` (reused across evaluations); ``None`` makes one.

    Returns
    -------
    F : float
        The bound (the exact log marginal likelihood when Z = X and ``X_var`` is ``None``, up to
        the jitter).
    grads : dict
        ``"Z"`` (M, Q) or ``None``, ``"theta"`` (n_theta,), ``"noise"`` (float).
    post : CollapsedPosterior
        The optimal q(u) (Titsias 2009).
    """
    if bound is None:
        bound = make_collapsed_bound(X, Y, X_var)
    if X_var is None:
        return bound.evaluate(kernel, Z, noise_variance, jitter=jitter, max_tries=max_tries,
                              need_Z=need_Z)
    F, grads, post = bound.evaluate(kernel, Z, X, X_var, noise_variance, rule, jitter=jitter,
                                    max_tries=max_tries, need_S=False)
    return (float(F), {"Z": grads["Z"] if need_Z else None, "theta": grads["theta"],
                       "noise": grads["noise"]}, post)


class CollapsedFit(NamedTuple):
    """Outcome of :func:`fit_collapsed`."""

    kernel: object
    Z: np.ndarray
    noise_variance: float
    n_iter: int
    bound: float
    posterior: object


def fit_collapsed(kernel, X, Y, Z0, noise0, *, bound, var_y, z_scale, jitter, X_var=None,
                  rule="analytic", optimize_Z=True, positive_transform="log", max_iter=1000,
                  tol=None, verbose=0, name="collapsed bound"):
    """Maximise the collapsed bound over θ, σ² (and Z) with L-BFGS-B from the given start.

    θ and σ² are packed under ``positive_transform`` (``"log"``: θ itself and log σ²;
    ``"softplus"``: the softplus inverse of exp(θ) and of σ²), bounded by the kernel's bounds
    and by ``[1e-10, 1e4] · var_y`` for σ². Z is optimised in units of the power of two nearest
    each column scale of X (``z_scale``): with log hyperparameters the optimisation problem is
    then the same, to within a factor of two, for data in any units (X in units of 1e-6 or
    1e6), where the raw Z, whose gradient grows as 1 / scale, would dominate L-BFGS-B's steps.
    Powers of two make the change of units exact in floating point, and the same for scales
    computed by numpy and by Dask's reductions (which differ in their last bits).

    Parameters
    ----------
    kernel : Kernel
        Initialised kernel at the start (not modified).
    X : ndarray of shape (N, Q)
        Inputs (means when ``X_var`` is given); not read when ``bound`` holds the data.
    Y : ndarray of shape (N, D) or None
        Targets; may be ``None`` when ``bound`` holds them.
    Z0 : ndarray of shape (M, Q)
        Starting (or fixed) inducing inputs.
    noise0 : float
        Starting noise variance.
    bound : CollapsedKernelBound, CollapsedPsiBound or another object with their ``evaluate``
        The chunked bound of the data (:func:`make_collapsed_bound`).
    var_y : float
        Target variance, the scale of the noise variance's bounds.
    z_scale : ndarray of shape (Q,)
        Column scales of X.
    jitter : float
        Relative jitter on ``Kuu`` (settled beforehand; not escalated during the run).
    X_var : ndarray of shape (N, Q) or None, default=None
        Input variances; ``None`` for deterministic inputs.
    rule : "analytic" or PointRule, default="analytic"
        Expectation rule for uncertain inputs.
    optimize_Z : bool, default=True
        Optimise the inducing inputs too.
    positive_transform : {"log", "softplus"}, default="log"
        Unconstrained parameterisation of θ and σ².
    max_iter : int, default=1000
        L-BFGS-B iterations; 0 keeps the start.
    tol : float or None, default=None
        L-BFGS-B ``ftol``/``gtol``; ``None`` keeps scipy's defaults.
    verbose : int, default=0
        Progress lines of the optimiser.
    name : str, default="collapsed bound"
        Used in messages.

    Returns
    -------
    CollapsedFit
        The fitted kernel (a new one), Z, σ², the iterations run, the bound at the result
        (jitter escalated if needed) and its optimal q(u).
    """
    z_scale = np.exp2(np.round(np.log2(z_scale)))
    softplus = positive_transform == "softplus"
    blocks = [("theta", (kernel.n_theta,), "softplus" if softplus else "identity"),
              ("noise", (), "softplus" if softplus else "log")]
    if optimize_Z:
        blocks.insert(0, ("Z", Z0.shape))
    packer = ParamPacker(blocks)
    # with "softplus" the theta block holds exp(theta), the natural hyperparameter values
    init = {"Z": Z0 / z_scale, "theta": np.exp(kernel.theta) if softplus else kernel.theta,
            "noise": noise0}
    x0 = packer.pack({k: init[k] for k, *_ in blocks})
    work = kernel.clone()

    def unpack(flat):
        p = packer.unpack(flat)
        work.theta = np.log(p["theta"]) if softplus else p["theta"]
        return p, (p["Z"] * z_scale if optimize_Z else Z0), float(p["noise"])

    def objective(flat):
        p, Z, s2 = unpack(flat)
        F, grads, _ = collapsed_bound_and_grads(work, X, Y, Z, s2, X_var=X_var, rule=rule,
                                                jitter=jitter, need_Z=optimize_Z, bound=bound)
        if softplus:
            grads["theta"] = grads["theta"] / p["theta"]
        if optimize_Z:
            grads["Z"] = grads["Z"] * z_scale
        return -F, -packer.pack_grad({k: grads[k] for k in p}, p)

    if max_iter > 0:
        bounds = np.full((packer.size, 2), [-np.inf, np.inf])
        theta_bounds, noise_bounds = work.bounds, np.log([1e-10 * var_y, 1e4 * var_y])
        if softplus:
            theta_bounds = softplus_inverse(np.exp(theta_bounds))
            noise_bounds = softplus_inverse(np.exp(noise_bounds))
        bounds[packer.slice("theta")] = theta_bounds
        bounds[packer.slice("noise")] = noise_bounds
        res = minimize_lbfgsb(objective, x0, bounds=bounds, max_iter=max_iter, tol=tol,
                              verbose=verbose, name=name)
        x_final, n_iter = res.x, res.n_iter
    else:
        x_final, n_iter = x0, 0
    _, Z, s2 = unpack(x_final)
    F, _, post = collapsed_bound_and_grads(work, X, Y, Z, s2, X_var=X_var, rule=rule,
                                           jitter=jitter, max_tries=6, need_Z=False,
                                           bound=bound)
    return CollapsedFit(work, Z, s2, n_iter, F, post)


def fit_collapsed_rows(rows, kernel, noise_variance, Z, *, jitter, verbose=0,
                       name="collapsed bound"):
    """:func:`fit_collapsed` of the rows ``"X"`` and ``"y"`` of a row source, from a start, as
    one stage of another model's fit.

    The fit is :class:`~sklearn_lvgp.SparseGPRegressor`'s with its iteration budget (1000
    L-BFGS-B iterations, Z optimised, the jitter settled at the start): a run cut short in the
    flat directions of switched-off length scales would end where rounding in the data sends
    it. It reports to no callback and raises no ``ConvergenceWarning``: the enclosing fit's
    optimiser does.

    Parameters
    ----------
    rows : InMemoryRows or DaskRows
        The rows (the bound's chunks then run where the partitions live; the target variance
        and column scales come from dask's reductions).
    kernel : Kernel
        Starting kernel, initialised here on ``Z.shape[1]`` inputs.
    noise_variance : float
        Starting noise variance.
    Z : ndarray of shape (M, Q)
        Starting inducing inputs.
    jitter : float
        Requested relative jitter on ``Kuu``.
    verbose : int, default=0
        Progress lines of the optimiser.
    name : str, default="collapsed bound"
        Used in messages.

    Returns
    -------
    CollapsedFit
    """
    X, Y = rows.arrays["X"], rows.arrays["y"]
    stats = (Y.var(axis=0).mean(), column_scales(X))
    if is_dask_collection(X):
        dask, _ = _dask()
        stats = dask.compute(*stats)
        bound = CollapsedKernelBound(rows=rows)
    else:
        bound = make_collapsed_bound(X, Y)
    var_y, z_scale = float(stats[0]), np.asarray(stats[1])
    kernel = kernel.initialize(Z.shape[1], np.random.RandomState(0))
    Z0 = np.array(Z, dtype=np.float64)
    with warnings.catch_warnings(), fit_progress(None):
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fit_collapsed(kernel, None, None, Z0, float(noise_variance), bound=bound,
                             var_y=var_y if var_y > 0 else 1.0, z_scale=z_scale,
                             jitter=settled_jitter(kernel.K(Z0), jitter), verbose=verbose,
                             name=name)
