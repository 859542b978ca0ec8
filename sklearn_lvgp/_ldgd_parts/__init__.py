"""Private building blocks of :class:`~sklearn_lvgp.LDGD` (Ziaei et al. 2024).

* :mod:`._objective` — per-point expected log likelihoods of both paths, the latent KL, the
  weighting presets and the full (minibatch) objective with its hand-written backward pass;
* :mod:`._encoder` — the Fast-LDGD encoder MLP (§2.3.10) and its backward pass.
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
