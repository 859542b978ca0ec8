"""Recognition network ``[x_n, y_n] -> (a_n, rho_n)`` with a hand-written backward.

The amortised ``q(w_n)`` of Salimbeni (2020, §4.2.1), a fully connected tanh network as in the UCI
experiments of §4.4. Tanh hidden layers, residual skip on layers whose input and output widths are
equal, linear output of width ``2 D_w``; Xavier-normal weights, zero biases (the defaults of the
authors' IWVI code).
"""

import numpy as np

from ._mlp import mlp_forward, mlp_vjp

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
    """Forward pass (:func:`sklearn_lvgp.nn._mlp.mlp_forward`, tanh, residual, linear output).

    Returns
    -------
    out : ndarray of shape (n, 2 D_w)
    cache : tuple
    """
    return mlp_forward(params, inputs, "tanh", residual=True)


def encoder_backward(dL_dout, params, cache):
    """Backward pass of :func:`encoder_forward`; gradients in the order of ``params``."""
    return mlp_vjp(dL_dout, params, cache)[0]
