"""Latent-variable deep GPs (LV-GP, LV-GP-GP, ...) with VI or importance-weighted VI.

Salimbeni (2020, ch. 5). A latent covariate ``w_n ~ N(0, I)`` is concatenated to the input of the
first GP layer (§5.1.2); ``q(w_n) = N(a_n, diag(b_n^2))`` is amortised by a recognition MLP on
``[x_n, y_n]`` (§5.2.5; the architecture of the authors' IWVI code). Two bounds:

* ``"vi"`` (eq. 5.3): ``w`` and the inner layers sampled independently per point, analytic last
  layer, closed-form ``KL(q(w_n) || p(w_n))``;
* ``"iwvi"`` (eq. 5.11): ``K`` proposals per point pushed through the inner layers with one joint
  draw per point (§5.2.3), analytic last layer ``L_n``, ``logsumexp_k [L_nk + log p(w_k) -
  log q(w_k)] - log K``.

Every gradient is hand-written (MLP backprop, the softmax weights of the log-sum-exp, the joint
``K x K`` Cholesky backward of :mod:`sklearn_lvgp.variational._joint`). The recognition network
is :class:`sklearn_lvgp.nn._cde_encoder.RecognitionMLP`.
"""

import numpy as np
from scipy.special import logsumexp

from .._core.params import ParamPacker
from ..expectations._rules import reparameterise, reparameterise_vjp
from ..likelihoods._gaussian import gaussian_expectation, gaussian_expectation_vjp
from ..nn._cde_encoder import RecognitionMLP, proposal_scale, proposal_scale_vjp
from ..variational import gaussian_natgrad_step, layer_forward, layer_vjp, tril_pack
from ..variational._joint import joint_layer_vjp, joint_sample
from ..variational._kl import gaussian_kl_std_vjp, standard_normal_kl_std
from ._dsvi_model import _DSVI
from ._dsvi_model import DELTA as _DELTA

__all__ = ["LatentDSVI"]

#: Floor of the proposal standard deviation ``b``.
_MIN_SCALE = 1e-6


class LatentDSVI(_DSVI):
    """The VI / IW bound of an LV-GP-...-GP model as a function of one flat parameter vector.

    ``dims[0] = n_features + latent_dim`` (the first layer sees ``[x, w]``). Holds structure
    only; the encoder's weights are blocks of the flat vector.

    Parameters
    ----------
    kernels, means, dims, n_inducing, whiten, jitter, positive_transform
        As :class:`~sklearn_lvgp.bounds._dsvi_model._DSVI` (expectation is Monte Carlo).
    latent_dim : int
        Width ``D_w`` of ``w``.
    encoder_hidden : sequence of int
        Hidden widths of the recognition MLP.
    inference : {"vi", "iwvi"}
        Bound.
    n_importance : int
        Proposals ``K`` per point (``"iwvi"``).
    joint_inner : bool, default=True
        Joint draw of the inner layers over the ``K`` proposals (Salimbeni 2020, §5.2.3); ``False``
        draws them independently, as the authors' IWVI code does for mixed inner layers.
    """

    def __init__(self, kernels, means, dims, n_inducing, whiten, jitter, positive_transform,
                 latent_dim, encoder_hidden, inference, n_importance, joint_inner=True):
        super().__init__(kernels, means, dims, n_inducing, whiten, jitter, "monte_carlo",
                         positive_transform)
        self.Dw = int(latent_dim)
        self.Dx = dims[0] - self.Dw
        self.Dy = dims[-1]
        self.inference = inference
        self.K = int(n_importance) if inference == "iwvi" else 1
        self.joint_inner = bool(joint_inner)
        self.encoder = RecognitionMLP(self.Dx + self.Dy, encoder_hidden, 2 * self.Dw)
        self.packer = ParamPacker(
            [(b.name, b.shape, b.transform) for b in self.packer.blocks] + self.encoder.blocks())

    # ------------------------------------------------------------------ parameters
    def pack(self, layers, noise_variance, encoder=None):
        values = self._layer_values(layers, noise_variance)
        values.update(encoder)
        return self.packer.pack(values)

    def local(self, p, X, Y):
        """Proposal parameters ``(a, b)`` of ``q(w_n)`` for rows ``(X, Y)`` and the cache."""
        out, ecache = self.encoder.forward(p, np.hstack([X, Y]))
        a = out[:, :self.Dw]
        rho = out[:, self.Dw:]
        b = proposal_scale(rho, _MIN_SCALE)
        return a, b, (ecache, rho)

    # --------------------------------------------------------------------- forward
    def forward(self, x, X, Y, scale, n_samples, random_state=None, eps=None, with_kl=True,
                workspaces=None):
        """Bound value and everything its backward needs.

        Stacked rows are ordered (sample ``s``, point ``n``, proposal ``k``); ``eps`` is a dict
        with ``"w"`` of shape ``(S n K, D_w)`` and ``"inner"``, a list of ``(S n K, D_l)``
        arrays, or ``None`` to draw them from ``random_state``.
        """
        layers, noise, p = self.unpack(x)
        n, S, K, L = X.shape[0], int(n_samples), self.K, self.n_layers
        G = S * n
        P = G * K
        a, b, ecache = self.local(p, X, Y)
        ew = random_state.standard_normal((P, self.Dw)) if eps is None else eps["w"]
        arow = np.tile(np.repeat(a, K, axis=0), (S, 1))
        brow = np.tile(np.repeat(b, K, axis=0), (S, 1))
        W = reparameterise(arow, brow, ew)
        H = np.hstack([np.tile(np.repeat(X, K, axis=0), (S, 1)), W])
        tape = []
        kl_total = 0.0
        joint = self.inference == "iwvi" and self.joint_inner and K > 1
        ws = [None] * L if workspaces is None else workspaces
        for ell, layer in enumerate(layers):
            mu, var, kl, cache = layer_forward(layer, H, self.jitter, with_kl, ws[ell])
            kl_total += kl
            if ell == L - 1:
                tape.append((cache, None))
                break
            e = random_state.standard_normal(mu.shape) if eps is None else eps["inner"][ell]
            if joint:
                draw, jc = joint_sample(cache, e.reshape(G, K, -1), _DELTA)
                H = mu + draw
                tape.append((cache, ("joint", jc)))
            else:
                sd = np.sqrt(var + _DELTA)
                H = reparameterise(mu, sd, e)
                tape.append((cache, ("mc", e, sd)))
        Yt = np.tile(np.repeat(Y, K, axis=0), (S, 1))
        Ln = gaussian_expectation(Yt, mu, var, noise).sum(axis=1)
        if self.inference == "iwvi":
            logw = np.sum(-0.5 * W * W + 0.5 * ew * ew + np.log(brow), axis=1)
            ell_nk = (Ln + logw).reshape(G, K)
            lse = logsumexp(ell_nk, axis=1)
            data = scale / S * float(np.sum(lse - np.log(K)))
            weights = scale / S * np.exp(ell_nk - lse[:, None]).ravel()
            kl_w = 0.0
        else:
            data = scale / S * float(np.sum(Ln))
            weights = np.full(P, scale / S)
            kl_w = scale * standard_normal_kl_std(a, b)
        value = data - kl_w - kl_total
        state = dict(layers=layers, noise=noise, p=p, a=a, b=b, ecache=ecache, ew=ew, W=W,
                     brow=brow, tape=tape, mu=mu, var=var, Yt=Yt, weights=weights, n=n, S=S,
                     scale=scale)
        return value, state

    def _backward_layers(self, dmu, dvar, tape):
        grads = {}
        dH = None
        for ell in range(self.n_layers - 1, -1, -1):
            cache, step = tape[ell]
            if step is None:
                g = layer_vjp(dmu, dvar, -1.0, cache)
            elif step[0] == "mc":
                # h = mu + eps sqrt(v + delta) (Salimbeni 2020, eq. 2.12)
                _, e, sd = step
                g = layer_vjp(*reparameterise_vjp(dH, e, sd), -1.0, cache)
            else:
                g = joint_layer_vjp(dH, -1.0, cache, step[1])
            grads[f"q_mu{ell}"] = g.q_mu
            grads[f"q_sqrt{ell}"] = tril_pack(g.q_sqrt)
            grads[f"Z{ell}"] = g.Z
            grads[f"theta{ell}"] = g.theta
            dH = g.H
        return grads, dH

    def elbo(self, x, X, Y, scale, n_samples, random_state=None, eps=None, workspaces=None):
        """Minibatch VI (eq. 5.3) or IW (eq. 5.11) bound estimate and its gradient wrt ``x``.

        ``workspaces``: one buffer set per layer reused across calls (see ``_DSVI.propagate``).
        """
        value, st = self.forward(x, X, Y, scale, n_samples, random_state, eps,
                                 workspaces=workspaces)
        K, S, n, Dw = self.K, st["S"], st["n"], self.Dw
        wts = st["weights"]
        gv = gaussian_expectation_vjp(wts[:, None], st["Yt"], st["mu"], st["var"], st["noise"])
        grads, dH0 = self._backward_layers(gv.mu, gv.var, st["tape"])
        dW = dH0[:, self.Dx:]
        ew, brow, a, b = st["ew"], st["brow"], st["a"], st["b"]
        if self.inference == "iwvi":
            # d/dw [log p(w) - log q(w)] with eps fixed is -w; the explicit log b term (eq. 5.11)
            dW = dW - wts[:, None] * st["W"]
        da_rows, db_rows = reparameterise_vjp(dW, ew)
        if self.inference == "iwvi":
            db_rows = db_rows + wts[:, None] / brow
        da = da_rows.reshape(S, n, K, Dw).sum(axis=(0, 2))
        db = db_rows.reshape(S, n, K, Dw).sum(axis=(0, 2))
        if self.inference == "vi":
            ka, kb = gaussian_kl_std_vjp(a, b)
            da = da - st["scale"] * ka
            db = db - st["scale"] * kb
        ecache, rho = st["ecache"]
        drho = proposal_scale_vjp(db, rho)
        grads.update(self.encoder.backward(np.hstack([da, drho]), ecache, st["p"]))
        values = st["p"]
        for ell in range(self.n_layers):
            grads.update(self._theta_grads(ell, grads.pop(f"theta{ell}"), values))
        grads["noise_variance"] = np.array([gv.noise_variance])
        return value, self.packer.pack_grad(grads, values)

    def natgrad(self, x, X, Y, scale, n_samples, gamma, random_state):
        """Natural-gradient step on the last layer's ``q(u)`` (Salimbeni 2020, §3.4.6 and §5.2.5).

        The closed form with this step's inputs and point weights: ``N / (|B| S)`` (VI), times
        the importance weights ``softmax_k`` (IW; the responsibility-weighted step).
        """
        _, st = self.forward(x, X, Y, scale, n_samples, random_state, with_kl=False)
        last = st["layers"][-1]
        _, prior, mcache, _ = st["tape"][-1][0]
        resid = st["Yt"] - last.mean_function(mcache.H)
        q_mu, q_sqrt = gaussian_natgrad_step(last.q_mu, last.q_sqrt, mcache.A, resid,
                                             st["weights"], st["noise"], gamma, prior.Lu,
                                             self.whiten)
        x = x.copy()
        ell = self.n_layers - 1
        x[self.packer.slice(f"q_mu{ell}")] = q_mu.ravel()
        x[self.packer.slice(f"q_sqrt{ell}")] = tril_pack(q_sqrt).ravel()
        return x

    # ------------------------------------------------------------------ prediction
    def propagate(self, layers, X, n_samples, random_state=None, eps=None, with_kl=True,
                  expectation=None):
        """Paths with ``w`` from the prior (prediction, ``sample_y``); rows (sample, point)."""
        S, n = int(n_samples), X.shape[0]
        W = random_state.standard_normal((S * n, self.Dw))
        H0 = np.hstack([np.tile(X, (S, 1)), W])
        mu, var, w, kl, tape = super().propagate(layers, H0, 1, random_state, eps, with_kl,
                                                 "monte_carlo")
        return mu, var, w / S, kl, tape

    def predict_components(self, x, X, n_samples, eps_rows):
        """Per-path marginals ``(S, n, D)``: ``w`` from the prior, paths shared by all rows."""
        layers, noise, _ = self.unpack(x)
        S, n = int(n_samples), X.shape[0]
        W = np.repeat(eps_rows[0][:S], n, axis=0)
        H0 = np.hstack([np.tile(X, (S, 1)), W])
        inner = [np.repeat(e[:S], n, axis=0) for e in eps_rows[1:]]
        mu, var, _, _, _ = _DSVI.propagate(self, layers, H0, 1, eps=inner, with_kl=False)
        D = mu.shape[1]
        return mu.reshape(S, n, D), var.reshape(S, n, D), noise
