"""LDGD objective: both likelihood paths, the KL terms and the weighting presets.

The bound is that of Ziaei et al. (2024, eq. 28); the weighting presets add the normalisations of
the authors' released code.

Every piece is a forward function with its ``*_vjp`` beside it. The composed objective,
:func:`sklearn_lvgp.bounds._ldgd.ldgd_forward` (evaluated chunk by chunk), is for a batch of
rows with latent points ``x_ip`` (samples or sigma points of q(x_i) with weights ``w_p``)

    L = s Σ_i Σ_p w_p [ w_r Σ_d ℓ^r_id(x_ip) + w_c γ Σ_k ℓ^c_ik(x_ip) ]
        − w_r β_r KL_u^r − w_c γ β_c KL_u^c

with ``s = N / b`` the minibatch scale. ``KL_X`` is added by the caller (over all rows or
minibatch-scaled) through :func:`sklearn_lvgp.variational._kl.gaussian_kl_std`. Both paths
are SVGP layers of the shared engine (:mod:`sklearn_lvgp.variational`, whitened q(u)).
"""

from typing import NamedTuple

import numpy as np

from ..likelihoods._bernoulli import bernoulli_probit_expectation, bernoulli_probit_expectation_vjp

__all__ = ["PRESETS", "Globals", "GlobalsVJP", "preset_factors",
           "classification_ell", "classification_ell_vjp"]

#: ELBO weighting presets: name -> callable (D, K) -> (gamma, beta_r, beta_c, beta_x).
PRESETS = {
    "paper": lambda D, K: (1.0, 1.0, 1.0, 1.0),
    "ref-2024-03": lambda D, K: (1.0, 1.0 / D, 1.0 / K, 1.0 / D),
    "ref-2024-09": lambda D, K: (D / K, 1.0, 1.0, 1.0),
}


def preset_factors(name, n_features, n_classes):
    """``(gamma, beta_r, beta_c, beta_x)`` of a weighting preset (``"paper"``: eq. 28 unweighted).

    Parameters
    ----------
    name : {"paper", "ref-2024-03", "ref-2024-09"}
        Preset.
    n_features : int
        ``D``, the dimension of the continuous observations.
    n_classes : int
        ``K``.

    Returns
    -------
    factors : tuple of 4 floats
    """
    return tuple(float(v) for v in PRESETS[name](n_features, n_classes))


# ------------------------------------------------- regression path (Ziaei et al. 2024, eq. 27)
# --------------------------------------------- classification path (Ziaei et al. 2024, §2.3.6)
def classification_ell(Yc, mu, var, n_points=20):
    """``E_N(f|mu,var) log Φ(s f)`` by Gauss–Hermite quadrature (shared engine).

    Ziaei et al. (2024, eqs. 24–25), without the extra ``sqrt(2 var)`` factor of the printed
    formula: the normalised Gauss–Hermite weights already sum to one.

    Parameters
    ----------
    Yc : ndarray of shape (P, K)
        One-hot labels in {0, 1}.
    mu, var : ndarray of shape (P, K)
        Marginals of the classification GPs.
    n_points : int, default=20
        Quadrature nodes.

    Returns
    -------
    values : ndarray of shape (P, K)
    cache : tuple
        Input of :func:`classification_ell_vjp`.
    """
    return bernoulli_probit_expectation(Yc, mu, np.maximum(var, 1e-12), n_points)


def classification_ell_vjp(dL_dvalues, cache):
    """Backward pass of :func:`classification_ell`: adjoints of ``mu`` and ``var``."""
    return bernoulli_probit_expectation_vjp(dL_dvalues, cache)


# ---------------- points of q(x_i): reparameterised samples (§2.3.8) or unscented sigma points
# ------------------------------------------------------------------------------ composition
class Globals(NamedTuple):
    """Global (non-latent) parameters of LDGD.

    Attributes
    ----------
    kernel_r, kernel_c : Kernel
        Kernels of the regression and classification paths.
    Z_r, Z_c : ndarray of shape (M_r, Q), (M_c, Q)
        Inducing inputs.
    qmu_r, qmu_c : ndarray of shape (M_r, D), (M_c, K)
        Whitened variational means.
    qsqrt_r, qsqrt_c : ndarray of shape (D, M_r, M_r), (K, M_c, M_c)
        Lower-triangular whitened variational square roots.
    noise : ndarray of shape (D,)
        Noise variances of the regression path.
    """

    kernel_r: object
    Z_r: np.ndarray
    qmu_r: np.ndarray
    qsqrt_r: np.ndarray
    noise: np.ndarray
    kernel_c: object
    Z_c: np.ndarray
    qmu_c: np.ndarray
    qsqrt_c: np.ndarray


class GlobalsVJP(NamedTuple):
    """Adjoints of the LDGD objective's value (``None`` for the classification blocks at
    test time; :func:`sklearn_lvgp.bounds._ldgd.ldgd_forward`)."""

    theta_r: np.ndarray
    Z_r: np.ndarray
    qmu_r: np.ndarray
    qsqrt_r: np.ndarray
    noise: np.ndarray
    theta_c: np.ndarray | None
    Z_c: np.ndarray | None
    qmu_c: np.ndarray | None
    qsqrt_c: np.ndarray | None
    mu: np.ndarray
    sigma: np.ndarray
