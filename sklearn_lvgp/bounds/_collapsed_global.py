"""Collapsed sparse-GP bound with uncertain inputs (Titsias & Lawrence 2010).

The bound is the one printed in de Souza et al. (2021, §2.2), summed over the D outputs.
``collapsed_bound`` evaluates it in a numerically stable form, with every Cholesky factor taken
of ``K_uu`` or of ``B = I + L⁻¹ Ψ2 L⁻ᵀ / σ²`` (``B ⪰ I``), and returns the value plus a cache;
``collapsed_bound_vjp`` returns the hand-derived adjoints dF/dψ0, dF/dΨ1, dF/dΨ2, dF/dKuu, dF/dσ².
The same cache is the optimal q(u) (Titsias 2009) used by ``heldout_bound`` (the bound of new rows
with the model fixed) and ``predictive_moments`` (the moments at uncertain inputs of Girard et
al. 2003); :class:`CollapsedPredictive` applies both to new rows and new latent points of a
fitted model.
"""

import math
from typing import NamedTuple

import numpy as np

from .._core.blas_numba import DTRSM
from .._core.blocks import row_blocks
from .._core.linalg import cholesky_jitter, solve_upper, symmetrise
from ..expectations import psi_statistics
from ..variational._kl import gaussian_kl
from . import _collapsed_global_numba as _nb

__all__ = ["BoundVJP", "CollapsedPredictive", "StatsVJP", "PREDICT_CHUNK_ROWS",
           "chunked_predictive_moments",
           "collapsed_bound", "collapsed_bound_from_stats", "collapsed_bound_vjp",
           "collapsed_stats_vjp", "heldout_bound", "joint_predictive_moments",
           "predictive_moments"]

#: Test rows per chunk of the uncertain-input predictions: per-point Ψ2 is (rows, M, M).
PREDICT_CHUNK_ROWS = 256


class BoundVJP(NamedTuple):
    """Adjoints of the collapsed bound."""

    psi0: float
    Psi1: np.ndarray
    Psi2: np.ndarray
    Kuu: np.ndarray
    noise_variance: float


class CollapsedPosterior(NamedTuple):
    """Factors of the collapsed bound; also the optimal q(u) (Titsias 2009)."""

    L: np.ndarray  # chol(Kuu + jitter)
    LB: np.ndarray  # chol(I + L^-1 Psi2 L^-T / noise)
    c: np.ndarray  # LB^-1 L^-1 Psi1ᵀ Y / noise          (M, D)
    G: np.ndarray  # A^-1 Psi1ᵀ Y = L^-T LB^-T c            (M, D)
    Binv: np.ndarray
    trE: float
    noise_variance: float
    rel_jitter: float
    N: int
    D: int
    YY: float
    psi0: float
    Psi1: np.ndarray
    Y: np.ndarray
    PY: np.ndarray = None  # Psi1ᵀ Y (only the collapsed bound's own posterior has these two)
    LBtc: np.ndarray = None  # LB^-T c


def _sandwich_inv(L, X):
    """``L^-T X L^-1`` for lower-triangular ``L``."""
    return solve_upper(L, solve_upper(L, X).T).T


def collapsed_bound(Y, psi0, Psi1, Psi2, Kuu, noise_variance, *, jitter=1e-6, max_tries=0):
    """Collapsed bound F (without the KL term), summed over the D output columns.

    Parameters
    ----------
    Y : ndarray of shape (N, D)
        Targets.
    psi0 : float
        Σ_n E[k(x_n, x_n)].
    Psi1 : ndarray of shape (N, M)
        E[k(x_n, z_m)].
    Psi2 : ndarray of shape (M, M)
        Σ_n E[k(x_n, Z)ᵀ k(x_n, Z)].
    Kuu : ndarray of shape (M, M)
        ``k(Z, Z)`` without jitter.
    noise_variance : float
        Gaussian noise variance σ².
    jitter : float, default=1e-6
        Relative jitter added to ``Kuu`` (times its mean diagonal).
    max_tries : int, default=0
        Jitter escalations allowed (with a warning each) before ``CholeskyError``. Inside an
        optimiser keep 0 so a failure becomes +inf; at a final state allow escalation.

    Returns
    -------
    F : float
        The bound.
    cache : CollapsedPosterior
        Input of :func:`collapsed_bound_vjp`, :func:`heldout_bound`, :func:`predictive_moments`.
    """
    N, D = Y.shape
    PY = np.asarray(Psi1.T @ Y, dtype=np.float64)
    y = Y.reshape(-1)
    YY = float(y @ y)  # BLAS dot: a fifth of np.sum(Y * Y) at N = 1000, D = 12
    F, post = collapsed_bound_from_stats(N, D, psi0, PY, Psi2, YY, Kuu, noise_variance,
                                         jitter=jitter, max_tries=max_tries)
    return F, post._replace(Psi1=Psi1, Y=Y)


def collapsed_bound_from_stats(N, D, psi0, PY, Psi2, YY, Kuu, noise_variance, *, jitter=1e-6,
                               max_tries=0):
    """Collapsed bound F from the data's sufficient statistics (the global step of the engine).

    The bound sees the data only through ψ0, ``PY = Ψ1ᵀY``, Ψ2 and ``YY = Σ y²``, which are sums
    over rows (Gal, van der Wilk & Rasmussen 2014, eq. 3.3), so they can be accumulated chunk by
    chunk; Titsias & Lawrence (2010), eq. 14, in the stable form with ``B = I + L⁻¹Ψ2L⁻ᵀ/σ²``.

    Parameters
    ----------
    N, D : int
        Rows and output columns.
    psi0 : float
        Σ_n E[k(x_n, x_n)].
    PY : ndarray of shape (M, D)
        Ψ1ᵀY.
    Psi2 : ndarray of shape (M, M)
        Σ_n E[k(x_n, Z)ᵀ k(x_n, Z)].
    YY : float
        Σ_nd y_nd².
    Kuu : ndarray of shape (M, M)
        ``k(Z, Z)`` without jitter.
    noise_variance : float
        Gaussian noise variance σ².
    jitter, max_tries
        As in :func:`collapsed_bound`.

    Returns
    -------
    F : float
        The bound.
    cache : CollapsedPosterior
        Its ``Psi1`` and ``Y`` are ``None``; :func:`collapsed_stats_vjp` gives the adjoints.
    """
    s2 = float(noise_variance)
    L, abs_jit = cholesky_jitter(Kuu, jitter, max_tries=max_tries, name="K_uu",
                                 warn=max_tries > 0)
    L = np.asfortranarray(L)
    scale = float(np.trace(Kuu)) / Kuu.shape[0]
    rel = abs_jit / scale if scale > 0 else 0.0
    Psi2 = np.asarray(Psi2, dtype=np.float64)
    B, trE = _nb.whitened_psi2(DTRSM, L, Psi2, s2)  # I + L^-1 Psi2 L^-T / σ² (stable form)
    LB, _ = cholesky_jitter(B, 0.0, max_tries=max_tries, name="B = I + L^-1 Psi2 L^-T / noise",
                            warn=max_tries > 0)
    LB = np.asfortranarray(LB)
    PY = np.asarray(PY, dtype=np.float64)
    c, LBtc, G, Binv, logdetB, cc = _nb.collapsed_solves(DTRSM, L, LB, PY, s2)
    YY = float(YY)
    F = (-0.5 * N * D * math.log(2.0 * math.pi * s2) - 0.5 * D * logdetB
         - 0.5 * YY / s2 + 0.5 * cc - 0.5 * D * (psi0 / s2 - trE))
    cache = CollapsedPosterior(L, LB, c, G, Binv, trE, s2, rel, N, D, YY, float(psi0),
                               None, None, PY, LBtc)
    return float(F), cache


class StatsVJP(NamedTuple):
    """Adjoints of the collapsed bound wrt its sufficient statistics and globals."""

    psi0: float
    PY: np.ndarray
    Psi2: np.ndarray
    Kuu: np.ndarray
    noise_variance: float


def collapsed_stats_vjp(cache):
    """Adjoints of :func:`collapsed_bound_from_stats` (Titsias & Lawrence 2010, eq. 14).

    Parameters
    ----------
    cache : CollapsedPosterior
        From :func:`collapsed_bound_from_stats` or :func:`collapsed_bound`.

    Returns
    -------
    StatsVJP
        dF/dψ0, dF/dPY (M, D) — so that dF/dΨ1 of a row block is ``Y_block @ dF/dPY ᵀ`` —,
        dF/dΨ2, dF/dKuu (including the dependence of the relative jitter on
        ``mean(diag(Kuu))``) and dF/dσ².
    """
    s2, D = cache.noise_variance, cache.D
    dPsi2, dKu, dnoise = _nb.collapsed_adjoints(
        DTRSM, cache.L, cache.LB, cache.G, cache.Binv, cache.LBtc, cache.PY, cache.N, D, s2,
        cache.YY, cache.psi0, cache.trE, cache.rel_jitter)
    return StatsVJP(-D / (2.0 * s2), cache.G / s2, dPsi2, dKu, float(dnoise))


def collapsed_bound_vjp(cache):
    """Adjoints of :func:`collapsed_bound` (hand-derived).

    Parameters
    ----------
    cache : CollapsedPosterior
        From :func:`collapsed_bound`.

    Returns
    -------
    BoundVJP
        dF/dψ0, dF/dΨ1 (N, M), dF/dΨ2 (M, M), dF/dKuu (M, M; includes the dependence of the
        relative jitter on ``mean(diag(Kuu))``), dF/dσ².
    """
    adj = collapsed_stats_vjp(cache)
    dPsi1 = cache.Y @ adj.PY.T
    return BoundVJP(adj.psi0, dPsi1, adj.Psi2, adj.Kuu, adj.noise_variance)


def _weight_matrices(post):
    """``Kuu^-1`` and ``σ² A^-1 = L^-T B^-1 L^-1`` as explicit weights for trace contractions."""
    M = post.L.shape[0]
    Kinv = _sandwich_inv(post.L, np.eye(M))
    Cs = _sandwich_inv(post.L, post.Binv)
    return Kinv, Cs


def heldout_bound(Ystar, psi0, Psi1, Psi2, post):
    """Bound of new rows with the model and q(u) fixed, without the KL term.

    The data term the uncollapsed bound gives a new row when q(u) is held at its collapsed
    optimum; at the training rows its gradient equals that of the collapsed bound.

    Parameters
    ----------
    Ystar : ndarray of shape (N*, D)
        New rows (in the model's centred space).
    psi0 : float or ndarray of shape (N*,)
        Σ_n ψ0 of the new points, or per-point values.
    Psi1 : ndarray of shape (N*, M)
        Ψ1 of the new points.
    Psi2 : ndarray of shape (M, M) or (N*, M, M)
        Summed Ψ2 of the new points, or per-point Ψ2.
    post : CollapsedPosterior
        The fitted model.

    Returns
    -------
    value : float or ndarray of shape (N*,)
        Summed bound (per-row values when ``Psi2`` is per point).
    adjoints : BoundVJP or None
        dℓ/dψ0, dℓ/dΨ1, dℓ/dΨ2 of the summed bound (``Kuu`` and noise adjoints are ``None``:
        the model is fixed); ``None`` for per-point input.
    """
    s2, G, D = post.noise_variance, post.G, post.D
    Kinv, Cs = _weight_matrices(post)
    W = D * (Cs - Kinv) + G @ G.T
    const = -0.5 * D * math.log(2.0 * math.pi * s2)
    if np.ndim(Psi2) == 3:
        quad = (np.sum(Ystar * Ystar, axis=1) - 2.0 * np.sum((Psi1 @ G) * Ystar, axis=1)
                + np.einsum("nml,ml->n", Psi2, W) + D * np.asarray(psi0))
        return const - quad / (2.0 * s2), None
    n = Ystar.shape[0]
    quad = (float(np.sum(Ystar * Ystar)) - 2.0 * float(np.sum((Psi1 @ G) * Ystar))
            + float(np.sum(W * Psi2)) + D * float(psi0))
    value = n * const - quad / (2.0 * s2)
    dpsi0 = -D / (2.0 * s2)
    dPsi1 = Ystar @ G.T / s2
    dPsi2 = -W / (2.0 * s2)
    return float(value), BoundVJP(dpsi0, dPsi1, symmetrise(dPsi2), None, None)


def predictive_moments(post, psi0, Psi1, Psi2=None, full_cov=False):
    """Moments of f* at (possibly uncertain) test inputs (Girard et al. 2003).

    Parameters
    ----------
    post : CollapsedPosterior
        The fitted model.
    psi0 : ndarray of shape (N*,)
        Per-point ψ0 (``Kdiag`` for deterministic inputs).
    Psi1 : ndarray of shape (N*, M)
        Per-point Ψ1 (``K(X*, Z)`` for deterministic inputs).
    Psi2 : ndarray of shape (N*, M, M) or None
        Per-point Ψ2; ``None`` means deterministic inputs (Ψ2⁽ⁿ⁾ = ψ1ψ1ᵀ).
    full_cov : bool, default=False
        Return the (N*, D, D) output covariance instead of the (N*, D) variances.

    Returns
    -------
    mean : ndarray of shape (N*, D)
        E[f*].
    var : ndarray of shape (N*, D) or (N*, D, D)
        Var[f*] (noise not included).
    """
    G = post.G
    Kinv, Cs = _weight_matrices(post)
    mean = Psi1 @ G
    if Psi2 is None:
        shared = np.asarray(psi0) - np.sum((Psi1 @ (Kinv - Cs)) * Psi1, axis=1)
        D = G.shape[1]
        if full_cov:
            var = np.zeros((mean.shape[0], D, D))
            var[:, np.arange(D), np.arange(D)] = shared[:, None]
        else:
            var = np.repeat(shared[:, None], D, axis=1)
    else:
        shared = np.asarray(psi0) - np.einsum("nml,ml->n", Psi2, Kinv - Cs)
        P2G = np.matmul(Psi2, G)  # (N, M, D)
        if full_cov:
            var = np.einsum("md,nme->nde", G, P2G) - mean[:, :, None] * mean[:, None, :]
            D = G.shape[1]
            var[:, np.arange(D), np.arange(D)] += shared[:, None]
        else:
            var = np.einsum("md,nmd->nd", G, P2G) - mean * mean + shared[:, None]
    return mean, np.maximum(var, 0.0) if not full_cov else var


def chunked_predictive_moments(post, stats_of, n_rows, full_cov=False):
    """:func:`predictive_moments` at ``n_rows`` uncertain test inputs, in row chunks.

    The per-point Ψ2 of a chunk is ``(rows, M, M)``, so the rows go through in chunks of
    :data:`PREDICT_CHUNK_ROWS` and the memory stays bounded in the number of test rows.

    Parameters
    ----------
    post : CollapsedPosterior
        The fitted model.
    stats_of : callable
        ``stats_of(start, stop)``: the per-point Ψ-statistics (``psi0``, ``Psi1``, ``Psi2``)
        of test rows ``start:stop``.
    n_rows : int
        Number of test rows.
    full_cov : bool, default=False
        As in :func:`predictive_moments`.

    Returns
    -------
    mean : ndarray of shape (n_rows, D)
    var : ndarray of shape (n_rows, D) or (n_rows, D, D)
    """
    means, variances = [], []
    for rows in row_blocks(n_rows, 1, PREDICT_CHUNK_ROWS):
        stats = stats_of(rows.start, rows.stop)
        m, v = predictive_moments(post, stats.psi0, stats.Psi1, stats.Psi2, full_cov=full_cov)
        means.append(m)
        variances.append(v)
    return np.concatenate(means, axis=0), np.concatenate(variances, axis=0)


class CollapsedPredictive(NamedTuple):
    """A fitted collapsed GPLVM at new rows and new latent points, the model held fixed.

    Parameters
    ----------
    kernel : Kernel
        The fitted kernel.
    Z : ndarray of shape (M, Q)
        Inducing inputs.
    rule : "analytic" or PointRule
        Expectation rule of uncertain latent inputs (shared nodes, not per point).
    post : CollapsedPosterior
        The collapsed q(u) of the training rows.
    """

    kernel: object
    Z: np.ndarray
    rule: object
    post: CollapsedPosterior

    def _stats(self, mu, S):
        return psi_statistics(self.kernel, self.Z, mu, S, self.rule, per_point=True)[0]

    def heldout_scores(self, Y, mu, S):
        """Per-row held-out bound minus KL of rows ``Y`` at their q(x*) = N(mu, diag S).

        Evaluated in blocks of :data:`PREDICT_CHUNK_ROWS` rows (per-point Ψ2 is (rows, M, M)).

        Parameters
        ----------
        Y : ndarray of shape (n, D)
            Rows in the model's centred space.
        mu, S : ndarray of shape (n, Q)
            Means and variances of their latents.

        Returns
        -------
        scores : ndarray of shape (n,)
        """
        out = np.empty(Y.shape[0])
        for rows in row_blocks(Y.shape[0], 1, PREDICT_CHUNK_ROWS):
            a, b = rows.start, rows.stop
            stats = self._stats(mu[a:b], S[a:b])
            values, _ = heldout_bound(Y[a:b], stats.psi0, stats.Psi1, stats.Psi2, self.post)
            out[a:b] = values - gaussian_kl(mu[a:b], S[a:b], per_row=True)
        return out

    def moments(self, mean, var=None, full_cov=False, noise_variance=None):
        """Moments of f* (of y* with ``noise_variance``) at latent inputs ``N(mean, diag var)``
        (Girard et al. 2003).

        Parameters
        ----------
        mean : ndarray of shape (n, Q)
            Latent points (means of the inputs).
        var : ndarray of shape (n, Q) or None, default=None
            Variances of the inputs (evaluated in row chunks by
            :func:`chunked_predictive_moments`); ``None`` for deterministic inputs.
        full_cov : bool, default=False
            Return the (n, D, D) output covariance (uncertain inputs only).
        noise_variance : float or None, default=None
            Gaussian noise variance added to the (diagonal of the) variance.

        Returns
        -------
        mean : ndarray of shape (n, D)
        var : ndarray of shape (n, D) or (n, D, D)
        """
        if var is None:
            psi1 = self.kernel.K(mean, self.Z)
            m, v = predictive_moments(self.post, self.kernel.Kdiag(mean), psi1, None)
        else:
            m, v = chunked_predictive_moments(
                self.post, lambda a, b: self._stats(mean[a:b], var[a:b]), mean.shape[0],
                full_cov=full_cov)
        if noise_variance is not None and full_cov:
            v[:, np.arange(v.shape[1]), np.arange(v.shape[1])] += noise_variance
        elif noise_variance is not None:
            v = v + noise_variance
        return m, v


def joint_predictive_moments(post, Kss, Ksu):
    """Mean and joint covariance of f* at deterministic test inputs (noise not included).

    Parameters
    ----------
    post : CollapsedPosterior
        The fitted model.
    Kss : ndarray of shape (N*, N*)
        ``k(X*, X*)``.
    Ksu : ndarray of shape (N*, M)
        ``k(X*, Z)``.

    Returns
    -------
    mean : ndarray of shape (N*, D)
        E[f*].
    cov : ndarray of shape (N*, N*)
        Cov(f*) (shared by the outputs), symmetric.
    """
    Kinv, Cs = _weight_matrices(post)
    mean = Ksu @ post.G
    return mean, symmetrise(Kss - Ksu @ (Kinv - Cs) @ Ksu.T)
