"""The predictive density p(y | x) of a regressor with one input, as a heat map."""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..models._deep_gp import DeepGP
from ..models._dvmgp import DVMGP
from ..models._gpcde import GPCDE
from ..models._sgpr import SparseGPRegressor
from ._base import axes_or_new, heat_map, padded_range

_REGRESSORS = (DeepGP, GPCDE, DVMGP, SparseGPRegressor)


class PredictiveDensityDisplay:
    """The predictive density ``p(y | x)`` of a fitted one-input regressor over a grid.

    The heat map is ``exp(predict_log_density)`` on a grid of ``(x, y)``, so a multimodal
    predictive (the branches of :class:`~sklearn_lvgp.GPCDE`, the mixture of a
    :class:`~sklearn_lvgp.DeepGP`) shows as it is, not as a mean and an error bar. The training
    points are drawn over it.

    Build it with :meth:`from_estimator` and draw it with :meth:`plot`.

    Parameters
    ----------
    grid_x, grid_y : ndarray of shape (n_y, n_x)
        The grid of inputs and targets (as :func:`numpy.meshgrid` gives it).
    density : ndarray of shape (n_y, n_x)
        Predictive density at the grid points.
    X : ndarray of shape (n_samples,)
        Inputs of the points drawn over the density.
    y : ndarray of shape (n_samples,)
        Targets of the points drawn over the density.
    estimator_name : str, default=None
        Name of the estimator, for the title.

    Attributes
    ----------
    ax_ : matplotlib Axes
        The axes drawn on.
    figure_ : matplotlib Figure
        The figure of ``ax_``.
    surface_ : matplotlib QuadMesh
        The density heat map.
    scatter_ : matplotlib PathCollection
        The data points.
    colorbar_ : matplotlib Colorbar
        The colour bar of the heat map.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lvgp import GPCDE
    >>> from sklearn_lvgp.inspection import PredictiveDensityDisplay
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, (200, 1))
    >>> y = np.sign(rng.standard_normal(200)) * X[:, 0] ** 2
    >>> model = GPCDE(latent_dim=1, max_iter=300).fit(X, y)  # doctest: +SKIP
    >>> PredictiveDensityDisplay.from_estimator(model, X, y)  # doctest: +SKIP
    """

    def __init__(self, grid_x, grid_y, density, X, y, estimator_name=None):
        self.grid_x = grid_x
        self.grid_y = grid_y
        self.density = density
        self.X = X
        self.y = y
        self.estimator_name = estimator_name

    @classmethod
    def from_estimator(cls, estimator, X, y, *, x_range=None, y_range=None, n_x=60, n_y=60,
                       margin=0.1, ax=None, cmap="Blues", scatter_kwargs=None):
        """Draw the predictive density of a fitted DeepGP, GPCDE, DVMGP or SparseGPRegressor.

        Parameters
        ----------
        estimator : DeepGP, GPCDE, DVMGP or SparseGPRegressor
            A regressor fitted on one input feature and one target.
        X : array-like of shape (n_samples, 1) or (n_samples,)
            Inputs of the points drawn over the density (usually the training inputs); they
            also set the default ``x_range``.
        y : array-like of shape (n_samples,)
            Targets of those points; they also set the default ``y_range``.
        x_range, y_range : tuple of float, default=None
            Limits of the grid; ``None`` takes the range of ``X`` (of ``y``) widened by
            ``margin`` on each side.
        n_x, n_y : int, default=60
            Grid points along the input and along the target.
        margin : float, default=0.1
            Fraction of the data range added on each side of a default range.
        ax : matplotlib Axes, default=None
            Axes to draw on; ``None`` makes a new figure.
        cmap : str or matplotlib Colormap, default="Blues"
            Colour map of the heat map.
        scatter_kwargs : dict, default=None
            Keyword arguments passed to ``ax.scatter``.

        Returns
        -------
        display : PredictiveDensityDisplay
            The display, drawn.
        """
        if not isinstance(estimator, _REGRESSORS):
            raise TypeError("PredictiveDensityDisplay needs a fitted DeepGP, GPCDE, DVMGP or "
                            f"SparseGPRegressor, got {type(estimator).__name__}.")
        check_is_fitted(estimator)
        if estimator.n_features_in_ != 1:
            raise ValueError("PredictiveDensityDisplay draws p(y | x) for one input feature; the "
                             f"estimator was fitted on {estimator.n_features_in_}.")
        X = np.asarray(X, dtype=float)
        if X.ndim == 2 and X.shape[1] == 1:
            X = X[:, 0]
        if X.ndim != 1:
            raise ValueError("X must have one feature, of shape (n_samples, 1) or (n_samples,); "
                             f"got shape {X.shape}.")
        y = np.asarray(y, dtype=float)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.shape != X.shape:
            raise ValueError(f"y must be one target of shape ({X.shape[0]},), got {y.shape}.")
        n_x, n_y = int(n_x), int(n_y)
        if n_x < 2 or n_y < 2:
            raise ValueError(f"n_x and n_y must be at least 2, got {n_x} and {n_y}.")

        def limits(values, given):
            if given is not None:
                lo, hi = (float(v) for v in given)
                if not lo < hi:
                    raise ValueError(f"a range must be (low, high) with low < high, got {given}.")
                return lo, hi
            return padded_range(float(values.min()), float(values.max()), margin)

        xs = np.linspace(*limits(X, x_range), n_x)
        ys = np.linspace(*limits(y, y_range), n_y)
        gx, gy = np.meshgrid(xs, ys)
        log_density = estimator.predict_log_density(gx.reshape(-1, 1), gy.ravel())
        density = np.exp(np.asarray(log_density, dtype=float)).reshape(gx.shape)
        display = cls(gx, gy, density, X, y, estimator_name=type(estimator).__name__)
        return display.plot(ax=ax, cmap=cmap, scatter_kwargs=scatter_kwargs)

    def plot(self, ax=None, *, cmap="Blues", scatter_kwargs=None):
        """Draw the heat map and the data points.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes to draw on; ``None`` makes a new figure.
        cmap : str or matplotlib Colormap, default="Blues"
            Colour map of the heat map.
        scatter_kwargs : dict, default=None
            Keyword arguments passed to ``ax.scatter``.

        Returns
        -------
        self : PredictiveDensityDisplay
            The display, with its artists set.
        """
        ax = axes_or_new(ax)
        self.surface_, self.colorbar_ = heat_map(ax, self.grid_x, self.grid_y, self.density,
                                                 cmap, "p(y | x)")
        kwargs = {"s": 6, "c": "tab:orange", "edgecolors": "none", "alpha": 0.7,
                  "label": "data"}
        kwargs.update(scatter_kwargs or {})
        self.scatter_ = ax.scatter(self.X, self.y, **kwargs)
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        if self.estimator_name:
            ax.set_title(f"{self.estimator_name}: predictive density")
        self.ax_, self.figure_ = ax, ax.figure
        return self
