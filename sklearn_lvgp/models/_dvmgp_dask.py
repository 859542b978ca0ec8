"""``DVMGP.fit`` on a dask array or DataFrame: the rows stay partitioned where they live.

Every evaluation of the bound — each L-BFGS-B iteration, each (full-batch) Adam step, in both
phases — runs :class:`~sklearn_lvgp.bounds._dvmgp.DVMGPBound` on a
:class:`~sklearn_lvgp.engine._dask.DaskRows` of the standardised rows: the partitions play the
role of the in-memory engine's chunks, receive the global parameters and the M-sized factors of
the global step, and return M-sized partial sums. What the fit needs beyond the bound:

* the column means and scales of ``X`` and ``y`` (``normalize_X``, ``normalize_y``) and the
  target variance are dask reductions;
* the PCA directions that start ``μ`` are the eigenvectors of the D × D covariance of the
  (training) rows, a dask reduction, with the signs of :func:`~sklearn_lvgp._core.init.
  principal_axes`;
* the k-means centres that start Ξ and ζ (de Souza 2020, §4.4) come from at most
  :data:`INIT_ROWS` training rows gathered to the driver: all of them for smaller data (in the
  in-memory fit's order, so the start then equals the in-memory one up to the rounding of the
  reductions), else a uniform sample without replacement drawn from ``random_state`` after the
  k-means seed;
* with ``early_stopping`` the rows are split by the same permutation as in memory; the bound
  runs on the training rows where they live (:meth:`DaskRows.subset`), and the held-out rows
  are gathered for the held-out score.
"""

import numpy as np

from .._core.scaling import normalization
from ..engine._dask import DaskRows, _dask
from ._dvmgp_parts import (
    RowData,
    architecture,
    initial_params,
    length_scale_init,
    model_sizes,
    optimise,
)

__all__ = ["fit_dvmgp_dask", "INIT_ROWS"]

#: Training rows gathered to the driver for the initial k-means centres of Ξ and ζ.
INIT_ROWS = 20_000


def _gather(A, idx):
    """Rows ``idx`` of the dask array ``A`` in that order, as an ndarray."""
    order = np.argsort(idx, kind="stable")
    out = np.empty((idx.size, A.shape[1]))
    out[order] = np.asarray(A[idx[order]].compute())
    return out


def _pca_components(X, n_components):
    """:func:`sklearn_lvgp._core.init.pca_components` of a dask array, from its D × D
    covariance (one reduction) instead of the SVD of the rows."""
    dask, _ = _dask()
    N, D = X.shape
    Xc = X - X.mean(axis=0)
    gram, ptp = dask.compute(Xc.T @ Xc, X.max(axis=0) - X.min(axis=0))
    q = min(n_components, N, D)
    P = np.zeros((n_components, D))
    if not np.any(np.asarray(ptp) > 0):
        P[:q, :q] = np.eye(q)
        return P
    evals, evecs = np.linalg.eigh(np.asarray(gram))
    V = evecs[:, np.argsort(evals, kind="stable")[::-1]].T  # rows: principal axes, largest first
    signs = np.sign(V[np.arange(D), np.argmax(np.abs(V), axis=1)])
    signs[signs == 0] = 1.0
    P[:q] = V[:q] * signs[:q, None]
    return P


def fit_dvmgp_dask(est, X, y, random_state):
    """Fit ``est`` (a ``DVMGP``) on dask collections ``X``, ``y``.

    Returns the flat parameters, their packer, the jitter, the bound history, the iteration
    count and the :class:`~sklearn_lvgp.models._dvmgp_parts.RowData` of the training rows (the
    arguments of the estimator's final step).
    """
    dask, _ = _dask()
    if y is None:
        raise ValueError("DVMGP requires y to be passed, but the target y is None.")
    rows = DaskRows({"X": X, "y": y})
    X_d, Y_d = rows.arrays["X"], rows.arrays["y"]
    est._set_dask_features(rows)
    est._check_params(X_d, Y_d)
    est._y_ndim = 1 if len(y.shape) == 1 else 2
    N, D = X_d.shape
    Q, m_u, m_v = model_sizes(est, D)
    continuing = est._continues_fit(architecture(est, D, Y_d.shape[1]))
    if not continuing:
        est.X_mean_, est.X_scale_, est.y_mean_, est.y_scale_ = (
            np.asarray(a, dtype=np.float64)
            for a in dask.compute(*normalization(X_d, est.normalize_X),
                                  *est._target_moments(Y_d)))
    srows = DaskRows({"X": (X_d - est.X_mean_) / est.X_scale_,
                      "Y": (Y_d - est.y_mean_) / est.y_scale_})
    Xs_d, Ys_d = srows.arrays["X"], srows.arrays["Y"]
    if est.early_stopping:
        perm = random_state.permutation(N)
        n_val = max(1, int(round(est.validation_fraction * N)))
        train = perm[n_val:]
        held_out = (_gather(Xs_d, perm[:n_val]), _gather(Ys_d, perm[:n_val]))
        data = RowData(srows.subset(train), train.size, Ys_d.shape[1])
        Xs_train, Ys_train = Xs_d[np.sort(train)], Ys_d[np.sort(train)]
    else:
        train, held_out = np.arange(N), None
        data = RowData(srows, N, Ys_d.shape[1])
        Xs_train, Ys_train = Xs_d, Ys_d
    var_y = float(Ys_train.var(axis=0).mean().compute())
    var_y = var_y if var_y > 0 else 1.0

    def init(seed):
        n_init = max(INIT_ROWS, m_u, m_v)
        idx = (train if train.size <= n_init
               else np.sort(random_state.choice(train, n_init, replace=False)))
        return initial_params(_gather(Xs_d, idx), Q, m_u, m_v, seed,
                              length_scale_init(est.projection_length_scale_init, D),
                              est.noise_variance_init, var_y, P=_pca_components(Xs_train, Q))

    out = optimise(est, continuing, data, None, held_out, var_y, random_state, init, D)
    return (*out, data)
