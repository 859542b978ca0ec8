"""The training curve of a fitted estimator: its bound per iteration."""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._base import axes_or_new


class TrainingCurveDisplay:
    """The training curve of a fitted estimator: its bound per optimiser iteration.

    The evidence lower bound after each iteration (``elbo_history_``), with the held-out scores
    of early stopping (``validation_scores_``) when the fit made them. The held-out scores are
    on their own scale (a mean per held-out row), so they are drawn on a second y-axis, at
    evenly spaced iterations (the checks are made at a fixed interval).

    Build it with :meth:`from_estimator` and draw it with :meth:`plot`.

    Parameters
    ----------
    elbo_history : ndarray of shape (n_iter,)
        The bound after each iteration (higher is better).
    validation_scores : ndarray of shape (n_checks,) or None, default=None
        Held-out scores of the early-stopping checks.
    estimator_name : str, default=None
        Name of the estimator, for the title.

    Attributes
    ----------
    ax_ : matplotlib Axes
        The axes drawn on.
    figure_ : matplotlib Figure
        The figure of ``ax_``.
    line_ : matplotlib Line2D
        The bound per iteration.
    validation_ax_ : matplotlib Axes or None
        The second y-axis of the held-out scores (``None`` without them).
    validation_line_ : matplotlib Line2D or None
        The held-out scores (``None`` without them).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_lvgp import UnscentedGPLVM
    >>> from sklearn_lvgp.inspection import TrainingCurveDisplay
    >>> X = np.random.default_rng(0).standard_normal((50, 4))
    >>> model = UnscentedGPLVM(n_components=2, max_iter=30).fit(X)  # doctest: +SKIP
    >>> TrainingCurveDisplay.from_estimator(model)  # doctest: +SKIP
    """

    def __init__(self, elbo_history, validation_scores=None, estimator_name=None):
        self.elbo_history = elbo_history
        self.validation_scores = validation_scores
        self.estimator_name = estimator_name

    @classmethod
    def from_estimator(cls, estimator, *, ax=None, line_kwargs=None):
        """Draw the training curve of a fitted estimator with ``elbo_history_``.

        Parameters
        ----------
        estimator : estimator
            A fitted estimator of this package with an ``elbo_history_`` attribute.
        ax : matplotlib Axes, default=None
            Axes to draw on; ``None`` makes a new figure.
        line_kwargs : dict, default=None
            Keyword arguments passed to ``ax.plot`` for the bound.

        Returns
        -------
        display : TrainingCurveDisplay
            The display, drawn.
        """
        check_is_fitted(estimator)
        if not hasattr(estimator, "elbo_history_"):
            raise TypeError(f"{type(estimator).__name__} records no training curve "
                            "(elbo_history_); TrainingCurveDisplay needs one.")
        history = np.asarray(estimator.elbo_history_, dtype=float).ravel()
        if history.size == 0:
            raise ValueError("elbo_history_ is empty: the fit made no iteration to draw.")
        scores = getattr(estimator, "validation_scores_", None)
        if scores is not None:
            scores = np.asarray(scores, dtype=float).ravel()
        display = cls(history, scores, estimator_name=type(estimator).__name__)
        return display.plot(ax=ax, line_kwargs=line_kwargs)

    def plot(self, ax=None, *, line_kwargs=None):
        """Draw the curve (and the held-out scores on a second y-axis).

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes to draw on; ``None`` makes a new figure.
        line_kwargs : dict, default=None
            Keyword arguments passed to ``ax.plot`` for the bound.

        Returns
        -------
        self : TrainingCurveDisplay
            The display, with its artists set.
        """
        ax = axes_or_new(ax)
        iters = np.arange(1, self.elbo_history.size + 1)
        kwargs = {"color": "tab:blue", "label": "ELBO"}
        kwargs.update(line_kwargs or {})
        (self.line_,) = ax.plot(iters, self.elbo_history, **kwargs)
        ax.set_xlabel("iteration")
        ax.set_ylabel("ELBO (higher is better)")
        self.validation_ax_ = self.validation_line_ = None
        if self.validation_scores is not None and self.validation_scores.size:
            n = self.validation_scores.size
            at = np.linspace(iters[-1] / n, iters[-1], n)
            self.validation_ax_ = ax.twinx()
            (self.validation_line_,) = self.validation_ax_.plot(
                at, self.validation_scores, "o-", color="tab:orange", label="held-out score")
            self.validation_ax_.set_ylabel("held-out score")
        if self.estimator_name:
            ax.set_title(f"{self.estimator_name}: training curve")
        self.ax_, self.figure_ = ax, ax.figure
        return self
