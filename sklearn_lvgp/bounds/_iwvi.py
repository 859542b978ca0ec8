"""Latent-variable deep GPs (LV-GP, LV-GP-GP, ...) with VI or importance-weighted VI.

Salimbeni (2020, ch. 5). A latent covariate ``w_n ~ N(0, I)`` is concatenated to the input of the
first GP layer (§5.1.2); ``q(w_n) = N(a_n, diag(b_n^2))`` is amortised by a recognition MLP on
``[x_n, y_n]`` (§5.2.5; the architecture of the authors' IWVI code). Two bounds:

* ``"vi"`` (eq. 5.3): ``w`` and the inner layers sampled independently per point, analytic last
  layer, closed-form ``KL(q(w_n) || p(w_n))``;
* ``"iwvi"`` (eq. 5.11): ``K`` proposals per point pushed through the inner layers with one joint
  draw per point (§5.2.3), analytic last layer ``L_n``, ``logsumexp_k [L_nk + log p(w_k) -
  log q(w_k)] - log K``.

Both are sums over data rows given the global parameters (the layers' q(u), kernels and noise,
and the encoder's weights), so :class:`IWVIBound` is a one-pass
:class:`~sklearn_lvgp.engine.ChunkedBound` like the DSVI bound: a chunk encodes its rows,
pushes their proposals through the layers, evaluates its share of the bound and backpropagates
it at once (:func:`latent_chunk_forward`, :func:`latent_chunk_backward`); the reduction adds the
layers' KL terms and prior-factor backward passes (:func:`latent_finish`). The draws of ``w``
and of the inner layers travel with their rows (:func:`~sklearn_lvgp.bounds._dsvi.to_row_layout`).

Every gradient is hand-written (MLP backprop, the softmax weights of the log-sum-exp, the joint
``K x K`` Cholesky backward of :mod:`sklearn_lvgp.variational._joint`). The recognition network
is :class:`sklearn_lvgp.nn._cde_encoder.RecognitionMLP`.
"""

import numpy as np
from scipy.special import logsumexp

from .._core.params import ParamPacker
from ..engine._protocol import ChunkedBound
from ..engine._rows import InMemoryRows
from ..expectations._rules import reparameterise, reparameterise_vjp
from ..likelihoods._gaussian import gaussian_expectation, gaussian_expectation_vjp
from ..nn._cde_encoder import RecognitionMLP, proposal_scale, proposal_scale_vjp
from ..variational import (
    gaussian_natgrad_step,
    kl_divergence,
    layer_global_vjp,
    marginals,
    marginals_vjp,
    prior_factor,
    tril_pack,
)
from ..variational._joint import JointPartial, joint_chunk_vjp, joint_global_vjp, joint_sample
from ..variational._kl import gaussian_kl_std_vjp, standard_normal_kl_std
from ._dsvi import (
    CHUNK_MIN_WORK,
    BoundParams,
    DSVIGlobals,
    chunk_layer_workspaces,
    dsvi_globals,
    evaluate_minibatch,
    from_row_layout,
    to_row_layout,
    work_per_row,
)
from ._dsvi_model import _DSVI
from ._dsvi_model import DELTA as _DELTA

__all__ = ["IWVIBound", "LatentDSVI", "latent_chunk_backward", "latent_chunk_forward",
           "latent_finish"]

#: Floor of the proposal standard deviation ``b``.
_MIN_SCALE = 1e-6


class IWVIBound(ChunkedBound):
    """The VI (eq. 5.3) or importance-weighted (eq. 5.11) bound of a latent-variable deep GP
    (Salimbeni 2020, ch. 5), as a protocol bound.

    Rows: ``X`` and ``y`` (the minibatch), ``w`` (each row's standard-normal draws of its
    latent covariate, every sample and proposal) and ``eps0``, ``eps1``, ... (its draws of the
    inner layers), in the layout of :func:`~sklearn_lvgp.bounds._dsvi.to_row_layout`. One
    pass; :meth:`prepare` takes a :class:`~sklearn_lvgp.bounds._dsvi.BoundParams`;
    :meth:`gradient` returns the value and the gradient wrt the flat parameters.

    Parameters
    ----------
    model : LatentDSVI
        The architecture (kernels, encoder, bound, packer); no data.
    """

    two_pass = False

    def __init__(self, model):
        self.model = model
        self.row_names = ("X", "y", "w") + tuple(f"eps{ell}"
                                                 for ell in range(model.n_layers - 1))

    def prepare(self, params):
        layers, noise, values, priors, kls = dsvi_globals(self.model, params.x)
        return DSVIGlobals(layers, noise, values, priors, kls, params.scale,
                           int(params.n_samples), params.workspaces)

    def chunk_cost(self, G):
        return work_per_row(self.model, G.S * self.model.K), None, 0, CHUNK_MIN_WORK

    def plan_key(self, G):
        return G.S * self.model.K

    def chunk_backward(self, G, step, rows, ctx, need_local=True):
        model = self.model
        ew = from_row_layout(rows["w"], G.S, model.Dw)
        inner = [from_row_layout(rows[f"eps{ell}"], G.S, model.dims[ell + 1])
                 for ell in range(model.n_layers - 1)]
        data, kl_w, st = latent_chunk_forward(
            model, G.layers, G.priors, G.noise, G.values, rows["X"], rows["y"], G.scale, G.S,
            ew, inner, chunk_layer_workspaces(G, ctx, model.n_layers))
        return None, (data, kl_w) + latent_chunk_backward(model, st)

    def gradient(self, G, step, partials):
        return latent_finish(self.model, G, partials)


def latent_chunk_forward(model, layers, priors, noise, p, X, Y, scale, S, ew, inner,
                         workspaces):
    """Forward pass of the latent-variable bound on one chunk of rows.

    Stacked rows are ordered (sample ``s``, point ``n``, proposal ``k``).

    Parameters
    ----------
    model : LatentDSVI
    layers, priors : list
        The layers and their prior factors (the global terms).
    noise : float
    p : dict
        Named parameter blocks (the encoder's weights among them).
    X, Y : ndarray of shape (n, D_x) and (n, D_y)
        The chunk's rows.
    scale : float
        ``N / |B|``.
    S : int
        Samples per row.
    ew : ndarray of shape (S n K, D_w)
        Standard-normal draws of ``w``.
    inner : list of ndarray of shape (S n K, D_l)
        Standard-normal draws of the inner layers.
    workspaces : list of Workspace or None
        Per-layer buffers (see :func:`~sklearn_lvgp.variational.marginals`).

    Returns
    -------
    data : float
        The chunk's data term before its factor ``scale / S``.
    kl_w : float
        ``"vi"``: the chunk's ``KL(q(w) || p(w))`` before its factor ``scale``; else 0.
    state : dict
        What :func:`latent_chunk_backward` and the natural-gradient step read.
    """
    n, K, L = X.shape[0], model.K, model.n_layers
    G = S * n
    P = G * K
    a, b, ecache = model.local(p, X, Y)
    arow = np.tile(np.repeat(a, K, axis=0), (S, 1))
    brow = np.tile(np.repeat(b, K, axis=0), (S, 1))
    W = reparameterise(arow, brow, ew)
    H = np.hstack([np.tile(np.repeat(X, K, axis=0), (S, 1)), W])
    tape = []
    joint = model.inference == "iwvi" and model.joint_inner and K > 1
    ws = [None] * L if workspaces is None else workspaces
    for ell, layer in enumerate(layers):
        mu, var, mcache = marginals(layer.kernel, layer.Z, layer.q_mu, layer.q_sqrt, H,
                                    priors[ell].Lu, layer.mean_function, layer.whiten, ws[ell])
        cache = (layer.kernel, priors[ell], mcache, None)
        if ell == L - 1:
            tape.append((cache, None))
            break
        e = inner[ell]
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
    if model.inference == "iwvi":
        logw = np.sum(-0.5 * W * W + 0.5 * ew * ew + np.log(brow), axis=1)
        ell_nk = (Ln + logw).reshape(G, K)
        lse = logsumexp(ell_nk, axis=1)
        data = float(np.sum(lse - np.log(K)))
        weights = scale / S * np.exp(ell_nk - lse[:, None]).ravel()
        kl_w = 0.0
    else:
        data = float(np.sum(Ln))
        weights = np.full(P, scale / S)
        kl_w = standard_normal_kl_std(a, b)
    state = dict(layers=layers, noise=noise, p=p, a=a, b=b, ecache=ecache, ew=ew, W=W,
                 brow=brow, tape=tape, mu=mu, var=var, Yt=Yt, weights=weights, n=n, S=S,
                 scale=scale)
    return data, kl_w, state


def latent_chunk_backward(model, st):
    """Backward pass of one chunk from its :func:`latent_chunk_forward` state.

    Returns
    -------
    dnoise : float
        The chunk's share of the noise variance's adjoint.
    layers : tuple
        Per layer, its partial adjoints summed over the chunk's rows: ``(q_mu, q_sqrt, Z,
        θ, L_u)`` of the marginals, or a :class:`~sklearn_lvgp.variational._joint.JointPartial`
        for a jointly drawn inner layer.
    encoder : tuple of ndarray
        The chunk's share of the encoder weights' adjoints, in block order.
    """
    K, S, n, Dw = model.K, st["S"], st["n"], model.Dw
    wts = st["weights"]
    gv = gaussian_expectation_vjp(wts[:, None], st["Yt"], st["mu"], st["var"], st["noise"])
    parts = [None] * model.n_layers
    dmu, dvar, dH = gv.mu, gv.var, None
    for ell in range(model.n_layers - 1, -1, -1):
        cache, step = st["tape"][ell]
        if step is not None and step[0] == "joint":
            parts[ell], dH = joint_chunk_vjp(dH, cache, step[1])
            continue
        if step is not None:
            # h = mu + eps sqrt(v + delta) (Salimbeni 2020, eq. 2.12)
            _, e, sd = step
            dmu, dvar = reparameterise_vjp(dH, e, sd)
        mv = marginals_vjp(dmu, dvar, cache[2])
        parts[ell] = (mv.q_mu, mv.q_sqrt, mv.Z, mv.theta, mv.Lu)
        dH = mv.H
    dW = dH[:, model.Dx:]
    ew, brow, a, b = st["ew"], st["brow"], st["a"], st["b"]
    if model.inference == "iwvi":
        # d/dw [log p(w) - log q(w)] with eps fixed is -w; the explicit log b term (eq. 5.11)
        dW = dW - wts[:, None] * st["W"]
    da_rows, db_rows = reparameterise_vjp(dW, ew)
    if model.inference == "iwvi":
        db_rows = db_rows + wts[:, None] / brow
    da = da_rows.reshape(S, n, K, Dw).sum(axis=(0, 2))
    db = db_rows.reshape(S, n, K, Dw).sum(axis=(0, 2))
    if model.inference == "vi":
        ka, kb = gaussian_kl_std_vjp(a, b)
        da = da - st["scale"] * ka
        db = db - st["scale"] * kb
    ecache, rho = st["ecache"]
    drho = proposal_scale_vjp(db, rho)
    enc = model.encoder.backward(np.hstack([da, drho]), ecache, st["p"])
    return (float(gv.noise_variance), tuple(parts),
            tuple(enc[name] for name, _ in model.encoder.blocks()))


def latent_value(model, data, kl_w, kl_total, scale, S):
    """The bound from the summed data term, the summed ``KL(q(w))`` and the layers' KL."""
    kl_w = scale * kl_w if model.inference == "vi" else 0.0
    return scale / S * data - kl_w - kl_total


def latent_finish(model, G, partials):
    """Value and flat gradient from the reduced chunk partials and the global terms
    (:class:`~sklearn_lvgp.bounds._dsvi.DSVIGlobals`)."""
    data, kl_w, dnoise, parts, enc = partials
    grads = {}
    kl_total = 0.0
    for ell, layer in enumerate(G.layers):
        kl, kcache = G.kls[ell]
        kl_total += kl
        if isinstance(parts[ell], JointPartial):
            dq_mu, dq_sqrt, dZ, dtheta = joint_global_vjp(layer.kernel, G.priors[ell], kcache,
                                                          -1.0, parts[ell])
        else:
            dq_mu, dq_sqrt, dZ, dtheta = layer_global_vjp(layer.kernel, G.priors[ell], kcache,
                                                          -1.0, *parts[ell])
        grads[f"q_mu{ell}"] = dq_mu
        grads[f"q_sqrt{ell}"] = tril_pack(dq_sqrt)
        grads[f"Z{ell}"] = dZ
        grads.update(model._theta_grads(ell, dtheta, G.values))
    grads.update(zip((name for name, _ in model.encoder.blocks()), enc, strict=True))
    grads["noise_variance"] = np.array([dnoise])
    value = latent_value(model, data, kl_w, kl_total, G.scale, G.S)
    return value, model.packer.pack_grad(grads, G.values)


class LatentDSVI(_DSVI):
    """The VI / IW bound of an LV-GP-...-GP model as a function of one flat parameter vector.

    ``dims[0] = n_features + latent_dim`` (the first layer sees ``[x, w]``). Holds structure
    only; the encoder's weights are blocks of the flat vector. The bound is
    :class:`IWVIBound`.

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

    # --------------------------------------------------------------------- the bound
    def bound(self):
        """The protocol bound of this architecture (:class:`IWVIBound`)."""
        return IWVIBound(self)

    def _draws(self, n, n_samples, random_state, eps=None):
        """``(ew, inner)``: the draws of ``w`` and of the inner layers of an ``n``-row
        minibatch, ``(S n K, D)`` each, in the order the forward pass uses them."""
        if eps is not None:
            return eps["w"], list(eps["inner"])
        P = int(n_samples) * n * self.K
        ew = random_state.standard_normal((P, self.Dw))
        return ew, [random_state.standard_normal((P, self.dims[ell + 1]))
                    for ell in range(self.n_layers - 1)]

    def draw_rows(self, n, n_samples, random_state, eps=None):
        """The draws of an ``n``-row minibatch as the row arrays ``w``, ``eps0``, ... of
        :class:`IWVIBound` (from ``random_state`` as :meth:`forward` draws them, or ``eps``)."""
        S = int(n_samples)
        ew, inner = self._draws(n, S, random_state, eps)
        rows = {"w": to_row_layout(ew, n, S)}
        rows.update({f"eps{ell}": to_row_layout(e, n, S) for ell, e in enumerate(inner)})
        return rows

    def forward(self, x, X, Y, scale, n_samples, random_state=None, eps=None, with_kl=True,
                workspaces=None):
        """Bound value and everything its backward needs, on all rows at once.

        Stacked rows are ordered (sample ``s``, point ``n``, proposal ``k``); ``eps`` is a dict
        with ``"w"`` of shape ``(S n K, D_w)`` and ``"inner"``, a list of ``(S n K, D_l)``
        arrays, or ``None`` to draw them from ``random_state``.
        """
        layers, noise, p = self.unpack(x)
        priors = [prior_factor(layer.kernel, layer.Z, self.jitter) for layer in layers]
        S = int(n_samples)
        ew, inner = self._draws(X.shape[0], S, random_state, eps)
        data, kl_w, state = latent_chunk_forward(self, layers, priors, noise, p, X, Y, scale,
                                                 S, ew, inner, workspaces)
        kl_total = 0.0
        if with_kl:
            for layer, prior in zip(layers, priors, strict=True):
                kl_total += kl_divergence(layer.q_mu, layer.q_sqrt, prior.Lu, layer.whiten)[0]
        return latent_value(self, data, kl_w, kl_total, scale, S), state

    def elbo(self, x, X, Y, scale, n_samples, random_state=None, eps=None, workspaces=None):
        """Minibatch VI (eq. 5.3) or IW (eq. 5.11) bound estimate and its gradient wrt ``x``.

        :class:`IWVIBound` over the rows ``X``, ``Y`` and their draws (from ``random_state``,
        or ``eps`` as in :meth:`forward`), in memory: rows in parallel chunks, bit-identical
        for any number of threads. ``workspaces``: one buffer set per layer reused across
        calls (see ``_DSVI.propagate``).
        """
        rows = InMemoryRows({"X": X, "y": Y,
                             **self.draw_rows(X.shape[0], n_samples, random_state, eps)},
                            chunk_rows=self.chunk_rows, prefix="iwvi")
        return evaluate_minibatch(self.bound(), BoundParams(x, scale, n_samples, workspaces),
                                  rows)

    def evaluate(self, x, source, scale, n_samples):
        """As :meth:`_DSVI.evaluate`, with the rows of :class:`IWVIBound`."""
        return evaluate_minibatch(self.bound(), BoundParams(x, scale, n_samples), source)

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
