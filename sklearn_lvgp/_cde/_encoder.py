"""Recognition network ``[x_n, y_n] -> (a_n, rho_n)`` with a hand-written backward (spec §9).

Fully connected, tanh hidden layers, residual skip on layers whose input and output widths are
equal, linear output of width ``2 D_w``; Xavier-normal weights, zero biases (IWVI defaults).
"""

import numpy as np

__all__ = ["encoder_shapes", "encoder_init", "encoder_forward", "encoder_backward"]


def encoder_shapes(d_in, hidden, d_latent):
    """``[(W shape, b shape), ...]`` for input width ``d_in`` and output ``2 d_latent``."""
    widths = [int(d_in)] + [int(h) for h in hidden] + [2 * int(d_latent)]
    return [((widths[i], widths[i + 1]), (widths[i + 1],)) for i in range(len(widths) - 1)]


def encoder_init(shapes, random_state):
    """Xavier-normal weights ``N(0, 2 / (d_in + d_out))`` and zero biases."""
    out = []
    for (wi, wo), _ in shapes:
        out.append(random_state.standard_normal((wi, wo)) * np.sqrt(2.0 / (wi + wo)))
        out.append(np.zeros(wo))
    return out


def encoder_forward(params, inputs):
    """Forward pass; ``params`` is the flat list ``[W0, b0, W1, b1, ...]``.

    Returns
    -------
    out : ndarray of shape (n, 2 D_w)
    cache : list
        Per-layer ``(input, tanh output or None, residual)``.
    """
    h = inputs
    cache = []
    n_layers = len(params) // 2
    for i in range(n_layers):
        W, b = params[2 * i], params[2 * i + 1]
        z = h @ W + b
        if i == n_layers - 1:
            cache.append((h, None, False))
            h = z
        else:
            t = np.tanh(z)
            res = W.shape[0] == W.shape[1]
            cache.append((h, t, res))
            h = t + h if res else t
    return h, cache


def encoder_backward(dL_dout, params, cache):
    """Backward pass of :func:`encoder_forward`; gradients in the order of ``params``.

    ``tanh' = 1 - tanh^2``; a residual layer ``h' = tanh(h W + b) + h`` passes its upstream
    adjoint straight through as well.
    """
    grads = [None] * len(params)
    g = np.asarray(dL_dout, dtype=np.float64)
    for i in range(len(cache) - 1, -1, -1):
        h, t, res = cache[i]
        W = params[2 * i]
        dz = g if t is None else g * (1.0 - t * t)
        grads[2 * i] = h.T @ dz
        grads[2 * i + 1] = dz.sum(axis=0)
        g = dz @ W.T + g if res else dz @ W.T
    return grads
