"""What the displays share: the lazy matplotlib import, the axes to draw on, the padded range
of a grid and the heat map with its colour bar."""


def import_pyplot():
    """Import ``matplotlib.pyplot``, with a message that says how to install it when missing.

    Returns
    -------
    plt : module
        ``matplotlib.pyplot``.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("The displays of sklearn_lvgp.inspection need matplotlib: install it "
                          "with pip install 'sklearn_lvgp[plot]' (or pip install matplotlib)."
                          ) from exc
    return plt


def axes_or_new(ax):
    """The given axes, or new axes on a new figure when ``ax`` is None.

    Parameters
    ----------
    ax : matplotlib Axes or None
        Axes to draw on.

    Returns
    -------
    ax : matplotlib Axes
        The axes to draw on.
    """
    plt = import_pyplot()
    if ax is None:
        _, ax = plt.subplots()
    return ax


def padded_range(low, high, margin):
    """``(low − pad, high + pad)`` with ``pad = margin · (high − low)`` (at least
    ``margin · 1e-12``, so that a constant coordinate still spans a range).

    Parameters
    ----------
    low, high : float
        Smallest and largest value to show.
    margin : float
        Fraction of the range added on each side.

    Returns
    -------
    low, high : float
        The padded range.
    """
    pad = margin * max(high - low, 1e-12)
    return low - pad, high + pad


def heat_map(ax, grid_x, grid_y, values, cmap, label):
    """Draw ``values`` on the grid as a heat map with a labelled colour bar.

    Parameters
    ----------
    ax : matplotlib Axes
        Axes to draw on.
    grid_x, grid_y, values : ndarray of shape (n_y, n_x)
        The grid (as :func:`numpy.meshgrid` gives it) and the value at each of its points.
    cmap : str or matplotlib Colormap
        Colour map.
    label : str
        Label of the colour bar.

    Returns
    -------
    surface : matplotlib QuadMesh
        The heat map.
    colorbar : matplotlib Colorbar
        Its colour bar.
    """
    surface = ax.pcolormesh(grid_x, grid_y, values, cmap=cmap, shading="auto")
    colorbar = ax.figure.colorbar(surface, ax=ax)
    colorbar.set_label(label)
    return surface, colorbar
