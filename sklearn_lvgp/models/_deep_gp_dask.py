"""``DeepGP.fit`` on a dask array or DataFrame: data-parallel minibatch gradients.

The rows stay partitioned where they live. Each Adam step draws its minibatch indices and Monte
Carlo samples on the driver, exactly as the in-memory fit does, and the partitions holding those
rows evaluate their part of the bound and its gradient: the model's protocol bound
(:class:`~sklearn_lvgp.bounds._dsvi.DSVIBound`, or
:class:`~sklearn_lvgp.bounds._iwvi.IWVIBound` with latent covariates) on the minibatch
``DaskRows.subset(idx, extra=draws)``, whose draws travel with their rows. The initial inducing
inputs and inner mean functions come from at most ``INIT_ROWS`` rows gathered once (all of them
for smaller data, so the fit then equals the in-memory one up to rounding).

The natural-gradient step, L-BFGS-B's start (one such step on all rows) and early stopping's
held-out rows need rows in memory, so those options, and a warm start, raise a ``ValueError``
naming them.
"""

import numpy as np

from .._core.scaling import column_moments
from ..engine._dask import DaskRows, _dask
from ..optim._adam import AdamState

__all__ = ["fit_deep_gp_dask", "INIT_ROWS"]

#: Rows gathered to the driver for the initial k-means inducing inputs and inner mean functions.
INIT_ROWS = 20_000


def _check_supported(est):
    unsupported = {"early_stopping=True": est.early_stopping,
                   "optimizer='lbfgs'": est.optimizer == "lbfgs",
                   "natgrad_gamma": est.natgrad_gamma is not None,
                   "warm_start=True": est.warm_start}
    named = [name for name, used in unsupported.items() if used]
    if named:
        raise ValueError(f"DeepGP on dask input does not support {', '.join(named)}; fit on "
                         "numpy arrays for these options.")


def fit_deep_gp_dask(est, X, y, random_state):
    """Fit ``est`` (a ``DeepGP``) on dask collections ``X``, ``y``; returns ``est``."""
    dask, _ = _dask()
    if y is None:
        raise ValueError("DeepGP requires y to be passed, but the target y is None.")
    rows = DaskRows({"X": X, "y": y})
    X_d, Y_d = rows.arrays["X"], rows.arrays["y"]
    est._set_dask_features(rows)
    est._check_params(X_d, Y_d)
    _check_supported(est)
    est._y_ndim = 1 if len(y.shape) == 1 else 2
    est.X_mean_, est.X_scale_ = (np.asarray(a) for a in dask.compute(*column_moments(X_d)))
    if est.normalize_y:
        est.y_mean_, est.y_scale_ = (np.asarray(a) for a in dask.compute(*column_moments(Y_d)))
    else:
        est.y_mean_, est.y_scale_ = np.zeros(Y_d.shape[1]), np.ones(Y_d.shape[1])
    srows = DaskRows({"X": (X_d - est.X_mean_) / est.X_scale_,
                      "y": (Y_d - est.y_mean_) / est.y_scale_})
    N = srows.n_rows
    init = (np.arange(N) if N <= INIT_ROWS
            else np.sort(random_state.choice(N, INIT_ROWS, replace=False)))
    Xs_init = np.asarray(srows.arrays["X"][init].compute())
    est._model, est._x = est._build(Xs_init, Y_d.shape[1], random_state)
    est._state = AdamState(est._x.size)
    est.n_iter_ = 0
    est._elbo_hist = []
    model, S = est._model, est.n_samples

    def batch_elbo(x, idx, scale):
        draws = model.draw_rows(idx.size, S, random_state)
        return model.evaluate(x, srows.subset(idx, extra=draws), scale, S)

    est._run(None, None, random_state, est.max_iter, False, n_total=N, batch_elbo=batch_elbo)
    est.n_samples_seen_ = N
    est._rs_partial = random_state
    return est
