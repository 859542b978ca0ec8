"""Joint sampling of an SVGP layer over groups of ``K`` inputs.

The importance-weighted bound (Salimbeni 2020, eq. 5.11, §5.2.3) needs, for each data point, one
draw of an inner layer shared by its ``K`` proposals: the ``K`` outputs are sampled jointly from
their ``K x K`` posterior covariance
``Sigma_gd = k(X_g, X_g) - A1_g^T A1_g + B_gd^T B_gd`` (``A1, A, B_d`` of :func:`._layer.marginals`
restricted to the group's columns), ``h = mu + chol(Sigma + delta I) eps``. The backward pass
adds the covariance's contribution to the adjoints of :func:`._layer.layer_vjp` (which handles the
mean and the KL).
"""

from typing import NamedTuple

import numpy as np

from .._core.linalg import CholeskyError, lower_matmul, tril
from ._layer import LayerVJP, kuf_backward, layer_global_vjp, marginals_vjp, prior_factor_vjp

__all__ = ["JointCache", "JointPartial", "joint_sample", "joint_chunk_vjp", "joint_global_vjp",
           "joint_layer_vjp", "block_kernel", "block_kernel_vjp"]

#: Stacked inputs per kernel evaluation when extracting the diagonal ``K x K`` blocks.
_BLOCK_POINTS = 60


def block_kernel(kernel, H, K):
    """Diagonal blocks ``k(H_g, H_g)`` of consecutive groups of ``K`` rows.

    Parameters
    ----------
    kernel : Kernel
        Layer kernel.
    H : ndarray of shape (G * K, D_in)
        Inputs, group-major.
    K : int
        Group size.

    Returns
    -------
    blocks : ndarray of shape (G, K, K)
    """
    G = H.shape[0] // K
    out = np.empty((G, K, K))
    step = max(1, _BLOCK_POINTS // K)
    for g0 in range(0, G, step):
        g1 = min(G, g0 + step)
        n = g1 - g0
        Kc = kernel.K(H[g0 * K:g1 * K]).reshape(n, K, n, K)
        out[g0:g1] = np.transpose(np.diagonal(Kc, axis1=0, axis2=2), (2, 0, 1))
    return out


def block_kernel_vjp(kernel, H, dblocks):
    """Backward pass of :func:`block_kernel` (symmetric block adjoints).

    Parameters
    ----------
    kernel : Kernel
        Layer kernel.
    H : ndarray of shape (G * K, D_in)
        Inputs.
    dblocks : ndarray of shape (G, K, K)
        Symmetric adjoints of the blocks.

    Returns
    -------
    dH : ndarray of shape (G * K, D_in)
    dtheta : ndarray of shape (n_theta,)
    """
    G, K, _ = dblocks.shape
    dH = np.empty_like(H)
    dtheta = 0.0
    step = max(1, _BLOCK_POINTS // K)
    for g0 in range(0, G, step):
        g1 = min(G, g0 + step)
        n = g1 - g0
        dK = np.zeros((n, K, n, K))
        idx = np.arange(n)
        dK[idx, :, idx, :] = dblocks[g0:g1]
        v = kernel.vjp(dK.reshape(n * K, n * K), H[g0 * K:g1 * K])
        dH[g0 * K:g1 * K] = v.X
        dtheta = dtheta + v.theta
    return dH, np.asarray(dtheta, dtype=np.float64)


def _grouped(A, G, K):
    """``(M, G K)`` columns to ``(G, K, M)`` groups."""
    return np.ascontiguousarray(A.reshape(A.shape[0], G, K).transpose(1, 2, 0))


def _ungrouped(A):
    """Inverse of :func:`_grouped`."""
    G, K, M = A.shape
    return np.ascontiguousarray(A.transpose(2, 0, 1)).reshape(M, G * K)


class JointCache(NamedTuple):
    """Forward quantities of :func:`joint_sample`."""

    K: int
    eps: np.ndarray  # (G, K, D)
    chol: np.ndarray  # (G, D, K, K)
    B: list  # per output, (G, K, M)


def joint_sample(cache, eps, delta):
    """One joint draw per group of the layer outputs (forward pass).

    Parameters
    ----------
    cache : tuple
        From :func:`._layer.layer_forward` at the stacked group-major inputs ``H``.
    eps : ndarray of shape (G, K, D)
        Standard normal noise.
    delta : float
        Variance floor added to each ``Sigma`` (as ``delta`` in ``h = mu + eps sqrt(v + delta)``).

    Returns
    -------
    draw : ndarray of shape (G * K, D)
        ``chol(Sigma + delta I) eps`` per group and output (the caller adds the mean ``mu``).
    jcache : JointCache
        Input of :func:`joint_layer_vjp`.
    """
    kernel, _, mc, _ = cache
    G, K, D = eps.shape
    A1 = _grouped(mc.A1, G, K)
    Sig0 = block_kernel(kernel, mc.H, K) - A1 @ np.swapaxes(A1, 1, 2)
    Bs, Sig = [], np.empty((G, D, K, K))
    for d in range(D):
        B = _grouped(lower_matmul(mc.q_sqrt[d], mc.A, trans=True) if mc.B is None else mc.B[d],
                     G, K)
        Bs.append(B)
        Sig[:, d] = Sig0 + B @ np.swapaxes(B, 1, 2)
    Sig += delta * np.eye(K)
    try:
        L = np.linalg.cholesky(Sig)
    except np.linalg.LinAlgError as exc:
        raise CholeskyError(
            "the K x K covariance of a joint inner-layer draw (importance-weighted bound) "
            "is not positive definite; reduce the learning rate or n_importance"
        ) from exc
    draw = np.einsum("gdkl,gld->gkd", L, eps)
    return draw.reshape(G * K, D), JointCache(K, eps, L, Bs)


class JointPartial(NamedTuple):
    """Adjoints of one layer's joint draws summed over the rows of a chunk
    (:func:`joint_chunk_vjp`): the mean path's (:class:`._layer.MarginalsVJP` without ``H``),
    then the covariance path's, before the ``K_uu`` and KL terms (:func:`joint_global_vjp`)."""

    q_mu: np.ndarray
    q_sqrt: np.ndarray
    Z: np.ndarray
    theta: np.ndarray
    Lu: np.ndarray
    q_sqrt_cov: np.ndarray
    Z_cov: np.ndarray
    theta_cov: np.ndarray
    Lu_cov: np.ndarray
    theta_blocks: np.ndarray


def joint_chunk_vjp(dL_dh, cache, jcache):
    """Backward of ``h = mu + chol(Sigma + delta I) eps`` for the rows of one chunk.

    Everything that reads the chunk's rows; :func:`joint_global_vjp` adds the ``K_uu`` and KL
    terms once the partials of all chunks are summed.

    Parameters
    ----------
    dL_dh : ndarray of shape (G * K, D)
        Adjoint of the joint draw.
    cache : tuple
        From :func:`._layer.layer_forward` (its prior factor and KL cache are not read).
    jcache : JointCache
        From :func:`joint_sample`.

    Returns
    -------
    partial : JointPartial
    dH : ndarray of shape (G * K, D_in)
        Adjoint of the inputs.
    """
    kernel, _, mc, _ = cache
    K, eps, L, Bs = jcache
    G, _, D = eps.shape
    M = mc.A.shape[0]
    P = G * K
    base = marginals_vjp(dL_dh, np.zeros_like(dL_dh), mc)
    dh = dL_dh.reshape(G, K, D)
    # Cholesky backward (Murray 2016), batched over groups and outputs
    dL = tril(np.einsum("gkd,gld->gdkl", dh, eps))
    Phi = tril(np.swapaxes(L, -1, -2) @ dL)
    Phi[..., np.arange(K), np.arange(K)] *= 0.5
    Linv = np.linalg.inv(L)
    dSig = np.swapaxes(Linv, -1, -2) @ Phi @ Linv
    dSig = 0.5 * (dSig + np.swapaxes(dSig, -1, -2))  # (G, D, K, K)
    dsum = dSig.sum(axis=1)
    A1 = _grouped(mc.A1, G, K)
    A = mc.A
    dA1 = _ungrouped(-2.0 * (dsum @ A1))
    dA = np.zeros((M, P))
    dq_sqrt = np.zeros_like(mc.q_sqrt)
    for d in range(D):
        dB = _ungrouped(2.0 * (dSig[:, d] @ Bs[d]))
        dq_sqrt[d] = tril(A @ dB.T)
        dA += lower_matmul(mc.q_sqrt[d], dB)
    kv, dLu = kuf_backward(dA, dA1, mc)
    dHb, dthb = block_kernel_vjp(kernel, mc.H, dsum)
    partial = JointPartial(base.q_mu, base.q_sqrt, base.Z, base.theta, base.Lu, dq_sqrt, kv.X,
                           kv.theta, dLu, dthb)
    return partial, base.H + kv.Z + dHb


def joint_global_vjp(kernel, prior, kl_cache, dL_dkl, partial):
    """Close a joint layer's backward pass: the summed :class:`JointPartial` through the KL
    and :func:`._layer.prior_factor_vjp` (once per layer and evaluation).

    Returns
    -------
    dq_mu, dq_sqrt, dZ, dtheta : ndarray
        The layer's total adjoints.
    """
    p = partial
    dq_mu, dq_sqrt, dZ, dtheta = layer_global_vjp(kernel, prior, kl_cache, dL_dkl, p.q_mu,
                                                  p.q_sqrt, p.Z, p.theta, p.Lu)
    dZp, dthp = prior_factor_vjp(kernel, prior, p.Lu_cov)
    return dq_mu, dq_sqrt + p.q_sqrt_cov, dZ + p.Z_cov + dZp, dtheta + p.theta_cov + dthp + \
        p.theta_blocks


def joint_layer_vjp(dL_dh, dL_dkl, cache, jcache):
    """Backward of ``h = mu + chol(Sigma + delta I) eps`` and of the layer.

    Parameters
    ----------
    dL_dh : ndarray of shape (G * K, D)
        Adjoint of the joint draw.
    dL_dkl : float
        Adjoint of the layer's KL value (``-1`` for a bound).
    cache : tuple
        From :func:`._layer.layer_forward`.
    jcache : JointCache
        From :func:`joint_sample`.

    Returns
    -------
    LayerVJP
    """
    kernel, prior, _, kcache = cache
    partial, dH = joint_chunk_vjp(dL_dh, cache, jcache)
    return LayerVJP(*joint_global_vjp(kernel, prior, kcache, dL_dkl, partial), dH)
