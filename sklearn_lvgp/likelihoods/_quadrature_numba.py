"""Jitted loops of the non-conjugate likelihoods: Gauss–Hermite expectations, predictive
densities, the robust-max class probability and the softmax Monte Carlo.

Every loop runs ``prange`` over independent output entries (an element, or a row for the
multiclass likelihoods) and writes only that entry, so the serial and parallel twins return the
same bits. No ``fastmath``.

Elementwise likelihoods share two loops, compiled once per likelihood ``kind`` (a constant in
each compilation): :func:`gh_expectation` integrates ``log p(y | f)`` and its derivatives over
``f ~ N(mu, var)`` at the nodes ``f_k = mu + sd x_k``, and :func:`gh_log_density` the log of
``E p(y | f)`` by an online log-sum-exp. :func:`_node` holds each likelihood's
``log p(y | f)``, its derivative in ``f`` and up to three hyperparameter derivatives.
"""

import math

import numba as nb
import numpy as np

from .._compile.jit import twin_jit, twin_jit_per_value
from .._compile.vexp_numba import vexp

STUDENT_T, BERNOULLI_LOGIT, BETA_PROBIT, BETA_LOGIT, ORDINAL = 0, 1, 2, 3, 4
#: Name of each kind: the loops that take ``kind`` are compiled once per kind.
KIND_NAMES = {STUDENT_T: "student_t", BERNOULLI_LOGIT: "bernoulli_logit",
              BETA_PROBIT: "beta_probit", BETA_LOGIT: "beta_logit", ORDINAL: "ordinal"}
#: Hyperparameter-derivative slots per node (the most any kind needs: the ordinal likelihood's
#: lower edge, upper edge and log scale).
N_SLOTS = 3

_SQRT_HALF = math.sqrt(0.5)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
#: Floor of the Beta likelihood's shape parameters (``s Phi(f)`` underflows beyond ``|f| > 37``).
BETA_SHAPE_FLOOR = 1e-300


# ------------------------------------------------------------------------ special functions
@nb.njit(cache=True)
def log_ndtr(t):
    """``log Phi(t)``: ``log1p`` of the upper tail for ``t > 0``, ``erfc`` down to ``-37``, and
    the asymptotic series of Mills' ratio (six terms, relative error below ``1e-17``) below."""
    if t > 0.0:
        return math.log1p(-0.5 * math.erfc(t * _SQRT_HALF))
    if t > -37.0:
        return math.log(0.5 * math.erfc(-t * _SQRT_HALF))
    r = 1.0 / (t * t)
    s = 1.0 - r * (1.0 - 3.0 * r * (1.0 - 5.0 * r * (1.0 - 7.0 * r * (1.0 - 9.0 * r
                                                                       * (1.0 - 11.0 * r)))))
    return -0.5 * t * t - math.log(-t) - _LOG_SQRT_2PI + math.log(s)


@nb.njit(cache=True)
def _log1mexp(x):
    """``log(1 - exp(x))`` for ``x < 0`` (Mächler's two branches)."""
    if x > -0.6931471805599453:
        return math.log(-math.expm1(x))
    return math.log1p(-math.exp(x))


@nb.njit(cache=True)
def log_ndtr_diff(a, b):
    """``log(Phi(a) - Phi(b))`` for ``a > b`` (either may be infinite), without cancellation:
    in the tail both ``a`` and ``b`` lie in, the difference is taken as a ratio of logs."""
    if b == -np.inf:
        return log_ndtr(a)
    if a == np.inf:
        return log_ndtr(-b)
    if a <= 0.0:
        la = log_ndtr(a)
        return la + _log1mexp(log_ndtr(b) - la)
    if b >= 0.0:
        lb = log_ndtr(-b)
        return lb + _log1mexp(log_ndtr(-a) - lb)
    return math.log(0.5 * (math.erf(a * _SQRT_HALF) - math.erf(b * _SQRT_HALF)))


@nb.njit(cache=True)
def _log_npdf(t):
    return -0.5 * t * t - _LOG_SQRT_2PI


@nb.njit(cache=True)
def digamma(x):
    """``psi(x)`` for ``x > 0``: the recurrence up to ``x >= 10``, then the asymptotic series
    through ``B_14`` (truncation below ``1e-16``)."""
    r = 0.0
    while x < 10.0:
        r -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    t = f * (-1.0 / 12.0 + f * (1.0 / 120.0 + f * (-1.0 / 252.0 + f * (
        1.0 / 240.0 + f * (-1.0 / 132.0 + f * (691.0 / 32760.0 + f * (-1.0 / 12.0)))))))
    return r + math.log(x) - 0.5 / x + t


@nb.njit(cache=True)
def _log_sigmoid(t):
    """``log sigma(t)`` and ``sigma(-t)`` (its derivative), stable for any ``t``."""
    if t >= 0.0:
        e = math.exp(-t)
        return -math.log1p(e), e / (1.0 + e)
    e = math.exp(t)
    return t - math.log1p(e), 1.0 / (1.0 + e)


# ------------------------------------------------------------------- per-node log densities
@nb.njit(inline="always")
def _node(kind, y, f, params, edges):
    """``(log p(y | f), d/df, slot0, slot1, slot2)`` of likelihood ``kind`` at one node.

    ``params`` (per kind):

    * Student-t: ``[df, scale, c, dc/dlog(df)]`` with the normaliser
      ``c = lgamma((df+1)/2) - lgamma(df/2) - log(df pi)/2 - log(scale)``; slots
      ``d/dlog(df)``, ``d/dlog(scale)``.
    * Bernoulli-logit: none; ``y`` in {0, 1}.
    * Beta: ``[s, lgamma(s), psi(s)]``, mean ``m = Phi(f)`` or ``sigma(f)``,
      ``alpha = s m``, ``beta = s (1 - m)`` (Salimbeni 2020, §3.4.4); slot ``d/dlog(s)``.
    * Ordinal: ``[scale]`` and the bin ``edges``; ``y`` is the bin index,
      ``p = Phi((b_y - f)/scale) - Phi((b_{y-1} - f)/scale)`` (Chu & Ghahramani 2005);
      slots ``d/db_{y-1}``, ``d/db_y``, ``d/dlog(scale)``.
    """
    if kind == STUDENT_T:
        df = params[0]
        scale = params[1]
        r = y - f
        u = r * r / (df * scale * scale)
        l1u = math.log1p(u)
        lp = params[2] - 0.5 * (df + 1.0) * l1u
        ratio = (df + 1.0) * u / (1.0 + u)
        return (lp, (df + 1.0) * r / (df * scale * scale + r * r),
                params[3] - 0.5 * df * l1u + 0.5 * ratio, -1.0 + ratio, 0.0)
    if kind == BERNOULLI_LOGIT:
        sign = 2.0 * y - 1.0
        lp, g = _log_sigmoid(sign * f)
        return lp, sign * g, 0.0, 0.0, 0.0
    if kind == BETA_PROBIT or kind == BETA_LOGIT:
        s = params[0]
        if kind == BETA_PROBIT:
            m = 0.5 * math.erfc(-f * _SQRT_HALF)
            m1 = 0.5 * math.erfc(f * _SQRT_HALF)
            dm = math.exp(_log_npdf(f))
        else:
            if f >= 0.0:
                e = math.exp(-f)
                m, m1 = 1.0 / (1.0 + e), e / (1.0 + e)
            else:
                e = math.exp(f)
                m, m1 = e / (1.0 + e), 1.0 / (1.0 + e)
            dm = m * m1
        a = max(s * m, BETA_SHAPE_FLOOR)
        b = max(s * m1, BETA_SHAPE_FLOOR)
        ly = math.log(y)
        l1y = math.log1p(-y)
        da = ly - digamma(a)
        db = l1y - digamma(b)
        lp = params[1] - math.lgamma(a) - math.lgamma(b) + (a - 1.0) * ly + (b - 1.0) * l1y
        return lp, s * dm * (da - db), s * (params[2] + m * da + m1 * db), 0.0, 0.0
    # ORDINAL
    scale = params[0]
    c = int(y)
    lo = edges[c - 1] if c > 0 else -np.inf
    hi = edges[c] if c < edges.shape[0] else np.inf
    a = (hi - f) / scale
    b = (lo - f) / scale
    lp = log_ndtr_diff(a, b)
    ga = math.exp(_log_npdf(a) - lp) if a != np.inf else 0.0
    gb = math.exp(_log_npdf(b) - lp) if b != -np.inf else 0.0
    za = a * ga if a != np.inf else 0.0
    zb = b * gb if b != -np.inf else 0.0
    return lp, -(ga - gb) / scale, -gb / scale, ga / scale, -(za - zb)


# ----------------------------------------------------------------- elementwise Gauss–Hermite
@twin_jit_per_value(position=0, names=KIND_NAMES,
                    work=lambda y, mu, var, params, edges, x, *rest: 8 * mu.shape[0] * x.shape[0])
def gh_expectation(kind):
    """``E log p(y | f)`` and its adjoint factors for ``f ~ N(mu, var)``, elementwise.

    Inputs are flat: ``y``, ``mu``, ``var`` of shape ``(n,)``; ``x``, ``w`` the probabilists'
    Gauss–Hermite nodes and normalised weights. Writes ``value[i] = sum_k w_k lp_ik``,
    ``dmu[i] = sum_k w_k g_ik`` and ``dvar[i] = sum_k w_k g_ik x_k / (2 sd_i)`` (0 where
    ``sd_i = 0``) with ``g = d lp / df``: the exact derivatives of the quadrature sum, and
    ``slots[i, j] = sum_k w_k d lp_ik / d theta_j``.
    """
    def gh_expectation(y, mu, var, params, edges, x, w, value, dmu, dvar, slots):
        n = mu.shape[0]
        H = x.shape[0]
        for i in nb.prange(n):
            sd = math.sqrt(max(var[i], 0.0))
            acc = 0.0
            gm = 0.0
            gs = 0.0
            s0 = 0.0
            s1 = 0.0
            s2 = 0.0
            for k in range(H):
                lp, g, a0, a1, a2 = _node(kind, y[i], mu[i] + sd * x[k], params, edges)
                acc += w[k] * lp
                gm += w[k] * g
                gs += w[k] * g * x[k]
                s0 += w[k] * a0
                s1 += w[k] * a1
                s2 += w[k] * a2
            value[i] = acc
            dmu[i] = gm
            dvar[i] = gs / (2.0 * sd) if sd > 0.0 else 0.0
            slots[i, 0] = s0
            slots[i, 1] = s1
            slots[i, 2] = s2
    return gh_expectation


@twin_jit_per_value(position=0, names=KIND_NAMES,
                    work=lambda y, mu, var, params, edges, x, *rest: 8 * mu.shape[0] * x.shape[0])
def gh_log_density(kind):
    """``out[i] = log sum_k w_k p(y_i | mu_i + sd_i x_k)`` by an online log-sum-exp (flat
    inputs as in :func:`gh_expectation`)."""
    def gh_log_density(y, mu, var, params, edges, x, w, out):
        n = mu.shape[0]
        H = x.shape[0]
        for i in nb.prange(n):
            sd = math.sqrt(max(var[i], 0.0))
            top = -np.inf
            total = 0.0
            for k in range(H):
                lp = _node(kind, y[i], mu[i] + sd * x[k], params, edges)[0]
                if lp == -np.inf:
                    continue
                if lp > top:
                    total = total * math.exp(top - lp) + w[k]
                    top = lp
                else:
                    total += w[k] * math.exp(lp - top)
            out[i] = top + math.log(total) if total > 0.0 else -np.inf
    return gh_log_density


# -------------------------------------------------------------------------------- robust max
@twin_jit(work=lambda y, mu, sd, x, *rest: 4 * mu.shape[0] * mu.shape[1] * x.shape[0])
def robust_max_prob(y, mu, sd, x, w, p, dmu, dsd):
    """``p[n] = P(argmax_j f_nj = y_n)`` for independent ``f_nj ~ N(mu_nj, sd_nj²)`` as the 1-D
    integral over the chosen latent ``f_c = mu_c + sd_c x`` of ``prod_{j != c} Phi(z_j)``,
    ``z_j = (f_c - mu_j) / sd_j`` (Hernández-Lobato et al. 2011), by Gauss–Hermite; with
    the exact derivatives of that sum in ``dmu`` and ``dsd`` (``(N, K)``, overwritten).
    ``sd`` must be positive."""
    N, K = mu.shape
    H = x.shape[0]
    for n in nb.prange(N):
        c = y[n]
        z = np.empty(K)
        cdf = np.empty(K)
        for j in range(K):
            dmu[n, j] = 0.0
            dsd[n, j] = 0.0
        acc = 0.0
        for k in range(H):
            fc = mu[n, c] + sd[n, c] * x[k]
            prod = 1.0
            for j in range(K):
                if j != c:
                    z[j] = (fc - mu[n, j]) / sd[n, j]
                    cdf[j] = 0.5 * math.erfc(-z[j] * _SQRT_HALF)
                    prod *= cdf[j]
            acc += w[k] * prod
            for j in range(K):
                if j == c or cdf[j] == 0.0:
                    continue
                # w_k * phi(z_j) * prod_{i != c, j} Phi(z_i) / sd_j: the slope of the product
                # in f_c through factor j
                t = w[k] * prod / cdf[j] * math.exp(_log_npdf(z[j])) / sd[n, j]
                dmu[n, c] += t
                dsd[n, c] += t * x[k]
                dmu[n, j] -= t
                dsd[n, j] -= t * z[j]
        p[n] = acc


# ------------------------------------------------------------------- softmax, Monte Carlo
@twin_jit(work=lambda y, mu, sd, eps, *rest: 4 * mu.shape[0] * mu.shape[1] * eps.shape[0])
def softmax_expectation(y, mu, sd, eps, value, dmu, dsd):
    """``value[n] = mu[n, y_n] - mean_s logsumexp_j(mu_nj + sd_nj eps_sj)``, the expected
    log-softmax with ``E f_y = mu_y`` exact and the log-normaliser averaged over the common
    nodes ``eps`` ``(S, K)``; with the exact derivatives of that average in ``dmu`` and ``dsd``
    (``(N, K)``, overwritten)."""
    N, K = mu.shape
    S = eps.shape[0]
    inv_s = 1.0 / S
    for n in nb.prange(N):
        e = np.empty(K)
        for j in range(K):
            dmu[n, j] = 0.0
            dsd[n, j] = 0.0
        acc = 0.0
        for s in range(S):
            top = -np.inf
            for j in range(K):
                e[j] = mu[n, j] + sd[n, j] * eps[s, j]
                top = max(top, e[j])
            for j in range(K):
                e[j] = vexp(e[j] - top)
            total = 0.0
            for j in range(K):
                total += e[j]
            acc += top + math.log(total)
            scale = inv_s / total
            for j in range(K):
                q = e[j] * scale
                dmu[n, j] -= q
                dsd[n, j] -= q * eps[s, j]
        c = y[n]
        value[n] = mu[n, c] - acc * inv_s
        dmu[n, c] += 1.0


@twin_jit(work=lambda mu, sd, eps, *rest: 4 * mu.shape[0] * mu.shape[1] * eps.shape[0])
def softmax_proba(mu, sd, eps, out):
    """``out[n, j] = mean_s softmax_j(mu_n + sd_n eps_s)`` over the common nodes ``eps``."""
    N, K = mu.shape
    S = eps.shape[0]
    inv_s = 1.0 / S
    for n in nb.prange(N):
        e = np.empty(K)
        for j in range(K):
            out[n, j] = 0.0
        for s in range(S):
            top = -np.inf
            for j in range(K):
                e[j] = mu[n, j] + sd[n, j] * eps[s, j]
                top = max(top, e[j])
            for j in range(K):
                e[j] = vexp(e[j] - top)
            total = 0.0
            for j in range(K):
                total += e[j]
            scale = inv_s / total
            for j in range(K):
                out[n, j] += e[j] * scale
