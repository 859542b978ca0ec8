"""The LDGD bound's data terms as a map over chunks of batch rows, as a protocol bound.

Given the global parameters, the expected log-likelihoods of a row under the regression and
classification paths depend on that row's q(x_i) only (Ziaei et al. 2024, eq. 9), so an
evaluation is: each path's prior factor chol(K_uu) once (:meth:`LDGDBound.prepare`); one map
over row chunks, each expanding its rows' latent points, evaluating both paths' marginals and
likelihoods and backpropagating them at once (the gradients of its rows' μ, σ and partial
adjoints of q(u), Z, θ, L_u and the noise; :meth:`LDGDBound.chunk_backward`); then the q(U) KL
terms and, once per path, the KL adjoints and the prior factor's backward pass
(:meth:`LDGDBound.gradient`). :class:`LDGDBound` is a one-pass
:class:`~sklearn_lvgp.engine.ChunkedBound`: the same object runs on the rows in memory
(:func:`ldgd_value_and_vjp`) or partitioned on Dask (:func:`ldgd_evaluate` on a
:class:`~sklearn_lvgp.engine._dask.DaskRows` minibatch). This is the one implementation of the
composed LDGD objective (:func:`ldgd_forward`).
"""

from typing import NamedTuple

import numpy as np

from ..engine._executor import serial_global_steps
from ..engine._protocol import ChunkedBound, evaluate_bound
from ..engine._rows import InMemoryRows
from ..expectations._rules import expand_points, expand_points_vjp
from ..likelihoods._gaussian import gaussian_expectation, gaussian_expectation_vjp
from ..variational import kl_divergence, layer_global_vjp, marginals, marginals_vjp, prior_factor
from ._dsvi import FLOPS_PER_WORK
from ._ldgd_objective import GlobalsVJP, classification_ell, classification_ell_vjp

__all__ = ["LDGDBound", "LDGDParams", "ldgd_evaluate", "ldgd_forward", "ldgd_value_and_vjp",
           "ldgd_vjp", "local_rows"]

#: Least estimated work of a chunk of its own (the engine's ``min_work``, in the units of
#: :meth:`LDGDBound.chunk_cost`): about 3 ms of one thread's work (2-core VM; a unit costs
#: about 8 times a deep-GP one here), so a 10⁴-row batch is cut into 64 chunks.
CHUNK_MIN_WORK = 2 ** 16


def _path_pass(kernel, Z, q_mu, q_sqrt, prior, H):
    """Marginals of one (whitened, zero-mean) path at the chunk's points."""
    return marginals(kernel, Z, q_mu, q_sqrt, H, prior.Lu, None, True)


def _chunk(glob, priors, Yr, Yc, mu, sigma, nodes, weights, G_scale, gh_order):
    """Forward and backward of one chunk's data terms (see the module docstring)."""
    scale_r, scale_c = G_scale
    b, P = mu.shape[0], weights.shape[0]
    H = expand_points(mu, sigma, nodes).reshape(b * P, -1)
    wp = np.tile(np.asarray(weights, dtype=np.float64), b)[:, None]
    Yr_rep = np.repeat(Yr, P, axis=0)
    mu_r, var_r, cache_r = _path_pass(glob.kernel_r, glob.Z_r, glob.qmu_r, glob.qsqrt_r,
                                      priors[0], H)
    ell_r = gaussian_expectation(Yr_rep, mu_r, var_r, glob.noise)
    G_r = np.broadcast_to(scale_r * wp, ell_r.shape)
    value_r = float(np.sum(G_r * ell_r))
    dmu_r, dvar_r, dnoise = gaussian_expectation_vjp(G_r, Yr_rep, mu_r, var_r, glob.noise)
    mv_r = marginals_vjp(dmu_r, dvar_r, cache_r)
    dH = mv_r.H
    part_r = (mv_r.q_mu, mv_r.q_sqrt, mv_r.Z, mv_r.theta, mv_r.Lu)
    value_c, part_c = 0.0, None
    if Yc is not None:
        mu_c, var_c, cache_c = _path_pass(glob.kernel_c, glob.Z_c, glob.qmu_c, glob.qsqrt_c,
                                          priors[1], H)
        ell_c, gh_cache = classification_ell(np.repeat(Yc, P, axis=0), mu_c, var_c, gh_order)
        G_c = np.broadcast_to(scale_c * wp, ell_c.shape)
        value_c = float(np.sum(G_c * ell_c))
        dmu_c, dvar_c = classification_ell_vjp(G_c, gh_cache)
        mv_c = marginals_vjp(dmu_c, dvar_c, cache_c)
        dH = dH + mv_c.H
        part_c = (mv_c.q_mu, mv_c.q_sqrt, mv_c.Z, mv_c.theta, mv_c.Lu)
    dmu, dsigma = expand_points_vjp(dH.reshape(b, P, -1), nodes)
    return (dmu, dsigma), (value_r, value_c, dnoise, part_r, part_c)


def _finish_path(kernel, prior, part, kl_cache, dkl):
    """The path's global adjoints ``(dθ, dZ, dq_mu, dq_sqrt)`` from its chunk partials."""
    dq_mu, dq_sqrt, dZ, dtheta = layer_global_vjp(kernel, prior, kl_cache, dkl, *part)
    return dtheta, dZ, dq_mu, dq_sqrt


class LDGDParams(NamedTuple):
    """Parameters of one evaluation of :class:`LDGDBound` (the arguments of
    :func:`ldgd_value_and_vjp` that are not rows)."""

    glob: object
    nodes: np.ndarray | None
    weights: np.ndarray
    scale: float = 1.0
    factors: tuple = (1.0, 1.0, 1.0)
    kl_factors: tuple = (1.0, 1.0)
    jitter: float = 1e-6
    gh_order: int = 20


class LDGDGlobals(NamedTuple):
    """What :meth:`LDGDBound.prepare` returns: the parameters, each path's prior factor and the
    data terms' scales ``(s w_r, s w_c γ)``."""

    params: LDGDParams
    priors: tuple
    G_scale: tuple


class LDGDBound(ChunkedBound):
    """The LDGD bound of a batch of rows (Ziaei et al. 2024, eq. 9), as a one-pass protocol bound.

    Rows: ``Yr`` (continuous observations), ``Yc`` (one-hot labels; absent without the
    classification path), ``mu`` and ``sigma`` (q(x_i)), and ``nodes`` (each row's unit-space
    nodes flattened to ``(P·Q,)``, when they are per row: Monte Carlo draws). A chunk does its
    forward and backward pass at once and returns the gradients of its rows' ``mu`` and
    ``sigma`` and its share of the value and of the global adjoints; :meth:`gradient` adds the
    q(U) KL terms and chains each path's prior factor. :meth:`prepare` takes an
    :class:`LDGDParams`.

    Parameters
    ----------
    classify : bool, default=True
        Whether the classification path and both KL_u terms are in the bound (``False``: the
        test-time bound of the regression path alone).
    per_row_nodes : bool, default=False
        Whether the nodes are a row array (``LDGDParams.nodes`` is then ``None``).
    """

    two_pass = False

    def __init__(self, classify=True, per_row_nodes=False):
        self.classify = bool(classify)
        self.per_row_nodes = bool(per_row_nodes)
        self.row_names = (("Yr",) + (("Yc",) if self.classify else ()) + ("mu", "sigma")
                          + (("nodes",) if self.per_row_nodes else ()))

    def prepare(self, params):
        glob = params.glob
        priors = [prior_factor(glob.kernel_r, glob.Z_r, params.jitter)]
        if self.classify:
            priors.append(prior_factor(glob.kernel_c, glob.Z_c, params.jitter))
        w_r, w_c, gamma = params.factors
        scale = params.scale
        return LDGDGlobals(params, tuple(priors), (scale * w_r, scale * w_c * gamma))

    def chunk_cost(self, G):
        glob = G.params.glob
        P, Q = G.params.weights.shape[0], glob.Z_r.shape[1]
        M_r, D = glob.qmu_r.shape
        work = P * M_r * (M_r * (1 + D) + Q)
        if self.classify:
            M_c, K = glob.qmu_c.shape
            work += P * M_c * (M_c * (1 + K) + Q)
        return work / FLOPS_PER_WORK, None, 0, CHUNK_MIN_WORK

    def plan_key(self, G):
        glob = G.params.glob
        return ((self.classify, G.params.weights.shape[0]) + glob.Z_r.shape + glob.qmu_r.shape
                + (glob.qmu_c.shape if self.classify else ()))

    def chunk_backward(self, G, step, rows, ctx, need_local=True):
        p = G.params
        mu = rows["mu"]
        nodes = p.nodes
        if self.per_row_nodes:
            nodes = rows["nodes"].reshape(mu.shape[0], p.weights.shape[0], -1)
        local, partial = _chunk(p.glob, G.priors, rows["Yr"],
                                rows["Yc"] if self.classify else None, mu, rows["sigma"],
                                nodes, p.weights, G.G_scale, p.gh_order)
        return ({"mu": local[0], "sigma": local[1]} if need_local else None), partial

    def gradient(self, G, step, partials):
        glob, priors = G.params.glob, G.priors
        value_r, value_c, dnoise, part_r, part_c = partials
        if not self.classify:
            theta_r, Z_r, qmu_r, qsqrt_r = _finish_path(glob.kernel_r, priors[0], part_r, None,
                                                        0.0)
            return value_r, GlobalsVJP(theta_r, Z_r, qmu_r, qsqrt_r, dnoise, None, None, None,
                                       None, None, None)
        w_r, w_c, gamma = G.params.factors
        beta_r, beta_c = G.params.kl_factors
        kl_r, kcache_r = kl_divergence(glob.qmu_r, glob.qsqrt_r, priors[0].Lu, True)
        kl_c, kcache_c = kl_divergence(glob.qmu_c, glob.qsqrt_c, priors[1].Lu, True)
        dkl_r, dkl_c = -w_r * beta_r, -w_c * gamma * beta_c
        value = value_r + (value_c + dkl_r * kl_r + dkl_c * kl_c)
        theta_r, Z_r, qmu_r, qsqrt_r = _finish_path(glob.kernel_r, priors[0], part_r, kcache_r,
                                                    dkl_r)
        theta_c, Z_c, qmu_c, qsqrt_c = _finish_path(glob.kernel_c, priors[1], part_c, kcache_c,
                                                    dkl_c)
        return value, GlobalsVJP(theta_r, Z_r, qmu_r, qsqrt_r, dnoise, theta_c, Z_c, qmu_c,
                                 qsqrt_c, None, None)


def ldgd_evaluate(bound, params, source):
    """``(value, adjoints)`` of ``bound`` (an :class:`LDGDBound`) at ``params`` over the rows of
    ``source`` (:class:`~sklearn_lvgp.engine.InMemoryRows`, or a Dask minibatch
    :meth:`~sklearn_lvgp.engine._dask.DaskRows.subset`): the adjoints are a
    :class:`~sklearn_lvgp.bounds._ldgd_objective.GlobalsVJP` whose ``mu`` and ``sigma`` are the
    rows' local gradients in row order."""
    out = evaluate_bound(bound, params, source)
    return out.value, out.grads._replace(mu=out.local["mu"], sigma=out.local["sigma"])


def local_rows(mu, sigma, nodes):
    """The row arrays of a batch's q(x_i): ``mu``, ``sigma`` and, when they are per row
    (shape (b, P, Q)), the nodes flattened to ``(b, P·Q)``; shared nodes are no rows."""
    arrays = {"mu": mu, "sigma": sigma}
    if nodes.ndim == 3:
        arrays["nodes"] = nodes.reshape(nodes.shape[0], -1)
    return arrays


@serial_global_steps
def ldgd_value_and_vjp(glob, Yr, Yc, mu, sigma, nodes, weights, *, scale=1.0,
                       factors=(1.0, 1.0, 1.0), kl_factors=(1.0, 1.0), jitter=1e-6,
                       gh_order=20, chunk_rows=None, n_threads=None):
    """Data terms and q(U) KL terms of the LDGD bound for a batch of rows, and their adjoints.

    The bound (Ziaei et al. 2024, eq. 9, with the weights w_r, w_c, γ, β of its presets) is
    ``s Σ_i Σ_p w_p [w_r Σ_d ℓ^r_id + w_c γ Σ_k ℓ^c_ik] − w_r β_r KL_u^r − w_c γ β_c KL_u^c``.
    :class:`LDGDBound` on the rows in memory.

    Parameters
    ----------
    glob : Globals
        Global parameters.
    Yr : ndarray of shape (b, D)
        Continuous observations of the batch.
    Yc : ndarray of shape (b, K) or None
        One-hot labels; ``None`` drops the classification path and both KL_u terms (test
        time).
    mu, sigma : ndarray of shape (b, Q)
        q(x_i) of the batch rows.
    nodes : ndarray of shape (P, Q) or (b, P, Q)
        Unit-space nodes (reparameterisation samples ε or sigma points).
    weights : ndarray of shape (P,)
        Node weights (``1/J`` for Monte Carlo, ``1/(2Q)`` for the unscented rule).
    scale : float, default=1.0
        Minibatch scale ``N / b``.
    factors : tuple (w_r, w_c, gamma), default=(1, 1, 1)
        Path weights and the classification up-weighting γ.
    kl_factors : tuple (beta_r, beta_c), default=(1, 1)
        KL_u weights of the preset.
    jitter : float, default=1e-6
        Relative jitter on ``K_uu``.
    gh_order : int, default=20
        Gauss–Hermite nodes of the classification expectation.
    chunk_rows : int, default=None
        Rows per chunk; ``None`` chooses from the problem size (never from the thread count).
    n_threads : int, default=None
        Threads; ``None`` takes the enclosing :func:`sklearn_lvgp._core.parallel.threads` context.

    Returns
    -------
    value : float
        The (maximised) partial bound.
    adjoints : GlobalsVJP
        Its gradients wrt every global block (kernel ``theta`` in the kernel's own log space)
        and wrt the batch's ``mu`` and ``sigma``.
    """
    bound = LDGDBound(Yc is not None, nodes.ndim == 3)
    params = LDGDParams(glob, None if bound.per_row_nodes else nodes, weights, scale, factors,
                        kl_factors, jitter, gh_order)
    arrays = {"Yr": Yr, **local_rows(mu, sigma, nodes)}
    if bound.classify:
        arrays["Yc"] = Yc
    rows = InMemoryRows(arrays, chunk_rows=chunk_rows, n_threads=n_threads, prefix="ldgd")
    return ldgd_evaluate(bound, params, rows)


def ldgd_forward(glob, Yr, Yc, mu, sigma, nodes, weights, **kwargs):
    """``(value, adjoints)`` of :func:`ldgd_value_and_vjp`, as a forward/backward pair with
    :func:`ldgd_vjp` (the adjoints are formed in the same pass)."""
    return ldgd_value_and_vjp(glob, Yr, Yc, mu, sigma, nodes, weights, **kwargs)


def ldgd_vjp(cache):
    """The adjoints (:class:`~sklearn_lvgp.bounds._ldgd_objective.GlobalsVJP`) of
    :func:`ldgd_forward`'s value."""
    return cache
