"""What the displays share: the lazy matplotlib import and the axes to draw on."""


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
