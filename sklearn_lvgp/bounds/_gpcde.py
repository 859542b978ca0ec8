"""The GPCDE bound as a function of one flat parameter vector (Salimbeni 2020, §4.2).

One SVGP output layer (shared engine, :mod:`sklearn_lvgp.variational`) evaluated at
``t = [h_n, w]``, where ``h_n`` is the (optionally Bayesian-projected, §4.2.3) input and ``w`` runs
over the Gauss–Hermite nodes of the quadrature bound (§4.2.2) or over samples / sigma points of a
Gaussian ``q(w_n)`` (§4.2.1), free or amortised by a recognition network. Evaluation points are
processed in row chunks; each chunk's backward runs right after its forward, so memory is
``O(chunk * M)``.
"""

import numpy as np

from .._core.blocks import row_blocks
from .._core.params import ParamPacker
from .._core.workspace import thread_workspace
from ..engine._executor import ChunkExecutor, plan_chunks, serial_global_steps
from ..expectations._rules import (
    expand_points,
    expand_points_vjp,
    gauss_hermite_rule,
    unscented_rule,
)
from ..likelihoods._mixed_gaussian import conditional_ell, conditional_ell_vjp, latent_pi
from ..nn._cde_encoder import (
    RHO_SHIFT,
    encoder_backward,
    encoder_forward,
    encoder_shapes,
    proposal_scale,
    proposal_scale_vjp,
)
from ..variational import (
    kl_divergence,
    layer_global_vjp,
    marginals,
    marginals_vjp,
    prior_factor,
    tril_pack,
    tril_unpack,
)
from ..variational._input_projection import projection_sample, projection_sample_vjp
from ..variational._kl import gaussian_kl_std, gaussian_kl_std_vjp
from ..variational._latent_covariate import quadrature_bound
from ..variational._natgrad_mixing import mixing_natgrad_update, natgrad_statistics
from ._dsvi import FLOPS_PER_WORK

__all__ = ["CDEModel", "CHUNK_POINTS", "MIN_NOISE", "RHO_SHIFT"]

#: Stacked evaluation points per chunk (rows x nodes).
CHUNK_POINTS = 20000
#: Noise-variance floor.
MIN_NOISE = 1e-6


class CDEModel:
    """Structure of one GPCDE (shapes, options, kernel template); never fitted values.

    Parameters
    ----------
    kernel : Kernel
        Initialised template on ``D_h + D_w`` inputs.
    n_features, proj_dim, latent_dim, n_latent, n_targets, n_inducing : int
        ``D_x``, ``D_h`` (``None``: no projection), ``D_w``, ``L``, ``D_y``, ``M``.
    mixing : bool
        Whether ``P`` is a trained block (else the identity, ``L = D_y``).
    q_w : {"quadrature", "gaussian", "amortized"}
    expectation : {"monte_carlo", "unscented"}
    n_samples : int
        Monte Carlo samples of ``w`` per row.
    gh_order : int
        Gauss–Hermite nodes per latent dimension.
    n_rows : int
        Training rows (free ``q(w_n)``).
    encoder_hidden : tuple of int
    whiten : bool
    jitter : float
    prior_var_A : float, default=1.0
    """

    def __init__(self, kernel, n_features, proj_dim, latent_dim, n_latent, n_targets, n_inducing,
                 mixing, q_w, expectation, n_samples, gh_order, n_rows, encoder_hidden,
                 whiten, jitter, prior_var_A=1.0):
        self.kernel = kernel
        self.Dx = n_features
        self.projection = proj_dim is not None
        self.Dh = proj_dim if self.projection else n_features
        self.Dw = latent_dim
        self.L = n_latent
        self.Dy = n_targets
        self.M = n_inducing
        self.mixing = mixing
        self.q_w = q_w
        self.mode = "quadrature" if (q_w == "quadrature" or latent_dim == 0) else "gaussian"
        self.expectation = expectation
        self.S = n_samples
        self.whiten = whiten
        self.jitter = jitter
        self.prior_var_A = prior_var_A
        if self.mode == "quadrature":
            rule = gauss_hermite_rule(gh_order, latent_dim, max_points=np.inf)
            self.nodes, self.logw = rule.nodes, rule.log_weights
        elif expectation == "unscented":
            self.nodes, self.beta = unscented_rule(latent_dim)[1:]
        T = self.M * (self.M + 1) // 2
        blocks = [("q_mu", (self.M, self.L)), ("q_sqrt", (self.L, T)),
                  ("Z", (self.M, self.Dh + self.Dw)), ("theta", (kernel.n_theta,)),
                  ("noise_variance", (1,), "log")]
        if mixing:
            blocks.append(("P", (self.L, self.Dy)))
        if self.projection:
            blocks += [("A_mu", (self.Dx, self.Dh)), ("A_s", (self.Dx, self.Dh), "softplus")]
        self.enc_shapes = []
        if self.mode == "gaussian" and q_w == "gaussian":
            blocks += [("w_mean", (n_rows, self.Dw)), ("w_rho", (n_rows, self.Dw))]
        elif self.mode == "gaussian":
            self.enc_shapes = encoder_shapes(self.Dx + self.Dy, encoder_hidden, self.Dw)
            for i, (ws, bs) in enumerate(self.enc_shapes):
                blocks += [(f"enc_W{i}", ws), (f"enc_b{i}", bs)]
        self.packer = ParamPacker(blocks)

    # ------------------------------------------------------------------------- parameters
    def pack(self, values):
        """Flat vector from constrained values (``q_sqrt`` as ``(L, M, M)``)."""
        v = dict(values)
        v["q_sqrt"] = tril_pack(v["q_sqrt"])
        v["theta"] = v["kernel"].theta
        v["noise_variance"] = np.array([v["noise_variance"]])
        return self.packer.pack(v)

    def unpack(self, x):
        """Dict of constrained values, with ``kernel`` and full ``q_sqrt``."""
        p = self.packer.unpack(x)
        p["q_sqrt_full"] = tril_unpack(p["q_sqrt"], self.M)
        p["kernel"] = self.kernel.clone_with_theta(p["theta"])
        p["s2"] = float(p["noise_variance"][0])
        p["P_"] = p["P"] if self.mixing else None
        return p

    def encoder_params(self, p):
        return [p[f"enc_{k}{i}"] for i in range(len(self.enc_shapes)) for k in ("W", "b")]

    def bounds(self):
        b = np.full((self.packer.size, 2), [-np.inf, np.inf])
        b[self.packer.slice("theta")] = self.kernel.bounds
        b[self.packer.slice("noise_variance")] = [np.log(MIN_NOISE), np.inf]
        return b

    def q_mask(self):
        """Entries of ``q(u)`` (updated by natural gradients, frozen for Adam)."""
        mask = np.zeros(self.packer.size, dtype=bool)
        mask[self.packer.slice("q_mu")] = True
        mask[self.packer.slice("q_sqrt")] = True
        return mask

    @property
    def deterministic(self):
        """Whether the objective is deterministic (L-BFGS allowed)."""
        return not self.projection and (self.mode == "quadrature"
                                        or self.expectation == "unscented")

    # ----------------------------------------------------------------- evaluation points
    def local_q(self, p, Xb, Yb, idx):
        """``(a, rho, encoder cache)`` of the Gaussian ``q(w_n)`` of the batch rows."""
        if self.q_w == "gaussian":
            return p["w_mean"][idx], p["w_rho"][idx], None
        out, cache = encoder_forward(self.encoder_params(p), np.hstack([Xb, Yb]))
        return out[:, :self.Dw], out[:, self.Dw:], cache

    def _setup(self, p, Xb, Yb, idx, random_state, eps_w=None, eps_A=None):
        n = Xb.shape[0]
        s = {"n": n}
        if self.projection:
            e = random_state.standard_normal((n, self.Dh)) if eps_A is None else eps_A
            s["h"], s["pcache"] = projection_sample(Xb, p["A_mu"], p["A_s"], e)
        else:
            s["h"] = Xb
        if self.mode == "quadrature":
            s["J"] = self.nodes.shape[0]
            s["W"] = np.broadcast_to(self.nodes[None], (n,) + self.nodes.shape)
            return s
        a, rho, ecache = self.local_q(p, Xb, Yb, idx)
        b = proposal_scale(rho)
        if self.expectation == "unscented":
            xi = np.broadcast_to(self.nodes[None], (n,) + self.nodes.shape)
            beta = self.beta
        else:
            xi = (random_state.standard_normal((n, self.S, self.Dw)) if eps_w is None
                  else eps_w)
            beta = np.full(xi.shape[1], 1.0 / xi.shape[1])
        s.update(J=xi.shape[1], W=expand_points(a, b, xi), a=a, rho=rho, b=b, xi=xi,
                 beta=beta, ecache=ecache)
        return s

    def _chunk_ranges(self, n, J):
        """Row chunks: enough work each to be worth a thread, at most ``CHUNK_POINTS`` points."""
        M = self.M
        work = J * M * (M * (1 + self.Dy) + self.Dh + self.Dw) / FLOPS_PER_WORK
        return plan_chunks(n, work, max_rows=max(1, CHUNK_POINTS // J))

    def _points(self, s, sl, nc):
        """Evaluation points ``t = [h_n, w]`` of rows ``sl`` (``nc`` rows × ``J`` nodes)."""
        return np.concatenate([np.repeat(s["h"][sl], s["J"], axis=0),
                               s["W"][sl].reshape(nc * s["J"], self.Dw)], axis=1)

    def _chunks(self, s):
        for a, b in self._chunk_ranges(s["n"], s["J"]):
            sl = slice(a, b)
            yield sl, b - a, self._points(s, sl, b - a)

    # ------------------------------------------------------------------------------ bound
    @serial_global_steps
    def elbo(self, x, Xb, Yb, idx, scale, random_state=None, eps_w=None, eps_A=None):
        """Minibatch bound estimate and its gradient wrt ``x`` (Salimbeni 2020, eqs. 4.5 and 4.8).

        Parameters
        ----------
        x : ndarray
            Flat parameters.
        Xb, Yb : ndarray
            Batch inputs and targets (standardised).
        idx : ndarray of int
            Batch row indices (for free ``q(w_n)``).
        scale : float
            ``N / |B|``.
        random_state : RandomState or None
            Source of fresh ``eps`` when not given.
        eps_w : ndarray of shape (n, S, D_w) or None
            Fixed Monte Carlo noise of ``w``.
        eps_A : ndarray of shape (n, D_h) or None
            Fixed noise of the projection.

        Returns
        -------
        value : float
        grad : ndarray
        """
        p = self.unpack(x)
        kernel, Z, q_mu, q_sqrt = p["kernel"], p["Z"], p["q_mu"], p["q_sqrt_full"]
        P, s2 = p["P_"], p["s2"]
        prior = prior_factor(kernel, Z, self.jitter)
        s = self._setup(p, Xb, Yb, idx, random_state, eps_w, eps_A)
        n, J, Dh = s["n"], s["J"], self.Dh
        dh = np.zeros((n, Dh))
        dW = np.zeros((n, J, self.Dw))

        def chunk(i, a, b):  # one chunk's forward and backward (rows a:b), local grads in place
            nc = b - a
            H = self._points(s, slice(a, b), nc)
            # the chunk's forward and backward run here, on one thread: its buffers
            ws = thread_workspace().child("cde")
            mu, var, mc = marginals(kernel, Z, q_mu, q_sqrt, H, prior.Lu, None, self.whiten,
                                    workspace=ws)
            vals, cc = conditional_ell(np.repeat(Yb[a:b], J, axis=0), mu, var, P, s2)
            vals = vals.reshape(nc, J)
            if self.mode == "quadrature":
                bnd, resp = quadrature_bound(self.logw, vals)
                value = scale * float(np.sum(bnd))
                dvals = scale * resp
            else:
                value = scale * float(np.sum(vals @ s["beta"]))
                dvals = np.broadcast_to(scale * s["beta"][None, :], (nc, J))
            cv = conditional_ell_vjp(dvals.ravel(), cc)
            mv = marginals_vjp(cv.mu, cv.var, mc)
            dH = mv.H.reshape(nc, J, -1)
            dh[a:b] = dH[:, :, :Dh].sum(axis=1)
            dW[a:b] = dH[:, :, Dh:]
            return (value, mv.q_mu, mv.q_sqrt, mv.Z, mv.theta, mv.Lu, cv.noise_variance,
                    cv.P if self.mixing else None)

        # the chunk partition depends on the batch only; partials are added in chunk order
        total, dq_mu, dq_sqrt, dZ, dtheta, dLu, dnoise, dP = ChunkExecutor().map_reduce(
            chunk, self._chunk_ranges(n, J))
        grads = {}
        if self.mode == "gaussian":
            a, b, rho = s["a"], s["b"], s["rho"]
            total -= scale * gaussian_kl_std(a, b)
            da, db = expand_points_vjp(dW, s["xi"])
            ka, kb = (-scale * g for g in gaussian_kl_std_vjp(a, b))
            da += ka
            db += kb
            drho = proposal_scale_vjp(db, rho)
            if self.q_w == "gaussian":
                gm = np.zeros_like(p["w_mean"])
                gr = np.zeros_like(p["w_rho"])
                np.add.at(gm, idx, da)
                np.add.at(gr, idx, drho)
                grads["w_mean"], grads["w_rho"] = gm, gr
            else:
                eg = encoder_backward(np.hstack([da, drho]), self.encoder_params(p),
                                      s["ecache"])
                for i in range(len(self.enc_shapes)):
                    grads[f"enc_W{i}"], grads[f"enc_b{i}"] = eg[2 * i], eg[2 * i + 1]
        kl, kc = kl_divergence(q_mu, q_sqrt, prior.Lu, self.whiten)
        total -= kl
        gq_mu, gq_sqrt, gZ, gtheta = layer_global_vjp(kernel, prior, kc, -1.0, dq_mu, dq_sqrt,
                                                      dZ, dtheta, dLu)
        grads.update(q_mu=gq_mu, q_sqrt=tril_pack(gq_sqrt), Z=gZ, theta=gtheta,
                     noise_variance=np.array([dnoise]))
        if self.mixing:
            grads["P"] = dP
        if self.projection:
            total -= gaussian_kl_std(p["A_mu"], p["A_s"], self.prior_var_A)
            gmu, gs = projection_sample_vjp(dh, s["pcache"])
            kmu, ks = (-g for g in gaussian_kl_std_vjp(p["A_mu"], p["A_s"], self.prior_var_A))
            grads["A_mu"], grads["A_s"] = gmu + kmu, gs + ks
        values = dict(p)
        values["q_sqrt"] = p["q_sqrt"]
        return total, self.packer.pack_grad(grads, values)

    # -------------------------------------------------------------------- natural gradient
    def natgrad(self, x, Xb, Yb, idx, scale, gamma, random_state=None, eps_w=None, eps_A=None):
        """One natural-gradient step on ``q(u)`` (Salimbeni 2020, §4.2); returns the new ``x``."""
        p = self.unpack(x)
        kernel, Z, q_mu, q_sqrt = p["kernel"], p["Z"], p["q_mu"], p["q_sqrt_full"]
        P, s2 = p["P_"], p["s2"]
        prior = prior_factor(kernel, Z, self.jitter)
        s = self._setup(p, Xb, Yb, idx, random_state, eps_w, eps_A)
        J = s["J"]
        T1 = np.zeros((self.M, self.L))
        G = np.zeros((self.M, self.M))
        for sl, nc, H in self._chunks(s):
            mu, var, mc = marginals(kernel, Z, q_mu, q_sqrt, H, prior.Lu, None, self.whiten)
            Yc = np.repeat(Yb[sl], J, axis=0)
            if self.mode == "quadrature":
                vals, _ = conditional_ell(Yc, mu, var, P, s2)
                _, resp = quadrature_bound(self.logw, vals.reshape(nc, J))
                w = scale * resp.ravel()
            else:
                w = np.tile(scale * s["beta"], nc)
            t1, g = natgrad_statistics(mc.A, Yc, mu, w, P)
            T1 += t1
            G += g
        q_mu, q_sqrt = mixing_natgrad_update(q_mu, q_sqrt, T1, G, latent_pi(P, self.L), s2,
                                             gamma, prior.Lu, self.whiten, self.jitter)
        x = x.copy()
        x[self.packer.slice("q_mu")] = q_mu.ravel()
        x[self.packer.slice("q_sqrt")] = tril_pack(q_sqrt).ravel()
        return x

    # ------------------------------------------------------------------------- prediction
    def point_marginals(self, x, H):
        """Latent marginals at points ``H = [h, w]`` (one per row, no node grid), in chunks."""
        p = self.unpack(x)
        prior = prior_factor(p["kernel"], p["Z"], self.jitter)
        mus, vs = [], []
        for rows in row_blocks(H.shape[0], 1, CHUNK_POINTS):
            mu, var, _ = marginals(p["kernel"], p["Z"], p["q_mu"], p["q_sqrt_full"],
                                   H[rows], prior.Lu, None, self.whiten)
            mus.append(mu)
            vs.append(var)
        return np.concatenate(mus), np.concatenate(vs)

    def predict_components(self, x, Xs, nodes, A_draws=None):
        """Latent marginals at ``[h(x), w_j]`` for every row and node.

        Parameters
        ----------
        x : ndarray
            Flat parameters.
        Xs : ndarray of shape (n, D_x)
            Standardised inputs.
        nodes : ndarray of shape (J, D_w)
            Values of ``w`` (grid or prior draws), shared by all rows.
        A_draws : ndarray of shape (J, D_x, D_h) or None
            Draws of ``A`` paired with the nodes (projection only).

        Returns
        -------
        mu, var : ndarray of shape (n, J, L)
        """
        p = self.unpack(x)
        kernel = p["kernel"]
        prior = prior_factor(kernel, p["Z"], self.jitter)
        n, J = Xs.shape[0], nodes.shape[0]
        if A_draws is None:
            h = np.broadcast_to(Xs[:, None, :], (n, J, self.Dh))
        else:
            h = np.einsum("ni,jik->njk", Xs, A_draws)
        H = np.concatenate([h, np.broadcast_to(nodes[None], (n, J, self.Dw))], axis=2)
        mu, var, _ = marginals(kernel, p["Z"], p["q_mu"], p["q_sqrt_full"],
                               H.reshape(n * J, -1), prior.Lu, None, self.whiten)
        return mu.reshape(n, J, -1), var.reshape(n, J, -1)
