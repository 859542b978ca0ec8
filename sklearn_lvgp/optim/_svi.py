"""Stochastic variational inference for the GPLVM: minibatches of rows, natural gradients on q(u).

Each step draws a minibatch of ``batch_size`` rows (shuffled epochs without replacement,
:func:`~sklearn_lvgp.optim._adam.minibatches`) and evaluates the uncollapsed bound
:class:`~sklearn_lvgp.bounds._svi.UncollapsedPsi` on them on the chunk engine, and takes

* a natural-gradient step on q(u) of size ``natgrad_gamma`` — the Gaussian-likelihood step of
  the SVGP layer, :func:`~sklearn_lvgp.variational.natgrad_from_statistics`, from the batch's
  whitened Ψ sums (Hensman, Fusi & Lawrence 2013, :cite:`hensman2013gaussian`), between the
  bound's forward and backward passes (the gradients below are those at the new q(u): with
  ``natgrad_gamma=1`` on all rows they are the collapsed bound's); q(u) starts at the prior and
  the first step has size one (the q(u) optimal for the first minibatch);
* an Adam step (Kingma & Ba 2015) on the global hyperparameters — inducing inputs, kernel
  ``theta`` (clipped to its bounds) and log noise variance (clipped to ``noise_bounds``);
* an Adam step on the q(x_n) = N(μ_n, diag S_n) of the batch's rows (in ``(μ, log S)``), each
  row with its own moment estimates and step count, so a step costs nothing for the rows it
  does not touch and an epoch's time grows linearly with N (Lalchand et al. 2022,
  :cite:`lalchand2022generalised`, with point-wise q(x_n)) — or, with an ``encoder``, an Adam
  step on the encoder's weights (q(x_n) amortised,
  :class:`~sklearn_lvgp.bounds._svi.AmortisedUncollapsedPsi`).

``max_epochs`` passes over the data; with ``tol`` the run stops when the mean bound estimate of
the last 100 steps improves on the 100 before by less than ``tol`` (relative), as
:func:`~sklearn_lvgp.optim._adam.run_adam` does. The fit's callback sees every step. At the end
q(u) is set to its optimum for all rows, the rest fixed (one pass over the rows: a
natural-gradient step of size one from their statistics), and the bound there is the fit's
ELBO — the collapsed bound at the fitted parameters.
"""

import math
import time
from typing import NamedTuple

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._core.linalg import CholeskyError
from .._core.progress import iteration_line, progress, report
from .._core.warn import warn
from ..bounds._collapsed_masked import column_groups
from ..bounds._svi import AmortisedUncollapsedPsi, SviParams, UncollapsedPsi, svi_posterior
from ..engine._executor import serial_global_steps
from ..engine._rows import InMemoryRows
from ..nn._ldgd_encoder import encoder_latents
from ..variational._natgrad import natgrad_from_statistics
from ._adam import AdamState, _diverged, gamma_at, minibatches

__all__ = ["SviResult", "fit_svi"]

BOUND, AMORTISED = UncollapsedPsi(), AmortisedUncollapsedPsi()
#: Steps of the windows of the ``tol`` rule.
WINDOW = 100


class SviResult(NamedTuple):
    """Outcome of :func:`fit_svi`: the fitted parameters, q(u) as a posterior, the full-data
    bound, epochs run, the mean minibatch estimate of each epoch and whether ``tol`` (or the
    callback) ended the run."""

    mu: np.ndarray
    S: np.ndarray
    Z: np.ndarray
    theta: np.ndarray
    noise_variance: float
    q_mu: np.ndarray
    q_sqrt: np.ndarray
    post: object
    elbo: float
    n_epochs: int
    history: np.ndarray
    converged: bool
    encoder: list = None


@serial_global_steps
def _step(bound, params, source, gamma):
    """One evaluation of ``bound`` with a natural-gradient step on q(u) between its passes:
    the forward pass's statistics (at the current hyperparameters and q(x_n)) give the step,
    and the backward pass and the gradients are those at the new q(u) — the sequence of
    :func:`~sklearn_lvgp.engine.evaluate_bound` with q(u) updated by its global step."""
    G = bound.prepare(params)
    plan = source.plan(bound, G)
    stats = source.map_reduce(bound.chunk_stats, G, plan, bound.row_names)
    q_mu, q_sqrt = natgrad_from_statistics(params.q_mu, params.q_sqrt,
                                           *bound.natgrad_sums(G, stats)[0], gamma)
    G = bound.prepare(params._replace(q_mu=q_mu, q_sqrt=q_sqrt))
    step = bound.finish(G, stats)
    need_local = params.encoder is None
    partials, local = source.map_reduce_backward(bound.chunk_backward, G, step, plan,
                                                 need_local, bound.row_names)
    value, grads = bound.gradient(G, step, partials)
    return q_mu, q_sqrt, value, grads, local


@serial_global_steps
def _settled(bound, params, source):
    """q(u) at its optimum for all the rows of ``source`` (``params.scale`` one), the rest of
    ``params`` fixed: one natural-gradient step of size one from their statistics (Titsias
    2009), and the bound there — the collapsed bound at these parameters. One forward pass."""
    G = bound.prepare(params)
    stats = source.map_reduce(bound.chunk_stats, G, source.plan(bound, G), bound.row_names)
    q_mu, q_sqrt = natgrad_from_statistics(params.q_mu, params.q_sqrt,
                                           *bound.natgrad_sums(G, stats)[0], 1.0)
    G = bound.prepare(params._replace(q_mu=q_mu, q_sqrt=q_sqrt))
    none = (np.zeros_like(params.Z), np.zeros(params.kernel.n_theta))  # no backward pass
    return q_mu, q_sqrt, bound.gradient(G, bound.finish(G, stats), none)[0]


class _Adam:
    """Adam ascent on rows of a parameter array, each row with its own step count."""

    def __init__(self, shape, beta1=0.9, beta2=0.999, eps=1e-8):
        self.m, self.v = np.zeros(shape), np.zeros(shape)
        self.t = np.zeros(shape[:1], dtype=np.int64)
        self.beta1, self.beta2, self.eps = beta1, beta2, eps

    def step(self, x, grad, lr, rows=slice(None)):
        b1, b2 = self.beta1, self.beta2
        self.t[rows] += 1
        t = self.t[rows].reshape((-1,) + (1,) * (grad.ndim - 1)).astype(np.float64)
        m = self.m[rows] = b1 * self.m[rows] + (1.0 - b1) * grad
        v = self.v[rows] = b2 * self.v[rows] + (1.0 - b2) * grad * grad
        return x + lr * (m / (1.0 - b1 ** t)) / (np.sqrt(v / (1.0 - b2 ** t)) + self.eps)


def fit_svi(Y, mu, S, kernel, Z, noise_variance, rule, *, batch_size, max_epochs, learning_rate,
            natgrad_gamma, noise_bounds, jitter, random_state, draw_rule=None, tol=None,
            verbose=0, name="SVI", chunk_rows=None, encoder=None):
    """Fit the GPLVM by stochastic variational inference.

    Parameters
    ----------
    Y : ndarray of shape (N, D)
        Normalised data, NaN at the missing entries (every column observed somewhere).
    mu, S : ndarray of shape (N, Q)
        Starting q(x_n) (not modified).
    kernel : Kernel
        Starting kernel: its ``theta`` is updated in place (the fitted kernel).
    Z : ndarray of shape (M, Q)
        Starting inducing inputs.
    noise_variance : float
        Starting noise variance.
    rule : "analytic" or PointRule
        Expectation rule (of the final evaluation too).
    batch_size : int
        Rows per step (``>= N``: every step on all rows).
    max_epochs : int
        Passes over the data.
    learning_rate : float
        Adam step size.
    natgrad_gamma : float or tuple (gamma0, gamma1, K)
        Natural-gradient step size in (0, 1], or its log-linear schedule
        (:func:`~sklearn_lvgp.optim._adam.gamma_at`).
    noise_bounds : sequence of 2 floats
        Box of the log noise variance.
    jitter : float
        Relative jitter of ``K_uu``.
    random_state : numpy.random.RandomState
        Source of the minibatches (and of ``draw_rule``'s nodes).
    draw_rule : callable or None
        ``draw_rule(n)``: a fresh rule for a batch of ``n`` rows (Monte Carlo), else ``rule``.
    tol : float or None
        Windowed relative-improvement stopping rule; ``None`` runs ``max_epochs``.
    verbose : int
        Progress lines when > 0.
    name : str
        Used in messages.
    chunk_rows : int or None
        Rows per chunk of the engine (tests); ``None`` plans them.
    encoder : list of ndarray or None
        Starting weights of an encoder of q(x_n) (:mod:`sklearn_lvgp.nn._ldgd_encoder`);
        ``mu`` and ``S`` are then ignored, and the result's are the encoder's outputs.

    Returns
    -------
    SviResult
    """
    N, Q = mu.shape
    observed = ~np.isnan(Y)
    groups = column_groups(observed)
    data = {"Y": np.where(observed, Y, 0.0), "R": groups.member}
    mu, logS = np.array(mu, dtype=np.float64), np.log(S)
    M, D = Z.shape[0], Y.shape[1]
    q_mu, q_sqrt = np.zeros((M, D)), np.repeat(np.eye(M)[None], D, axis=0)
    theta_box = np.asarray(kernel.bounds, dtype=np.float64).reshape(-1, 2)
    g = np.concatenate([np.ravel(Z), kernel.theta, [math.log(noise_variance)]])
    nz, nt = Z.size, kernel.n_theta
    lower = np.concatenate([np.full(nz, -np.inf), theta_box[:, 0], [noise_bounds[0]]])
    upper = np.concatenate([np.full(nz, np.inf), theta_box[:, 1], [noise_bounds[1]]])
    adam_g, order = _Adam((g.size,)), AdamState(0)
    bound = BOUND if encoder is None else AMORTISED
    if encoder is None:  # Adam's moments of every row's q(x_n)
        adam_x = _Adam((N, 2 * Q))
    else:
        shapes = [w.shape for w in encoder]
        w_flat = np.concatenate([np.ravel(w) for w in encoder])
        adam_x, splits = _Adam(w_flat.shape), np.cumsum([w.size for w in encoder])[:-1]
    batch = min(int(batch_size), N)
    per_epoch = max(1, N // batch)
    steps = []
    converged = False
    t0 = time.perf_counter()
    every = max(1, per_epoch // max(int(verbose), 1))
    for it in range(1, int(max_epochs) * per_epoch + 1):
        idx = minibatches(order, N, batch, random_state)
        Zt = g[:nz].reshape(M, Q)
        kernel.theta = g[nz:nz + nt]
        arrays = {"Y": data["Y"][idx], "R": data["R"][idx]}
        if encoder is None:
            arrays.update(mu=mu[idx], S=np.exp(logS[idx]))
        else:
            encoder = [w.reshape(sh) for w, sh in zip(np.split(w_flat, splits), shapes,
                                                       strict=True)]
        params = SviParams(kernel, Zt, math.exp(g[-1]),
                           rule if draw_rule is None else draw_rule(idx.size), groups, q_mu,
                           q_sqrt, N / idx.size, jitter, encoder=encoder)
        try:
            q_mu, q_sqrt, value, grads, local = _step(
                bound, params, InMemoryRows(arrays, chunk_rows=chunk_rows),
                1.0 if it == 1 else gamma_at(natgrad_gamma, it))
        except CholeskyError as exc:
            raise _diverged(name, it, "a Cholesky factorisation failed", f" ({exc})") from exc
        gg = np.concatenate([np.ravel(grads["Z"]), grads["theta"],
                             [grads["noise"] * params.noise_variance]])
        gx = (np.concatenate([np.ravel(w) for w in grads["encoder"]]) if encoder is not None
              else np.hstack([local["mu"], local["S"] * arrays["S"]]))
        if not (np.isfinite(value) and np.all(np.isfinite(gg)) and np.all(np.isfinite(gx))):
            raise _diverged(name, it, f"the ELBO estimate or its gradient is not finite "
                            f"(estimate {value})")
        g = np.clip(adam_g.step(g, gg, learning_rate), lower, upper)
        if encoder is not None:
            w_flat = adam_x.step(w_flat, gx, learning_rate)
        else:
            x = adam_x.step(np.hstack([mu[idx], logS[idx]]), gx, learning_rate, idx)
            mu[idx], logS[idx] = x[:, :Q], x[:, Q:]
        steps.append(value / N)
        if verbose and it % every == 0:
            progress(iteration_line(name, it, int(max_epochs) * per_epoch,
                                    "ELBO estimate per row", value / N,
                                    time.perf_counter() - t0))
        if report("svi", value):
            converged = True
            break
        if tol is not None and it >= 2 * WINDOW and it % WINDOW == 0:
            prev, last = np.mean(steps[-2 * WINDOW:-WINDOW]), np.mean(steps[-WINDOW:])
            if last - prev <= tol * max(1.0, abs(prev)):
                converged = True
                break
    if tol is not None and not converged:
        warn(f"{name}: SVI did not converge within max_iter={int(max_epochs)} epochs: tol={tol:g}"
             " was not met. Increase max_iter or loosen tol.", ConvergenceWarning)
    Z = g[:nz].reshape(M, Q)
    kernel.theta = g[nz:nz + nt]
    noise = math.exp(g[-1])
    S = np.exp(logS)
    if encoder is not None:
        encoder = [w.reshape(sh) for w, sh in zip(np.split(w_flat, splits), shapes, strict=True)]
        mu, S = encoder_latents(encoder, data["Y"])
    final = SviParams(kernel, Z, noise, rule, groups, q_mu, q_sqrt, 1.0, jitter, 6)
    q_mu, q_sqrt, elbo = _settled(BOUND, final, InMemoryRows({**data, "mu": mu, "S": S},
                                                             chunk_rows=chunk_rows))
    n_epochs = math.ceil(len(steps) / per_epoch)
    history = np.array([np.mean(steps[e * per_epoch:(e + 1) * per_epoch]) * N
                        for e in range(n_epochs)])
    return SviResult(mu, S, Z, kernel.theta.copy(), noise, q_mu, q_sqrt,
                     svi_posterior(kernel, Z, q_mu, q_sqrt, noise, jitter), float(elbo),
                     n_epochs, history, converged, encoder)
