"""The GPCDE bound (Salimbeni 2020, eqs. 4.5 and 4.8) as a one-pass protocol bound.

Given the global terms (``K_uu``, ``q(u)``, the encoder, ``q(A)``) the rows are independent, so
each row chunk of :class:`CDEBound` builds its own evaluation points ``t = [h_n, w]``, runs its
forward and its backward at once (memory ``O(chunk * M)``) and returns its share of the value and
of the global gradients, with the gradients of its free ``q(w_n)``. The model that assembles it
(parameters, packing, initial values, minibatches) is
:class:`~sklearn_lvgp.bounds._gpcde.CDEModel`.
"""

from typing import NamedTuple

import numpy as np

from ..engine._protocol import ChunkedBound
from ..expectations._rules import (
    expand_points,
    expand_points_vjp,
)
from ..likelihoods._mixed_gaussian import conditional_ell, conditional_ell_vjp
from ..nn._cde_encoder import (
    encoder_backward,
    encoder_forward,
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
)
from ..variational._input_projection import projection_sample, projection_sample_vjp
from ..variational._kl import gaussian_kl_std, gaussian_kl_std_vjp
from ..variational._latent_covariate import quadrature_bound
from ..variational._natgrad_mixing import natgrad_statistics

__all__ = ["CDEBound", "CDEGlobals", "CDEParams", "CHUNK_MIN_WORK"]

#: Least estimated work of a chunk of its own (the engine's ``min_work``, in the units of
#: :meth:`~sklearn_lvgp.bounds._gpcde.CDEModel._row_cost`): about 18 ms of one thread's work
#: (2-core VM), against about 0.65 ms of glue per chunk; scikit-learn's diabetes data (442 rows)
#: take 8 chunks with 100 quadrature nodes (4 at the engine's default) and 2 with the default 20.
CHUNK_MIN_WORK = 2 ** 21


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
