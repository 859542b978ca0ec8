"""Initial parameters of a GP-CDE model (Salimbeni 2020, ch. 4).

Inducing inputs from k-means of the (projected) inputs with ``N(0, 1)`` latent coordinates,
``q(u)`` at the prior, the projection's mean on the principal directions, the output mixing on
the targets' principal directions, and ``q(w_n)`` near the prior (or a freshly initialised
recognition network).
"""

import numpy as np

from .._core.init import kmeans_inducing, principal_directions
from ..nn._cde_encoder import encoder_init
from ..variational import prior_factor

__all__ = ["initial_values"]


def initial_values(model, kernel, Xs, Ys, noise_variance, q_w, random_state, n_rows=None):
    """Named initial parameters of ``model`` (a :class:`~sklearn_lvgp.bounds._gpcde.CDEModel`).

    Parameters
    ----------
    model : CDEModel
        The model's structure.
    kernel : Kernel
        Initialised kernel on ``[h, w]``.
    Xs, Ys : ndarray
        Standardised inputs and targets.
    noise_variance : float
        Initial noise variance.
    q_w : {"quadrature", "gaussian", "amortized"}
        The latent posterior's form.
    random_state : numpy.random.RandomState
    n_rows : int or None, default=None
        Training rows (the free ``q(w_n)``), when ``Xs`` holds only some of them.

    Returns
    -------
    values : dict
        Input of ``model.pack``.
    """
    N = Xs.shape[0] if n_rows is None else int(n_rows)
    Dx = Xs.shape[1]
    Dh, Dw, L, M = model.Dh, model.Dw, model.L, model.M
    values = {"kernel": kernel, "noise_variance": noise_variance,
              "q_mu": np.zeros((M, L))}
    H = Xs
    if model.projection:
        values["A_mu"] = principal_directions(Xs, Dh, random_state, scaled=False)
        values["A_s"] = np.full((Dx, Dh), 1e-2)
        H = Xs @ values["A_mu"]
    Z = np.hstack([kmeans_inducing(H, M, random_state), random_state.standard_normal((M, Dw))])
    values["Z"] = Z
    if model.whiten:
        values["q_sqrt"] = np.repeat(np.eye(M)[None], L, axis=0)
    else:
        Lu = prior_factor(kernel, Z, model.jitter).Lu
        values["q_sqrt"] = np.repeat(Lu[None], L, axis=0)
    if model.mixing:
        values["P"] = principal_directions(Ys, L, random_state).T
    if model.mode == "gaussian" and q_w == "gaussian":
        values["w_mean"] = 0.1 * random_state.standard_normal((N, Dw))
        values["w_rho"] = np.zeros((N, Dw))
    elif model.mode == "gaussian":
        ps = encoder_init(model.enc_shapes, random_state)
        for i in range(len(model.enc_shapes)):
            values[f"enc_W{i}"], values[f"enc_b{i}"] = ps[2 * i], ps[2 * i + 1]
    return values
