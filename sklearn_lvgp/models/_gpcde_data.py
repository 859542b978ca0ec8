"""The standardised training rows of a :class:`~sklearn_lvgp.GPCDE` fit, in memory or on Dask.

The optimiser run (:mod:`._gpcde_fit`) and the switched-off warm start
(:mod:`._gpcde_warm_start`) see the rows only through these objects: the bound and a
natural-gradient step of a model on all rows or on a minibatch, and the collapsed bound of the
switched-off sparse GP regression. :class:`MemoryRows` holds the arrays; :class:`DaskRowsData`
holds a :class:`~sklearn_lvgp.engine._dask.DaskRows` of ``"X"`` and ``"y"``, and evaluates a
minibatch where its rows live (its draws and free ``q(w_n)`` made on the driver, as in memory,
and shipped with the tasks).
"""

import numpy as np

from .._core.scaling import column_scales
from ..bounds._collapsed import CollapsedKernelBound
from ..engine._dask import _dask
from ..optim._collapsed_fit import make_collapsed_bound

__all__ = ["DaskRowsData", "MemoryRows"]


class MemoryRows:
    """Standardised rows ``Xs`` (N, D_x) and ``Ys`` (N, D_y) in memory."""

    def __init__(self, Xs, Ys):
        self.Xs, self.Ys = Xs, Ys
        self.n_rows = Xs.shape[0]

    def elbo(self, model, x, idx, scale, rs):
        """``model``'s bound and gradient on the rows ``idx`` (``None``: all rows)."""
        if idx is None:
            return model.elbo(x, self.Xs, self.Ys, np.arange(self.n_rows), scale, rs)
        return model.elbo(x, self.Xs[idx], self.Ys[idx], idx, scale, rs)

    def natgrad(self, model, x, idx, scale, gamma, rs):
        """``model``'s natural-gradient step of ``q(u)`` on the rows ``idx`` (``None``: all)."""
        if idx is None:
            return model.natgrad(x, self.Xs, self.Ys, np.arange(self.n_rows), scale, gamma, rs)
        return model.natgrad(x, self.Xs[idx], self.Ys[idx], idx, scale, gamma, rs)

    def collapsed(self):
        """``(X, Y, bound, var_y, z_scale)`` of the switched-off sparse GP regression."""
        Y = np.ascontiguousarray(self.Ys, dtype=np.float64)
        var_y = float(np.mean(np.var(Y, axis=0)))
        return self.Xs, Y, make_collapsed_bound(self.Xs, Y), var_y, column_scales(self.Xs)


class DaskRowsData:
    """Standardised rows partitioned on Dask: a :class:`~sklearn_lvgp.engine._dask.DaskRows`
    of ``"X"`` and ``"y"`` (the row names of both bounds the fit evaluates)."""

    def __init__(self, rows):
        self.rows = rows
        self.n_rows = rows.n_rows

    def _source(self, model, x, idx, rs):
        idx = np.arange(self.n_rows) if idx is None else np.asarray(idx)
        return self.rows.subset(idx, model.minibatch_rows(x, idx, rs)), idx

    def elbo(self, model, x, idx, scale, rs):
        """As :meth:`MemoryRows.elbo`, each partition holding rows of the batch one task."""
        source, idx = self._source(model, x, idx, rs)
        return model.evaluate(x, source, idx, scale)

    def natgrad(self, model, x, idx, scale, gamma, rs):
        """As :meth:`MemoryRows.natgrad`, the statistics summed over partition tasks."""
        source, _ = self._source(model, x, idx, rs)
        return model.natgrad_on(x, source, scale, gamma)

    def collapsed(self):
        """As :meth:`MemoryRows.collapsed` (``X`` and ``Y`` ``None``: the bound holds them;
        ``var_y`` and ``z_scale`` from dask's reductions)."""
        dask, _ = _dask()
        X, Y = self.rows.arrays["X"], self.rows.arrays["y"]
        var_y, z_scale = dask.compute(Y.var(axis=0).mean(), column_scales(X))
        return (None, None, CollapsedKernelBound(rows=self.rows), float(var_y),
                np.asarray(z_scale))
