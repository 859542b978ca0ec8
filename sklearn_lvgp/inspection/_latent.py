"""The latent space of a fitted latent-variable model, shaded by its predictive variance."""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..models._ldgd import LDGD
from ..models._unscented_gplvm import UnscentedGPLVM
from ._base import axes_or_new, heat_map, padded_range


class LatentSpaceDisplay:
    """The latent space of a fitted latent-variable model, over its predictive variance.

    Two latent dimensions of a fitted :class:`~sklearn_lvgp.UnscentedGPLVM` or
    :class:`~sklearn_lvgp.LDGD`. The points are latent means (coloured by a label array when one
    is given); the background is the predictive variance of the data-space output
    (``inverse_transform(..., return_std=True)``, averaged over the features) on a grid of the
    two shown dimensions, the others held at the mean of the points. Low variance is where the
    model has seen data.

    Build it with :meth:`from_estimator` and draw it with :meth:`plot`.

    Parameters
    ----------
    latent : ndarray of shape (n_samples, 2)
        Latent means in the two shown dimensions.
    dims : tuple of int
        The indices of the two shown latent dimensions.
    grid_x, grid_y : ndarray of shape (grid_resolution, grid_resolution)
        The grid of the two shown dimensions (as :func:`numpy.meshgrid` gives it).
    variance : ndarray of shape (grid_resolution, grid_resolution)
        Predictive variance, averaged over the features, at the grid points.
    y : ndarray of shape (n_samples,) or None, default=None
        Labels that colour the points.
    estimator_name : str, default=None
        Name of the estimator, for the title.

    Attributes
    ----------
    ax_ : matplotlib Axes
        The axes drawn on.
    figure_ : matplotlib Figure
        The figure of ``ax_``.
    surface_ : matplotlib QuadMesh
        The predictive-variance shading.
    scatter_ : matplotlib PathCollection
        The latent points.
    colorbar_ : matplotlib Colorbar
        The colour bar of the shading.

    Examples
    --------
    >>> from sklearn_lvgp import UnscentedGPLVM
    >>> from sklearn_lvgp.inspection import LatentSpaceDisplay
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> model = UnscentedGPLVM(n_components=2, max_iter=50).fit(X)  # doctest: +SKIP
    >>> LatentSpaceDisplay.from_estimator(model, y=y)  # doctest: +SKIP
    """

    def __init__(self, latent, dims, grid_x, grid_y, variance, y=None, estimator_name=None):
        self.latent = latent
        self.dims = dims
        self.grid_x = grid_x
        self.grid_y = grid_y
        self.variance = variance
        self.y = y
        self.estimator_name = estimator_name

    @classmethod
    def from_estimator(cls, estimator, X=None, y=None, *, dims=None, grid_resolution=40,
                       margin=0.1, ax=None, cmap="Greys", scatter_kwargs=None):
        """Draw the latent space of a fitted UnscentedGPLVM or LDGD.

        Parameters
        ----------
        estimator : UnscentedGPLVM or LDGD
            A fitted estimator.
        X : array-like of shape (n_samples, n_features), default=None
            Data to embed with ``estimator.transform``; ``None`` shows the training latent means
            (``latent_mean_``).
        y : array-like of shape (n_samples,), default=None
            Labels that colour the points.
        dims : tuple of two int, default=None
            Latent dimensions to show; ``None`` takes the two with the largest ``relevance_``
            (for LDGD, summed over its regression and classification paths).
        grid_resolution : int, default=40
            Grid points per shown dimension for the shading.
        margin : float, default=0.1
            Fraction of the range of the points added on each side of the grid.
        ax : matplotlib Axes, default=None
            Axes to draw on; ``None`` makes a new figure.
        cmap : str or matplotlib Colormap, default="Greys"
            Colour map of the shading.
        scatter_kwargs : dict, default=None
            Keyword arguments passed to ``ax.scatter``.

        Returns
        -------
        display : LatentSpaceDisplay
            The display, drawn.
        """
        if not isinstance(estimator, (UnscentedGPLVM, LDGD)):
            raise TypeError("LatentSpaceDisplay needs a fitted UnscentedGPLVM or LDGD, got "
                            f"{type(estimator).__name__}.")
        check_is_fitted(estimator)
        q = estimator.n_components
        if q < 2:
            raise ValueError("LatentSpaceDisplay needs n_components >= 2; the estimator has "
                             f"{q} latent dimension.")
        if dims is None:
            relevance = np.atleast_2d(estimator.relevance_).sum(axis=0)
            dims = tuple(int(d) for d in np.argsort(-relevance, kind="stable")[:2])
        else:
            dims = tuple(int(d) for d in dims)
            if len(dims) != 2 or dims[0] == dims[1] or not all(0 <= d < q for d in dims):
                raise ValueError(f"dims must be two different latent dimensions in [0, {q}), "
                                 f"got {dims}.")
        grid_resolution = int(grid_resolution)
        if grid_resolution < 2:
            raise ValueError(f"grid_resolution must be at least 2, got {grid_resolution}.")
        H = estimator.latent_mean_ if X is None else estimator.transform(X)
        H = np.asarray(H, dtype=float)
        if y is not None:
            y = np.asarray(y)
            if y.shape != (H.shape[0],):
                raise ValueError(f"y must have shape ({H.shape[0]},) to colour the latent "
                                 f"points, got {y.shape}.")
        axes = [np.linspace(*padded_range(float(H[:, d].min()), float(H[:, d].max()), margin),
                            grid_resolution) for d in dims]
        gx, gy = np.meshgrid(*axes)
        grid = np.tile(H.mean(axis=0), (gx.size, 1))
        grid[:, dims[0]], grid[:, dims[1]] = gx.ravel(), gy.ravel()
        _, std = estimator.inverse_transform(grid, return_std=True)
        variance = np.mean(std ** 2, axis=1).reshape(gx.shape)
        display = cls(H[:, dims], dims, gx, gy, variance, y=y,
                      estimator_name=type(estimator).__name__)
        return display.plot(ax=ax, cmap=cmap, scatter_kwargs=scatter_kwargs)

    def plot(self, ax=None, *, cmap="Greys", scatter_kwargs=None):
        """Draw the shading and the latent points.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes to draw on; ``None`` makes a new figure.
        cmap : str or matplotlib Colormap, default="Greys"
            Colour map of the shading.
        scatter_kwargs : dict, default=None
            Keyword arguments passed to ``ax.scatter``.

        Returns
        -------
        self : LatentSpaceDisplay
            The display, with its artists set.
        """
        ax = axes_or_new(ax)
        self.surface_, self.colorbar_ = heat_map(ax, self.grid_x, self.grid_y, self.variance,
                                                 cmap, "predictive variance")
        kwargs = {"s": 15, "edgecolors": "k", "linewidths": 0.3}
        labels = None
        if self.y is not None:
            labels, codes = np.unique(self.y, return_inverse=True)
            kwargs.update(c=codes, cmap="viridis")
            if labels.size <= 10:  # one tab10 colour per label
                kwargs.update(cmap="tab10", vmin=0, vmax=9)
        kwargs.update(scatter_kwargs or {})
        self.scatter_ = ax.scatter(self.latent[:, 0], self.latent[:, 1], **kwargs)
        if labels is not None and labels.size <= 10:
            handles, _ = self.scatter_.legend_elements()
            ax.legend(handles, [str(v) for v in labels], loc="best", fontsize="small")
        ax.set_xlabel(f"latent dimension {self.dims[0]}")
        ax.set_ylabel(f"latent dimension {self.dims[1]}")
        if self.estimator_name:
            ax.set_title(f"{self.estimator_name}: latent space")
        self.ax_, self.figure_ = ax, ax.figure
        return self
