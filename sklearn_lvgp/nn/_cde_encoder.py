"""Recognition network ``[x_n, y_n] -> (a_n, rho_n)`` with a hand-written backward.

The amortised ``q(w_n) = N(a_n, diag b_n²)`` of Salimbeni (2020, §4.2.1 for GP-CDE, §5.2.5 for
the latent-variable deep GP), a fully connected tanh network as in the UCI experiments of §4.4.
Tanh hidden layers, residual skip on layers whose input and output widths are equal, linear output
of width ``2 D_w``; Xavier-normal weights, zero biases (the defaults of the authors' IWVI code).
The scale is ``b = softplus(rho − 3)`` (:func:`proposal_scale`), which starts ``q(w_n)`` with a
small spread. The functions take the flat parameter list of :mod:`._mlp`;
:class:`RecognitionMLP` names its blocks for a :class:`~sklearn_lvgp._core.params.ParamPacker`.
"""

import numpy as np
from scipy.special import expit

from .._core.params import softplus
from ._mlp import mlp_forward, mlp_vjp

__all__ = ["RHO_SHIFT", "RecognitionMLP", "encoder_shapes", "encoder_init", "encoder_forward",
           "encoder_backward", "proposal_scale", "proposal_scale_vjp"]

#: Offset of the scale output, ``b = softplus(rho - RHO_SHIFT)`` (small initial spread).
RHO_SHIFT = 3.0


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


def proposal_scale(rho, floor=0.0):
    """Standard deviations ``b = softplus(rho − RHO_SHIFT) + floor`` of ``q(w_n)``.

    Parameters
    ----------
    rho : ndarray
        Raw scale outputs (of the network, or free parameters).
    floor : float, default=0.0
        Added lower bound of ``b``.

    Returns
    -------
    b : ndarray of the shape of ``rho``
    """
    b = softplus(rho - RHO_SHIFT)
    return b + floor if floor else b


def proposal_scale_vjp(dL_db, rho):
    """Backward pass of :func:`proposal_scale`: ``dL_db ⊙ sigmoid(rho − RHO_SHIFT)``."""
    return dL_db * expit(rho - RHO_SHIFT)


class RecognitionMLP:
    """The recognition network with named parameter blocks ``enc_W{i}``, ``enc_b{i}``.

    Parameters
    ----------
    d_in : int
        Input width (``n_features + n_targets``).
    hidden : sequence of int
        Hidden widths.
    d_out : int
        Output width (``2 * latent_dim``).
    """

    def __init__(self, d_in, hidden, d_out):
        self.widths = [int(d_in)] + [int(h) for h in hidden] + [int(d_out)]

    @property
    def n_layers(self):
        """Number of weight layers."""
        return len(self.widths) - 1

    def blocks(self):
        """Parameter blocks ``enc_W{i}`` and ``enc_b{i}`` for a ``ParamPacker``."""
        out = []
        for i in range(self.n_layers):
            out += [(f"enc_W{i}", (self.widths[i], self.widths[i + 1])),
                    (f"enc_b{i}", (self.widths[i + 1],))]
        return out

    def _flat(self, p):
        return [p[f"enc_{kind}{i}"] for i in range(self.n_layers) for kind in ("W", "b")]

    def _named(self, flat):
        return {f"enc_{kind}{i}": flat[2 * i + j]
                for i in range(self.n_layers) for j, kind in enumerate(("W", "b"))}

    def initial(self, random_state):
        """Initial blocks: :func:`encoder_init` (Xavier-normal weights, zero biases)."""
        shapes = [((self.widths[i], self.widths[i + 1]), (self.widths[i + 1],))
                  for i in range(self.n_layers)]
        return self._named(encoder_init(shapes, random_state))

    def forward(self, p, E):
        """Outputs ``(n, d_out)`` of the inputs ``E`` and the cache of :meth:`backward`."""
        return encoder_forward(self._flat(p), E)

    def backward(self, dout, cache, p):
        """Adjoints of every block from the adjoint of the output."""
        return self._named(encoder_backward(dout, self._flat(p), cache))
