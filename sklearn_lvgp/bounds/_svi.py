"""The uncollapsed GPLVM bound of a minibatch (Hensman, Fusi & Lawrence 2013; Lalchand et al. 2022).

With q(u_d) kept explicit — whitened, ``u_d = L_u v_d`` with ``q(v_d) = N(m_d, L_d L_dᵀ)`` per
output column, as the SVGP layer of :mod:`sklearn_lvgp.variational` — the GPLVM bound is a sum
over rows (:cite:`hensman2013gaussian`, :cite:`lalchand2022generalised`). Over a minibatch B of
the N rows, with ``c = N / |B|``,

    L = c Σ_{n∈B} Σ_{d observed in n} E_{q(x_n)} E_{q(f_nd)}[log N(y_nd | f_nd, σ²)]
        − KL(q(u) ‖ p(u)) − c Σ_{n∈B} KL(q(x_n) ‖ N(0, I)),

and the data term of entry (n, d) is, with ``G_d = L_u⁻ᵀ m_d`` and
``W_d = L_u⁻ᵀ (m_d m_dᵀ + L_d L_dᵀ − I) L_u⁻¹`` (Titsias & Lawrence 2010, eq. 27, with q(u) free),

    −½ log 2πσ² − (y_nd² − 2 y_nd ψ1_n G_d + ψ0_n + tr(W_d Ψ2_n)) / 2σ²,

linear in the row's Ψ-statistics (from :mod:`sklearn_lvgp.expectations`: every rule), so its
adjoints wrt the statistics depend on the global parameters only. The forward pass reduces, per
column group of :func:`~sklearn_lvgp.bounds._collapsed_masked.column_groups` (missing entries
are a mask), ψ0_g, Ψ1ᵀY, Ψ2_g, Σy² and the group's row count — the statistics of
:class:`~sklearn_lvgp.bounds._collapsed_masked.MaskedPsi` — and the rows' KL; the global step
has nothing to solve; the backward pass runs the Ψ backward pass with those adjoints. The
statistics also give the natural-gradient step of q(u)
(:func:`~sklearn_lvgp.variational.natgrad_from_statistics`): with the whitened features
``a_n = L_u⁻¹ k(Z, x_n)``, ``E Σ_n a_n y_nᵀ = L_u⁻¹ Ψ1ᵀY`` and ``E Σ_n a_n a_nᵀ = L_u⁻¹ Ψ2
L_u⁻ᵀ``; they do not depend on q(u), so the SVI optimiser takes that step between the two
passes, and the backward pass sees the new q(u) (with the forward pass's Ψ cache where kept).

Cost of a minibatch of B rows: the Ψ-statistics, O(B·M²·Q) (RBF) or O(B·K·M·Q) plus the
O(B·K·M²) Ψ2 GEMM (point-set rules of K points); with missing entries each row's own Ψ2 adjoint,
O(B·G·M²) for G column groups; the global terms O(G·M³ + D·M³). Nothing grows with N.
"""

import math
from typing import NamedTuple

import numpy as np

from .._core.linalg import solve_lower, solve_upper, tril
from ..engine._protocol import ChunkedBound
from ..expectations import PointRule, psi_statistics, psi_vjp
from ..nn._ldgd_encoder import encoder_forward, encoder_vjp
from ..variational._kl import kl_divergence, kl_divergence_vjp, standard_normal_kl_and_vjp
from ..variational._layer import prior_factor, prior_factor_vjp
from ._collapsed import psi_row_cost, rule_rows
from ._collapsed_masked import CHUNK_PSI2_ELEMENTS, MaskedPosterior

__all__ = ["AmortisedUncollapsedPsi", "SviParams", "UncollapsedPsi", "svi_posterior"]


class SviParams(NamedTuple):
    """Parameters of one evaluation of :class:`UncollapsedPsi`.

    Attributes
    ----------
    kernel : Kernel
    Z : ndarray of shape (M, Q)
    noise_variance : float
    rule : "analytic" or PointRule
    groups : ColumnGroups
        The column groups of the whole data's mask (:func:`column_groups`).
    q_mu : ndarray of shape (M, D)
        Whitened means ``m_d``.
    q_sqrt : ndarray of shape (D, M, M)
        Lower-triangular ``L_d`` (the upper triangle is ignored).
    scale : float
        ``N / |B|``: the weight of the minibatch's rows.
    jitter : float
        Relative jitter of ``K_uu``.
    max_tries : int
        Jitter escalations before a ``CholeskyError``.
    encoder : list of ndarray or None
        Weights of the encoder of :class:`AmortisedUncollapsedPsi`.
    """

    kernel: object
    Z: np.ndarray
    noise_variance: float
    rule: object
    groups: object
    q_mu: np.ndarray
    q_sqrt: np.ndarray
    scale: float = 1.0
    jitter: float = 1e-6
    max_tries: int = 0
    encoder: list = None


class SviGlobals(NamedTuple):
    """What :meth:`UncollapsedPsi.prepare` computes once per evaluation."""

    params: SviParams
    prior: object  # PriorFactor
    Gm: np.ndarray  # (M, D): L_u⁻ᵀ m_d
    E: np.ndarray  # (n_groups, M, M): Σ_{d∈g} (m_d m_dᵀ + S_d) − D_g I
    dpsi0: np.ndarray  # (n_groups,)
    dPY_T: np.ndarray  # (D, M)
    dPsi2: np.ndarray  # (n_groups, M, M)


class UncollapsedPsi(ChunkedBound):
    """The minibatch GPLVM bound with explicit q(u), as a protocol bound.

    Rows: ``Y`` (zeros at the missing entries), ``R`` (row-by-group membership of
    :func:`~sklearn_lvgp.bounds._collapsed_masked.column_groups`), ``mu`` and ``S`` (the rows'
    q(x_n)). :meth:`prepare` takes an :class:`SviParams`; :meth:`gradient` returns the value
    and a dict with ``Z``, ``theta``, ``noise``, ``q_mu``, ``q_sqrt`` (lower triangle) and
    ``natgrad``, the data sums ``(AwR, AwA)`` of the natural-gradient step of q(u).
    """

    row_names = ("Y", "R", "mu", "S")

    def prepare(self, params):
        p = params
        prior = prior_factor(p.kernel, p.Z, p.jitter, p.max_tries)
        M, D = p.q_mu.shape
        c, s2 = float(p.scale), float(p.noise_variance)
        Ls = tril(p.q_sqrt)
        outer = np.einsum("md,ld->dml", p.q_mu, p.q_mu) + np.matmul(Ls, Ls.transpose(0, 2, 1))
        n_groups = len(p.groups.columns)
        E = np.empty((n_groups, M, M))
        dPsi2 = np.empty((n_groups, M, M))
        for g, cols in enumerate(p.groups.columns):
            E[g] = outer[cols].sum(axis=0) - cols.size * np.eye(M)
            dPsi2[g] = -c / (2.0 * s2) * solve_upper(prior.Lu, solve_upper(prior.Lu, E[g]).T)
        Gm = solve_upper(prior.Lu, p.q_mu)
        dpsi0 = np.array([-c * cols.size / (2.0 * s2) for cols in p.groups.columns])
        return SviGlobals(p, prior, Gm, E, dpsi0, (c / s2) * Gm.T, dPsi2)

    def chunk_cost(self, G):
        M, Q = G.params.Z.shape
        work, kept, cap = psi_row_cost(G.params.rule, M, Q)
        n_groups = len(G.params.groups.columns)
        if n_groups == 1:  # summed Ψ2: no per-point (rows, M, M) array
            return work, max(1, cap), kept
        return (work + n_groups * M * M, max(1, min(cap, CHUNK_PSI2_ELEMENTS // (M * M))),
                kept + M * M)

    def plan_key(self, G):
        rule = G.params.rule
        return (("svi", rule.weights.shape[0] if hasattr(rule, "weights") else 0)
                + G.params.Z.shape + (len(G.params.groups.columns),))

    @staticmethod
    def _rows(G, rows, ctx):
        """``(keep, mu, S, Y, rule)`` of the chunk's rows whose Ψ-statistics are needed.

        With one column group the statistics are summed over the rows in it (``keep``, a mask:
        the rows with no observed entry have no data term), so no per-point Ψ2 is formed; with
        several they are per point (``keep`` is ``None``) and spread over the groups."""
        p, Y, R = G.params, rows["Y"], rows["R"]
        rule = p.rule if ctx.start is None else rule_rows(p.rule, ctx.start, ctx.stop)
        mu, S = rows["mu"], rows["S"]
        if R.shape[1] > 1:
            return None, mu, S, Y, rule
        keep = R[:, 0] != 0.0
        if not keep.all():
            mu, S, Y = mu[keep], S[keep], Y[keep]
            if isinstance(rule, PointRule) and rule.nodes.ndim == 3:
                rule = rule._replace(nodes=rule.nodes[keep])
        return keep, mu, S, Y, rule

    def chunk_stats(self, G, rows, ctx):
        """Forward pass: the chunk's ``(ψ0_g, Ψ1ᵀY, Ψ2_g, Σy², row count per group,
        Σ KL(q(x_n)))``; the Ψ cache is kept for the backward pass when the plan says so."""
        p, R = G.params, rows["R"]
        M, D = p.Z.shape[0], rows["Y"].shape[1]
        keep, mu, S, Y, rule = self._rows(G, rows, ctx)
        cache = None
        if keep is None:
            n = Y.shape[0]
            st, cache = psi_statistics(p.kernel, p.Z, mu, S, rule, per_point=True,
                                       need_cache=ctx.keep)
            sums = (R.T @ st.psi0, st.Psi1.T @ Y,
                    (R.T @ st.Psi2.reshape(n, M * M)).reshape(-1, M, M))
        elif keep.any():
            st, cache = psi_statistics(p.kernel, p.Z, mu, S, rule, need_cache=ctx.keep)
            sums = (np.array([float(np.sum(st.psi0))]), st.Psi1.T @ Y, st.Psi2.reshape(1, M, M))
        else:
            sums = (np.zeros(1), np.zeros((M, D)), np.zeros((1, M, M)))
        if ctx.cache is not None:
            ctx.cache[ctx.index] = cache if ctx.keep else None
        kl = standard_normal_kl_and_vjp(rows["mu"], rows["S"])[0]
        return sums + (np.einsum("nd,nd->d", rows["Y"], rows["Y"]), R.sum(axis=0), kl)

    def finish(self, G, stats):
        """The global step: nothing to solve (q(u) is a parameter); the reduced statistics are
        what :meth:`gradient` reads. The SVI optimiser takes its natural-gradient step on
        q(u) from them (:meth:`natgrad_sums`) and calls this with the new q(u): the statistics
        do not depend on q(u)."""
        return stats

    @staticmethod
    def natgrad_sums(G, stats):
        """``(AwR, AwA)`` of :func:`~sklearn_lvgp.variational.natgrad_from_statistics` (whitened,
        AwA per column) from the reduced statistics: ``c/σ² L_u⁻¹ Ψ1ᵀY`` and
        ``c/σ² L_u⁻¹ Ψ2_g(d) L_u⁻ᵀ``. Also returns the whitened ``B`` and ``P_g``."""
        PY, Psi2 = stats[1], stats[2]
        Lu, w = G.prior.Lu, float(G.params.scale) / float(G.params.noise_variance)
        B = solve_lower(Lu, PY)
        P = np.stack([solve_lower(Lu, solve_lower(Lu, Psi2[g]).T) for g in range(len(Psi2))])
        P = 0.5 * (P + P.transpose(0, 2, 1))
        return (w * B, w * P[G.params.groups.column_group]), B, P

    def chunk_backward(self, G, step, rows, ctx, need_local=True):
        p, R = G.params, rows["R"]
        M = p.Z.shape[0]
        keep, mu, S, Y, rule = self._rows(G, rows, ctx)
        cache = None if ctx.cache is None else ctx.cache[ctx.index]
        dmu, dS = np.zeros_like(rows["mu"]), np.zeros_like(rows["S"])
        dZ, dtheta = np.zeros_like(p.Z), np.zeros(p.kernel.n_theta)
        with np.errstate(divide="ignore", invalid="ignore"):  # dS of S = 0 rows (S as data)
            if keep is None:
                if cache is None:  # not kept from the forward pass: recomputed
                    _, cache = psi_statistics(p.kernel, p.Z, mu, S, rule, per_point=True)
                dPsi2 = (R @ G.dPsi2.reshape(-1, M * M)).reshape(-1, M, M)
                dmu, dS, dZ, dtheta = psi_vjp(R @ G.dpsi0, Y @ G.dPY_T, dPsi2, cache)
            elif keep.any():
                if cache is None:
                    _, cache = psi_statistics(p.kernel, p.Z, mu, S, rule, need_psi2=False)
                dmu[keep], dS[keep], dZ, dtheta = psi_vjp(G.dpsi0[0], Y @ G.dPY_T,
                                                          G.dPsi2[0], cache)
        local = None
        if need_local:
            _, dkl_mu, dkl_S = standard_normal_kl_and_vjp(rows["mu"], rows["S"])
            local = {"mu": dmu - p.scale * dkl_mu, "S": dS - p.scale * dkl_S}
        return local, (dZ, dtheta)

    def gradient(self, G, step, partials):
        psi0, PY, Psi2, YY, count, kl_x = step
        dZ, dtheta = partials
        p, Lu = G.params, G.prior.Lu
        c, s2 = float(p.scale), float(p.noise_variance)
        col_group = p.groups.column_group
        sizes = np.array([cols.size for cols in p.groups.columns], dtype=np.float64)
        # whitened statistics: B = L_u⁻¹ Ψ1ᵀY, P_g = L_u⁻¹ Ψ2_g L_u⁻ᵀ
        natgrad, B, P = self.natgrad_sums(G, (psi0, PY, Psi2))
        quad = (float(np.sum(YY)) - 2.0 * float(np.sum(B * p.q_mu)) + float(sizes @ psi0)
                + float(np.einsum("gml,gml->", G.E, P)))
        n_obs = float(count[col_group].sum())
        data = -0.5 * c * n_obs * math.log(2.0 * math.pi * s2) - c * quad / (2.0 * s2)
        kl_u, kl_cache = kl_divergence(p.q_mu, p.q_sqrt, whiten=True)
        kv = kl_divergence_vjp(-1.0, kl_cache)
        Pd = P[col_group]  # (D, M, M)
        dq_mu = (c / s2) * (B - np.einsum("dml,ld->md", Pd, p.q_mu)) + kv.q_mu
        dq_sqrt = tril(-(c / s2) * np.matmul(Pd, tril(p.q_sqrt))) + kv.q_sqrt
        # L_u enters through B and the P_g: dL_u = −L_u⁻ᵀ [dB Bᵀ + 2 Σ_g dP_g P_g]
        inner = (c / s2) * p.q_mu @ B.T - (c / s2) * np.einsum("gml,glk->mk", G.E, P)
        dZ_K, dtheta_K = prior_factor_vjp(p.kernel, G.prior, dL_dLu=tril(-solve_upper(Lu, inner)))
        dnoise = -0.5 * c * n_obs / s2 + c * quad / (2.0 * s2 * s2)
        value = data - kl_u - c * kl_x
        return value, {"Z": dZ + dZ_K, "theta": dtheta + dtheta_K, "noise": dnoise,
                       "q_mu": dq_mu, "q_sqrt": dq_sqrt, "natgrad": natgrad}


class AmortisedUncollapsedPsi(UncollapsedPsi):
    """:class:`UncollapsedPsi` with q(x_n) = N(μ(y_n), diag σ(y_n)²) from an encoder MLP.

    The encoder is the ReLU network with a mean and a softplus standard-deviation head of
    :mod:`sklearn_lvgp.nn._ldgd_encoder`, reading the row with zeros at its missing entries
    (Lalchand et al. 2022 amortise q(x_n) the same way). Rows: ``Y`` and ``R``; the encoder's
    weights (``params.encoder``) are a global block, ``gradient`` returns their gradients as
    ``grads["encoder"]`` (a list in the weights' order), and there are no local gradients.
    """

    row_names = ("Y", "R")

    @staticmethod
    def _encoded(G, rows):
        mu, sigma, cache = encoder_forward(G.params.encoder, rows["Y"])
        return {**rows, "mu": mu, "S": sigma * sigma}, sigma, cache

    def chunk_stats(self, G, rows, ctx):
        return super().chunk_stats(G, self._encoded(G, rows)[0], ctx)

    def chunk_backward(self, G, step, rows, ctx, need_local=True):
        rows, sigma, cache = self._encoded(G, rows)
        local, partial = super().chunk_backward(G, step, rows, ctx, need_local=True)
        dW = encoder_vjp(local["mu"], 2.0 * sigma * local["S"], cache)
        return None, partial + (dW,)


    def gradient(self, G, step, partials):
        value, grads = super().gradient(G, step, partials[:-1])
        grads["encoder"] = list(partials[-1])
        return value, grads


def svi_posterior(kernel, Z, q_mu, q_sqrt, noise_variance, jitter=1e-6):
    """The fitted q(u) as a :class:`~sklearn_lvgp.bounds._collapsed_masked.MaskedPosterior`
    (one group per column), so that prediction, ``transform`` and held-out scores run as for a
    collapsed fit: ``G_d = L_u⁻ᵀ m_d``, ``Cs_d = L_u⁻ᵀ L_d L_dᵀ L_u⁻¹``."""
    Lu = prior_factor(kernel, Z, jitter, 6).Lu
    M, D = q_mu.shape
    Ls = tril(q_sqrt)
    Cs = np.stack([solve_upper(Lu, solve_upper(Lu, Ls[d] @ Ls[d].T).T) for d in range(D)])
    Kinv = solve_upper(Lu, solve_lower(Lu, np.eye(M)))
    return MaskedPosterior(Lu, solve_upper(Lu, q_mu), 0.5 * (Kinv + Kinv.T),
                           0.5 * (Cs + Cs.transpose(0, 2, 1)), np.arange(D), float(noise_variance),
                           ())
