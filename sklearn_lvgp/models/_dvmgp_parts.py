"""Model internals of :class:`~sklearn_lvgp.DVMGP` (de Souza 2020, ch. 4).

The initialisation of §4.4 (PCA directions, k-means centres, the initial blocks), the packing
of the parameters, the ELBO with its gradient wrt each packed block (the chunked engine
:func:`sklearn_lvgp.bounds._dvmgp.dvmgp_elbo_and_grads` behind it), one optimiser phase and
the draws of :meth:`~sklearn_lvgp.DVMGP.sample_y`. The W-layer's formulas are in
:mod:`sklearn_lvgp.variational._projection`.
"""

import numbers
import warnings
from functools import partial
from typing import NamedTuple

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._core.blocks import row_blocks
from .._core.init import kmeans_centres, pca_components
from .._core.linalg import settled_jitter
from .._core.params import ParamPacker
from .._core.scaling import normalization
from ..bounds._collapsed_global import chunked_predictive_moments, predictive_moments
from ..bounds._dvmgp import dvmgp_elbo_and_grads, dvmgp_evaluate
from ..expectations._rules import expand_points, reparameterise
from ..likelihoods._gaussian import gaussian_log_density
from ..optim._lbfgsb import minimize_adam, minimize_lbfgsb
from ..variational._projection import (
    latent_moments,
    output_kernel,
    output_psi,
    projection_forward,
    projection_kernels,
)

__all__ = ["RowData", "architecture", "fit_parameters", "heldout_log_density",
           "initial_params", "latent_points", "length_scale_init", "make_packer", "model_sizes",
           "optimise", "optimise_phase", "output_moments", "sample_targets"]


class RowData(NamedTuple):
    """Standardised training rows held by a row source (a fit on Dask), in place of the
    ``(X, Y)`` arrays: ``rows`` holds ``"X"`` and ``"Y"`` (a
    :class:`~sklearn_lvgp.engine._dask.DaskRows` or a subset of its rows)."""

    rows: object
    n_rows: int
    n_outputs: int

def length_scale_init(projection_length_scale_init, D):
    """Initial length scale of the W-layer kernels (``projection_length_scale_init`` if set)."""
    if projection_length_scale_init is not None:
        return float(projection_length_scale_init)
    # keeps E‖x − x'‖² / ℓ² = 4 for standardised inputs, the paper's value at D = 2 (ℓ = 1)
    return float(np.sqrt(max(D, 2) / 2.0))


def initial_params(Xs, Q, m_u, m_v, seed, length_scale, noise_variance_init, var_y, P=None):
    """The initial blocks (de Souza 2020, §4.4): PCA directions for ``μ``, k-means centres for
    Ξ and ζ, unit κ_q, the given length scale, σ_f² = var_y and σ² = noise_init · var_y.
    ``P``: the (Q, D) PCA directions when they come from elsewhere (``None``: from ``Xs``)."""
    D = Xs.shape[1]
    P = pca_components(Xs, Q) if P is None else P
    Xi0 = kmeans_centres(Xs, m_v, seed)
    zeta0 = kmeans_centres(Xs @ P.T, m_u, seed)
    mu0 = np.broadcast_to(P[:, None, :], (Q, m_v, D)).copy()
    wtheta0 = np.zeros((Q, 1 + D))
    wtheta0[:, 1:] = np.log(length_scale)
    return {"zeta": zeta0, "Xi": Xi0, "mu": mu0, "c_diag": np.full((Q, m_v), 1.001 / D),
            "c_off": np.zeros((Q, m_v * (m_v - 1) // 2)),
            "wtheta": wtheta0, "signal_std": np.sqrt(var_y),
            "noise": float(noise_variance_init) * var_y}


def make_packer(qv_covariance, Q, D, m_u, m_v):
    """The :class:`~sklearn_lvgp._core.params.ParamPacker` of the free blocks."""
    blocks = [("zeta", (m_u, Q)), ("Xi", (m_v, D)), ("mu", (Q, m_v, D)),
              ("c_diag", (Q, m_v), "log")]
    if qv_covariance == "full":
        blocks.append(("c_off", (Q, m_v * (m_v - 1) // 2)))
    blocks += [("wtheta", (Q, 1 + D)), ("signal_std", (), "log"), ("noise", (), "log")]
    return ParamPacker(blocks)


def latent_points(p, qv_covariance, jitter, Xs):
    """Means and variances of the latent points ``W(x) x`` at standardised inputs ``Xs``."""
    a, b, _, _ = projection_forward(Xs, p["Xi"], p["mu"], _chol(p, qv_covariance),
                                    projection_kernels(p["wtheta"]), jitter)
    return latent_moments(a, b, Xs)


def output_moments(p, post, qv_covariance, jitter, Xs):
    """Mean and variance of y* (noise included) in normalised units (de Souza 2020, §4.3.1)."""
    h, eta = latent_points(p, qv_covariance, jitter, Xs)
    signal_std = float(np.ravel(p["signal_std"])[0])
    mean, var = chunked_predictive_moments(
        post, lambda a, b: output_psi(p["zeta"], h[a:b], eta[a:b], signal_std,
                                      per_point=True)[0],
        Xs.shape[0])
    return mean, var + float(np.ravel(p["noise"])[0])


def heldout_log_density(packer, qv_covariance, jitter, Xs, Ys, Xv, Yv, x):
    """Mean log predictive density of held-out normalised rows ``(Xv, Yv)`` at parameters
    ``x`` fitted on ``(Xs, Ys)`` (the early-stopping score)."""
    p = packer.unpack(x)
    _, _, post = _elbo_and_grads(Xs, Ys, p, jitter, qv_covariance)
    mean, var = output_moments(p, post, qv_covariance, jitter, Xv)
    return float(np.mean(gaussian_log_density(Yv, mean, var).sum(axis=1)))


def optimise_phase(est, packer, x0, Xs, Ys, jitter, budget, fix_noise, var_y, held_out=None):
    """One optimiser phase of ``budget`` iterations (the noise held at its start if
    ``fix_noise``); ``held_out``: the normalised ``(X, Y)`` of early stopping, or ``None``.

    Returns the parameters, the minimised objective at every iteration, the iterations run and
    the held-out scores (``None`` without early stopping)."""
    noise_slice = packer.slice("noise")
    workspaces = []  # the chunks' buffers, reused by every evaluation of this phase

    def objective(flat):
        p = packer.unpack(flat)
        value, grads, _ = _elbo_and_grads(Xs, Ys, p, jitter, est.qv_covariance,
                                          workspaces=workspaces)
        g = -packer.pack_grad(grads, p)
        if fix_noise:
            g[noise_slice] = 0.0
        return -value, g

    name = type(est).__name__ + (" (noise fixed)" if fix_noise else "")
    tol = None if fix_noise else est.tol  # the first phase is a fixed budget
    if est.optimizer == "adam":
        score = None if held_out is None else partial(
            heldout_log_density, packer, est.qv_covariance, jitter, Xs, Ys, *held_out)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # the budget is the user's
            res = minimize_adam(objective, x0, learning_rate=est.learning_rate,
                                max_iter=budget, tol=None if score else tol, window=100,
                                verbose=est.verbose, name=name, validation=score,
                                n_iter_no_change=est.n_iter_no_change,
                                validation_tol=1e-4 if est.tol is None else est.tol)
        return res.x, res.history, res.n_iter, res.validation_history
    bounds = np.full((packer.size, 2), [-np.inf, np.inf])
    wt = packer.slice("wtheta")
    bounds[wt] = np.log([1e-5, 1e5])
    bounds[noise_slice] = ([x0[noise_slice][0]] * 2 if fix_noise
                           else np.log([1e-8 * var_y, 1e3 * var_y]))
    with warnings.catch_warnings():
        if fix_noise:
            # the first phase is a fixed budget, not a convergence target
            warnings.simplefilter("ignore", ConvergenceWarning)
        res = minimize_lbfgsb(objective, x0, bounds=bounds, max_iter=budget,
                              verbose=est.verbose, name=name, stop_tol=tol)
    return res.x, res.history, res.n_iter, None


def model_sizes(est, D):
    """``(Q, m_u, m_v)``: the latent dimension and the two numbers of inducing inputs."""
    Q = D if est.n_components is None else int(est.n_components)
    return Q, int(est.n_inducing), int(est.n_inducing_projection)


def architecture(est, D, D_y):
    """What a ``warm_start`` fit must share with the previous one to continue it."""
    Q, m_u, m_v = model_sizes(est, D)
    return (D, D_y, Q, m_u, m_v, est.qv_covariance, est.normalize_X, bool(est.normalize_y),
            bool(est.early_stopping), float(est.validation_fraction))


def fit_parameters(est, X, Y, random_state):
    """The optimisation of a fit: standardisation, the initialisation of de Souza (2020,
    §4.4) and the two phases (noise fixed, then everything), or, for a ``warm_start`` fit of
    the same structure, the previous parameters, standardisation and jitter and the second
    phase only (iterations and bound history accumulate; Adam's moments restart).

    Returns the flat parameters, their packer, the jitter, the bound history, the iteration
    count and the standardised ``X`` and ``Y``.
    """
    n, D = X.shape
    Q, m_u, m_v = model_sizes(est, D)
    continuing = est._continues_fit(architecture(est, D, Y.shape[1]))
    if not continuing:
        est.X_mean_, est.X_scale_ = normalization(X, est.normalize_X)
        est.y_mean_, est.y_scale_ = est._target_moments(Y)
    Xs = (X - est.X_mean_) / est.X_scale_
    Ys = (Y - est.y_mean_) / est.y_scale_
    Xs, Ys, held_out = est._held_out(Xs, Ys, random_state)
    var_y = float(np.mean(np.var(Ys, axis=0)))
    var_y = var_y if var_y > 0 else 1.0

    def init(seed):
        return initial_params(Xs, Q, m_u, m_v, seed,
                              length_scale_init(est.projection_length_scale_init, D),
                              est.noise_variance_init, var_y)

    out = optimise(est, continuing, Xs, Ys, held_out, var_y, random_state, init, D)
    return (*out, Xs, Ys)


def optimise(est, continuing, Xs, Ys, held_out, var_y, random_state, init, D):
    """The two phases from the initial blocks ``init(seed)`` (the seed drawn here), or, when
    ``continuing``, the second phase from the previous fit's parameters.

    ``Xs``, ``Ys``: the standardised training rows (or a :class:`RowData` and ``None``);
    ``held_out``: the normalised ``(X, Y)`` of early stopping, or ``None``. Returns the flat
    parameters, their packer, the jitter, the bound history and the iteration count.
    """
    Q, m_u, m_v = model_sizes(est, D)
    packer = make_packer(est.qv_covariance, Q, D, m_u, m_v)
    if continuing:
        x, jitter = packer.pack(est._params), est._jitter
        history, n_iter = [est.elbo_history_], est.n_iter_
        phases = [(int(est.max_iter), False)]
    else:
        # an int random_state seeds K-means directly (19960111 reproduces the paper's init)
        seed = (int(est.random_state) if isinstance(est.random_state, numbers.Integral)
                else int(random_state.randint(np.iinfo(np.int32).max)))
        params0 = init(seed)
        kern = output_kernel(params0["signal_std"], Q)
        jitter = settled_jitter(kern.K(params0["zeta"]), est.jitter, name="K_u", scale=var_y)
        x = packer.pack(params0)
        history, n_iter = [], 0
        phases = [(int(est.n_iter_fixed_noise), True), (int(est.max_iter), False)]
    est._shapes = (Q, D, m_u, m_v)
    est.validation_scores_ = None
    for budget, fix_noise in phases:
        if budget == 0:
            continue
        x, hist, n, checks = optimise_phase(est, packer, x, Xs, Ys, jitter, budget, fix_noise,
                                            var_y, None if fix_noise else held_out)
        history.append(-np.asarray(hist))
        n_iter += n
        if checks is not None:
            est.validation_scores_ = np.asarray(checks)
    history = np.concatenate(history) if history else np.zeros(0)
    return x, packer, jitter, history, n_iter


def sample_targets(post, zeta, signal_std, noise_variance, h, eta, n_samples, n_targets, rs):
    """Draws of y (normalised units), shape ``(n, n_samples, n_targets)``: z ~ N(h, diag η),
    then f | z under the collapsed q(u), then the noise; rows in blocks of about 4096 draws."""
    n, Q = h.shape[0], zeta.shape[1]
    S = n_samples
    out = np.empty((n, S, n_targets))
    kern = output_kernel(signal_std, Q)
    for rows in row_blocks(n, S, 4096):
        a, b = rows.start, rows.stop
        z = expand_points(h[a:b], np.sqrt(eta[a:b]),
                          rs.standard_normal((b - a, S, Q))).reshape(-1, Q)
        m, v = predictive_moments(post, kern.Kdiag(z), kern.K(z, zeta), None)
        f = reparameterise(m, np.sqrt(v), rs.standard_normal(m.shape))
        yy = reparameterise(f, np.sqrt(noise_variance), rs.standard_normal(m.shape))
        out[a:b] = yy.reshape(b - a, S, n_targets)
    return out


# ------------------------------------------------------------------------------ the objective

def _chol(p, qv_covariance):
    """q(V) Cholesky factors from the packed blocks: diagonals, or full lower factors."""
    c = p["c_diag"]
    if qv_covariance == "diag":
        return c
    Q, m_v = c.shape
    L = np.zeros((Q, m_v, m_v))
    i, j = np.tril_indices(m_v, -1)
    L[:, i, j] = p["c_off"]
    L[:, np.arange(m_v), np.arange(m_v)] = c
    return L


def _elbo_and_grads(X, Y, p, jitter, qv_covariance, max_tries=0, workspaces=None):
    """DVMGP ELBO, its gradient wrt each constrained block, and the q(u) posterior.

    The bound is that of de Souza (2020, app. A.1.3), with its log-determinant terms
    corrected to ``+½ log|K_u| − ½ log|σ²K_u + Ψ2|``.

    Parameters
    ----------
    X : ndarray of shape (n, D) or RowData
        Standardised inputs, or the rows of a fit on Dask (with ``Y=None``).
    Y : ndarray of shape (n, D_y) or None
        Standardised targets.
    p : dict
        Blocks ``zeta``, ``Xi``, ``mu`` (Q, m_v, D), ``c_diag`` (and ``c_off`` for a full
        covariance), ``wtheta``, ``signal_std``, ``noise``.
    jitter : float
        Relative jitter on ``K_u`` and ``K_v``.
    qv_covariance : {"diag", "full"}
        Shape of Σ_q.
    max_tries : int, default=0
        Jitter escalations of ``K_u`` allowed (0 inside the optimiser).
    workspaces : list, default=None
        Buffers reused across evaluations (an optimiser's objective keeps one list); see
        :func:`sklearn_lvgp.bounds._dvmgp.dvmgp_elbo_and_grads`.

    Returns
    -------
    elbo : float
    grads : dict
        Gradient of the ELBO wrt every block of ``p`` (natural space).
    post : CollapsedPosterior
    """
    if isinstance(X, RowData):
        elbo, grads, post = dvmgp_evaluate(X.rows, p, _chol(p, qv_covariance), jitter,
                                           X.n_rows, X.n_outputs, max_tries=max_tries)
    else:
        elbo, grads, post = dvmgp_elbo_and_grads(X, Y, p, _chol(p, qv_covariance), jitter,
                                                 max_tries=max_tries, workspaces=workspaces)
    dchol = grads.pop("chol")
    if qv_covariance == "diag":
        grads["c_diag"] = dchol
    else:
        m_v = dchol.shape[1]
        i, j = np.tril_indices(m_v, -1)
        grads["c_diag"] = dchol[:, np.arange(m_v), np.arange(m_v)]
        grads["c_off"] = dchol[:, i, j]
    return elbo, grads, post
