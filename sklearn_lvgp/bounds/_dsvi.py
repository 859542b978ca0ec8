"""The doubly-stochastic deep-GP bound as a protocol bound: one pass over minibatch-row chunks.

ELBO = Σ_n E_q[log p(y_n | f_n)] − Σ_ℓ KL(q(U_ℓ) ‖ p(U_ℓ)) (Salimbeni & Deisenroth 2017, eq. 12).
Given the global parameters every row's expected log-likelihood, and its expectation through
the layers, is independent of the other rows, so :class:`DSVIBound` is a one-pass
:class:`~sklearn_lvgp.engine.ChunkedBound`:

1. the **global terms** (:meth:`~DSVIBound.prepare`): each layer's prior factor chol(K_uu) and
   its KL;
2. **one pass over row chunks**: a chunk pushes its rows through the layers (Monte Carlo samples
   or unscented points), evaluates its share of the data term and backpropagates it at once
   (:func:`chunk_pass`), returning the data term and partial adjoints of every layer's q(u), Z,
   θ and L_u;
3. the **reduction**: partials summed over the pairwise tree of the chunk index, then the KL
   adjoints and the prior factor's backward pass (once per layer, not once per chunk;
   :func:`dsvi_finish`).

The Monte Carlo draws of a minibatch are made before the pass, in the order the unchunked
expectation draws them, and travel with the rows (row ``n`` holds its draws of every sample,
:func:`draws_to_rows`), so the bound is the same estimate for any chunking, any number of
threads and any row source — the thread executor, or Dask partitions holding the minibatch's
rows (:meth:`sklearn_lvgp.engine._dask.DaskRows.subset`).
"""


from typing import NamedTuple

import numpy as np

from .._core.workspace import thread_workspace
from ..engine._protocol import ChunkedBound, evaluate_bound
from ..engine._rows import InMemoryRows
from ..expectations._rules import (
    expand_points,
    expand_points_vjp,
    reparameterise,
    reparameterise_vjp,
    unscented_rule,
)
from ..likelihoods._gaussian import gaussian_expectation, gaussian_expectation_vjp
from ..variational import (
    kl_divergence,
    layer_global_vjp,
    marginals,
    marginals_vjp,
    prior_factor,
    tril_pack,
)

__all__ = ["BoundParams", "DSVIBound", "DSVIGlobals", "FLOPS_PER_WORK", "chunk_layer_workspaces",
           "chunk_pass", "draws_to_rows", "dsvi_draws", "dsvi_elbo", "dsvi_finish",
           "dsvi_globals", "evaluate_minibatch", "from_row_layout", "inner_samples",
           "moment_match", "n_draw_layers", "propagate_layers", "sigma_points",
           "thread_layer_workspaces", "to_row_layout", "work_per_row"]

#: Matrix-product flops counted as one unit of :func:`~._executor.plan_chunks` work. A chunk's
#: pass costs about 600 Python-level calls (the glue around the kernels, solves and the jitted
#: per-output loops of the marginals), which hold the GIL; at 32 the chunks of a 10⁴-row
#: minibatch (M = 100, 2 layers) have about 1100 rows, large enough for threads to overlap
#: (smaller chunks scaled worse).
FLOPS_PER_WORK = 32
#: Least estimated work of a chunk of its own (the engine's ``min_work``, in the units above):
#: the engine's default. Each chunk's glue costs about 0.75 ms of one thread (2-core VM, a
#: 10⁴-row minibatch, M = 100, 2 layers: 169 / 181 / 194 / 211 ms for 8 / 16 / 32 / 64
#: chunks), so finer chunks than these 8 cost one thread 7-25 % and would hold the GIL longer
#: than 16 threads' share of the work.
CHUNK_MIN_WORK = 2 ** 22


def sigma_points(mu, var, delta):
    """Unscented points of the Gaussian marginals ``N(mu, var + delta)`` of ``n`` rows, stacked
    row-major as ``(n·2D, D)``; with the rule and the standard deviations (for the backward)."""
    rule = unscented_rule(mu.shape[1])
    sd = np.sqrt(var + delta)
    H = expand_points(mu, sd, rule.nodes).reshape(-1, mu.shape[1])
    return H, rule, sd


def moment_match(mu_k, var_k, rule, n):
    """Mean and variance of the mixture of the ``n·K`` point marginals, per row, and the
    factors ``(w, dev)`` its backward pass needs (Salimbeni & Deisenroth 2017, §3.3)."""
    K = rule.n_points
    mk = mu_k.reshape(n, K, -1)
    w = rule.weights[None, :, None]
    mu = np.sum(w * mk, axis=1)
    dev = mk - mu[:, None, :]
    var = np.sum(w * (var_k.reshape(n, K, -1) + dev * dev), axis=1)
    return mu, var, (w, dev)


def propagate_layers(evaluate, X, n_layers, expectation, n_samples, draw, delta):
    """Push ``X`` through ``n_layers`` layers; the last layer's marginals, weights and a tape.

    Monte Carlo (Salimbeni 2020, eqs. 2.10-2.18): ``n_samples`` stacked copies of ``X``
    (sample-major), each inner layer's output sampled as ``h = μ + ε sqrt(v + delta)``
    (Salimbeni & Deisenroth 2017, eq. 7). Unscented: each inner layer's Gaussian marginals
    are moment-matched and pushed through the next layer at the sigma points of
    :func:`sigma_points`.

    Parameters
    ----------
    evaluate : callable
        ``evaluate(ell, H) -> (mu, var, cache)``: layer ``ell``'s marginals at inputs ``H``.
    X : ndarray of shape (n, D_0)
        Inputs.
    n_layers : int
    expectation : {"monte_carlo", "unscented"}
    n_samples : int
        Monte Carlo copies (ignored by the unscented rule).
    draw : callable
        ``draw(ell, shape) -> eps``: the standard normal draws of inner layer ``ell``.
    delta : float
        Jitter under the square root of the sampled standard deviation.

    Returns
    -------
    mu, var : ndarray of shape (P, D_L)
        Last-layer marginals at the ``P`` stacked points.
    weights : ndarray of shape (P,)
        Weight of each stacked point in an average over a data row (sums to 1 per row).
    tape : list of (cache, step, moment_match)
        Per layer: its ``evaluate`` cache, how its inputs were made from the previous layer
        (``None``, ``("mc", eps, sd)`` or ``("ut", rule, sd)``) and the moment matching of its
        output (``None`` for the last layer and Monte Carlo).
    """
    n = X.shape[0]
    tape = []
    if expectation == "monte_carlo":
        H = np.tile(X, (n_samples, 1))
        weights = np.full(n_samples * n, 1.0 / n_samples)
        step = None
        for ell in range(n_layers):
            mu, var, cache = evaluate(ell, H)
            tape.append((cache, step, None))
            if ell < n_layers - 1:
                e = draw(ell, mu.shape)
                sd = np.sqrt(var + delta)
                H = reparameterise(mu, sd, e)
                step = ("mc", e, sd)
        return mu, var, weights, tape
    mu, var, cache = evaluate(0, X)
    tape.append((cache, None, None))
    weights = np.ones(n)
    for ell in range(1, n_layers):
        H, rule, sd = sigma_points(mu, var, delta)
        mu_k, var_k, cache = evaluate(ell, H)
        mm = None
        if ell < n_layers - 1:
            mu, var, mm = moment_match(mu_k, var_k, rule, n)
        else:
            mu, var = mu_k, var_k
            weights = np.tile(rule.weights, n)
        tape.append((cache, ("ut", rule, sd), mm))
    return mu, var, weights, tape


def work_per_row(model, n_points):
    """Relative work of one minibatch row pushed through the layers at ``n_points`` stacked
    points (the chunk plan's estimate, :func:`~sklearn_lvgp.engine._executor.plan_chunks`)."""
    M = model.M
    dims = model.dims
    flops = sum(M * M * (1 + dims[ell + 1]) + M * dims[ell] for ell in range(model.n_layers))
    return n_points * flops / FLOPS_PER_WORK


def chunk_pass(model, layers, priors, noise, X, Y, scale, S, eps, workspaces):
    """Forward and backward of one chunk's data term: ``(data, dnoise, per-layer partials)``.

    ``eps`` holds the chunk's Monte Carlo draws per inner layer (sample-major rows).
    """
    L = model.n_layers
    m = X.shape[0]

    def evaluate(ell, H):
        layer = layers[ell]
        return marginals(layer.kernel, layer.Z, layer.q_mu, layer.q_sqrt, H, priors[ell].Lu,
                         layer.mean_function, layer.whiten, workspaces[ell])

    mu, var, weights, tape = propagate_layers(evaluate, X, L, model.expectation, S,
                                              lambda ell, shape: eps[ell], model.delta)
    Yt = (np.tile(Y, (S, 1)) if model.expectation == "monte_carlo"
          else np.repeat(Y, weights.size // m, axis=0))
    pw = (scale * weights)[:, None]
    data = float(np.sum(pw * gaussian_expectation(Yt, mu, var, noise)))
    gv = gaussian_expectation_vjp(pw, Yt, mu, var, noise)
    dmu, dvar = gv.mu, gv.var
    partials = [None] * L
    for ell in range(L - 1, -1, -1):
        mcache, step, mm = tape[ell]
        if mm is not None:
            # moment matching: mean = sum_k w mu_k, var = sum_k w (v_k + (mu_k - mean)^2)
            w, dev = mm
            dmu = (w * dmu[:, None, :] + 2.0 * w * dev * dvar[:, None, :]).reshape(
                -1, dev.shape[2])
            dvar = np.ascontiguousarray(
                np.broadcast_to(w * dvar[:, None, :], dev.shape)).reshape(-1, dev.shape[2])
        mv = marginals_vjp(dmu, dvar, mcache)
        partials[ell] = (mv.q_mu, mv.q_sqrt, mv.Z, mv.theta, mv.Lu)
        if step is None:
            continue
        if step[0] == "mc":
            # h = mu + eps sqrt(v + delta) (Salimbeni & Deisenroth 2017, eq. 7)
            _, e, sd = step
            dmu, dvar = reparameterise_vjp(mv.H, e, sd)
        else:
            _, rule, sd = step
            dmu, dvar = expand_points_vjp(mv.H.reshape(sd.shape[0], rule.n_points, -1),
                                          rule.nodes, sd)
    return data, float(gv.noise_variance), tuple(partials)


class BoundParams(NamedTuple):
    """Parameters of one evaluation of :class:`DSVIBound` (and of the latent-variable bound,
    :class:`~sklearn_lvgp.bounds._iwvi.IWVIBound`).

    Attributes
    ----------
    x : ndarray
        Flat parameters of the model.
    scale : float
        ``N / n``: rows of the data per row of the minibatch.
    n_samples : int
        Monte Carlo samples per row (ignored by the unscented expectation).
    workspaces : list of Workspace or None
        Per-layer buffers reused across evaluations by a pass of one chunk (in memory only).
    """

    x: np.ndarray
    scale: float
    n_samples: int
    workspaces: list = None


class DSVIGlobals(NamedTuple):
    """The global terms of one evaluation of :class:`DSVIBound`."""

    layers: list
    noise: float
    values: dict
    priors: list
    kls: list
    scale: float
    S: int
    workspaces: list


class DSVIBound(ChunkedBound):
    """The doubly-stochastic deep-GP bound of a fixed architecture, as a protocol bound.

    Rows: ``X`` and ``y`` (the minibatch) and, for Monte Carlo propagation through inner
    layers, ``eps0``, ``eps1``, ... (each row's draws of every sample, :func:`draws_to_rows`).
    One pass: a chunk's data term and its partial adjoints (:func:`chunk_pass`); the reduction
    adds the KL terms and the prior factors' backward passes (:func:`dsvi_finish`).
    :meth:`prepare` takes a :class:`BoundParams`; :meth:`gradient` returns the value and the
    gradient wrt the flat parameters.

    Parameters
    ----------
    model : sklearn_lvgp.bounds._dsvi_model._DSVI
        The architecture (kernels, shapes, expectation rule, packer); no data.
    """

    two_pass = False

    def __init__(self, model):
        self.model = model
        self.row_names = ("X", "y") + tuple(f"eps{ell}" for ell in range(n_draw_layers(model)))

    def prepare(self, params):
        layers, noise, values, priors, kls = dsvi_globals(self.model, params.x)
        return DSVIGlobals(layers, noise, values, priors, kls, params.scale,
                           inner_samples(self.model, params.n_samples), params.workspaces)

    def _points(self, G):
        model = self.model
        if model.expectation == "monte_carlo":
            return G.S
        return 2 * max(model.dims[1:model.n_layers]) if model.n_layers > 1 else 1

    def chunk_cost(self, G):
        return work_per_row(self.model, self._points(G)), None, 0, CHUNK_MIN_WORK

    def plan_key(self, G):
        return self._points(G)

    def chunk_backward(self, G, step, rows, ctx, need_local=True):
        model = self.model
        eps = [from_row_layout(rows[f"eps{ell}"], G.S, model.dims[ell + 1])
               for ell in range(n_draw_layers(model))]
        return None, chunk_pass(model, G.layers, G.priors, G.noise, rows["X"], rows["y"],
                                G.scale, G.S, eps, chunk_layer_workspaces(G, ctx,
                                                                          model.n_layers))

    def gradient(self, G, step, partials):
        return dsvi_finish(self.model, G.layers, G.priors, G.kls, G.values, partials)


def n_draw_layers(model):
    """Inner layers whose outputs are sampled (Monte Carlo with more than one layer)."""
    return model.n_layers - 1 if model.expectation == "monte_carlo" else 0


def inner_samples(model, n_samples):
    """Samples per row through the inner layers: ``n_samples``, or 1 without sampled layers."""
    return int(n_samples) if n_draw_layers(model) else 1


def chunk_layer_workspaces(G, ctx, n_layers):
    """A chunk's per-layer buffers: the caller's (reused across evaluations) for a pass of one
    chunk, else this thread's (kept from one pass on this thread to the next)."""
    if ctx.n_chunks == 1:
        return G.workspaces or [None] * n_layers
    return thread_layer_workspaces(n_layers)


def to_row_layout(eps, n, S):
    """Draws of an ``n``-row minibatch, ``(S·n·K, D)`` with rows ordered (sample, row,
    proposal), as a row array ``(n, S·K·D)``: row ``i`` holds every draw of minibatch row ``i``,
    so the draws travel with their rows through any chunking or partitioning."""
    return np.ascontiguousarray(eps.reshape(S, n, -1).transpose(1, 0, 2)).reshape(n, -1)


def from_row_layout(rows, S, width):
    """Inverse of :func:`to_row_layout` for a chunk of ``m`` rows: ``(S·m·K, width)``, ordered
    (sample, row, proposal)."""
    m = rows.shape[0]
    return np.ascontiguousarray(rows.reshape(m, S, -1).transpose(1, 0, 2)).reshape(-1, width)


def draws_to_rows(eps, n, S):
    """The per-inner-layer draws ``eps`` (a list, or ``None``) as row arrays ``eps0``, ...
    (:func:`to_row_layout`)."""
    return {f"eps{ell}": to_row_layout(e, n, S) for ell, e in enumerate(eps or [])}


def evaluate_minibatch(bound, params, source):
    """``(value, grad)`` of a one-pass bound of the flat parameters over ``source``."""
    out = evaluate_bound(bound, params, source, need_local=False)
    return out.value, out.grads


def dsvi_elbo(model, x, X, Y, scale, n_samples, random_state=None, eps=None, workspaces=None,
              chunk_rows=None, n_threads=None):
    """Minibatch ELBO estimate and its gradient wrt the flat parameters ``x`` of ``model``.

    :class:`DSVIBound` over the rows ``X``, ``Y`` and their draws, in memory.

    Parameters
    ----------
    model : sklearn_lvgp.bounds._dsvi_model._DSVI
        The architecture (kernels, shapes, expectation rule, packer).
    x : ndarray
        Flat parameters.
    X, Y : ndarray of shape (n, D_0) and (n, D_L)
        Minibatch rows.
    scale : float
        ``N / n``.
    n_samples : int
        Monte Carlo samples per row (ignored by the unscented expectation).
    random_state : numpy.random.RandomState, default=None
        Source of the Monte Carlo draws when ``eps`` is not given.
    eps : list of ndarray, default=None
        Fixed draws, one ``(S·n, D_ℓ+1)`` array per inner layer (sample-major rows).
    workspaces : list of Workspace, default=None
        Per-layer buffers reused across calls by a single-chunk evaluation.
    chunk_rows : int, default=None
        Rows per chunk; ``None`` chooses from the problem size (never from the thread count).
    n_threads : int, default=None
        Threads; ``None`` takes the enclosing :func:`sklearn_lvgp._core.parallel.threads` context.

    Returns
    -------
    value : float
    grad : ndarray of the shape of ``x``
    """
    n = X.shape[0]
    S = inner_samples(model, n_samples)
    if eps is None:
        eps = dsvi_draws(model, n, S, random_state)
    rows = InMemoryRows({"X": X, "y": Y, **draws_to_rows(eps, n, S)},
                        chunk_rows=chunk_rows, n_threads=n_threads, prefix="dsvi")
    return evaluate_minibatch(DSVIBound(model), BoundParams(x, scale, n_samples, workspaces),
                              rows)


def thread_layer_workspaces(n_layers):
    """This thread's buffers for a chunk pass, one part per layer: kept from one pass on this
    thread to the next (the partials a pass returns never alias them)."""
    return [thread_workspace().child(f"dsvi{ell}") for ell in range(n_layers)]


def dsvi_globals(model, x):
    """The global terms of an evaluation: ``(layers, noise, values, priors, kls)``."""
    layers, noise, values = model.unpack(x)
    priors = [prior_factor(layer.kernel, layer.Z, model.jitter) for layer in layers]
    kls = [kl_divergence(layer.q_mu, layer.q_sqrt, prior.Lu, layer.whiten)
           for layer, prior in zip(layers, priors, strict=True)]
    return layers, noise, values, priors, kls


def dsvi_draws(model, n, n_samples, random_state):
    """The Monte Carlo draws of an ``n``-row minibatch, in the unchunked order (or ``None``)."""
    L = model.n_layers
    if model.expectation != "monte_carlo" or L == 1:
        return None
    return [random_state.standard_normal((n_samples * n, model.dims[ell + 1]))
            for ell in range(L - 1)]


def dsvi_finish(model, layers, priors, kls, values, partials):
    """Value and flat gradient from the reduced chunk partials and the global terms."""
    data, dnoise, parts = partials
    grads = {}
    for ell, layer in enumerate(layers):
        dq_mu, dq_sqrt, dZ, dtheta = layer_global_vjp(layer.kernel, priors[ell], kls[ell][1],
                                                      -1.0, *parts[ell])
        grads[f"q_mu{ell}"] = dq_mu
        grads[f"q_sqrt{ell}"] = tril_pack(dq_sqrt)
        grads[f"Z{ell}"] = dZ
        grads.update(model._theta_grads(ell, dtheta, values))
    grads["noise_variance"] = np.array([dnoise])
    return data - sum(kl for kl, _ in kls), model.packer.pack_grad(grads, values)
