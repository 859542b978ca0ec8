"""Objective pieces of :class:`~sklearn_lvgp.GPCDE` (Salimbeni 2020, ch. 4).

Each differentiable piece has its backward beside it: the conditional expected log-likelihood
with output mixing (the ``L_{w_n}`` of eq. 4.6, with the mixing of §4.2.3), the quadrature bound
over ``w`` (§4.2.2, eq. 4.8), the Gaussian ``q(w)`` terms (§4.2.1), the Bayesian input projection
(§4.2.3), the recognition network (§4.2.1) and the explicit natural-gradient step for ``q(u)``
(§4.2, "Natural Gradient"). :class:`CDEModel` composes them. The estimator's fit around the
optimiser is :mod:`._fit` (with the ``init="gp"`` start of :mod:`._warm_start`), its predictive
mixture :mod:`._predict`.
"""

from ._bound import CHUNK_POINTS, MIN_NOISE, RHO_SHIFT, CDEModel
from ._encoder import encoder_backward, encoder_forward, encoder_init, encoder_shapes
from ._latent import (
    quadrature_bound,
    quadrature_bound_vjp,
)
from ._likelihood import (
    conditional_ell,
    conditional_ell_vjp,
    predictive_log_density,
    predictive_marginals,
)
from ._natgrad import latent_pi, mixing_natgrad_update, natgrad_statistics
from ._projection import (
    projection_sample,
    projection_sample_vjp,
)

__all__ = [
    "CDEModel", "CHUNK_POINTS", "MIN_NOISE", "RHO_SHIFT", "encoder_shapes", "encoder_init",
    "encoder_forward", "encoder_backward", "quadrature_bound",
    "quadrature_bound_vjp", "conditional_ell",
    "conditional_ell_vjp", "predictive_log_density", "predictive_marginals", "natgrad_statistics",
    "mixing_natgrad_update", "latent_pi", "projection_sample", "projection_sample_vjp",

]
