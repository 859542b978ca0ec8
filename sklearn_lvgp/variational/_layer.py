"""One sparse variational GP layer: prior factor, marginals of f and their backward passes.

Marginals as in Salimbeni (2020, eqs. 1.28–1.29 and 2.6–2.7); hand-derived backward. A layer has
``D`` independent output GPs sharing one kernel and ``M`` inducing inputs ``Z``; per output
``q(u_d) = N(m_d, L_d L_d^T)`` in the whitened (``u = L_u v``) or unwhitened parameterisation.

Pieces (forward and backward side by side):

* :func:`prior_factor` / :func:`prior_factor_vjp` — ``K_uu = k(Z, Z) + jitter``, ``L_u``;
* :func:`marginals` / :func:`marginals_vjp` — ``(mu, var)`` of ``f`` at inputs ``H`` (their
  per-output loops are one jitted call each, :mod:`._outputs_numba`);
* :func:`layer_forward` / :func:`layer_vjp` — the three composed with the KL of
  :mod:`._kl`, as a model uses them for one objective evaluation.
"""

from typing import NamedTuple

import numpy as np

from .._core.blas_numba import DTRMM
from .._core.linalg import (
    cholesky_jitter,
    cholesky_vjp,
    lower_solve,
    solve_lower_vjp,
    tril,
    tril_indices,
)
from .._core.workspace import Workspace
from ..kernels._stationary import K_cached_into
from ._kl import kl_divergence, kl_divergence_vjp
from ._mean_functions import ZeroMean
from ._outputs_numba import output_variances, output_variances_vjp

#: Largest ``D * M * P`` for which the forward keeps every ``B_d = L_d^T A`` for the backward.
_MAX_CACHED_B = 2 ** 24

__all__ = ["SVGPLayer", "PriorFactor", "prior_factor", "prior_factor_vjp", "layer_global_vjp",
           "MarginalsCache",
           "MarginalsVJP", "marginals", "marginals_vjp", "marginals_precision_adjoint",
           "LayerVJP", "layer_forward", "layer_vjp", "tril_pack", "tril_unpack"]


class SVGPLayer:
    """Parameters of one SVGP layer (plain arrays; the functions below do the work).

    Parameters
    ----------
    kernel : Kernel
        Covariance shared by the ``D`` outputs (ready to use, i.e. initialised).
    Z : ndarray of shape (M, D_in)
        Inducing inputs.
    q_mu : ndarray of shape (M, D)
        Variational means.
    q_sqrt : ndarray of shape (D, M, M)
        Lower-triangular square roots of the variational covariances.
    mean_function : callable, default=None
        Fixed mean function (``None`` is zero).
    whiten : bool, default=True
        Whitened parameterisation.
    """

    def __init__(self, kernel, Z, q_mu, q_sqrt, mean_function=None, whiten=True):
        self.kernel = kernel
        self.Z = Z
        self.q_mu = q_mu
        self.q_sqrt = q_sqrt
        self.mean_function = ZeroMean(q_mu.shape[1]) if mean_function is None else mean_function
        self.whiten = bool(whiten)

    @property
    def n_inducing(self):
        """Number of inducing inputs ``M``."""
        return self.Z.shape[0]

    @property
    def n_outputs(self):
        """Number of output GPs ``D``."""
        return self.q_mu.shape[1]


def tril_pack(q_sqrt):
    """Lower-triangle entries of each ``(M, M)`` block, shape ``(D, M(M+1)/2)``."""
    M = q_sqrt.shape[-1]
    r, c = tril_indices(M)
    return q_sqrt[:, r, c]


def tril_unpack(flat, M):
    """Inverse of :func:`tril_pack`: ``(D, M(M+1)/2)`` to lower-triangular ``(D, M, M)``."""
    flat = np.asarray(flat).reshape(-1, M * (M + 1) // 2)
    out = np.zeros((flat.shape[0], M, M))
    r, c = tril_indices(M)
    out[:, r, c] = flat
    return out


# ------------------------------------------------------------------------------ prior factor
class PriorFactor(NamedTuple):
    """``K_uu`` (jittered) and its lower Cholesky factor.

    Attributes
    ----------
    Kuu : ndarray of shape (M, M)
        ``k(Z, Z) + rel_jitter * mean(diag k(Z, Z)) * I``.
    Lu : ndarray of shape (M, M)
        Lower Cholesky factor of ``Kuu``.
    rel_jitter : float
        Relative jitter actually used (after any escalation).
    Z : ndarray of shape (M, D_in)
        Inducing inputs.
    """

    Kuu: np.ndarray
    Lu: np.ndarray
    rel_jitter: float
    Z: np.ndarray


def prior_factor(kernel, Z, jitter=1e-6, max_tries=5):
    """Factorise ``K_uu`` with jitter relative to its mean diagonal (escalated if needed).

    Parameters
    ----------
    kernel : Kernel
        Layer kernel.
    Z : ndarray of shape (M, D_in)
        Inducing inputs.
    jitter : float, default=1e-6
        Relative jitter (:func:`~sklearn_lvgp._core.linalg.cholesky_jitter`).
    max_tries : int, default=5
        Tenfold escalations before raising ``CholeskyError``.

    Returns
    -------
    PriorFactor
    """
    K = kernel.K(Z)
    L, abs_jit = cholesky_jitter(K, jitter, max_tries, name="Kuu (inducing-point covariance)",
                                 parameter="jitter")
    scale = float(np.mean(np.diag(K)))
    rel = abs_jit / scale if np.isfinite(scale) and scale > 0 else 0.0
    Kuu = K.copy()
    Kuu[np.diag_indices_from(Kuu)] += abs_jit
    return PriorFactor(Kuu, L, rel, Z)


def prior_factor_vjp(kernel, prior, dL_dLu=None, dL_dKuu=None):
    """Backward pass of :func:`prior_factor` to ``Z`` and the kernel ``theta``.

    Parameters
    ----------
    kernel : Kernel
        Layer kernel.
    prior : PriorFactor
        From :func:`prior_factor`.
    dL_dLu : ndarray of shape (M, M) or None
        Adjoint of the Cholesky factor (lower triangle).
    dL_dKuu : ndarray of shape (M, M) or None
        Symmetric adjoint of the jittered ``K_uu`` (e.g. from the unwhitened KL).

    Returns
    -------
    dZ : ndarray of shape (M, D_in)
    dtheta : ndarray of shape (n_theta,)
    """
    M = prior.Lu.shape[0]
    dK = np.zeros((M, M))
    if dL_dLu is not None:
        dK += cholesky_vjp(prior.Lu, dL_dLu)
    if dL_dKuu is not None:
        dK += dL_dKuu
    # the jitter is rel * mean(diag k(Z, Z)), so it carries a share of every diagonal adjoint
    dK[np.diag_indices(M)] += prior.rel_jitter * np.trace(dK) / M
    v = kernel.vjp(dK, prior.Z)
    return v.X, v.theta


# --------------------------------------------------------------------------------- marginals
class MarginalsCache(NamedTuple):
    """Forward quantities of :func:`marginals`."""

    kernel: object
    Z: np.ndarray
    H: np.ndarray
    q_mu: np.ndarray
    q_sqrt: np.ndarray
    Lu: np.ndarray
    A1: np.ndarray
    A: np.ndarray
    mean_function: object
    whiten: bool
    clipped: np.ndarray
    kernel_cache: object
    B: np.ndarray | None
    workspace: Workspace | None = None
    Lf: np.ndarray | None = None


class MarginalsVJP(NamedTuple):
    """Adjoints returned by :func:`marginals_vjp`.

    Attributes
    ----------
    q_mu : ndarray of shape (M, D)
    q_sqrt : ndarray of shape (D, M, M)
        Lower triangle.
    Z : ndarray of shape (M, D_in)
        Through ``K_uf`` only (the ``K_uu`` part goes through ``Lu``).
    theta : ndarray of shape (n_theta,)
        Through ``K_uf`` and ``diag K_ff`` only.
    H : ndarray of shape (P, D_in)
        Adjoint of the inputs.
    Lu : ndarray of shape (M, M)
        Adjoint of the Cholesky factor of ``K_uu`` (lower triangle).
    """

    q_mu: np.ndarray
    q_sqrt: np.ndarray
    Z: np.ndarray
    theta: np.ndarray
    H: np.ndarray
    Lu: np.ndarray


def _transposed_factors(q_sqrt):
    """``L_dᵀ`` of every output, C-contiguous: ``L_d`` in BLAS's column-major layout."""
    return np.ascontiguousarray(np.swapaxes(q_sqrt, 1, 2), dtype=np.float64)


def marginals(kernel, Z, q_mu, q_sqrt, H, Lu, mean_function=None, whiten=True, workspace=None):
    """Marginal means and variances of the layer outputs at ``P`` inputs.

    Salimbeni (2020, eqs. 1.28–1.29).

    Parameters
    ----------
    kernel : Kernel
        Layer kernel.
    Z : ndarray of shape (M, D_in)
        Inducing inputs.
    q_mu : ndarray of shape (M, D)
        Variational means.
    q_sqrt : ndarray of shape (D, M, M)
        Lower-triangular variational square roots.
    H : ndarray of shape (P, D_in)
        Inputs (rows are treated independently: samples × batch may be stacked).
    Lu : ndarray of shape (M, M)
        Cholesky factor of ``K_uu`` (:func:`prior_factor`).
    mean_function : callable, default=None
        Fixed mean function; ``None`` is zero.
    whiten : bool, default=True
        Whitened parameterisation.
    workspace : Workspace, default=None
        Buffers reused across calls (:mod:`sklearn_lvgp._core.workspace`) for ``K_uf`` (stationary
        kernels), ``A1``, the kept ``B_d`` and the backward pass's scratch; the returned cache
        is then valid until the next call with the same workspace.

    Returns
    -------
    mu : ndarray of shape (P, D)
        Marginal means.
    var : ndarray of shape (P, D)
        Marginal variances, clipped at 0 (round-off).
    cache : MarginalsCache
        Input of :func:`marginals_vjp`.
    """
    H = np.ascontiguousarray(H, dtype=np.float64)
    Kuf, kcache = K_cached_into(kernel, Z, H, workspace, "Kuf")
    kappa = kernel.Kdiag(H)
    if workspace is None or not Kuf.flags.c_contiguous:
        A1 = lower_solve(Lu, Kuf)
    else:  # the same solve (same layout, same BLAS call), in a buffer of the workspace
        A1 = workspace.array("A1", Kuf.shape)
        np.copyto(A1, Kuf)
        A1 = lower_solve(Lu, A1, overwrite_b=True)
    A = A1 if whiten else lower_solve(Lu, A1, trans=True)
    mu = A.T @ q_mu
    if mean_function is not None:
        mu += mean_function(H)
    D = q_mu.shape[1]
    A = np.ascontiguousarray(A)
    var = np.empty_like(mu)
    base = kappa - np.einsum("mp,mp->p", A1, A1)
    # every B_d = L_d^T A is kept for the backward pass unless that is too much memory
    keep = D * A.size <= _MAX_CACHED_B
    shape = (D if keep else 1,) + A.shape
    Bs = np.empty(shape) if workspace is None else workspace.array("B", shape)
    Lf = _transposed_factors(q_sqrt)
    output_variances(DTRMM, Lf, A, base, Bs, var)
    clipped = var < 0.0
    if np.any(clipped):
        var[clipped] = 0.0
    cache = MarginalsCache(kernel, Z, H, q_mu, q_sqrt, Lu, A1, A, mean_function, bool(whiten),
                           clipped, kcache, Bs if keep else None, workspace, Lf)
    return mu, var, cache


def marginals_vjp(dL_dmu, dL_dvar, cache):
    """Backward pass of :func:`marginals` (up to ``K_uf`` and ``kappa``).

    Parameters
    ----------
    dL_dmu, dL_dvar : ndarray of shape (P, D)
        Upstream adjoints.
    cache : MarginalsCache
        From :func:`marginals`.

    Returns
    -------
    MarginalsVJP
    """
    c = cache
    dv = np.ascontiguousarray(np.where(c.clipped, 0.0, dL_dvar), dtype=np.float64)
    dmu = np.asarray(dL_dmu, dtype=np.float64)
    A, A1 = c.A, c.A1
    ws = c.workspace
    dq_mu = A @ dmu
    dA = np.matmul(c.q_mu, dmu.T, out=None if ws is None else ws.array("dA", A.shape))
    dq_sqrt = np.empty(c.q_sqrt.shape)
    # one (M, P) scratch for every output: fewer fresh pages per step
    Bdv = np.empty_like(A) if ws is None else ws.array("scratch", A.shape)
    if c.B is None:  # B_d formed again, one at a time, in a buffer of its own
        Bs = np.empty((1,) + A.shape) if ws is None else ws.array("B", (1,) + A.shape)
    else:
        Bs = c.B
    output_variances_vjp(DTRMM, c.Lf, A, Bs, dv, dA, dq_sqrt, Bdv)
    dkappa = np.sum(dv, axis=1)
    dA1 = np.multiply(A1, -2.0 * dkappa, out=Bdv)  # the scratch is free again
    kv, dLu = kuf_backward(dA, dA1, c)
    kd = c.kernel.vjp_diag(dkappa, c.H)
    dH = kv.Z + kd.X
    if c.mean_function is not None:
        dH = dH + c.mean_function.vjp(dmu, c.H)
    return MarginalsVJP(dq_mu, dq_sqrt, kv.X, kv.theta + kd.theta, dH, dLu)


def kuf_backward(dA, dA1, cache):
    """Push the adjoints of ``A`` and ``A1`` through the solves to ``K_uf``.

    Parameters
    ----------
    dA, dA1 : ndarray of shape (M, P)
        Adjoints of ``A`` and of ``A1 = L_u^{-1} K_uf`` (``dA1`` is overwritten).
    cache : MarginalsCache
        From :func:`marginals`.

    Returns
    -------
    kv : KernelVJP
        Adjoint of ``K_uf`` pushed to ``Z`` (``kv.X``), the inputs (``kv.Z``) and ``theta``, from
        the kernel matrix kept by the forward pass.
    dLu : ndarray of shape (M, M)
        Adjoint of ``L_u`` (lower triangle).
    """
    c = cache
    dLu = np.zeros_like(c.Lu)
    if c.whiten:
        dA1 += dA
    else:
        # A = Lu^{-T} A1 (upper solve with T = Lu^T)
        LinvdA = lower_solve(c.Lu, dA)
        dA1 += LinvdA
        dLu -= tril(c.A @ LinvdA.T)
    # dA1 and then dKuf are scratch of this pass: the solve and the kernel backward reuse them
    dLu_2, dKuf = solve_lower_vjp(c.Lu, c.A1, dA1, overwrite_dX=True)
    return c.kernel.vjp_cached(dKuf, c.kernel_cache, overwrite_dK=True), dLu + dLu_2


def marginals_precision_adjoint(dL_dvar, cache):
    """``G_d = A diag(dL/dvar_d) A^T`` per output, for natural gradients.

    Parameters
    ----------
    dL_dvar : ndarray of shape (P, D)
        Upstream adjoint of the variances.
    cache : MarginalsCache
        From :func:`marginals`.

    Returns
    -------
    G : ndarray of shape (D, M, M)
        Adjoint of each ``S_d = L_d L_d^T`` contributed by the marginals (symmetric).
    """
    dv = np.where(cache.clipped, 0.0, dL_dvar)
    A = cache.A
    return np.stack([(A * dv[:, d]) @ A.T for d in range(dv.shape[1])])


# ------------------------------------------------------------------------------ composition
class LayerVJP(NamedTuple):
    """Adjoints of every parameter block of one layer and of its inputs."""

    q_mu: np.ndarray
    q_sqrt: np.ndarray
    Z: np.ndarray
    theta: np.ndarray
    H: np.ndarray


def layer_forward(layer, H, jitter=1e-6, with_kl=True, workspace=None):
    """Prior factor, marginals at ``H`` and (optionally) the KL of one layer.

    Parameters
    ----------
    layer : SVGPLayer
        Parameters.
    H : ndarray of shape (P, D_in)
        Inputs.
    jitter : float, default=1e-6
        Relative jitter on ``K_uu``.
    with_kl : bool, default=True
        Whether to evaluate the KL term.
    workspace : Workspace, default=None
        Buffers reused across calls (see :func:`marginals`).

    Returns
    -------
    mu, var : ndarray of shape (P, D)
        Marginals.
    kl : float
        ``KL(q(u) ‖ p(u))`` (0 when ``with_kl`` is false).
    cache : tuple
        Input of :func:`layer_vjp`.
    """
    prior = prior_factor(layer.kernel, layer.Z, jitter)
    mu, var, mcache = marginals(layer.kernel, layer.Z, layer.q_mu, layer.q_sqrt, H, prior.Lu,
                                layer.mean_function, layer.whiten, workspace)
    kl, kcache = (kl_divergence(layer.q_mu, layer.q_sqrt, prior.Lu, layer.whiten)
                  if with_kl else (0.0, None))
    return mu, var, kl, (layer.kernel, prior, mcache, kcache)


def layer_vjp(dL_dmu, dL_dvar, dL_dkl, cache):
    """Backward pass of :func:`layer_forward`.

    Parameters
    ----------
    dL_dmu, dL_dvar : ndarray of shape (P, D)
        Adjoints of the marginals.
    dL_dkl : float
        Adjoint of the KL value (``-1`` for an ELBO); ignored without the KL.
    cache : tuple
        From :func:`layer_forward`.

    Returns
    -------
    LayerVJP
    """
    kernel, prior, mcache, kcache = cache
    mv = marginals_vjp(dL_dmu, dL_dvar, mcache)
    dq_mu, dq_sqrt, dZ, dtheta = layer_global_vjp(kernel, prior, kcache, dL_dkl, mv.q_mu,
                                                  mv.q_sqrt, mv.Z, mv.theta, mv.Lu)
    return LayerVJP(dq_mu, dq_sqrt, dZ, dtheta, mv.H)


def layer_global_vjp(kernel, prior, kl_cache, dL_dkl, dq_mu, dq_sqrt, dZ, dtheta, dLu):
    """Close a layer's backward pass: add the KL's adjoints and push ``L_u`` and ``K_uu``'s
    adjoints through :func:`prior_factor_vjp` (the chain rule to ``Z`` and ``θ``).

    The marginals' adjoints may be summed over chunks of inputs first (the chunk engine), so
    this runs once per layer and evaluation whatever the number of chunks.

    Parameters
    ----------
    kernel : Kernel
        Layer kernel.
    prior : PriorFactor
        From :func:`prior_factor`.
    kl_cache : object or None
        From :func:`~sklearn_lvgp.variational._kl.kl_divergence` (``None``: no KL term).
    dL_dkl : float
        Adjoint of the KL value.
    dq_mu, dq_sqrt, dZ, dtheta, dLu : ndarray
        The marginals' adjoints of q(u), Z, θ and ``L_u`` (:class:`MarginalsVJP` fields).

    Returns
    -------
    dq_mu, dq_sqrt, dZ, dtheta : ndarray
        The layer's total adjoints.
    """
    dKuu = None
    if kl_cache is not None:
        kv = kl_divergence_vjp(dL_dkl, kl_cache)
        dq_mu = dq_mu + kv.q_mu
        dq_sqrt = dq_sqrt + kv.q_sqrt
        dKuu = kv.Kuu
    dZ_prior, dtheta_prior = prior_factor_vjp(kernel, prior, dLu, dKuu)
    return dq_mu, dq_sqrt, dZ_prior + dZ, dtheta_prior + dtheta
