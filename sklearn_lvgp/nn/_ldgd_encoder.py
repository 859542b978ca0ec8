"""Fast-LDGD encoder: a ReLU trunk (:mod:`sklearn_lvgp.nn._mlp`), a mean and a softplus std head.

Fast LDGD of Ziaei et al. (2024, §2.3.10, eq. 29): ``h = ReLU(... ReLU(y W_1 + b_1) ...)``,
``μ = h W_μ + b_μ``, ``σ = softplus(h W_σ + b_σ)`` (the authors' code uses its "logvar" head as a
std). Weights are a flat list ``[W_1, b_1, ..., W_L, b_L, W_μ, b_μ, W_σ, b_σ]`` with ``W`` of shape
(fan_in, fan_out).
"""

import numpy as np

from .._core.params import softplus, softplus_inverse
from ._mlp import mlp_forward, mlp_vjp

__all__ = ["encoder_shapes", "encoder_init", "encoder_forward", "encoder_vjp",
           "encoder_fit_mean_head", "encoder_started_at", "encoder_latents"]

#: Rows per block of :func:`encoder_latents`.
ENCODE_ROWS = 65536


def encoder_shapes(n_features, hidden, n_components):
    """Shapes of the weight list for ``D -> hidden... -> (Q, Q)``.

    Parameters
    ----------
    n_features : int
        Input dimension ``D``.
    hidden : tuple of int
        Hidden layer widths.
    n_components : int
        Latent dimension ``Q``.

    Returns
    -------
    shapes : list of tuple
    """
    shapes = []
    fan_in = int(n_features)
    for width in hidden:
        shapes += [(fan_in, int(width)), (int(width),)]
        fan_in = int(width)
    shapes += [(fan_in, n_components), (n_components,), (fan_in, n_components), (n_components,)]
    return shapes


def encoder_init(shapes, random_state, sigma_init=0.1):
    """PyTorch ``nn.Linear``-style initialisation: ``U(−1/√fan_in, 1/√fan_in)``.

    Project choice: the σ head's bias starts at ``softplus⁻¹(sigma_init)`` so that q(x) starts
    narrow, as in the non-amortised model (wide initial q(x) lets the bound collapse to flat
    kernels).

    Parameters
    ----------
    shapes : list of tuple
        From :func:`encoder_shapes`.
    random_state : numpy.random.RandomState
        Source of randomness.
    sigma_init : float, default=0.1
        Initial standard deviation for a zero pre-activation of the σ head.

    Returns
    -------
    weights : list of ndarray
    """
    weights = []
    for k in range(0, len(shapes), 2):
        fan_in = shapes[k][0]
        bound = 1.0 / np.sqrt(fan_in)
        weights.append(random_state.uniform(-bound, bound, size=shapes[k]))
        weights.append(random_state.uniform(-bound, bound, size=shapes[k + 1]))
    weights[-1] = weights[-1] + float(softplus_inverse(sigma_init))
    return weights


def encoder_forward(weights, Y):
    """Latent means and standard deviations of the rows of ``Y``.

    Parameters
    ----------
    weights : list of ndarray
        Encoder weights.
    Y : ndarray of shape (n, D)
        Inputs.

    Returns
    -------
    mu, sigma : ndarray of shape (n, Q)
    cache : tuple
        Input of :func:`encoder_vjp`.
    """
    h, trunk = (mlp_forward(weights[:-4], Y, "relu", activate_last=True) if len(weights) > 4
                else (Y, None))
    mu = h @ weights[-4] + weights[-3]
    a = h @ weights[-2] + weights[-1]
    sigma = softplus(a)
    return mu, sigma, (weights, h, trunk, a)


def encoder_vjp(dL_dmu, dL_dsigma, cache):
    """Backward pass of :func:`encoder_forward` (ReLU'(0) := 0).

    Parameters
    ----------
    dL_dmu, dL_dsigma : ndarray of shape (n, Q)
        Upstream adjoints.
    cache : tuple
        From :func:`encoder_forward`.

    Returns
    -------
    grads : list of ndarray
        Adjoints of the weights, same order and shapes.
    """
    weights, h, trunk, a = cache
    da = dL_dsigma / (1.0 + np.exp(-a))
    heads = [h.T @ dL_dmu, dL_dmu.sum(axis=0), h.T @ da, da.sum(axis=0)]
    if trunk is None:
        return heads
    dh = dL_dmu @ weights[-4].T + da @ weights[-2].T
    return mlp_vjp(dh, weights[:-4], trunk)[0] + heads


def encoder_fit_mean_head(weights, Y, target, ridge=1e-6):
    """Set the mean head by ridge least squares so ``μ(Y) ≈ target`` (e.g. PCA scores).

    Project choice: a freshly initialised encoder maps every row near one point, from which the
    bound drifts to flat kernels; starting the mean head at the PCA initialisation of the
    non-amortised model avoids that.

    Parameters
    ----------
    weights : list of ndarray
        Encoder weights (a new list is returned; the arrays of ``weights`` are not modified).
    Y : ndarray of shape (n, D)
        Inputs.
    target : ndarray of shape (n, Q)
        Desired latent means.
    ridge : float, default=1e-6
        Ridge relative to the mean squared feature.

    Returns
    -------
    weights : list of ndarray
    """
    _, _, (_, h, _, _) = encoder_forward(weights, Y)
    H = np.hstack([h, np.ones((Y.shape[0], 1))])
    G = H.T @ H
    G[np.diag_indices_from(G)] += ridge * max(float(np.mean(np.diag(G))), 1e-12)
    sol = np.linalg.solve(G, H.T @ target)
    out = list(weights)
    out[-4], out[-3] = sol[:-1].copy(), sol[-1].copy()
    return out


def encoder_started_at(Y, target, random_state, sigma_init, hidden=(50, 20)):
    """A new ``D -> hidden... -> (Q, Q)`` encoder whose mean head maps ``Y`` (NaN read as 0)
    near ``target`` (:func:`encoder_fit_mean_head`) and whose σ head starts at ``sigma_init``.

    Parameters
    ----------
    Y : ndarray of shape (n, D)
        Inputs (NaN at missing entries).
    target : ndarray of shape (n, Q)
        Desired latent means.
    random_state : RandomState
        Draws the initial weights.
    sigma_init : float
        Initial standard deviation of the σ head.
    hidden : tuple of int, default=(50, 20)
        Hidden widths.

    Returns
    -------
    weights : list of ndarray
        The encoder's weights.
    """
    shapes = encoder_shapes(Y.shape[1], hidden, target.shape[1])
    return encoder_fit_mean_head(encoder_init(shapes, random_state, sigma_init),
                                 np.nan_to_num(Y), target)


def encoder_latents(weights, Y):
    """The amortised q(x_n) of the rows of ``Y`` (NaN read as 0): means and variances
    ``σ(y_n)²``, computed in blocks of ``ENCODE_ROWS`` rows (no hidden-layer array over all rows).

    Parameters
    ----------
    weights : list of ndarray
        Encoder weights.
    Y : ndarray of shape (n, D)
        Inputs (NaN at missing entries).

    Returns
    -------
    mu, S : ndarray of shape (n, Q)
    """
    mu = np.empty((Y.shape[0], weights[-3].shape[0]))
    S = np.empty_like(mu)
    for a in range(0, Y.shape[0], ENCODE_ROWS):
        mu[a:a + ENCODE_ROWS], sigma, _ = encoder_forward(weights,
                                                          np.nan_to_num(Y[a:a + ENCODE_ROWS]))
        S[a:a + ENCODE_ROWS] = sigma * sigma
    return mu, S
