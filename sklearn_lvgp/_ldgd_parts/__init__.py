"""Private building blocks of :class:`~sklearn_lvgp.LDGD` (Ziaei et al. 2024).

* :mod:`._objective` — per-point expected log likelihoods of both paths, the latent KL, the
  weighting presets and the full (minibatch) objective with its hand-written backward pass;
* :mod:`._encoder` — the Fast-LDGD encoder MLP (§2.3.10) and its backward pass;
* :mod:`._problem` — the training and test-time problems on a flat parameter vector;
* :mod:`._inference` — starting points, test-time ``q(x*)``, path marginals, class probabilities;
* :mod:`._fit` — the fit around the optimiser: path settings, objectives, fitted attributes.
"""

from ._encoder import encoder_forward, encoder_init, encoder_shapes, encoder_vjp
from ._objective import (
    PRESETS,
    Globals,
    GlobalsVJP,
    classification_ell,
    classification_ell_vjp,
    preset_factors,
)

__all__ = [
    "PRESETS", "Globals", "GlobalsVJP", "preset_factors",
    "classification_ell", "classification_ell_vjp",
    "encoder_init",
    "encoder_shapes", "encoder_forward", "encoder_vjp",
]
