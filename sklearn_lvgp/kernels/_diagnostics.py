"""Whether fixed length scales leave a kernel without information about its inputs.

A length scale far above the spread of the inputs makes every kernel value equal to the
variance (the correlation matrix is all ones), one far below the distances between them makes
every off-diagonal value zero (the identity). In the first case a GP predicts about the same
value everywhere, in the second the prior mean away from the training inputs. A fitted length
scale does not end there unless the data ask for it; a fixed one can, silently.
"""

import numpy as np

__all__ = ["flat_kernel"]

#: Rows of the inputs the correlations are evaluated on (evenly spaced).
_MAX_ROWS = 256
#: Correlations within this of 1 are "constant": below the default relative jitter of the
#: estimators (1e-6), so the model cannot tell the inputs apart.
_CONSTANT_TOL = 1e-6
#: Off-diagonal correlations below this are "diagonal".
_DIAGONAL_TOL = 1e-8


def _fixed_length_scales(kernel):
    return [h.name for h in kernel.hyperparameters
            if h.fixed and h.name.rsplit("__", 1)[-1] == "length_scale"]


def flat_kernel(kernel, X):
    """``(kind, names)`` if fixed length scales make ``kernel`` uninformative over ``X``.

    Parameters
    ----------
    kernel : Kernel
        A fitted kernel.
    X : ndarray of shape (n_samples, n_features)
        The inputs the kernel saw in training (rows with NaN are skipped).

    Returns
    -------
    result : tuple or None
        ``("constant", names)`` when every correlation between the (sampled) distinct rows of
        ``X`` is within 1e-6 of one, ``("diagonal", names)`` when every one is below 1e-8, with
        ``names`` the fixed ``length_scale`` hyperparameters; ``None`` otherwise, and always
        when no length scale is fixed or ``X`` has fewer than two distinct rows.
    """
    names = _fixed_length_scales(kernel)
    if not names:
        return None
    X = np.asarray(X, dtype=np.float64)
    X = X[~np.isnan(X).any(axis=1)]
    X = np.unique(X[::max(1, X.shape[0] // _MAX_ROWS)], axis=0)
    if X.shape[0] < 2:
        return None
    with np.errstate(all="ignore"):
        K = kernel.K(X)
        d = np.sqrt(np.diag(K))
        C = K / np.outer(d, d)
    off = C[~np.eye(X.shape[0], dtype=bool)]
    if not np.all(np.isfinite(off)) or not np.all(d > 0):
        return None
    if np.max(np.abs(off - 1.0)) < _CONSTANT_TOL:
        return "constant", names
    if np.max(np.abs(off)) < _DIAGONAL_TOL:
        return "diagonal", names
    return None
