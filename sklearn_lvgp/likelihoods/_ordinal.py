"""Ordinal likelihood of Chu & Ghahramani (2005) with fixed or learned bin edges: its expectation
by jitted Gauss–Hermite quadrature, its predictive probabilities in closed form."""

import numpy as np
from scipy.special import erf, log_ndtr, ndtr, ndtri

from . import _quadrature_numba as _nb
from ._quadrature import QuadratureLikelihood

__all__ = ["Ordinal"]


def _log1mexp(x):
    """``log(1 - exp(x))`` for ``x <= 0``, elementwise."""
    with np.errstate(divide="ignore"):
        return np.where(x > -np.log(2.0), np.log(-np.expm1(np.minimum(x, 0.0))),
                        np.log1p(-np.exp(np.minimum(x, 0.0))))


def log_ndtr_diff(a, b):
    """``log(Phi(a) - Phi(b))`` elementwise for ``a > b`` (infinities allowed), without
    cancellation: in a common tail as a ratio of ``log Phi``, across zero as a sum of ``erf``.

    Parameters
    ----------
    a, b : ndarray
        Upper and lower standardised limits.

    Returns
    -------
    ndarray
    """
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        la, lb = log_ndtr(a), log_ndtr(b)
        left = la + _log1mexp(lb - la)
        lnb, lna = log_ndtr(-b), log_ndtr(-a)
        right = lnb + _log1mexp(lna - lnb)
        middle = np.log(0.5 * (erf(a / np.sqrt(2.0)) - erf(b / np.sqrt(2.0))))
    return np.where(a <= 0, left, np.where(b >= 0, right, middle))


class Ordinal(QuadratureLikelihood):
    """Ordinal likelihood for ordered classes ``y`` in ``{0, ..., K - 1}``.

    The likelihood of Chu & Ghahramani (2005): with bin edges ``b_0 < ... < b_{K-2}`` (and ``b_{-1}
    = -inf``, ``b_{K-1} = inf``), ``p(y = r | f) = Phi((b_r - f) / scale) - Phi((b_{r-1} - f) /
    scale)``. The edges stay ordered because ``theta`` holds the first edge and the logs of the gaps
    between consecutive edges (the ``"ordered"`` transform); their bounds are bounds on those gaps.
    The expectation is a 1-D Gauss–Hermite sum (jitted); the predictive class probabilities are
    exact, ``Phi((b_r - mu) / sqrt(scale^2 + var)) - Phi((b_{r-1} - mu) / sqrt(scale^2 + var))``,
    and :meth:`predict_mean_and_var` gives the mean and variance of the class index under them.

    Parameters
    ----------
    bin_edges : array-like of shape (K - 1,), default=None
        Increasing bin edges. ``None`` until :meth:`initialize`, which places them at the
        normal quantiles ``sqrt(1 + scale^2) Phi^{-1}((r + 1) / K)`` (equal prior class
        probabilities for a unit-variance latent function), ``K`` from the targets.
    scale : float, default=1.0
        Noise scale ``sigma`` of the probit steps.
    bin_edges_bounds : pair of float, "fixed" or None, default=(1e-5, 1e5)
        Bounds of the gaps between consecutive edges (the first edge is unbounded);
        ``"fixed"`` keeps the edges out of ``theta``.
    scale_bounds : pair of float, "fixed" or None, default=(1e-5, 1e5)
        Bounds of ``scale`` (``theta`` holds its log).
    gh_order : int, default=20
        Gauss–Hermite nodes.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lvgp.likelihoods import Ordinal
    >>> lik = Ordinal(bin_edges=[-1.0, 1.0], scale=0.5)
    >>> lik.predict_proba(np.zeros((1, 1)), np.ones((1, 1))).round(3)
    array([[0.186, 0.629, 0.186]])
    """

    is_classification = True
    _hyperparameters = (("bin_edges", "ordered"), ("scale", "log"))

    def __init__(self, bin_edges=None, scale=1.0, bin_edges_bounds=(1e-5, 1e5),
                 scale_bounds=(1e-5, 1e5), gh_order=20):
        self.bin_edges = bin_edges
        self.scale = scale
        self.bin_edges_bounds = bin_edges_bounds
        self.scale_bounds = scale_bounds
        self.gh_order = gh_order

    _UNSET = ("Ordinal.bin_edges is None: pass the edges, or call initialize(y), which returns "
              "a copy with edges for the classes of y.")

    def _edges(self):
        if self.bin_edges is None:
            raise ValueError(self._UNSET)
        try:
            e = np.asarray(self.bin_edges, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"bin_edges must be a 1-D array of numbers, got "
                             f"{self.bin_edges!r}.") from None
        if e.ndim != 1 or e.size < 1 or not np.all(np.isfinite(e)):
            raise ValueError(f"bin_edges must be a non-empty 1-D array of finite numbers, got "
                             f"{self.bin_edges!r}.")
        if np.any(np.diff(e) <= 0):
            raise ValueError(f"bin_edges must be strictly increasing, got {self.bin_edges!r}.")
        return e

    def _layout(self):
        if self.bin_edges is None:
            raise ValueError(self._UNSET)
        return super()._layout()

    def _check_values(self):
        super()._check_values()
        self._edges()
        self._positive("scale", self.scale)

    @property
    def n_classes(self):
        """Number of ordered classes, ``len(bin_edges) + 1`` (``None`` before the edges)."""
        return None if self.bin_edges is None else int(np.size(self.bin_edges)) + 1

    def check_targets(self, y, n_classes=None):
        return self._class_indices(y, self.n_classes)

    def n_latent(self, n_targets):
        """One latent function for all the ordered classes.

        Parameters
        ----------
        n_targets : int
            Number of classes (``len(bin_edges) + 1`` when the edges are set).

        Returns
        -------
        n_latent : int
            1.
        """
        if self.n_classes is not None and int(n_targets) != self.n_classes:
            raise ValueError(f"Ordinal has {self.n_classes} classes (len(bin_edges) + 1), "
                             f"the targets have {n_targets}.")
        if int(n_targets) < 2:
            raise ValueError(f"Ordinal needs at least 2 classes, got {n_targets}.")
        return 1

    def initialize(self, y):
        """Return a copy with the bin edges set from the targets if they are ``None``.

        Parameters
        ----------
        y : array-like of int
            Class indices.

        Returns
        -------
        likelihood : Ordinal
            A new likelihood; ``self`` is not modified.
        """
        if self.bin_edges is not None:
            return super().initialize(y)
        y = self._class_indices(y, None)
        K = int(y.max()) + 1 if y.size else 0
        if K < 2:
            raise ValueError(f"Ordinal needs at least 2 classes in y, got {K}.")
        scale = self._positive("scale", self.scale)
        new = self.clone()
        new.bin_edges = np.sqrt(1.0 + scale * scale) * ndtri(np.arange(1, K) / K)
        new._validate()
        return new

    # ------------------------------------------------------------------------- expectation
    def _kind(self):
        return _nb.ORDINAL

    def _node_params(self):
        return np.array([float(self.scale)]), self._edges()

    def _slot_adjoints(self, weighted_slots, y):
        edges = self._edges()
        n_edges = edges.size
        y = np.asarray(y).reshape(-1)
        lower = y >= 1
        upper = y <= n_edges - 1
        d_edges = (np.bincount(y[lower] - 1, weights=weighted_slots[lower, 0], minlength=n_edges)
                   + np.bincount(y[upper], weights=weighted_slots[upper, 1], minlength=n_edges))
        # edges e_i = theta_0 + sum_{j <= i} exp(theta_j): d theta_j = gap_j sum_{i >= j} d e_i
        suffix = np.cumsum(d_edges[::-1])[::-1]
        d_theta = np.concatenate([suffix[:1], np.diff(edges) * suffix[1:]])
        return {"bin_edges": d_theta, "scale": weighted_slots[:, 2].sum()}

    # -------------------------------------------------------------------------- prediction
    def _standardised_edges(self, mu, var):
        """``(b - mu) / sqrt(scale^2 + var)`` with ``-inf`` and ``inf`` at the ends, shape
        ``mu.shape + (K + 1,)``."""
        edges = np.concatenate([[-np.inf], self._edges(), [np.inf]])
        s = np.sqrt(float(self.scale) ** 2 + np.maximum(var, 0.0))
        return (edges - mu[..., None]) / s[..., None]

    def _class_proba(self, mu, var):
        return np.diff(ndtr(self._standardised_edges(mu, var)), axis=-1)

    def _log_density(self, y, mu, var):
        z = self._standardised_edges(mu, var)
        y = y[..., None]
        return log_ndtr_diff(np.take_along_axis(z, y + 1, axis=-1),
                             np.take_along_axis(z, y, axis=-1))[..., 0]

    def _proba(self, mu, var):
        if mu.ndim != 2 or mu.shape[1] != 1:
            raise ValueError(f"predict_proba needs mu of shape (N, 1) (one latent function), "
                             f"got {mu.shape}.")
        return self._class_proba(mu, var)[:, 0, :]

    def _mean_and_var(self, mu, var):
        p = self._class_proba(mu, var)
        r = np.arange(p.shape[-1], dtype=np.float64)
        mean = p @ r
        return mean, np.maximum(p @ (r * r) - mean * mean, 0.0)
