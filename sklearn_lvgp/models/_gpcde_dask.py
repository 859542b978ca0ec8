"""``GPCDE.fit`` on a dask array or DataFrame: the rows stay partitioned where they live.

The fit is the in-memory one (:func:`~._gpcde_fit.run`) on
:class:`~._gpcde_data.DaskRowsData`: every evaluation of the bound
(:class:`~sklearn_lvgp.bounds._gpcde.CDEBound`), every natural-gradient step of ``q(u)`` and
the switched-off sparse GP regression of ``init="gp"``/``"auto"``
(:class:`~sklearn_lvgp.bounds._collapsed.CollapsedKernelBound`) run as one task per partition
holding rows of the batch, and send back only global-sized partial sums. Each step draws its
minibatch and Monte Carlo noise on the driver, as the in-memory fit does, and ships the draws
(and, for ``q_w="gaussian"``, the free ``q(w_n)`` of the batch, held in the flat parameters on
the driver) with the tasks. The standardisation comes from dask's reductions; the initial
inducing inputs (k-means), projection and output mixing from at most ``INIT_ROWS`` gathered
rows (all rows of smaller data, so the fit then equals the in-memory one up to rounding).
"""

import numpy as np

from .._core.scaling import column_moments
from ..engine._dask import DaskRows, _dask
from ..optim._adam import AdamState
from ._gpcde_data import DaskRowsData
from ._gpcde_fit import architecture, build, resolve_optimizer, run

__all__ = ["fit_gpcde_dask", "INIT_ROWS"]

#: Rows gathered to the driver for the initial k-means inducing inputs and principal directions.
INIT_ROWS = 20_000


def fit_gpcde_dask(est, X, y, random_state):
    """Fit ``est`` (a ``GPCDE``) on dask collections ``X``, ``y`` (before the fitted
    attributes that :meth:`GPCDE._set_fitted` sets); returns ``est``."""
    dask, _ = _dask()
    if y is None:
        raise ValueError("GPCDE requires y to be passed, but the target y is None.")
    rows = DaskRows({"X": X, "y": y})
    X_d, Y_d = rows.arrays["X"], rows.arrays["y"]
    est._set_dask_features(rows)
    est._check_params(X_d, Y_d)
    if est.early_stopping:
        raise ValueError("GPCDE on dask input does not support early_stopping=True (its "
                         "held-out split and score run in memory); fit on numpy arrays or "
                         "set early_stopping=False.")
    est._y_ndim = 1 if len(y.shape) == 1 else 2
    N = rows.n_rows
    continuing = est._continues_fit(architecture(est, N, X_d.shape[1], Y_d.shape[1]))
    est.optimizer_ = resolve_optimizer(est, N)
    if not continuing:
        est.X_mean_, est.X_scale_ = (np.asarray(a) for a in dask.compute(*column_moments(X_d)))
        est.y_mean_, est.y_scale_ = (np.asarray(a)
                                     for a in dask.compute(*est._target_moments(Y_d)))
    srows = DaskRows({"X": (X_d - est.X_mean_) / est.X_scale_,
                      "y": (Y_d - est.y_mean_) / est.y_scale_})
    if continuing:
        model, x0 = est._model, est._x
    else:
        init = (np.arange(N) if N <= INIT_ROWS
                else np.sort(random_state.choice(N, INIT_ROWS, replace=False)))
        Xs, Ys = (np.asarray(a) for a in dask.compute(srows.arrays["X"][init],
                                                      srows.arrays["y"][init]))
        model, x0 = build(est, Xs, Ys, random_state, n_rows=N)
        est._state = AdamState(x0.size)
    est._model = model
    run(est, model, x0, DaskRowsData(srows), random_state, None, continuing)
    return est
