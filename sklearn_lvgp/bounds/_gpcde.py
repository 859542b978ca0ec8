"""The GPCDE bound as a function of one flat parameter vector (Salimbeni 2020, §4.2).

One SVGP output layer (shared engine, :mod:`sklearn_lvgp.variational`) evaluated at
``t = [h_n, w]``, where ``h_n`` is the (optionally Bayesian-projected, §4.2.3) input and ``w`` runs
over the Gauss–Hermite nodes of the quadrature bound (§4.2.2) or over samples / sigma points of a
Gaussian ``q(w_n)`` (§4.2.1), free or amortised by a recognition network.

The bound is a one-pass :class:`~sklearn_lvgp.engine.ChunkedBound` (:class:`CDEBound`): given
the global terms (``K_uu``, ``q(u)``, the encoder, ``q(A)``) the rows are independent, so each
row chunk builds its own evaluation points, runs its forward and its backward at once (memory
``O(chunk * M)``) and returns its share of the value and of the global gradients, with the
gradients of its free ``q(w_n)``. Its rows are the data, the rows' Monte Carlo draws and the free
``q(w_n)``; a minibatch's rows are a row source's ``subset``, in memory or where the partitions of
a Dask fit live. :meth:`CDEModel.elbo` and :meth:`CDEModel.natgrad` run it on in-memory rows.
"""

from typing import NamedTuple

import numpy as np

from .._core.blocks import row_blocks
from .._core.params import ParamPacker
from ..engine._executor import plan_chunks, serial_global_steps
from ..engine._protocol import ChunkedBound, evaluate_bound
from ..engine._rows import InMemoryRows
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

__all__ = ["CDEBound", "CDEGlobals", "CDEModel", "CDEParams", "CHUNK_POINTS", "MIN_NOISE",
           "RHO_SHIFT"]

#: Stacked evaluation points per chunk (rows x nodes).
CHUNK_POINTS = 20000
#: Least estimated work of a chunk of its own (the engine's ``min_work``, in the units of
#: :meth:`CDEModel._row_cost`): about 18 ms of one thread's work (2-core VM), against about
#: 0.65 ms of glue per chunk; scikit-learn's diabetes data (442 rows) take 8 chunks with 100
#: quadrature nodes (4 at the engine's default) and 2 with the default 20.
CHUNK_MIN_WORK = 2 ** 21
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

    # ------------------------------------------------------------------------- the bound
    @property
    def bound(self):
        """The model's :class:`CDEBound`."""
        return CDEBound(self)

    @property
    def n_points(self):
        """Evaluation points ``J`` per row: quadrature nodes, sigma points or samples."""
        if self.mode == "quadrature" or self.expectation == "unscented":
            return self.nodes.shape[0]
        return self.S

    def _row_cost(self, J):
        """Work per row (in :func:`~sklearn_lvgp.engine.plan_chunks` units) and the largest
        chunk (at most ``CHUNK_POINTS`` points)."""
        M = self.M
        work = J * M * (M * (1 + self.Dy) + self.Dh + self.Dw) / FLOPS_PER_WORK
        return work, max(1, CHUNK_POINTS // J)

    def _chunk_ranges(self, n, J):
        """Row chunks: enough work each to be worth a thread, at most ``CHUNK_POINTS`` points."""
        work, max_rows = self._row_cost(J)
        return plan_chunks(n, work, max_rows=max_rows)

    def _w_shape(self):
        """Shape ``(N, D_w)`` of the free ``q(w_n)`` blocks."""
        return next(b.shape for b in self.packer.blocks if b.name == "w_mean")

    def minibatch_rows(self, x, idx, random_state=None, eps_w=None, eps_A=None):
        """The row arrays of a minibatch besides its data: its draws and its free ``q(w_n)``.

        Parameters
        ----------
        x : ndarray
            Flat parameters (the free ``q(w_n)`` of the rows ``idx`` are taken from it).
        idx : ndarray of int
            Batch row indices.
        random_state : RandomState or None
            Source of fresh draws when they are not given (``eps_A`` first, then ``eps_w``).
        eps_w : ndarray of shape (n, S, D_w) or None
            Fixed Monte Carlo noise of ``w``.
        eps_A : ndarray of shape (n, D_h) or None
            Fixed noise of the projection.

        Returns
        -------
        rows : dict of str to ndarray
            ``"eps_A"`` (with a projection), ``"eps_w"`` as ``(n, S * D_w)`` (Monte Carlo
            ``q(w_n)``), ``"w_mean"`` and ``"w_rho"`` (free ``q(w_n)``): the minibatch's rows of
            :attr:`CDEBound.row_names` other than ``"X"`` and ``"y"``.
        """
        idx = np.asarray(idx)
        n = idx.size
        rows = {}
        if self.projection:
            rows["eps_A"] = (random_state.standard_normal((n, self.Dh)) if eps_A is None
                             else eps_A)
        if self.mode == "quadrature":
            return rows
        if self.q_w == "gaussian":
            N = self._w_shape()[0]
            rows["w_mean"] = x[self.packer.slice("w_mean")].reshape(N, self.Dw)[idx]
            rows["w_rho"] = x[self.packer.slice("w_rho")].reshape(N, self.Dw)[idx]
        if self.expectation != "unscented":
            if eps_w is None:
                eps_w = random_state.standard_normal((n, self.S, self.Dw))
            elif np.shape(eps_w) != (n, self.S, self.Dw):
                raise ValueError(f"eps_w must have shape {(n, self.S, self.Dw)}, got "
                                 f"{np.shape(eps_w)}.")
            rows["eps_w"] = eps_w.reshape(n, self.S * self.Dw)
        return rows

    @serial_global_steps
    def elbo(self, x, Xb, Yb, idx, scale, random_state=None, eps_w=None, eps_A=None):
        """Minibatch bound estimate and its gradient wrt ``x`` (Salimbeni 2020, eqs. 4.5 and 4.8).

        :class:`CDEBound` on the batch rows in memory (:meth:`evaluate`).

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
        rows = {"X": Xb, "y": Yb, **self.minibatch_rows(x, idx, random_state, eps_w, eps_A)}
        return self.evaluate(x, InMemoryRows(rows, prefix="cde"), idx, scale)

    def evaluate(self, x, source, idx, scale):
        """The bound and its gradient wrt ``x`` on the rows ``idx`` held by ``source``.

        Parameters
        ----------
        x : ndarray
            Flat parameters.
        source : row source
            :attr:`CDEBound.row_names` of the rows ``idx`` (in that order): an
            :class:`~sklearn_lvgp.engine.InMemoryRows`, or a
            :class:`~sklearn_lvgp.engine._dask.DaskRows` minibatch (``subset``).
        idx : ndarray of int
            Row indices of the source's rows (the free ``q(w_n)`` gradients go there).
        scale : float
            ``N / |B|``.

        Returns
        -------
        value : float
        grad : ndarray
        """
        free = self.mode == "gaussian" and self.q_w == "gaussian"
        out = evaluate_bound(self.bound, CDEParams(x, scale), source, need_local=free)
        grads = out.grads
        if free:
            gm = np.zeros(self._w_shape())
            gr = np.zeros(self._w_shape())
            np.add.at(gm, idx, out.local["w_mean"])
            np.add.at(gr, idx, out.local["w_rho"])
            grads["w_mean"], grads["w_rho"] = gm, gr
        return out.value, self.packer.pack_grad(grads, out.globals.p)

    # -------------------------------------------------------------------- natural gradient
    def natgrad(self, x, Xb, Yb, idx, scale, gamma, random_state=None, eps_w=None, eps_A=None):
        """One natural-gradient step on ``q(u)`` (Salimbeni 2020, §4.2); returns the new ``x``.

        The statistics are sums over the batch rows, in the chunks of :meth:`elbo`
        (:meth:`natgrad_on`); the draws are fresh ones from ``random_state`` unless given.
        """
        rows = {"X": Xb, "y": Yb, **self.minibatch_rows(x, idx, random_state, eps_w, eps_A)}
        return self.natgrad_on(x, InMemoryRows(rows, prefix="cde"), scale, gamma)

    @serial_global_steps
    def natgrad_on(self, x, source, scale, gamma):
        """:meth:`natgrad` on the rows of a row source (in memory or a Dask minibatch)."""
        bound = self.bound
        G = bound.prepare(CDEParams(x, scale))
        T1, Gq = source.map_reduce(bound.natgrad_stats, G, source.plan(bound, G),
                                   bound.row_names)
        p = G.p
        q_mu, q_sqrt = mixing_natgrad_update(p["q_mu"], p["q_sqrt_full"], T1, Gq,
                                             latent_pi(p["P_"], self.L), p["s2"], gamma,
                                             G.prior.Lu, self.whiten, self.jitter)
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


class CDEParams(NamedTuple):
    """Parameters of one evaluation of :class:`CDEBound`."""

    #: Flat parameters (their free ``q(w_n)`` entries are not read: those are rows).
    x: np.ndarray
    #: ``N / |B|``.
    scale: float


class CDEGlobals(NamedTuple):
    """What :meth:`CDEBound.prepare` returns: the constrained values (without the free
    ``q(w_n)``), the factor of ``K_uu`` and the minibatch scale."""

    p: dict
    prior: object
    scale: float


class CDEBound(ChunkedBound):
    """The GPCDE bound (Salimbeni 2020, eqs. 4.5 and 4.8) as a one-pass protocol bound.

    Rows: ``X`` and ``y`` (standardised data), ``eps_A`` (the projection's noise, with an input
    projection), ``eps_w`` (Monte Carlo noise of ``w``, ``(n, S * D_w)``) and ``w_mean``,
    ``w_rho`` (the free ``q(w_n)``, whose gradients are the local gradients). A chunk builds its
    points ``t = [h_n, w]`` (projection sample; quadrature nodes, or ``q(w_n)`` from its free
    parameters or the recognition network, expanded over sigma points or draws), runs the
    marginals, the expected log-likelihood and their backward, and returns its share of the
    value, of ``KL(q(w) ‖ p(w))`` and of the global adjoints; :meth:`gradient` adds the KL terms
    of ``q(u)`` and ``q(A)`` and chains the ``K_uu`` adjoint. :meth:`prepare` takes a
    :class:`CDEParams`.

    Parameters
    ----------
    model : CDEModel
        The structure (shapes, options, kernel template, quadrature or sigma-point nodes).
    """

    two_pass = False

    def __init__(self, model):
        self.model = model
        names = ["X", "y"]
        if model.projection:
            names.append("eps_A")
        if model.mode == "gaussian":
            if model.expectation != "unscented":
                names.append("eps_w")
            if model.q_w == "gaussian":
                names += ["w_mean", "w_rho"]
        self.row_names = tuple(names)

    def prepare(self, params):
        m = self.model
        p = m.unpack(params.x)
        p.pop("w_mean", None)  # rows, not globals: a Dask task is not sent all N of them
        p.pop("w_rho", None)
        return CDEGlobals(p, prior_factor(p["kernel"], p["Z"], m.jitter), params.scale)

    def chunk_cost(self, G):
        work, max_rows = self.model._row_cost(self.model.n_points)
        return work, max_rows, 0, CHUNK_MIN_WORK

    def plan_key(self, G):
        return self.model.n_points

    def _points(self, G, rows):
        """The chunk's evaluation points ``t = [h_n, w]`` (``n·J`` of them) and what their
        backward needs."""
        m, p = self.model, G.p
        X = rows["X"]
        n = X.shape[0]
        s = {"n": n}
        if m.projection:
            s["h"], s["pcache"] = projection_sample(X, p["A_mu"], p["A_s"], rows["eps_A"])
        else:
            s["h"] = X
        if m.mode == "quadrature":
            s["J"] = m.nodes.shape[0]
            W = np.broadcast_to(m.nodes[None], (n,) + m.nodes.shape)
        else:
            if m.q_w == "gaussian":
                a, rho, ecache = rows["w_mean"], rows["w_rho"], None
            else:
                out, ecache = encoder_forward(m.encoder_params(p), np.hstack([X, rows["y"]]))
                a, rho = out[:, :m.Dw], out[:, m.Dw:]
            b = proposal_scale(rho)
            if m.expectation == "unscented":
                xi = np.broadcast_to(m.nodes[None], (n,) + m.nodes.shape)
                beta = m.beta
            else:
                xi = rows["eps_w"].reshape(n, -1, m.Dw)
                beta = np.full(xi.shape[1], 1.0 / xi.shape[1])
            W = expand_points(a, b, xi)
            s.update(J=xi.shape[1], a=a, rho=rho, b=b, xi=xi, beta=beta, ecache=ecache)
        H = np.concatenate([np.repeat(s["h"], s["J"], axis=0),
                            W.reshape(n * s["J"], m.Dw)], axis=1)
        return H, s

    def chunk_backward(self, G, step, rows, ctx, need_local=True):
        m, (p, prior, scale) = self.model, G
        kernel, Z, q_mu, q_sqrt = p["kernel"], p["Z"], p["q_mu"], p["q_sqrt_full"]
        H, s = self._points(G, rows)
        nc, J, Dh = s["n"], s["J"], m.Dh
        mu, var, mc = marginals(kernel, Z, q_mu, q_sqrt, H, prior.Lu, None, m.whiten,
                                workspace=ctx.workspace)
        vals, cc = conditional_ell(np.repeat(rows["y"], J, axis=0), mu, var, p["P_"], p["s2"])
        vals = vals.reshape(nc, J)
        if m.mode == "quadrature":
            bnd, resp = quadrature_bound(m.logw, vals)
            value = scale * float(np.sum(bnd))
            dvals = scale * resp
        else:
            value = scale * float(np.sum(vals @ s["beta"]))
            dvals = np.broadcast_to(scale * s["beta"][None, :], (nc, J))
        cv = conditional_ell_vjp(dvals.ravel(), cc)
        mv = marginals_vjp(cv.mu, cv.var, mc)
        dH = mv.H.reshape(nc, J, -1)
        local, kl_w, d_enc, dA_mu, dA_s = None, 0.0, None, None, None
        if m.mode == "gaussian":
            a, b, rho = s["a"], s["b"], s["rho"]
            kl_w = gaussian_kl_std(a, b)
            da, db = expand_points_vjp(np.ascontiguousarray(dH[:, :, Dh:]), s["xi"])
            ka, kb = (-scale * g for g in gaussian_kl_std_vjp(a, b))
            da += ka
            db += kb
            drho = proposal_scale_vjp(db, rho)
            if m.q_w == "gaussian":
                local = {"w_mean": da, "w_rho": drho} if need_local else None
            else:
                d_enc = tuple(encoder_backward(np.hstack([da, drho]), m.encoder_params(p),
                                               s["ecache"]))
        if m.projection:
            dA_mu, dA_s = projection_sample_vjp(dH[:, :, :Dh].sum(axis=1), s["pcache"])
        return local, (value, kl_w, mv.q_mu, mv.q_sqrt, mv.Z, mv.theta, mv.Lu,
                       cv.noise_variance, cv.P if m.mixing else None, d_enc, dA_mu, dA_s)

    def gradient(self, G, step, partials):
        """``(value, grads)``: the bound and the gradients of the global blocks wrt their
        constrained values (``q_sqrt`` packed; the free ``q(w_n)`` are local gradients)."""
        m, (p, prior, scale) = self.model, G
        total, kl_w, dq_mu, dq_sqrt, dZ, dtheta, dLu, dnoise, dP, d_enc, dA_mu, dA_s = partials
        grads = {}
        if m.mode == "gaussian":
            total -= scale * kl_w
            if m.q_w != "gaussian":
                for i in range(len(m.enc_shapes)):
                    grads[f"enc_W{i}"], grads[f"enc_b{i}"] = d_enc[2 * i], d_enc[2 * i + 1]
        kl, kc = kl_divergence(p["q_mu"], p["q_sqrt_full"], prior.Lu, m.whiten)
        total -= kl
        gq_mu, gq_sqrt, gZ, gtheta = layer_global_vjp(p["kernel"], prior, kc, -1.0, dq_mu,
                                                      dq_sqrt, dZ, dtheta, dLu)
        grads.update(q_mu=gq_mu, q_sqrt=tril_pack(gq_sqrt), Z=gZ, theta=gtheta,
                     noise_variance=np.array([dnoise]))
        if m.mixing:
            grads["P"] = dP
        if m.projection:
            total -= gaussian_kl_std(p["A_mu"], p["A_s"], m.prior_var_A)
            kmu, ks = (-g for g in gaussian_kl_std_vjp(p["A_mu"], p["A_s"], m.prior_var_A))
            grads["A_mu"], grads["A_s"] = dA_mu + kmu, dA_s + ks
        return total, grads

    def natgrad_stats(self, G, rows, ctx):
        """One chunk's ``(T1, G)`` of the natural-gradient step of ``q(u)``
        (:func:`~sklearn_lvgp.variational._natgrad_mixing.natgrad_statistics`), added over
        chunks by the row source."""
        m, (p, prior, scale) = self.model, G
        H, s = self._points(G, rows)
        nc, J = s["n"], s["J"]
        mu, var, mc = marginals(p["kernel"], p["Z"], p["q_mu"], p["q_sqrt_full"], H, prior.Lu,
                                None, m.whiten)
        Yc = np.repeat(rows["y"], J, axis=0)
        if m.mode == "quadrature":
            vals, _ = conditional_ell(Yc, mu, var, p["P_"], p["s2"])
            _, resp = quadrature_bound(m.logw, vals.reshape(nc, J))
            w = scale * resp.ravel()
        else:
            w = np.tile(scale * s["beta"], nc)
        return tuple(natgrad_statistics(mc.A, Yc, mu, w, p["P_"]))
