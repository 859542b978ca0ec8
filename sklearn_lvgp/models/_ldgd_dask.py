"""``LDGD.fit`` on a dask array or DataFrame: the rows stay partitioned where they live.

The bound (:class:`~sklearn_lvgp.bounds._ldgd.LDGDBound`) runs on a
:class:`~sklearn_lvgp.engine._dask.DaskRows` of the scaled rows and their one-hot labels. Each
evaluation — an L-BFGS-B iteration on all rows, an Adam step on its minibatch — sends the global
parameters and the batch's ``q(x_i)`` (and its Monte Carlo draws) to the partitions holding the
batch's rows (:meth:`~sklearn_lvgp.engine._dask.DaskRows.subset`); each returns its share of the
value and of the global adjoints and its rows' ``μ``, ``σ`` gradients, never its rows. ``q(X)``
stays on the driver with the other parameters, where the optimisers hold it in an in-memory fit
too, so a fit on Dask makes the same random draws in the same order as the in-memory fit and
gives the same model up to rounding. The column normalisation and the initial noise come from
dask reductions, the PCA start of the latent means from the D × D Gram matrix of the data.

The labels (one per row) are gathered to the driver: they give the classes, and
:meth:`~sklearn_lvgp.LDGD.sample` reads them. Not distributed: the amortised ``q(X)`` (the
encoder reads its batch's rows on the driver) and early stopping (the held-out rows are scored
on the driver); each raises a ``ValueError`` naming its parameter.
"""

import numpy as np

from .._core.scaling import normalization
from .._core.validation import check_class_labels
from ..engine._dask import DaskRows, _dask, is_dask_collection
from ._ldgd_fit import (
    finish_fit,
    optimise,
    record_fit,
    store_fit,
    training_problem,
    warm_start_key,
)

__all__ = ["fit_ldgd_dask"]


def _check_supported(est):
    unsupported = {"amortized=True": ("the encoder reads each batch's rows on the driver",
                                      est.amortized),
                   "early_stopping=True": ("the held-out rows are scored on the driver",
                                           est.early_stopping)}
    named = [f"{name} ({why})" for name, (why, used) in unsupported.items() if used]
    if named:
        raise ValueError(f"{type(est).__name__} on dask input does not support "
                         f"{', '.join(named)}; fit on numpy arrays for these options.")


def _pca_latents(Y, Q):
    """:func:`sklearn_lvgp._core.init.pca_latents` of a dask array, from the D × D Gram matrix
    of its centred columns; the scores are gathered (q(X) lives on the driver)."""
    N, D = Y.shape
    q = min(Q, D, max(N - 1, 1))
    Yc = Y - Y.mean(axis=0)
    evals, evecs = np.linalg.eigh(np.asarray((Yc.T @ Yc).compute()))
    V = evecs[:, np.argsort(evals)[::-1]].T  # rows: principal axes, largest first
    signs = np.sign(V[np.arange(D), np.argmax(np.abs(V), axis=1)])
    signs[signs == 0] = 1.0
    X = np.zeros((N, Q))
    X[:, :q] = np.asarray((Yc @ (V[:q] * signs[:q, None]).T).compute())
    if q < Q:
        scale = float(np.std(X[:, :q])) if q > 0 and np.std(X[:, :q]) > 0 else 1.0
        t = np.linspace(-1.0, 1.0, N)
        for j in range(q, Q):
            X[:, j] = 1e-2 * scale * np.sin((j + 1) * np.pi * t)
    return X


def _moments(Y, x_init, Q):
    """``moments(random_state)`` of :func:`~._ldgd_inference.initial_values` for the dask
    array ``Y``: the initial latent means (PCA, or the in-memory fit's ``N(0, I)`` draws) and
    the columns' variances."""
    def moments(random_state):
        column_var = np.asarray(Y.var(axis=0).compute())
        if x_init == "pca":
            return _pca_latents(Y, Q), column_var
        return random_state.standard_normal((Y.shape[0], Q)), column_var

    return moments


def fit_ldgd_dask(est, X, y, random_state):
    """Fit ``est`` (an ``LDGD``) on dask collections ``X`` and ``y``; returns ``est``."""
    dask, _ = _dask()
    name = type(est).__name__
    if y is None:
        raise ValueError(f"{name} requires y to be passed, but the target y is None.")
    rows = DaskRows({"X": X})
    X_d = rows.arrays["X"]
    labels = np.asarray(y.compute() if is_dask_collection(y) else y)
    if labels.shape[0] != rows.n_rows:
        raise ValueError(f"y has {labels.shape[0]} rows but X has {rows.n_rows}.")
    est._set_dask_features(rows)
    est.classes_, y_idx = check_class_labels(labels, name)
    est._check_params(X_d, y_idx)
    _check_supported(est)
    N, K = rows.n_rows, est.classes_.size
    continuing = est._continues_fit(warm_start_key(est, X_d))
    if not continuing:
        est.X_mean_, est.X_scale_ = (np.asarray(a) for a in
                                     dask.compute(*normalization(X_d, est.normalize_X)))
    Yc = np.zeros((N, K))
    Yc[np.arange(N), y_idx] = 1.0
    data = DaskRows({"Yr": (X_d - est.X_mean_) / est.X_scale_, "Yc": Yc})
    prob, x0 = training_problem(est, None, None, random_state, rows=data,
                                moments=_moments(data.arrays["Yr"], est.x_init,
                                                 est.n_components))
    if continuing:
        x0 = est._x_flat
    x, history, n_iter, est.validation_scores_ = optimise(est, prob, x0, N, random_state)
    record_fit(est, prob, x, history, n_iter, continuing, random_state)
    store_fit(est, prob, x, y_idx, decode=False)
    finish_fit(est)
    return est
