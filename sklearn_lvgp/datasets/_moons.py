"""High-dimensional two-moons data of the LDGD paper (Ziaei et al. 2024, §3.1.1)."""

import numpy as np
from sklearn.datasets import make_moons
from sklearn.utils import check_random_state

__all__ = ["make_ldgd_moons"]


def make_ldgd_moons(n_samples=1500, n_projection=10, noise=0.1, extra_noise="uniform",
                    random_state=None, return_latent=False):
    """Two moons projected linearly to ``n_projection`` dimensions plus noise columns.

    The generator of the authors' public code: ``make_moons(n_samples, noise)``, a ``2 × p`` matrix
    ``T`` with entries ``U[0, 1)``, ``X ← X T`` and ``p`` appended noise columns, so the data have
    ``D = 2p`` columns (``p = 5, 10, 20`` give the paper's synthetic-10/20/40).

    Parameters
    ----------
    n_samples : int, default=1500
        Number of rows (balanced classes).
    n_projection : int, default=10
        ``p``, the number of projected columns (and of noise columns).
    noise : float, default=0.1
        Standard deviation of the Gaussian noise of ``make_moons``.
    extra_noise : {"uniform", "gaussian", "none"}, default="uniform"
        Appended columns: ``U[0, 1)`` (the reference code), unit-variance white noise (the paper's
        text, the "noise variant") or none (``D = p``).
    random_state : int, RandomState instance or None, default=None
        Seeds ``make_moons`` and, through one ``RandomState`` used in the reference's order, the
        projection and the noise columns (an int reproduces the reference data exactly).
    return_latent : bool, default=False
        Also return the 2-D moons before projection.

    Returns
    -------
    X : ndarray of shape (n_samples, 2 * n_projection) or (n_samples, n_projection)
        Data.
    y : ndarray of shape (n_samples,)
        Labels 0 and 1.
    latent : ndarray of shape (n_samples, 2)
        Only if ``return_latent``.
    """
    if extra_noise not in ("uniform", "gaussian", "none"):
        raise ValueError(f"extra_noise must be 'uniform', 'gaussian' or 'none', got "
                         f"{extra_noise!r}.")
    p = int(n_projection)
    if p < 1:
        raise ValueError(f"n_projection must be >= 1, got {n_projection}.")
    if isinstance(random_state, (int, np.integer)):
        seed = int(random_state)
        rs = np.random.RandomState(seed)
    else:
        rs = check_random_state(random_state)
        seed = int(rs.randint(np.iinfo(np.int32).max))
    moons, y = make_moons(n_samples=n_samples, noise=noise, random_state=seed)
    T = rs.rand(2, p)
    X = moons @ T
    if extra_noise == "uniform":
        X = np.hstack([X, rs.rand(X.shape[0], p)])
    elif extra_noise == "gaussian":
        X = np.hstack([X, rs.standard_normal((X.shape[0], p))])
    return (X, y, moons) if return_latent else (X, y)
