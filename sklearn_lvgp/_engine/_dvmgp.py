"""The DVMGP bound as a map-reduce over row chunks.

Given the global parameters — the W-layer's inducing inputs Ξ, q(V) = N(μ_q, Σ_q) and kernels,
the output layer's ζ and σ_f, the noise — a row's q(W) marginals, its latent point
``N(h_i, diag η_i)`` and its Ψ-statistics depend on that row only (de Souza 2023, ch. 4), and the
collapsed bound sees the rows through ψ0, Ψ1ᵀY, Ψ2 and Σy² (Titsias & Lawrence 2010, eq. 14).
So an evaluation is: the W-layer's factors chol(K_v,q) and KL once; a forward map (projection,
latent moments, output Ψ-statistics per chunk); the global collapsed step; a backward map that
returns, per q, the chunk's share of ``αᵀda`` (the μ adjoint), ``Ā = (α ∘ db) αᵀ`` and the
kernel adjoints of K_vw and k(x, x); and a final step that turns the reduced ``Σ αᵀda`` and
``Σ Ā`` into the adjoints of K_v, μ and Σ_q, as :func:`~sklearn_lvgp._objectives._dvmgp_bound.
projection_vjp` does for the whole data at once.
"""

import numpy as np

from .._linalg import (
    cho_solve,
    cholesky_jitter,
    logdet_from_chol,
    solve_lower,
    solve_upper,
    symmetrise,
    tril,
)
from .._objectives._collapsed import collapsed_bound_from_stats, collapsed_stats_vjp
from .._objectives._dvmgp_bound import (
    chol_factors,
    latent_moments,
    latent_moments_vjp,
    output_kernel,
    output_psi,
    output_psi_vjp,
    projection_kernels,
)
from ._collapsed import KEEP_TOTAL
from ._executor import ChunkExecutor, plan_chunks

__all__ = ["dvmgp_elbo_and_grads"]


class _Row:
    """Global factors of one row q of the W-layer."""

    def __init__(self, kernel, Xi, mu, Lsig, jitter):
        m_v, D = mu.shape
        Kv = kernel.K(Xi)
        Kv[np.diag_indices(m_v)] += jitter * float(np.mean(np.diag(Kv)))
        self.kernel, self.mu, self.Lsig = kernel, mu, Lsig
        self.Lv, _ = cholesky_jitter(Kv, 0.0, max_tries=0, name="K_v (projection GP)",
                                     warn=False)
        # KL(q(v_q) ‖ p(v_q)): D (log|K_v| − log|Σ_q| + tr(K_v⁻¹ Σ_q)) + Σ_d μᵀK_v⁻¹μ − m_v D
        iLS = solve_lower(self.Lv, Lsig)
        iLmu = solve_lower(self.Lv, mu)
        logdet_sig = 2.0 * float(np.sum(np.log(np.abs(np.diag(Lsig)))))
        self.kl = 0.5 * (D * (logdet_from_chol(self.Lv) - logdet_sig + float(np.sum(iLS * iLS)))
                         + float(np.sum(iLmu * iLmu)) - m_v * D)
        self.Kinv = self.Kinv_mu = self.Sig = None

    def backward_factors(self):
        """``K_v⁻¹``, ``K_v⁻¹μ`` and ``Σ_q`` (once per evaluation, before the backward map)."""
        m_v = self.Lv.shape[0]
        self.Kinv = cho_solve(self.Lv, np.eye(m_v))
        self.Kinv_mu = self.Kinv @ self.mu
        self.Sig = self.Lsig @ self.Lsig.T


def _project(rows, Xi, X):
    """q(W) marginals ``a`` (n, Q, D), ``b`` (n, Q) of a chunk and each row's ``α``."""
    n, D = X.shape
    Q = len(rows)
    a = np.empty((n, Q, D))
    b = np.empty((n, Q))
    alphas = []
    for q, row in enumerate(rows):
        Kvw = row.kernel.K(Xi, X)
        beta = solve_lower(row.Lv, Kvw)
        alpha = solve_upper(row.Lv, beta)
        a[:, q, :] = alpha.T @ row.mu
        SLa = row.Lsig.T @ alpha
        b[:, q] = row.kernel.Kdiag(X) - np.sum(beta * beta, axis=0) + np.sum(SLa * SLa, axis=0)
        alphas.append(alpha)
    return a, b, alphas


def _forward(rows, Xi, zeta, sf, X):
    a, b, alphas = _project(rows, Xi, X)
    h, eta = latent_moments(a, b, X)
    stats, ocache = output_psi(zeta, h, eta, sf)
    return stats, (b, alphas, ocache)


def _backward(rows, Xi, adj, X, Y, cache):
    """A chunk's partial adjoints: ``dζ``, ``dσ_f`` and per row q ``(αᵀda, Ā, dΞ, dθ…)``."""
    b, alphas, ocache = cache
    dh, deta, dzeta, dsf = output_psi_vjp(adj.psi0, Y @ adj.PY.T, adj.Psi2, ocache)
    da, db = latent_moments_vjp(dh, deta, b, X)
    parts = []
    for q, (row, alpha) in enumerate(zip(rows, alphas, strict=True)):
        da_q, db_q = da[:, q, :], db[:, q]
        KinvSa = row.Kinv @ (row.Sig @ alpha)
        dKvw = row.Kinv_mu @ da_q.T - 2.0 * (alpha - KinvSa) * db_q
        v2 = row.kernel.vjp(dKvw, Xi, X)
        v3 = row.kernel.vjp_diag(np.asarray(db_q, dtype=np.float64).copy(), X)
        parts.append((alpha @ da_q, (alpha * db_q) @ alpha.T, v2.X, v2.theta, v3.theta))
    return dzeta, dsf, tuple(parts)


def _finish_row(row, part, Xi, jitter):
    """The row's ``(dΞ, dμ, dL_q, dθ)`` from its reduced partials and the KL (adjoint −1)."""
    dmu, Abar, dXi_kvw, dth_kvw, dth_diag = part
    Kinv, Kinv_mu, Sig, Lsig = row.Kinv, row.Kinv_mu, row.Sig, row.Lsig
    D = row.mu.shape[1]
    ASK = Abar @ Sig @ Kinv
    dKv = -Kinv_mu @ dmu.T + Abar - ASK - ASK.T
    dLsig = 2.0 * Abar @ Lsig
    dkl = -1.0
    dKv = dKv + 0.5 * dkl * (D * Kinv - D * Kinv @ Sig @ Kinv - Kinv_mu @ Kinv_mu.T)
    dmu = dmu + dkl * Kinv_mu
    dLsig = dLsig + dkl * D * (Kinv @ Lsig - np.diag(1.0 / np.diag(Lsig)))
    dKv = symmetrise(dKv)
    v1 = row.kernel.vjp(dKv, Xi)
    th = v1.theta + dth_kvw + dth_diag
    # the jitter is relative to κ_q², so it moves with log κ_q²
    th[0] += jitter * float(row.kernel.variance) * float(np.trace(dKv))
    return v1.X + dXi_kvw, dmu, tril(dLsig), th


def dvmgp_elbo_and_grads(X, Y, p, chol, jitter, *, max_tries=0, chunk_rows=None,
                         n_threads=None):
    """DVMGP ELBO, its gradient wrt ``zeta``, ``Xi``, ``mu``, ``chol``, ``wtheta``,
    ``signal_std`` and ``noise``, and the collapsed q(u) posterior, chunk by chunk.

    ``chol`` is the (Q, m_v) diagonal or (Q, m_v, m_v) lower factor of the Σ_q; ``grads["chol"]``
    has its shape. The other arguments are those of ``sklearn_lvgp._dvmgp._elbo_and_grads``;
    ``chunk_rows`` (``None``: from the problem size, never from the thread count) and
    ``n_threads`` (``None``: the enclosing ``threads`` context) are the engine's.
    """
    zeta, sf, s2, Xi = p["zeta"], float(p["signal_std"]), float(p["noise"]), p["Xi"]
    mu = np.asarray(p["mu"], dtype=np.float64)
    Q, m_v, D = mu.shape
    N, Dy = Y.shape
    m_u = zeta.shape[0]
    Ls = chol_factors(chol, m_v)
    rows = [_Row(k, Xi, mu[q], Ls[q], jitter)
            for q, k in enumerate(projection_kernels(p["wtheta"]))]
    kl = 0.0
    for row in rows:
        kl += row.kl
    work = Q * m_v * (m_v + D) + Q * m_u * (m_u + 1) // 2
    chunks = plan_chunks(N, work, chunk_rows=chunk_rows)
    keep = N * (Q * m_v + m_u) <= KEEP_TOTAL
    kept = [None] * len(chunks)
    executor = ChunkExecutor(n_threads)

    def forward(i, a, b):
        stats, cache = _forward(rows, Xi, zeta, sf, X[a:b])
        kept[i] = cache if keep else None
        Yc = Y[a:b]
        yc = Yc.reshape(-1)
        return float(stats.psi0), np.asarray(stats.Psi1.T @ Yc), stats.Psi2, float(yc @ yc)

    psi0, PY, Psi2, YY = executor.map_reduce(forward, chunks)
    kern = output_kernel(sf, Q)
    F, post = collapsed_bound_from_stats(N, Dy, psi0, PY, Psi2, YY, kern.K(zeta), s2,
                                         jitter=jitter, max_tries=max_tries)
    adj = collapsed_stats_vjp(post)
    for row in rows:
        row.backward_factors()

    def backward(i, a, b):
        cache = kept[i] if kept[i] is not None else _forward(rows, Xi, zeta, sf, X[a:b])[1]
        kept[i] = None
        return _backward(rows, Xi, adj, X[a:b], Y[a:b], cache)

    dzeta, dsf, parts = executor.map_reduce(backward, chunks)
    dXi = np.zeros_like(Xi)
    dmu = np.empty_like(mu)
    dchol = np.empty((Q, m_v)) if np.ndim(chol) == 2 else np.empty((Q, m_v, m_v))
    dtheta = np.empty((Q, 1 + D))
    for q, row in enumerate(rows):
        dXi_q, dmu[q], dL, dtheta[q] = _finish_row(row, parts[q], Xi, jitter)
        dXi += dXi_q
        dchol[q] = np.diag(dL) if np.ndim(chol) == 2 else dL
    kv = kern.vjp(adj.Kuu, zeta)
    grads = {"zeta": dzeta + kv.X, "Xi": dXi, "mu": dmu, "wtheta": dtheta, "chol": dchol,
             "signal_std": dsf + 2.0 * float(kv.theta[0]) / sf, "noise": adj.noise_variance}
    return F - kl, grads, post
