"""Plots of fitted estimators in the scikit-learn way: ``Display`` objects.

Each display is built with ``from_estimator`` and drawn with ``plot(ax=...)``, as
:class:`sklearn.inspection.DecisionBoundaryDisplay` is. matplotlib is an optional dependency
(``pip install 'sklearn_lvgp[plot]'``); it is imported only when a display draws.
"""

from ._density import PredictiveDensityDisplay
from ._latent import LatentSpaceDisplay
from ._training import TrainingCurveDisplay

__all__ = ["LatentSpaceDisplay", "PredictiveDensityDisplay", "TrainingCurveDisplay"]
