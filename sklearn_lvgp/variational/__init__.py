"""Shared sparse variational GP (SVGP) layer engine (Salimbeni 2020, §1.2, ch. 2 and ch. 3).

Used by DeepGP and by the models built on uncollapsed SVGP layers (GPCDE, LDGD): per-output
``q(u) = N(m, L L^T)`` (whitened or not), marginals of ``f`` at a batch of inputs, the KL term,
fixed mean functions and natural-gradient steps, each with its
hand-written backward pass.
"""

from ._kl import KLVJP, kl_divergence, kl_divergence_vjp
from ._layer import (
    LayerVJP,
    MarginalsVJP,
    PriorFactor,
    SVGPLayer,
    layer_forward,
    layer_global_vjp,
    layer_vjp,
    marginals,
    marginals_precision_adjoint,
    marginals_vjp,
    prior_factor,
    prior_factor_vjp,
    tril_pack,
    tril_unpack,
)
from ._mean_functions import IdentityMean, LinearMean, ZeroMean, inner_mean, pca_linear_mean
from ._natgrad import (
    expectation_gradients,
    from_natural_params,
    gaussian_natgrad_step,
    natgrad_from_statistics,
    natgrad_statistics,
    natgrad_step,
    natural_params,
)

__all__ = [
    "SVGPLayer", "PriorFactor", "prior_factor", "prior_factor_vjp", "marginals",
    "marginals_vjp", "marginals_precision_adjoint", "MarginalsVJP", "layer_forward", "layer_vjp",
    "layer_global_vjp",
    "LayerVJP", "tril_pack", "tril_unpack", "kl_divergence", "kl_divergence_vjp", "KLVJP",
    "ZeroMean", "IdentityMean", "LinearMean", "pca_linear_mean",
    "inner_mean", "natural_params", "from_natural_params", "natgrad_step",
    "gaussian_natgrad_step", "natgrad_statistics", "natgrad_from_statistics",
    "expectation_gradients",
]
