"""The doubly-stochastic deep-GP bound as a map over chunks of minibatch rows.

ELBO = Σ_n E_q[log p(y_n | f_n)] − Σ_ℓ KL(q(U_ℓ) ‖ p(U_ℓ)) (Salimbeni & Deisenroth 2017, eq. 12).
Given the global parameters every row's expected log-likelihood, and its expectation through
the layers, is independent of the other rows, so one evaluation is

1. the **global terms**: each layer's prior factor chol(K_uu) and its KL;
2. **one map over row chunks**: a chunk pushes its rows through the layers (Monte Carlo samples
   or unscented points), evaluates its share of the data term and backpropagates it at once,
   returning the data term and partial adjoints of every layer's q(u), Z, θ and L_u;
3. the **reduction**: partials summed in chunk order, then the KL adjoints and the prior
   factor's backward pass (once per layer, not once per chunk).

The Monte Carlo draws of the whole minibatch are made before the map, in the order the unchunked
expectation draws them, so the chunked bound is the same estimate for any chunking and any
number of threads.
"""


import numpy as np

from .._core.workspace import thread_workspace
from ..engine._dask import _dask, _serial_task
from ..engine._executor import ChunkExecutor, plan_chunks, reduce_in_order, serial_global_steps
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

__all__ = ["DaskDSVI", "FLOPS_PER_WORK", "chunk_pass", "dsvi_draws", "dsvi_elbo", "dsvi_finish",
           "dsvi_globals", "dsvi_rows", "moment_match", "propagate_layers", "sigma_points",
           "thread_layer_workspaces"]

#: Matrix-product flops counted as one unit of :func:`~._executor.plan_chunks` work. A chunk's
#: pass costs about 600 Python-level calls (the glue around the kernels, solves and the jitted
#: per-output loops of the marginals), which hold the GIL; at 32 the chunks of a 10⁴-row
#: minibatch (M = 100, 2 layers) have about 1100 rows, large enough for threads to overlap
#: (smaller chunks scaled worse).
FLOPS_PER_WORK = 32


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


def _work_per_row(model, n_points):
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


@serial_global_steps
def dsvi_elbo(model, x, X, Y, scale, n_samples, random_state=None, eps=None, workspaces=None,
              chunk_rows=None, n_threads=None):
    """Minibatch ELBO estimate and its gradient wrt the flat parameters ``x`` of ``model``.

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
    layers, noise, values, priors, kls = dsvi_globals(model, x)
    L, n = model.n_layers, X.shape[0]
    mc = model.expectation == "monte_carlo"
    S = n_samples if (mc and L > 1) else 1
    if eps is None:
        eps = dsvi_draws(model, n, S, random_state)
    points = S if mc else (2 * max(model.dims[1:L]) if L > 1 else 1)
    chunks = plan_chunks(n, _work_per_row(model, points), chunk_rows=chunk_rows)
    single = len(chunks) == 1

    def chunk(i, a, b):
        if single:
            ws = workspaces or [None] * L
        else:
            ws = thread_layer_workspaces(L)
        return chunk_pass(model, layers, priors, noise, X[a:b], Y[a:b], scale, S,
                          dsvi_rows(eps, n, S, np.arange(a, b)), ws)

    partials = ChunkExecutor(n_threads).map_reduce(chunk, chunks)
    return dsvi_finish(model, layers, priors, kls, values, partials)


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


def dsvi_rows(eps, n, S, rows):
    """The draws of minibatch ``rows`` (positions in the minibatch) out of ``eps``."""
    if eps is None:
        return None
    return [e.reshape(S, n, -1)[:, rows].reshape(S * len(rows), -1) for e in eps]


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


def _dsvi_task(X, Y, rows, eps, model, layers, priors, noise, scale, S):
    # the worker thread's buffers, kept from one step's task to the next (as a chunk worker's)
    return chunk_pass(model, layers, priors, noise, X[rows], Y[rows], scale, S, eps,
                      thread_layer_workspaces(model.n_layers))


class DaskDSVI:
    """The doubly-stochastic deep-GP bound with its rows on Dask (arrays ``"X"``, ``"y"`` of a
    :class:`~sklearn_lvgp.engine._dask.DaskRows`).

    A minibatch is a set of row indices; each partition that holds some of them evaluates their
    data term and its partial adjoints where the partition lives (data-parallel minibatch
    gradients), and the driver adds the partials in partition order and does the global terms
    (prior factors, KLs). Per step the tasks receive the model's parameters and the minibatch's
    Monte Carlo draws, never the data.
    """

    def __init__(self, rows):
        self.rows = rows
        self.offsets = rows.offsets

    @serial_global_steps
    def elbo(self, model, x, idx, scale, n_samples, random_state):
        """ELBO estimate and gradient on the rows ``idx`` (as ``_DSVI.elbo`` on ``X[idx]``)."""
        dask, _ = _dask()
        layers, noise, values, priors, kls = dsvi_globals(model, x)
        idx = np.asarray(idx)
        n, L = idx.size, model.n_layers
        S = n_samples if (model.expectation == "monte_carlo" and L > 1) else 1
        eps = dsvi_draws(model, n, S, random_state)
        part = np.searchsorted(self.offsets, idx, side="right") - 1
        shared = dask.delayed((model, layers, priors, noise, scale, S), traverse=False)
        task = dask.delayed(_serial_task, pure=True)
        tasks = []
        for p in range(self.rows.n_partitions):
            pos = np.flatnonzero(part == p)
            if pos.size:
                tasks.append(task(_dsvi_task, self.rows.parts["X"][p], self.rows.parts["y"][p],
                                  idx[pos] - self.offsets[p], dsvi_rows(eps, n, S, pos), shared))
        partials = reduce_in_order(list(dask.compute(*tasks)))
        return dsvi_finish(model, layers, priors, kls, values, partials)

