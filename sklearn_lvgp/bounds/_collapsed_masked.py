"""The collapsed bound with entries of ``Y`` missing at random (Titsias & Lawrence 2010, §3.3).

With the missing entries integrated out, the collapsed bound factorises over the output columns:
column d sees only the rows ``O_d`` that observe it, through its own Ψ-statistics

    ψ0_d = Σ_{n∈O_d} ψ0_n,   Ψ1_d = rows O_d of Ψ1,   Ψ2_d = Σ_{n∈O_d} Ψ2_n,

and F = Σ_d F_d with F_d the one-column collapsed bound of those statistics
(:cite:`titsias2010bayesian`). Columns observed by the same rows share their statistics, so the
columns are grouped by **missingness pattern** (the set of rows that observe them): a group of
``D_g`` columns over the rows ``R_g`` is exactly the complete-data bound of
:func:`~sklearn_lvgp.bounds._collapsed_global.collapsed_bound_from_stats` with ``(N, D) =
(|R_g|, D_g)``. Rows with every entry missing belong to no group: their q(x_n) enter the bound
through their KL term only, whose optimum is the prior.

Cost (G ≤ D groups; p the fraction missing; Q latent dimensions; M inducing inputs): a forward
and a backward pass over the rows compute the per-point Ψ-statistics once, O(N·M²·Q) as without
missing values, and spread them over the groups with one matrix product each way, O(N·G·M²)
time; the global step factors G pairs of M × M matrices, O(G·M³). Memory: the reduced
statistics are G·M² + M·D numbers; a chunk's working set is its per-point Ψ2 (``rows·M²``, chunks
are capped at 2¹⁸ entries). Missing completely at random, almost every column has its own
pattern (G = D, whatever p is); a block design (sensors switched off together) gives few.

:class:`MaskedPsi` is the protocol bound (rows ``Y`` with zeros at the missing entries, the
row-by-group membership ``R`` and the q(x_n)); :class:`MaskedPsiBound` runs it in memory, with
the interface of :class:`~sklearn_lvgp.bounds._collapsed.CollapsedPsiBound`;
:class:`MaskedPosterior` is the per-group q(u), and :class:`MaskedPredictive` applies it to new
rows (whose own missing entries are skipped) and new latent points.
"""

import math
from typing import NamedTuple

import numpy as np

from .._core.blocks import row_blocks
from .._core.linalg import solve_upper
from ..engine._protocol import ChunkedBound, evaluate_bound
from ..engine._rows import InMemoryRows
from ..expectations import psi_statistics, psi_vjp
from ..variational._kl import gaussian_kl, standard_normal_kl_and_vjp
from ._collapsed import CollapsedPsiBound, psi_row_cost, rule_rows
from ._collapsed_global import (
    PREDICT_CHUNK_ROWS,
    CollapsedPredictive,
    collapsed_bound_from_stats,
    collapsed_stats_vjp,
)

__all__ = ["ColumnGroups", "MaskedParams", "MaskedPosterior", "MaskedPredictive", "MaskedPsi",
           "MaskedPsiBound", "as_masked", "collapsed_psi_bound", "column_groups",
           "masked_heldout_bound", "masked_posterior", "masked_predictive_moments",
           "predictive_for"]

#: Largest ``rows · M²`` of one chunk's per-point Ψ2.
CHUNK_PSI2_ELEMENTS = 2 ** 18


class ColumnGroups(NamedTuple):
    """The columns of a mask grouped by the rows that observe them.

    Attributes
    ----------
    columns : tuple of ndarray
        The columns of each group.
    member : ndarray of shape (N, G)
        1.0 where row n observes the columns of group g, else 0.0.
    column_group : ndarray of shape (D,)
        The group of each column.
    """

    columns: tuple
    member: np.ndarray
    column_group: np.ndarray


def column_groups(observed):
    """Group the columns of the boolean ``observed`` (N, D) by their observed rows.

    Raises ``ValueError`` for a column with no observed entry.
    """
    observed = np.asarray(observed, dtype=bool)
    empty = np.flatnonzero(~observed.any(axis=0))
    if empty.size:
        raise ValueError(f"Column(s) {empty.tolist()} of X have no observed value: a column "
                         "must be observed in at least one row (drop it, or impute it first).")
    patterns, column_group = np.unique(observed.T, axis=0, return_inverse=True)
    column_group = np.asarray(column_group).reshape(-1)
    columns = tuple(np.flatnonzero(column_group == g) for g in range(patterns.shape[0]))
    return ColumnGroups(columns, np.ascontiguousarray(patterns.T, dtype=np.float64),
                        column_group)


class MaskedParams(NamedTuple):
    """Parameters of one evaluation of :class:`MaskedPsi`."""

    kernel: object
    Z: np.ndarray
    noise_variance: float
    rule: object
    groups: ColumnGroups
    jitter: float = 1e-6
    max_tries: int = 0
    need_S: bool = True


class MaskedPosterior(NamedTuple):
    """The collapsed q(u) of every column group (column d's mean weights are ``G[:, d]``).

    Attributes
    ----------
    L : ndarray of shape (M, M)
        Cholesky factor of ``K_uu`` (with jitter).
    G : ndarray of shape (M, D)
        Mean weights: the predictive mean of column d at ψ1 is ``ψ1 @ G[:, d]``.
    Kinv : ndarray of shape (M, M)
        ``K_uu⁻¹``.
    Cs : ndarray of shape (n_groups, M, M)
        ``σ² A_g⁻¹ = L⁻ᵀ B_g⁻¹ L⁻¹`` of each group.
    column_group : ndarray of shape (D,)
        The group of each column.
    noise_variance : float
        σ².
    groups : tuple of CollapsedPosterior
        The posterior of each group over its own columns.
    """

    L: np.ndarray
    G: np.ndarray
    Kinv: np.ndarray
    Cs: np.ndarray
    column_group: np.ndarray
    noise_variance: float
    groups: tuple

    @property
    def D(self):
        return self.G.shape[1]

    def column_weights(self):
        """``W_d = Cs_g(d) − K_uu⁻¹ + G_d G_dᵀ`` of every column, flattened: (D, M²).

        A row observing the columns ``m`` has the held-out weight ``Σ_d m_d W_d``."""
        M = self.L.shape[0]
        own = np.einsum("md,ld->dml", self.G, self.G).reshape(self.D, M * M)
        return (self.Cs - self.Kinv).reshape(-1, M * M)[self.column_group] + own


def _sandwich(L, X):
    return solve_upper(L, solve_upper(L, X).T).T


def masked_posterior(posts, columns, D):
    """The :class:`MaskedPosterior` of the group posteriors ``posts`` over ``columns``."""
    L = posts[0].L
    M = L.shape[0]
    G = np.zeros((M, D))
    column_group = np.empty(D, dtype=np.intp)
    for g, (post, cols) in enumerate(zip(posts, columns, strict=True)):
        G[:, cols] = post.G
        column_group[cols] = g
    Cs = np.stack([_sandwich(post.L, post.Binv) for post in posts])
    return MaskedPosterior(L, G, _sandwich(L, np.eye(M)), Cs, column_group,
                           float(posts[0].noise_variance), tuple(posts))


def as_masked(post):
    """A :class:`MaskedPosterior` of ``post`` (a complete-data posterior is one group)."""
    if isinstance(post, MaskedPosterior):
        return post
    return masked_posterior([post], (np.arange(post.D),), post.D)


class MaskedStep(NamedTuple):
    """The global step of :class:`MaskedPsi`: value, posterior and the per-group adjoints."""

    F: float
    post: MaskedPosterior
    dpsi0: np.ndarray  # (G,)
    dPY_T: np.ndarray  # (D, M)
    dPsi2: np.ndarray  # (G, M²)
    dKuu: np.ndarray
    dnoise: float
    Kuu_cache: object


class MaskedPsi(ChunkedBound):
    """The collapsed bound over the observed entries of ``Y``, as a protocol bound.

    Rows: ``Y`` (the data with zeros at the missing entries), ``R`` (the row-by-group
    membership of :func:`column_groups`), ``mu`` and ``S``. Forward pass: a chunk's per-group
    ψ0 and Ψ2, its Ψ1ᵀY and per-column Σy²; global step: one collapsed bound per column group;
    backward pass: each row's adjoints are the sums of its groups' adjoints. :meth:`prepare`
    takes a :class:`MaskedParams`.
    """

    row_names = ("Y", "R", "mu", "S")

    def prepare(self, params):
        return params

    def chunk_cost(self, G):
        M, Q = G.Z.shape
        work, kept, _ = psi_row_cost(G.rule, M, Q)
        return (work + len(G.groups.columns) * M * M, max(1, CHUNK_PSI2_ELEMENTS // (M * M)),
                kept + M * M)

    def plan_key(self, G):
        return ("masked", G.rule.weights.shape[0] if hasattr(G.rule, "weights") else 0) + G.Z.shape

    @staticmethod
    def _rule(G, ctx):
        return G.rule if ctx.start is None else rule_rows(G.rule, ctx.start, ctx.stop)

    def chunk_stats(self, G, rows, ctx):
        Y, R = rows["Y"], rows["R"]
        stats, cache = psi_statistics(G.kernel, G.Z, rows["mu"], rows["S"], self._rule(G, ctx),
                                      per_point=True, need_cache=ctx.keep)
        if ctx.cache is not None:
            ctx.cache[ctx.index] = cache if ctx.keep else None
        M = G.Z.shape[0]
        Psi2 = R.T @ stats.Psi2.reshape(Y.shape[0], M * M)
        return (R.T @ stats.psi0, stats.Psi1.T @ Y, Psi2, np.einsum("nd,nd->d", Y, Y))

    def finish(self, G, stats):
        psi0, PY, Psi2, YY = stats
        M = G.Z.shape[0]
        member = G.groups.member
        Kuu, kcache = G.kernel.K_cached(G.Z)
        F, posts = 0.0, []
        dpsi0 = np.empty(len(G.groups.columns))
        dPY_T = np.empty((PY.shape[1], M))
        dPsi2 = np.empty_like(Psi2)
        dKuu, dnoise = np.zeros((M, M)), 0.0
        for g, cols in enumerate(G.groups.columns):
            n_g = int(round(member[:, g].sum())) if member.shape[0] else 0
            F_g, post = collapsed_bound_from_stats(
                n_g, cols.size, psi0[g], PY[:, cols], Psi2[g].reshape(M, M),
                float(np.sum(YY[cols])), Kuu, G.noise_variance, jitter=G.jitter,
                max_tries=G.max_tries)
            adj = collapsed_stats_vjp(post)
            F += F_g
            posts.append(post)
            dpsi0[g] = adj.psi0
            dPY_T[cols] = adj.PY.T
            dPsi2[g] = adj.Psi2.reshape(-1)
            dKuu += adj.Kuu
            dnoise += adj.noise_variance
        post = masked_posterior(posts, G.groups.columns, PY.shape[1])
        return MaskedStep(float(F), post, dpsi0, dPY_T, dPsi2, dKuu, float(dnoise), kcache)

    def chunk_backward(self, G, step, rows, ctx, need_local=True):
        Y, R = rows["Y"], rows["R"]
        n, M = Y.shape[0], G.Z.shape[0]
        cache = None if ctx.cache is None else ctx.cache[ctx.index]
        if cache is None:  # not kept from the forward pass: recomputed
            _, cache = psi_statistics(G.kernel, G.Z, rows["mu"], rows["S"], self._rule(G, ctx),
                                      per_point=True)
        with np.errstate(divide="ignore", invalid="ignore"):  # dS of S = 0 rows (S as data)
            pv = psi_vjp(R @ step.dpsi0, Y @ step.dPY_T, (R @ step.dPsi2).reshape(n, M, M),
                         cache)
        local = {"mu": pv.mu, "S": pv.S if G.need_S else None} if need_local else None
        return local, (pv.Z, pv.theta)

    def gradient(self, G, step, partials):
        dZ, dtheta = partials
        kv = G.kernel.vjp_cached(step.dKuu, step.Kuu_cache, overwrite_dK=True)
        return step.F, {"Z": dZ + kv.X, "theta": dtheta + kv.theta, "noise": step.dnoise}


class MaskedPsiBound:
    """:class:`MaskedPsi` over the rows of ``Y`` (NaN = missing) held for the whole fit.

    The interface of :class:`~sklearn_lvgp.bounds._collapsed.CollapsedPsiBound` (``Y``,
    ``evaluate``, ``elbo``); the gradients of rows with every entry missing are their KL's
    only.

    Parameters
    ----------
    Y : ndarray of shape (N, D)
        Targets with NaN at the missing entries; every column observed at least once. Kept
        as ``Y`` (NaN included); the chunks read a copy with zeros at the missing entries.
    chunk_rows, n_threads
        As in :class:`~sklearn_lvgp.bounds._collapsed.CollapsedPsiBound`.
    """

    bound = MaskedPsi()

    def __init__(self, Y, *, chunk_rows=None, n_threads=None):
        self.Y = np.asarray(Y, dtype=np.float64)  # with its NaN (the local steps' rows)
        self.observed = ~np.isnan(self.Y)
        self.groups = column_groups(self.observed)
        self.rows = InMemoryRows({"Y": np.ascontiguousarray(np.where(self.observed, self.Y, 0.0)),
                                  "R": self.groups.member}, chunk_rows=chunk_rows,
                                 n_threads=n_threads, prefix="collapsed-masked")

    @property
    def n_threads(self):
        return self.rows.n_threads

    def plan(self, rule, M, Q):
        """Chunks and keep decision for ``M`` inducing inputs and this rule's shape."""
        return self.rows.chunks(self.bound, MaskedParams(None, np.empty((M, Q)), 0.0, rule,
                                                         self.groups))

    def evaluate(self, kernel, Z, mu, S, noise_variance, rule, *, jitter=1e-6, max_tries=0,
                 need_S=True, need_local=True):
        """Bound F over the observed entries (no KL), its gradients and the posterior.

        As :meth:`~sklearn_lvgp.bounds._collapsed.CollapsedPsiBound.evaluate`; the posterior is
        a :class:`MaskedPosterior`.
        """
        self.rows.update(mu=mu, S=S)
        params = MaskedParams(kernel, Z, noise_variance, rule, self.groups, jitter, max_tries,
                              need_S)
        F, grads, local, _, step = evaluate_bound(self.bound, params, self.rows,
                                                  need_local=need_local)
        grads.update(mu=None if local is None else local["mu"],
                     S=None if local is None else local["S"])
        return F, grads, step.post

    def elbo(self, kernel, Z, mu, S, noise_variance, rule, *, jitter=1e-6, max_tries=0):
        """:meth:`evaluate` minus KL(q(X) ‖ N(0, I)), the KL's gradients included."""
        F, grads, post = self.evaluate(kernel, Z, mu, S, noise_variance, rule, jitter=jitter,
                                       max_tries=max_tries)
        kl, dkl_mu, dkl_S = standard_normal_kl_and_vjp(mu, S)
        grads["mu"] -= dkl_mu
        grads["S"] -= dkl_S
        return F - kl, grads, post


def collapsed_psi_bound(Y):
    """The collapsed bound of ``Y``: :class:`MaskedPsiBound` when it has NaN entries, else the
    complete-data :class:`~sklearn_lvgp.bounds._collapsed.CollapsedPsiBound`."""
    return MaskedPsiBound(Y) if np.isnan(Y).any() else CollapsedPsiBound(Y)


def masked_heldout_bound(Y, observed, psi0, Psi1, Psi2, post, weights=None):
    """Per-row held-out bound over each row's observed entries, and its per-row adjoints.

    The held-out bound (Titsias & Lawrence 2010, eq. 27) of row n is the sum over its observed
    columns d of ``−½ log 2πσ² − (y_nd² − 2 y_nd ψ1_n G_d + ψ0_n + tr(W_d Ψ2_n)) / 2σ²`` with
    ``W_d`` of :meth:`MaskedPosterior.column_weights`.

    Parameters
    ----------
    Y : ndarray of shape (n, D)
        Rows with zeros at the missing entries.
    observed : ndarray of shape (n, D)
        1.0 (or True) at the observed entries.
    psi0, Psi1, Psi2 : ndarray of shape (n,), (n, M), (n, M, M)
        Per-point Ψ-statistics.
    post : MaskedPosterior
    weights : ndarray of shape (D, M²), default=None
        ``post.column_weights()``, when the caller has it (it does not depend on the rows).

    Returns
    -------
    values : ndarray of shape (n,)
    adjoints : tuple of ndarray
        ``(dψ0 (n,), dΨ1 (n, M), dΨ2 (n, M, M))``.
    """
    s2 = post.noise_variance
    n, M = Psi1.shape
    m = np.asarray(observed, dtype=np.float64)
    k = m.sum(axis=1)
    W = (m @ (post.column_weights() if weights is None else weights)).reshape(n, M, M)
    quad = (np.einsum("nd,nd->n", Y, Y) - 2.0 * np.einsum("nd,nd->n", Psi1 @ post.G, Y)
            + np.einsum("nml,nml->n", W, Psi2) + k * psi0)
    values = -0.5 * k * math.log(2.0 * math.pi * s2) - quad / (2.0 * s2)
    return values, (-k / (2.0 * s2), Y @ post.G.T / s2, -W / (2.0 * s2))


def masked_predictive_moments(post, psi0, Psi1, Psi2, full_cov=False):
    """Moments of f* at uncertain inputs under the per-group q(u) (Girard et al. 2003).

    As :func:`~sklearn_lvgp.bounds._collapsed_global.predictive_moments` with ``Psi2`` per
    point (``ψ1ψ1ᵀ`` for deterministic inputs); column d's variance uses its group's q(u).
    """
    G = post.G
    mean = Psi1 @ G
    shared = np.asarray(psi0)[:, None] - np.einsum("nml,gml->ng", Psi2, post.Kinv - post.Cs)
    shared = shared[:, post.column_group]
    P2G = np.matmul(Psi2, G)
    if full_cov:
        var = np.einsum("md,nme->nde", G, P2G) - mean[:, :, None] * mean[:, None, :]
        D = G.shape[1]
        var[:, np.arange(D), np.arange(D)] += shared
        return mean, var
    var = np.einsum("md,nmd->nd", G, P2G) - mean * mean + shared
    return mean, np.maximum(var, 0.0)


class MaskedPredictive(NamedTuple):
    """A fitted collapsed GPLVM at new rows (NaN = missing) and new latent points.

    The interface of :class:`~sklearn_lvgp.bounds._collapsed_global.CollapsedPredictive`, with
    a :class:`MaskedPosterior`.
    """

    kernel: object
    Z: np.ndarray
    rule: object
    post: MaskedPosterior

    def _stats(self, mu, S):
        return psi_statistics(self.kernel, self.Z, mu, S, self.rule, per_point=True)[0]

    def heldout_scores(self, Y, mu, S):
        """Per-row held-out bound over the observed entries of ``Y`` minus the row's KL."""
        out = np.empty(Y.shape[0])
        observed = ~np.isnan(Y)
        Y0 = np.where(observed, Y, 0.0)
        weights = self.post.column_weights()
        for rows in row_blocks(Y.shape[0], 1, PREDICT_CHUNK_ROWS):
            a, b = rows.start, rows.stop
            st = self._stats(mu[a:b], S[a:b])
            values, _ = masked_heldout_bound(Y0[a:b], observed[a:b], st.psi0, st.Psi1, st.Psi2,
                                             self.post, weights)
            out[a:b] = values - gaussian_kl(mu[a:b], S[a:b], per_row=True)
        return out

    def moments(self, mean, var=None, full_cov=False, noise_variance=None):
        """Moments of f* (of y* with ``noise_variance``) at latent inputs ``N(mean, diag var)``."""
        means, variances = [], []
        for rows in row_blocks(mean.shape[0], 1, PREDICT_CHUNK_ROWS):
            a, b = rows.start, rows.stop
            if var is None:
                psi1 = self.kernel.K(mean[a:b], self.Z)
                st = (self.kernel.Kdiag(mean[a:b]), psi1, psi1[:, :, None] * psi1[:, None, :])
            else:
                s = self._stats(mean[a:b], var[a:b])
                st = (s.psi0, s.Psi1, s.Psi2)
            m, v = masked_predictive_moments(self.post, *st, full_cov=full_cov)
            means.append(m)
            variances.append(v)
        m, v = np.concatenate(means, axis=0), np.concatenate(variances, axis=0)
        if noise_variance is not None and full_cov:
            v[:, np.arange(v.shape[1]), np.arange(v.shape[1])] += noise_variance
        elif noise_variance is not None:
            v = v + noise_variance
        return m, v


def predictive_for(kernel, Z, rule, post, masked=False):
    """The predictive of a fitted model: :class:`MaskedPredictive` for a
    :class:`MaskedPosterior` (or, with ``masked``, for rows with missing entries), else
    :class:`~sklearn_lvgp.bounds._collapsed_global.CollapsedPredictive`."""
    if masked or isinstance(post, MaskedPosterior):
        return MaskedPredictive(kernel, Z, rule, as_masked(post))
    return CollapsedPredictive(kernel, Z, rule, post)
