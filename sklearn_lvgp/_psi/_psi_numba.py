"""Jitted loops of the closed-form Ψ-statistics (RBF, RBF×RBF, RBF×linear) and their backward.

Rules (see ``doc/developers.rst``): forward passes parallelise over output entries (rows ``n`` of
Ψ1, pairs ``(m, m')`` of Ψ2) with the sum over ``n`` done serially inside, so every entry is
computed in a fixed order; backward passes parallelise over fixed-size blocks of ``PSI_BLOCK``
rows, write per-row adjoints directly and reduce the rest into per-block partials that are summed
serially. Results are therefore bit-identical for any thread count. No ``fastmath``.

Everything is evaluated in log space: a Ψ entry is ``exp(constant + per-row term + per-pair term
- quadratic form)``, never a product of separately rounded factors that could underflow.

The two-RBF loops cover both Ψ2 of one RBF kernel and the cross term of two RBF kernels (spec
§3.1, §3.3). For one dimension, ``x ~ N(mu, S)`` and kernels with squared length scales ``lam``
and ``rho``::

    E[exp(-(x - z)^2 / (2 lam) - (x - z')^2 / (2 rho))]
        = sqrt(tau / (tau + S)) exp(-(z - z')^2 / (2 u) - (mu - c)^2 / (2 (tau + S))),

with ``u = lam + rho``, ``tau = lam rho / u`` and ``c = wa z + wb z'``, ``wa = rho / u``,
``wb = lam / u``. With ``lam = rho`` this is the Ψ2 formula of §3.1.
"""

import numba as nb
import numpy as np

from .._jit import twin_jit

PSI_BLOCK = 64


@nb.njit(cache=True)
def n_blocks(n_rows):
    """Number of fixed-size row blocks of ``PSI_BLOCK`` rows for ``n_rows`` rows."""
    return max(1, (n_rows + PSI_BLOCK - 1) // PSI_BLOCK)


# ------------------------------------------------------------------------------------ RBF Ψ1

@twin_jit(work=lambda mu, Z, *rest: mu.shape[0] * Z.shape[0] * mu.shape[1])
def rbf_psi1(mu, Z, B, logk1):
    """``Psi1[n, m] = exp(logk1[n] - 0.5 sum_q B[n, q] (mu[n, q] - Z[m, q])^2)``.

    ``B = 1 / (lam + S)`` and ``logk1[n] = log var + 0.5 sum_q log(lam_q B[n, q])`` (spec §3.1).
    """
    N, Q = mu.shape
    M = Z.shape[0]
    out = np.empty((N, M))
    for n in nb.prange(N):
        for m in range(M):
            s = 0.0
            for q in range(Q):
                d = mu[n, q] - Z[m, q]
                s += B[n, q] * d * d
            out[n, m] = np.exp(logk1[n] - 0.5 * s)
    return out


@twin_jit(work=lambda mu, Z, *rest: mu.shape[0] * Z.shape[0] * mu.shape[1])
def rbf_psi1_backward(mu, Z, B, Psi1, A):
    """Backward pass of :func:`rbf_psi1` given the adjoint ``A = dL/dPsi1``.

    Returns ``dmu`` (N, Q), ``dS`` (N, Q), ``dZ`` (M, Q), ``dlam_rest`` (Q,) and ``total``:
    with ``P = A * Psi1``, ``dL/dlam_q = total / (2 lam_q) + dlam_rest[q]`` and
    ``dL/dlog var = total`` (the log-derivatives of §3.1).
    """
    N, Q = mu.shape
    M = Z.shape[0]
    nbk = n_blocks(N)
    dmu = np.zeros((N, Q))
    dS = np.zeros((N, Q))
    dZ_part = np.zeros((nbk, M, Q))
    dl_part = np.zeros((nbk, Q))
    tot_part = np.zeros(nbk)
    for b in nb.prange(nbk):
        lo = b * PSI_BLOCK
        hi = min(N, lo + PSI_BLOCK)
        for n in range(lo, hi):
            for m in range(M):
                p = A[n, m] * Psi1[n, m]
                tot_part[b] += p
                for q in range(Q):
                    bq = B[n, q]
                    t = (mu[n, q] - Z[m, q]) * bq
                    dmu[n, q] -= p * t
                    dZ_part[b, m, q] += p * t
                    s = p * 0.5 * (t * t - bq)
                    dS[n, q] += s
                    dl_part[b, q] += s
    dZ = np.zeros((M, Q))
    dl = np.zeros(Q)
    total = 0.0
    for b in range(nbk):
        dZ += dZ_part[b]
        dl += dl_part[b]
        total += tot_part[b]
    return dmu, dS, dZ, dl, total


# --------------------------------------------------------------------------- two-RBF Ψ2 / cross

@twin_jit(work=lambda mu, E, logk2, I, *rest: mu.shape[0] * I.shape[0] * mu.shape[1])
def two_rbf_psi2(mu, E, logk2, I, J, cmid, pconst, M, sym):
    """Summed Ψ2-type matrix of two RBF kernels, one pair ``(I[p], J[p])`` per parallel task.

    ``C[I, J] = sum_n exp(pconst[p] + logk2[n] - 0.5 sum_q E[n, q] (mu[n, q] - cmid[p, q])^2)``
    where ``E = 1 / (tau + S)``, ``logk2[n] = 0.5 sum_q log(tau_q E[n, q])``, ``cmid`` is the
    pair's tilted centre and ``pconst = log(var_a var_b) - 0.5 sum_q (z_Iq - z_Jq)^2 / u_q``.
    With ``sym`` the pairs hold ``I <= J`` and the result is mirrored.
    """
    N, Q = mu.shape
    P = I.shape[0]
    out = np.zeros((M, M))
    for p in nb.prange(P):
        acc = 0.0
        for n in range(N):
            s = 0.0
            for q in range(Q):
                d = mu[n, q] - cmid[p, q]
                s += E[n, q] * d * d
            acc += np.exp(pconst[p] + logk2[n] - 0.5 * s)
        out[I[p], J[p]] = acc
        if sym:
            out[J[p], I[p]] = acc
    return out


@twin_jit(work=lambda mu, E, logk2, I, *rest: mu.shape[0] * I.shape[0] * mu.shape[1])
def two_rbf_psi2_per_point(mu, E, logk2, I, J, cmid, pconst, M, sym):
    """Per-point version of :func:`two_rbf_psi2`: ``out[n]`` is the ``n``-th summand."""
    N, Q = mu.shape
    P = I.shape[0]
    out = np.zeros((N, M, M))
    for n in nb.prange(N):
        for p in range(P):
            s = 0.0
            for q in range(Q):
                d = mu[n, q] - cmid[p, q]
                s += E[n, q] * d * d
            v = np.exp(pconst[p] + logk2[n] - 0.5 * s)
            out[n, I[p], J[p]] = v
            if sym:
                out[n, J[p], I[p]] = v
    return out


@twin_jit(work=lambda mu, E, logk2, I, *rest: mu.shape[0] * I.shape[0] * mu.shape[1])
def two_rbf_psi2_backward(mu, E, logk2, I, J, cmidT, pconst, DuT, mult, wa, wb, G):
    """Backward pass of :func:`two_rbf_psi2` (and of its per-point version).

    ``G`` has shape ``(1, M, M)`` (adjoint of the summed matrix) or ``(N, M, M)`` (per point);
    ``cmidT`` (Q, P) is the transposed ``cmid``; ``DuT[q, p] = (z_Iq - z_Jq) / u_q``;
    ``mult[p]`` weights each pair (2 for off-diagonal pairs of a symmetric problem, whose ``G``
    must then be symmetric).

    Per block, the pair-dependent sums ``W0 = sum_n w``, ``W1 = sum_n w de`` and
    ``W2 = sum_n w st`` (``w = mult G C``, ``de = (mu - c) e``, ``st = (de^2 - e) / 2``) are
    accumulated first and turned into the ``Z`` and length-scale adjoints once per block.

    Returns ``dmu``, ``dS`` (N, Q), ``dZ`` (M, Q), ``dlam_rest``, ``drho_rest`` (Q,) and
    ``total = sum_n sum_p w``. The full derivatives are
    ``dL/dlam_q = wa_q^2 total / (2 tau_q) + dlam_rest[q]``, similarly for ``rho`` with ``wb``,
    and ``dL/dlog(var_a var_b) = total``.
    """
    N, Q = mu.shape
    P = I.shape[0]
    M = G.shape[1]
    per_point = G.shape[0] > 1
    nbk = n_blocks(N)
    dmu = np.zeros((N, Q))
    dS = np.zeros((N, Q))
    dZ_part = np.zeros((nbk, M, Q))
    dla_part = np.zeros((nbk, Q))
    dlb_part = np.zeros((nbk, Q))
    tot_part = np.zeros(nbk)
    for b in nb.prange(nbk):
        lo = b * PSI_BLOCK
        hi = min(N, lo + PSI_BLOCK)
        s = np.empty(P)
        w = np.empty(P)
        W0 = np.zeros(P)
        W1 = np.zeros((Q, P))
        W2 = np.zeros((Q, P))
        for n in range(lo, hi):
            g = n if per_point else 0
            s[:] = 0.0
            for q in range(Q):
                e = E[n, q]
                x = mu[n, q]
                for p in range(P):
                    d = x - cmidT[q, p]
                    s[p] += e * d * d
            base = logk2[n]
            for p in range(P):
                w[p] = mult[p] * G[g, I[p], J[p]] * np.exp(pconst[p] + base - 0.5 * s[p])
                W0[p] += w[p]
            for q in range(Q):
                e = E[n, q]
                x = mu[n, q]
                am = 0.0
                aS = 0.0
                for p in range(P):
                    de = (x - cmidT[q, p]) * e
                    wde = w[p] * de
                    wst = 0.5 * w[p] * (de * de - e)
                    am += wde
                    aS += wst
                    W1[q, p] += wde
                    W2[q, p] += wst
                dmu[n, q] -= am
                dS[n, q] += aS
        for p in range(P):
            i = I[p]
            j = J[p]
            w0 = W0[p]
            tot_part[b] += w0
            for q in range(Q):
                du = DuT[q, p]
                w1 = W1[q, p]
                h = 0.5 * du * du * w0
                dZ_part[b, i, q] += wa[q] * w1 - du * w0
                dZ_part[b, j, q] += wb[q] * w1 + du * w0
                dla_part[b, q] += wa[q] * (wa[q] * W2[q, p] - du * w1) + h
                dlb_part[b, q] += wb[q] * (wb[q] * W2[q, p] + du * w1) + h
    dZ = np.zeros((M, Q))
    dla = np.zeros(Q)
    dlb = np.zeros(Q)
    total = 0.0
    for b in range(nbk):
        dZ += dZ_part[b]
        dla += dla_part[b]
        dlb += dlb_part[b]
        total += tot_part[b]
    return dmu, dS, dZ, dla, dlb, total


# ------------------------------------------------------------------------------ RBF × linear

@twin_jit(work=lambda mu, S, Z, *rest: mu.shape[0] * Z.shape[0] * mu.shape[1])
def rbf_linear_tilted(mu, S, Z, lam, B, Psi1):
    """``W[m, q] = sum_n Psi1[n, m] (lam_q mu_nq + S_nq z_mq) / (lam_q + S_nq)`` (spec §3.3).

    ``E[k_rbf(x_n, z_m) x_n]`` summed over ``n``; one parallel task per row ``m``.
    """
    N, Q = mu.shape
    M = Z.shape[0]
    W = np.zeros((M, Q))
    for m in nb.prange(M):
        for n in range(N):
            psi = Psi1[n, m]
            for q in range(Q):
                W[m, q] += psi * (lam[q] * mu[n, q] + S[n, q] * Z[m, q]) * B[n, q]
    return W


@twin_jit(work=lambda mu, S, Z, *rest: mu.shape[0] * Z.shape[0] * mu.shape[1])
def rbf_linear_tilted_backward(mu, S, Z, lam, B, Psi1, dW):
    """Backward pass of :func:`rbf_linear_tilted` given ``dW`` of shape (1, M, Q) or (N, M, Q).

    Returns the adjoint ``A`` (N, M) of ``Psi1`` (to be chained through
    :func:`rbf_psi1_backward`) and the direct adjoints ``dmu``, ``dS`` (N, Q), ``dZ`` (M, Q) and
    ``dlam`` (Q,) of the tilted mean ``m = mu - S (mu - z) / (lam + S)``.
    """
    N, Q = mu.shape
    M = Z.shape[0]
    per_point = dW.shape[0] > 1
    nbk = n_blocks(N)
    A = np.empty((N, M))
    dmu = np.zeros((N, Q))
    dS = np.zeros((N, Q))
    dZ_part = np.zeros((nbk, M, Q))
    dl_part = np.zeros((nbk, Q))
    for b in nb.prange(nbk):
        lo = b * PSI_BLOCK
        hi = min(N, lo + PSI_BLOCK)
        for n in range(lo, hi):
            g = n if per_point else 0
            for m in range(M):
                psi = Psi1[n, m]
                a = 0.0
                for q in range(Q):
                    bq = B[n, q]
                    dw = dW[g, m, q]
                    a += dw * (lam[q] * mu[n, q] + S[n, q] * Z[m, q]) * bq
                    t = dw * psi * bq
                    td = t * (mu[n, q] - Z[m, q]) * bq
                    dmu[n, q] += t * lam[q]
                    dZ_part[b, m, q] += t * S[n, q]
                    dS[n, q] -= td * lam[q]
                    dl_part[b, q] += td * S[n, q]
                A[n, m] = a
    dZ = np.zeros((M, Q))
    dl = np.zeros(Q)
    for b in range(nbk):
        dZ += dZ_part[b]
        dl += dl_part[b]
    return A, dmu, dS, dZ, dl
