"""The package's one small multilayer perceptron, with its hand-written backward pass.

``h_0 = X``, ``z_i = h_{i-1} W_i + b_i``, ``h_i = f(z_i)`` (plus ``h_{i-1}`` on a residual layer
whose input and output widths are equal); the last layer is linear unless ``activate_last``.
Parameters are the flat list ``[W_1, b_1, ..., W_L, b_L]`` with ``W_i`` of shape
``(fan_in, fan_out)``. The recognition networks of GPCDE / the latent-variable DeepGP
(tanh, residual, Salimbeni 2020, ch. 4) and of Fast-LDGD (ReLU trunk with a mean and a
softplus standard-deviation head) are built from it.
"""

import numpy as np

__all__ = ["mlp_forward", "mlp_vjp"]

_ACTIVATIONS = ("tanh", "relu")


def mlp_forward(params, X, activation, activate_last=False, residual=False):
    """Forward pass of the MLP.

    Parameters
    ----------
    params : list of ndarray
        ``[W_1, b_1, ..., W_L, b_L]``.
    X : ndarray of shape (n, fan_in of W_1)
        Inputs.
    activation : {"tanh", "relu"}
        Hidden activation (ReLU'(0) is taken as 0).
    activate_last : bool, default=False
        Apply the activation to the last layer too (a trunk feeding separate heads).
    residual : bool, default=False
        Add the layer's input to its activated output where the widths are equal.

    Returns
    -------
    out : ndarray of shape (n, fan_out of W_L)
    cache : tuple
        Input of :func:`mlp_vjp`.
    """
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation must be one of {_ACTIVATIONS}, got {activation!r}.")
    h = X
    layers = []
    n_layers = len(params) // 2
    for i in range(n_layers):
        W, b = params[2 * i], params[2 * i + 1]
        z = h @ W + b
        if i == n_layers - 1 and not activate_last:
            layers.append((h, None, False))
            h = z
            continue
        a = np.tanh(z) if activation == "tanh" else np.maximum(z, 0.0)
        res = residual and W.shape[0] == W.shape[1]
        layers.append((h, a, res))
        h = a + h if res else a
    return h, (activation, layers)


def mlp_vjp(dL_dout, params, cache):
    """Backward pass of :func:`mlp_forward`.

    ``tanh' = 1 − tanh²``, ``relu' = [z > 0]``; a residual layer also passes its upstream
    adjoint straight through.

    Parameters
    ----------
    dL_dout : ndarray of shape (n, fan_out of W_L)
        Upstream adjoint.
    params : list of ndarray
        As given to :func:`mlp_forward`.
    cache : tuple
        From :func:`mlp_forward`.

    Returns
    -------
    grads : list of ndarray
        Adjoints of ``params``, same order and shapes.
    dL_dX : ndarray of shape (n, fan_in of W_1)
        Adjoint of the inputs.
    """
    activation, layers = cache
    grads = [None] * len(params)
    g = np.asarray(dL_dout, dtype=np.float64)
    for i in range(len(layers) - 1, -1, -1):
        h, a, res = layers[i]
        if a is None:
            dz = g
        elif activation == "tanh":
            dz = g * (1.0 - a * a)
        else:
            dz = g * (a > 0.0)
        grads[2 * i] = h.T @ dz
        grads[2 * i + 1] = dz.sum(axis=0)
        g = dz @ params[2 * i].T + g if res else dz @ params[2 * i].T
    return grads, g
